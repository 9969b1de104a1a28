package evals

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"strconv"
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
//
// The first question goes to /v1/completions (method generate); when that
// route is lacking (routeLacks: a chat-only provider's 404) it and every
// other question go to /v1/chat/completions, the prompt as one user message
// (method chat-generate). There the answer is read from the content, its
// leading blank lines dropped; an answer that is reasoning only is wrong
// and counted in NoAnswerMetric (on the first question, which chooses the
// route, it fails the eval), and when more than half are, the eval fails
// with the count.
func TriviaQA(ctx context.Context, r *Runner, set *TriviaSet, shots *TriviaSet) schema.EvalResult {
	res, _ := triviaQA(ctx, r, set, shots)
	return r.finish(res)
}

// triviaQA is TriviaQA with its items: one per question scored, by its ID
// (TriviaItem.ID), the answer read ("" for one that is reasoning only) and
// the first alias. No logprobs are asked, so none are kept.
func triviaQA(ctx context.Context, r *Runner, set *TriviaSet, shots *TriviaSet) (schema.EvalResult, []schema.EvalItem) {
	const name = "triviaqa"
	items := set.Items
	var sh []TriviaItem
	skipped := 0 // the set's own items taken as shots
	if shots != nil {
		sh = shots.Items[:min(TriviaShots, len(shots.Items))]
	} else {
		skipped = min(TriviaShots, len(items))
		sh, items = items[:skipped], items[skipped:]
	}
	if n := r.limit(DefaultTriviaLimit); n < len(items) {
		items = items[:n]
	}
	if len(items) == 0 {
		return noScore(name, MethodGenerate, newFailure(BadResponse, 0, nil, nil, "no question left to score after the shots")), nil
	}
	gen := map[string]any{"max_tokens": TriviaMaxTokens, "temperature": 0, "stop": []string{"\n"}}
	byCompletions := func(ctx context.Context, i int, prompt string) (string, *schema.EvalFailure, *schema.EvalFailure) {
		req := map[string]any{"model": r.model, "prompt": prompt}
		maps.Copy(req, gen)
		_, c, f := r.sender(i).complete(ctx, req)
		if f != nil {
			return "", nil, f
		}
		return c.Choices[0].Text, nil, nil
	}
	byChat := func(ctx context.Context, i int, prompt string) (string, *schema.EvalFailure, *schema.EvalFailure) {
		// The answer's content only: a thinking model's reasoning is no
		// answer (chatAnswer).
		content, unanswered, f := r.chatAnswer(ctx, i, prompt, gen,
			func(content string) bool { return strings.TrimSpace(content) != "" })
		// Content after reasoning opens with the blank line that ended it
		// (vLLM's deepseek_r1 and qwen3 parsers leave "\n\n" there), and
		// once asked without the "\n" stop, TriviaAnswer would cut there:
		// the answer starts at its first non-blank.
		return strings.TrimLeftFunc(content, unicode.IsSpace), unanswered, f
	}
	right, noAnswer := 0, 0
	var lastUnanswered *schema.EvalFailure
	var mu sync.Mutex
	scored := make([]schema.EvalItem, len(items))
	score := func(_ context.Context, _ string, i int, text string, unanswered *schema.EvalFailure) *schema.EvalFailure {
		mu.Lock()
		defer mu.Unlock()
		pred, ok := "", false
		if unanswered != nil {
			noAnswer++
			lastUnanswered = unanswered
		} else if pred = TriviaAnswer(text); ExactMatch(pred, items[i].Aliases) {
			right++
			ok = true
		}
		// A set built by hand may have no ids: its index stands in, as a
		// loader's does.
		id := cmp.Or(items[i].ID, "#"+strconv.Itoa(skipped+i))
		scored[i] = accuracyItem(name, id, pred, items[i].Answer, ok, nil)
		return nil
	}
	r.cfg.Progress.begin(name, len(items))
	rt, f := askEach(ctx, r, len(items), func(i int) string { return TriviaPrompt(sh, items[i]) }, nil, score,
		route[string]{method: MethodGenerate, ask: byCompletions},
		route[string]{method: MethodChatGenerate, ask: byChat, name: "chat"})
	if f != nil {
		return noScore(name, rt.method, f), nil
	}
	if 2*noAnswer > len(items) {
		// Most answers were reasoning only: no exact_match is made of the rest.
		lf := *lastUnanswered
		lf.Detail = joinDetail(fmt.Sprintf("%d of %d answers are reasoning only, no content within max_tokens %d", noAnswer, len(items), r.cfg.ReasoningTokens), lf.Detail)
		return noScore(name, rt.method, &lf), nil
	}
	return schema.EvalResult{Name: name, Status: StatusOK, Method: rt.method, N: len(items),
		Metrics: map[string]float64{"exact_match": float64(right) / float64(len(items)), NoAnswerMetric: float64(noAnswer)}}, scored
}
