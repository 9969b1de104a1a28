package evals

import (
	"context"
	"strings"
	"testing"
)

func TestAnswersMatchAnyAliasAfterNormalization(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		pred    string
		aliases []string
		want    bool
	}{
		{"case and a trailing period do not matter", "paris.", []string{"Paris"}, true},
		{"articles are dropped", "The Pacific", []string{"Pacific"}, true},
		{"any alias will do", "CO2", []string{"Carbon dioxide", "CO2"}, true},
		{"punctuation becomes a space", "o'neill", []string{"O Neill"}, true},
		{"underscores become spaces", "new york", []string{"New_York"}, true},
		{"curly quotes are punctuation", "\u2018Hamlet\u2019", []string{"Hamlet"}, true},
		{"inner whitespace collapses", "  New   York ", []string{"new york"}, true},
		{"a longer answer is not an exact match", "Paris, France", []string{"Paris"}, false},
		{"a different answer is wrong", "Lyon", []string{"Paris"}, false},
		{"an empty answer matches nothing real", "", []string{"Paris"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := ExactMatch(tc.pred, tc.aliases); got != tc.want {
				t.Errorf("ExactMatch(%q, %q) = %v (normalized %q)", tc.pred, tc.aliases, got, NormalizeAnswer(tc.pred))
			}
		})
	}
}

func TestTriviaPromptIsLMEvals(t *testing.T) {
	t.Parallel()
	shots := []TriviaItem{{Question: "Who wrote Hamlet?", Answer: "Shakespeare"}, {Question: "Capital of Italy", Answer: "Rome"}}
	got := TriviaPrompt(shots, TriviaItem{Question: "Largest planet?"})
	want := "Question: Who wrote Hamlet??\nAnswer: Shakespeare\n\nQuestion: Capital of Italy?\nAnswer: Rome\n\nQuestion: Largest planet??\nAnswer:"
	if got != want {
		t.Fatalf("%q\nwant %q", got, want)
	}
	if a := TriviaAnswer(" Jupiter\nQuestion: next?"); a != "Jupiter" {
		t.Errorf("answer %q, want the first line trimmed", a)
	}
}

// triviaModel answers the question of a prompt from answers (by question),
// as a model would: a leading space, then more lines it was not asked for.
func triviaModel(answers map[string]string) func(prompt string) string {
	return func(prompt string) string {
		i := strings.LastIndex(prompt, "Question: ")
		q := strings.TrimSuffix(strings.TrimPrefix(prompt[i:], "Question: "), "?\nAnswer:")
		return " " + answers[q] + "\n\nQuestion: something else?"
	}
}

// triviaAnswers answers the first of items and every every-th after it by
// its first alias, the others "I do not know"; right is how many are right.
func triviaAnswers(items []TriviaItem, every int) (answers map[string]string, right int) {
	answers = map[string]string{}
	for i, it := range items {
		answers[it.Question] = "I do not know"
		if i%every == 0 {
			answers[it.Question], right = it.Aliases[0], right+1
		}
	}
	return answers, right
}

func TestTriviaQAScoresKnownAnswers(t *testing.T) {
	t.Parallel()
	set := SampleTriviaQA()
	answers := map[string]string{}
	right := 0
	for i, it := range set.Items[TriviaShots:] {
		switch i % 3 {
		case 0: // the last alias, in other case and with a period
			answers[it.Question] = strings.ToUpper(it.Aliases[len(it.Aliases)-1]) + "."
			right++
		case 1: // "the" and the first alias
			answers[it.Question] = "the " + it.Aliases[0]
			right++
		case 2:
			answers[it.Question] = "I do not know"
		}
	}
	f := newFakeLM(t, func(f *fakeLM) { f.generate = triviaModel(answers) })
	res := f.run("triviaqa", Config{Concurrency: 4}, set)
	n := len(set.Items) - TriviaShots
	if res.Status != StatusOK || res.N != n || res.Metrics["exact_match"] != float64(right)/float64(n) {
		t.Fatalf("%+v, want %d of %d", res, right, n)
	}

	// With --shots, every item of the set is scored and the limit holds.
	r2 := f.runner(Config{Concurrency: 2, Limit: 3})
	defer r2.Close()
	shots := &TriviaSet{Items: set.Items[:TriviaShots]}
	rest := &TriviaSet{Items: set.Items[TriviaShots:]}
	res = TriviaQA(context.Background(), r2, rest, shots)
	if res.Status != StatusOK || res.N != 3 || res.Metrics["exact_match"] != 2.0/3 {
		t.Fatalf("with shots: %+v", res)
	}
}

func TestTriviaQAFailsOnAnErrorStatus(t *testing.T) {
	t.Parallel()
	f := newFakeLM(t, func(f *fakeLM) { f.plainStatus = 503 })
	res := f.run("triviaqa", Config{}, SampleTriviaQA())
	if res.Status != StatusFailed || res.Metrics != nil || KindOf(res.Failure) != HTTPError || res.Failure.HTTPStatus != 503 {
		t.Fatalf("%+v", res)
	}
}
