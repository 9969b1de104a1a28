package evals

import (
	"fmt"
	"strings"
	"testing"
)

// mmluTruth is what MMLU must report when the questions in none get no
// answer and every other is answered with letter (the fake's preferred
// letter): acc over every question, none counted wrong.
func mmluTruth(set *MMLUSet, letter func(string) string, none func(prompt string) bool) (acc float64, noAnswer int) {
	right, n := 0, 0
	for _, sub := range set.Subjects {
		for _, q := range sub.Test {
			p := MMLUPrompt(sub.Name, sub.Shots, q)
			n++
			switch {
			case none(p):
				noAnswer++
			case letter(strings.TrimSuffix(p, "\nAnswer:")) == Letters[q.Answer]:
				right++
			}
		}
	}
	return float64(right) / float64(n), noAnswer
}

// A thinking model that runs out of budget on one question (not the one
// that chooses the route) gets that question wrong, counted in no_answer;
// the other questions are scored as usual.
func TestMMLUCountsAThinkingModelsUnansweredQuestionAsNoAnswer(t *testing.T) {
	t.Parallel()
	set := SampleMMLU()
	letter := mmluModel(set)
	hard := firstPrompt(set, 1)
	short := "A question with four options; B and D look wrong to me. So."
	f := newFakeLM(t, func(f *fakeLM) {
		chatOnlyNoLogprobs(f)
		thinking(letter)(f)
		f.reasoning = func(p string) string {
			if p == hard {
				return short + strings.Repeat(" hmm", 100) // past the 256-token budget
			}
			return short
		}
	})
	res := f.run("mmlu", Config{Concurrency: 4, ReasoningTokens: 256}, set)
	acc, none := mmluTruth(set, letter, func(p string) bool { return p == hard })
	if res.Status != StatusOK || res.Method != MethodChatGreedy || res.N != 16 || none != 1 ||
		res.Metrics["acc"] != acc || res.Metrics[NoAnswerMetric] != 1 {
		t.Fatalf("%+v %+v, want ok by %s, acc %v, no_answer 1", res, res.Failure, MethodChatGreedy, acc)
	}
}

// llama.cpp with chat logprobs: a later question whose first token is "\n"
// is asked by chat-greedy alone; the eval stays on chat-top-logprobs and
// scores every question by the letter the model gives.
func TestMMLUAsksAQuestionWhoseFirstTokenIsBlankByItsGreedyAnswer(t *testing.T) {
	t.Parallel()
	set := SampleMMLU()
	letter := mmluModel(set)
	blank := firstPrompt(set, 2)
	f := newFakeLM(t, func(f *fakeLM) {
		llamaCppLike(f)
		f.top = chatLetterTop(letter, map[string]float64{"The": -1.5, "\n": -1})
		f.generate = func(p string) string {
			answer := letter(strings.TrimSuffix(p, "\nAnswer:"))
			if p == blank {
				return "\nThe answer is " + answer // 16 tokens: the greedy budget
			}
			return answer
		}
	})
	res := f.run("mmlu", Config{Concurrency: 4}, set)
	acc, _ := mmluTruth(set, letter, func(string) bool { return false })
	if res.Status != StatusOK || res.Method != MethodChatTopLogprobs || res.N != 16 ||
		res.Metrics["acc"] != acc || res.Metrics[NoAnswerMetric] != 0 {
		t.Fatalf("%+v %+v, want ok by %s, acc %v", res, res.Failure, MethodChatTopLogprobs, acc)
	}
	if got := f.count("chat"); got != 17 {
		t.Errorf("%d chat requests, want 17 (16 first tokens, one greedy answer)", got)
	}
}

// When most questions get no answer, no accuracy is made of the rest: the
// eval fails and says how many.
func TestMMLUWhereMostAnswersAreReasoningOnlyFailsWithTheCount(t *testing.T) {
	t.Parallel()
	set := SampleMMLU()
	letter := mmluModel(set)
	first := firstPrompt(set, 0)
	f := newFakeLM(t, func(f *fakeLM) {
		chatOnlyNoLogprobs(f)
		thinking(letter)(f)
		f.reasoning = func(p string) string {
			if p == first {
				return "Short."
			}
			return strings.Repeat("hmm ", 100)
		}
	})
	res := f.run("mmlu", Config{Concurrency: 4, ReasoningTokens: 64}, set)
	if res.Status != StatusFailed || res.Metrics != nil || KindOf(res.Failure) != BadResponse ||
		!strings.Contains(res.Failure.Detail, "no answer to 15 of 16 questions") || !strings.Contains(res.Failure.Detail, "max_tokens 64 in 15") {
		t.Fatalf("%+v %+v, want failed with the count", res, res.Failure)
	}
}

