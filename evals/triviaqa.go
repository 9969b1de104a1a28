package evals

import (
	"context"
	"strings"
	"sync"
	"unicode"

	"github.com/glmbench/glmbench/reports/schema"
)

// TriviaQA settings.
const (
	// TriviaShots is the number of shots per prompt.
	TriviaShots = 5
	// DefaultTriviaLimit is how many questions are scored by default.
	DefaultTriviaLimit = 1000
	// TriviaMaxTokens bounds an answer; the newline stop ends it sooner.
	TriviaMaxTokens = 32
)

// TriviaPrompt is the 5-shot prompt of q, as lm-eval's triviaqa task
// builds it: "Question: {question}?\nAnswer:", each shot followed by " "
// and its answer and a blank line. The "?" is added even after a question
// mark, as lm-eval's template does, so scores stay comparable.
func TriviaPrompt(shots []TriviaItem, q TriviaItem) string {
	var b strings.Builder
	for _, s := range shots {
		b.WriteString("Question: " + s.Question + "?\nAnswer: " + s.Answer + "\n\n")
	}
	b.WriteString("Question: " + q.Question + "?\nAnswer:")
	return b.String()
}

// triviaPunct is what NormalizeAnswer blanks out: Python's
// string.punctuation and the quotes the official scorer adds.
const triviaPunct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~\u2018\u2019\u00b4`"

// NormalizeAnswer normalizes an answer as the official TriviaQA scorer
// does (triviaqa_evaluation.py normalize_answer): underscores and
// punctuation become spaces, lower case, the articles a, an and the are
// dropped, whitespace is collapsed.
func NormalizeAnswer(s string) string {
	s = strings.Map(func(r rune) rune {
		if strings.ContainsRune(triviaPunct, r) {
			return ' '
		}
		return unicode.ToLower(r)
	}, s)
	words := strings.Fields(s)
	out := words[:0]
	for _, w := range words {
		if w != "a" && w != "an" && w != "the" {
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
}

// TriviaAnswer is the answer a generation gives: its text up to the first
// newline, trimmed.
func TriviaAnswer(generated string) string {
	if i := strings.IndexByte(generated, '\n'); i >= 0 {
		generated = generated[:i]
	}
	return strings.TrimSpace(generated)
}

// ExactMatch reports whether pred equals any alias once both are normalized.
func ExactMatch(pred string, aliases []string) bool {
	p := NormalizeAnswer(pred)
	for _, a := range aliases {
		if NormalizeAnswer(a) == p {
			return true
		}
	}
	return false
}

// TriviaQA asks each question 5-shot (TriviaPrompt), greedy, stopping at a
// newline, and reports exact_match against any alias (ExactMatch). The
// shots are the first five items of shots when given, else of the set
// itself, which are then not scored. Config.Limit caps the questions
// (default 1000).
func TriviaQA(ctx context.Context, r *Runner, set *TriviaSet, shots *TriviaSet) schema.EvalResult {
	const name = "triviaqa"
	items := set.Items
	var sh []TriviaItem
	if shots != nil {
		sh = shots.Items[:min(TriviaShots, len(shots.Items))]
	} else {
		k := min(TriviaShots, len(items))
		sh, items = items[:k], items[k:]
	}
	if n := r.limit(DefaultTriviaLimit); n < len(items) {
		items = items[:n]
	}
	if len(items) == 0 {
		return noScore(name, MethodGenerate, newFailure(BadResponse, 0, nil, nil, "no question left to score after the shots"))
	}
	right := 0
	var mu sync.Mutex
	r.cfg.Progress.begin(name, len(items))
	f := r.forEach(ctx, len(items), func(ctx context.Context, i int) *schema.EvalFailure {
		req := map[string]any{"model": r.model, "prompt": TriviaPrompt(sh, items[i]), "max_tokens": TriviaMaxTokens,
			"temperature": 0, "stop": []string{"\n"}}
		_, c, f := r.sender(i).complete(ctx, req)
		if f != nil {
			return f
		}
		if ExactMatch(TriviaAnswer(c.Choices[0].Text), items[i].Aliases) {
			mu.Lock()
			right++
			mu.Unlock()
		}
		return nil
	})
	if f != nil {
		return noScore(name, MethodGenerate, f)
	}
	return schema.EvalResult{Name: name, Status: StatusOK, Method: MethodGenerate, N: len(items),
		Metrics: map[string]float64{"exact_match": float64(right) / float64(len(items))}}
}
