package evals

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
)

// itemIDs are the items' IDs, checked to be unique and of eval.
func itemIDs(t *testing.T, eval string, items []schema.EvalItem) []string {
	t.Helper()
	seen := map[string]bool{}
	var ids []string
	for _, it := range items {
		if it.Eval != eval || it.ID == "" || seen[it.ID] {
			t.Fatalf("item %+v: want eval %s and an ID of its own", it, eval)
		}
		seen[it.ID] = true
		ids = append(ids, it.ID)
	}
	return ids
}

// meanScore is the mean of the items' scores, and of their Correct (−1
// where an item has none).
func meanScore(items []schema.EvalItem) (score, correct float64) {
	for _, it := range items {
		score += it.Score
		switch {
		case it.Correct == nil:
			correct = math.Inf(-1)
		case *it.Correct:
			correct++
		}
	}
	n := float64(len(items))
	return score / n, correct / n
}

func TestMMLUItemsPairAcrossRunsAndAverageToAcc(t *testing.T) {
	t.Parallel()
	set := SampleMMLU()
	f := newFakeLM(t, func(f *fakeLM) { f.letter = mmluModel(set) })
	res1, items1 := runEvalItems("mmlu", Config{Endpoint: f.endpoint(), Concurrency: 4}, set)
	res2, items2 := runEvalItems("mmlu", Config{Endpoint: f.endpoint(), Concurrency: 1}, set)
	if res1.Status != StatusOK || len(items1) != res1.N || res1.N != 16 {
		t.Fatalf("%+v: %d items, want one per question", res1, len(items1))
	}
	ids := itemIDs(t, "mmlu", items1)
	if !slices.Equal(ids, itemIDs(t, "mmlu", items2)) || res2.Metrics["acc"] != res1.Metrics["acc"] {
		t.Fatalf("IDs %v then %v: two runs must name the same items alike", ids, itemIDs(t, "mmlu", items2))
	}
	if ids[0] != "astronomy/0" || ids[4] != "high_school_geography/0" || ids[15] != "philosophy/3" {
		t.Errorf("IDs %v, want subject/index in set order", ids)
	}
	score, correct := meanScore(items1)
	if score != 7.0/16 || correct != 7.0/16 || res1.Metrics["acc"] != 7.0/16 {
		t.Errorf("mean score %v, mean correct %v, acc %v: want all 7/16", score, correct, res1.Metrics["acc"])
	}
	for _, it := range items1 {
		// By echo every letter has a log-likelihood; the prediction is the
		// likeliest, and right exactly when it is the answer.
		if len(it.Logprobs) != 4 || it.Prediction != Letters[Argmax([4]float64(it.Logprobs))] || *it.Correct != (it.Prediction == it.Answer) {
			t.Errorf("item %+v: want the four letters' logprobs, their argmax as prediction", it)
		}
	}
	// Limit 2 per subject keeps each subject's first two, by the same IDs.
	_, some := runEvalItems("mmlu", Config{Endpoint: f.endpoint(), Limit: 2}, set)
	if got := itemIDs(t, "mmlu", some); len(got) != 8 || got[1] != "astronomy/1" || got[2] != "high_school_geography/0" {
		t.Errorf("IDs with limit 2: %v", got)
	}
}

func TestInfiniteLogprobsAreNotKept(t *testing.T) {
	t.Parallel()
	// A greedy answer scores its letter 0 and the rest −Inf, which JSON
	// cannot hold: such an item keeps no logprobs rather than holes.
	inf := math.Inf(-1)
	if got := finiteLogprobs([]float64{0, inf, inf, inf}); got != nil {
		t.Errorf("%v, want none", got)
	}
	if got := finiteLogprobs([]float64{-1, -2, -3, -4}); len(got) != 4 {
		t.Errorf("%v, want all four", got)
	}
}

func TestTriviaQAItemsAreByQuestionID(t *testing.T) {
	t.Parallel()
	set := SampleTriviaQA()
	answers := map[string]string{}
	for i, it := range set.Items[TriviaShots:] {
		if i%2 == 0 {
			answers[it.Question] = it.Aliases[0]
		}
	}
	f := newFakeLM(t, func(f *fakeLM) { f.generate = triviaModel(answers) })
	res, items := runEvalItems("triviaqa", Config{Endpoint: f.endpoint(), Concurrency: 4}, set)
	_, again := runEvalItems("triviaqa", Config{Endpoint: f.endpoint(), Concurrency: 1}, set)
	n := len(set.Items) - TriviaShots
	if res.Status != StatusOK || len(items) != n {
		t.Fatalf("%+v: %d items, want %d", res, len(items), n)
	}
	ids := itemIDs(t, "triviaqa", items)
	if !slices.Equal(ids, itemIDs(t, "triviaqa", again)) || ids[0] != set.Items[TriviaShots].ID || !strings.HasPrefix(ids[0], "glmbench_") {
		t.Fatalf("IDs %v: want the sample's QuestionIds, the same twice", ids)
	}
	score, correct := meanScore(items)
	if want := res.Metrics["exact_match"]; score != want || correct != want || want != float64((n+1)/2)/float64(n) {
		t.Errorf("mean score %v, correct %v, exact_match %v: want %d of %d", score, correct, want, (n+1)/2, n)
	}
	if items[0].Prediction != set.Items[TriviaShots].Aliases[0] || items[0].Answer != set.Items[TriviaShots].Answer || !*items[0].Correct {
		t.Errorf("first item %+v", items[0])
	}
}

