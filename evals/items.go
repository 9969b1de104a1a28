package evals

import (
	"math"
	"strconv"

	"github.com/glmbench/glmbench/reports/schema"
)

// Per-item results (schema.EvalItem, one line of evals.jsonl each), so that
// two runs of an eval can be compared item by item (reports' paired
// comparison). An item's ID is the same in every run on the same data set:
//
//	ppl, long-ppl  the document's index in the data set ("0", "1", …)
//	mmlu           the subject and the question's index in its test split
//	               ("anatomy/3")
//	triviaqa       the question's QuestionId, or "#N" (N its index in the
//	               data set) where the set gives none
//
// An eval that gives no score gives no items.

// docItem is a perplexity item: document i's summed nll (nats) over its
// tokens scored tokens; its score is the document's log-ppl, nll/tokens.
func docItem(eval string, i int, nll float64, tokens int) schema.EvalItem {
	return schema.EvalItem{Eval: eval, ID: strconv.Itoa(i), Score: nll / float64(tokens), NLL: &nll, Tokens: tokens}
}

// accuracyItem is an accuracy item: right scores 1, wrong 0.
func accuracyItem(eval, id, pred, answer string, right bool, logprobs []float64) schema.EvalItem {
	score := 0.0
	if right {
		score = 1
	}
	return schema.EvalItem{Eval: eval, ID: id, Prediction: pred, Answer: answer, Score: score, Correct: &right, Logprobs: logprobs}
}

// finiteLogprobs is xs when every value is finite, else nil: a letter
// absent from the top logprobs (or a greedy answer's letters) scores −Inf,
// which JSON cannot carry, and a list with holes would misplace the rest.
func finiteLogprobs(xs []float64) []float64 {
	for _, x := range xs {
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil
		}
	}
	return xs
}

// compactItems drops the zero entries of items (an item not scored: a
// document with no token to score), keeping the order.
func compactItems(items []schema.EvalItem) []schema.EvalItem {
	out := items[:0]
	for _, it := range items {
		if it.ID != "" {
			out = append(out, it)
		}
	}
	return out
}