// TriviaQA on a thinking model: one answer that is reasoning only is
// wrong and counted, the others scored.
func TestTriviaQACountsAReasoningOnlyAnswerAsNoAnswer(t *testing.T) {
	t.Parallel()
	set := SampleTriviaQA()
	items := set.Items[TriviaShots:]
	answers := map[string]string{}
	for _, it := range items {
		answers[it.Question] = it.Aliases[0]
	}
	hard := items[2].Question
	f := newFakeLM(t, func(f *fakeLM) {
		chatOnlyLike(f)
		f.generate = triviaModel(answers)
		f.reasoning = func(p string) string {
			if strings.Contains(p, "Question: "+hard+"?\nAnswer:") {
				return strings.Repeat("hmm\n", 200)
			}
			return "Maybe London.\n"
		}
	})
	res := f.run("triviaqa", Config{Concurrency: 4, ReasoningTokens: 256}, set)
	n := len(items)
	if res.Status != StatusOK || res.Method != MethodChatGenerate || res.N != n ||
		res.Metrics["exact_match"] != float64(n-1)/float64(n) || res.Metrics[NoAnswerMetric] != 1 {
		t.Fatalf("%+v %+v, want %d of %d right, no_answer 1", res, res.Failure, n-1, n)
	}
}

// vLLM's deepseek_r1 and qwen3 parsers leave the blank line after
// </think> in content: "\n\nParis". Asked without the "\n" stop, the
// answer is the content's first line that is not blank.
func TestTriviaQAReadsAThinkingModelsAnswerAfterItsBlankLine(t *testing.T) {
	t.Parallel()
	set := SampleTriviaQA()
	items := set.Items[TriviaShots:]
	answers, right := triviaAnswers(items, 2)
	for _, tc := range []struct {
		name           string
		thinkInContent bool
	}{
		{"reasoning split out into reasoning_content", false},
		{"reasoning left in content as <think>…</think>", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeLM(t, func(f *fakeLM) {
				chatOnlyLike(f)
				gen := triviaModel(answers)
				f.generate = func(p string) string { return "\n\n" + strings.TrimPrefix(gen(p), " ") }
				f.reasoning = func(string) string { return "Maybe London.\nNo, let me think again." }
				f.thinkInContent = tc.thinkInContent
			})
			res := f.run("triviaqa", Config{Concurrency: 4, ReasoningTokens: 512}, set)
			n := len(items)
			if res.Status != StatusOK || res.Method != MethodChatGenerate || res.Metrics["exact_match"] != float64(right)/float64(n) {
				t.Fatalf("%+v %+v, want %d of %d", res, res.Failure, right, n)
			}
		})
	}
}

// When most TriviaQA answers are reasoning only, no exact_match is made of
// the rest: the eval fails and says how many.
func TestTriviaQAWhereMostAnswersAreReasoningOnlyFailsWithTheCount(t *testing.T) {
	t.Parallel()
	set := SampleTriviaQA()
	items := set.Items[TriviaShots:]
	first := items[0].Question
	f := newFakeLM(t, func(f *fakeLM) {
		chatOnlyLike(f)
		f.generate = triviaModel(map[string]string{first: items[0].Aliases[0]})
		f.reasoning = func(p string) string {
			if strings.Contains(p, "Question: "+first+"?\nAnswer:") {
				return "Easy.\n"
			}
			return strings.Repeat("hmm\n", 100)
		}
	})
	res := f.run("triviaqa", Config{Concurrency: 4, ReasoningTokens: 64}, set)
	want := fmt.Sprintf("%d of %d answers are reasoning only, no content within max_tokens 64", len(items)-1, len(items))
	if res.Status != StatusFailed || res.Metrics != nil || KindOf(res.Failure) != BadResponse || !strings.Contains(res.Failure.Detail, want) {
		t.Fatalf("%+v %+v, want failed: %s", res, res.Failure, want)
	}
}