func TestTriviaQAIDsComeFromTheFileOrItsIndex(t *testing.T) {
	t.Parallel()
	in := `{"question": "Q1", "answer": "a", "question_id": "tc_7"}
{"question": "Q2", "answer": "b"}
`
	set, err := ParseTriviaQA("x.jsonl", strings.NewReader(in), 0)
	if err != nil {
		t.Fatal(err)
	}
	if set.Items[0].ID != "tc_7" || set.Items[1].ID != "#1" {
		t.Errorf("IDs %q %q, want the file's, then the index", set.Items[0].ID, set.Items[1].ID)
	}
}

// checkDocItems checks ppl-like items against their result: one per
// document scored, IDs the document indexes, Σ nll / Σ tokens the
// result's log-ppl, and each score its document's nll per token.
func checkDocItems(t *testing.T, eval string, res schema.EvalResult, items []schema.EvalItem, n int) {
	t.Helper()
	if res.Status != StatusOK || len(items) != n {
		t.Fatalf("%+v: %d items, want %d", res, len(items), n)
	}
	ids := itemIDs(t, eval, items)
	var nll float64
	var tokens int
	for i, it := range items {
		if ids[i] != strings.TrimSpace(ids[i]) || it.NLL == nil || it.Tokens <= 0 || math.Abs(it.Score-*it.NLL/float64(it.Tokens)) > 1e-12 {
			t.Fatalf("item %+v: want its nll, tokens and nll per token", it)
		}
		nll += *it.NLL
		tokens += it.Tokens
	}
	if float64(tokens) != res.Metrics["tokens"] || math.Abs(math.Exp(nll/float64(tokens))-res.Metrics["ppl"]) > 1e-9*res.Metrics["ppl"] {
		t.Errorf("items sum to %d tokens, ppl %v; result %v", tokens, math.Exp(nll/float64(tokens)), res.Metrics)
	}
}

func TestPPLItemsSumToThePPL(t *testing.T) {
	t.Parallel()
	docs := SampleDocs()
	withEmpty := &Docs{From: "test", Docs: append([]Doc{{Text: "x", Words: 1, Bytes: 1}}, docs.Docs...)}
	for _, tc := range []struct {
		name      string
		configure func(f *fakeLM)
	}{
		{"token ids by echo", func(f *fakeLM) {}},
		{"text pieces", func(f *fakeLM) { f.noTokenIDs = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeLM(t, tc.configure)
			res, items := runEvalItems("ppl", Config{Endpoint: f.endpoint(), Window: 40, Concurrency: 3}, withEmpty)
			checkDocItems(t, "ppl", res, items, len(docs.Docs))
			if items[0].ID != "1" {
				// The one-byte document 0 has no token to score, so no item.
				t.Errorf("first ID %q, want 1", items[0].ID)
			}
			_, again := runEvalItems("ppl", Config{Endpoint: f.endpoint(), Window: 40, Concurrency: 1}, withEmpty)
			if !slices.EqualFunc(items, again, func(a, b schema.EvalItem) bool {
				// The windows' sums may add up in another order.
				return a.ID == b.ID && a.Tokens == b.Tokens && math.Abs(*a.NLL-*b.NLL) < 1e-9
			}) {
				t.Errorf("two runs' items differ: %+v, %+v", items, again)
			}
		})
	}
}

func TestLongPPLItemsSumToThePPL(t *testing.T) {
	t.Parallel()
	gen := strings.Repeat("ab", 50)
	f := newFakeLM(t, func(f *fakeLM) { f.generate = func(string) string { return gen } })
	res, items := runEvalItems("long-ppl", Config{Endpoint: f.endpoint(), GenTokens: len(gen), Limit: 3}, SampleDocs())
	checkDocItems(t, "long-ppl", res, items, 3)
	if ids := itemIDs(t, "long-ppl", items); !slices.Equal(ids, []string{"0", "1", "2"}) {
		t.Errorf("IDs %v", ids)
	}
}

func TestNoScoreGivesNoItems(t *testing.T) {
	t.Parallel()
	f := newFakeLM(t, func(f *fakeLM) { f.echoStatus, f.echoBody = 400, `{"error": {"message": "echo is not supported"}}` })
	res, items := runEvalItems("ppl", Config{Endpoint: f.endpoint()}, SampleDocs())
	if res.Status == StatusOK || items != nil {
		t.Errorf("%+v with %d items: want no score and no items", res, len(items))
	}
}
