package conform

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/reports/schema"
)

// The checks of numerics: the same temperature-0 request answered the same
// way every time (determinism), and alone as inside a batch (batch
// invariance), compared token by token and logprob by logprob. Many real
// servers fail both by design: their kernels reduce in an order that
// depends on the batch's size, so a verdict says how far apart the answers
// were, never only that they differ.

const (
	// numericsTokens is the max_tokens of every answer the two checks
	// compare.
	numericsTokens = 32
	// numericsTop is the top_logprobs they ask for.
	numericsTop = 5
	// The determinism check's requests: repeatsInARow one after another,
	// then repeatsAtOnce all at once.
	repeatsInARow, repeatsAtOnce = 3, 5
	// batchBurst is the batch-invariance burst: the prompt under test and
	// batchBurst-1 others, all sent at once.
	batchBurst = 64
	// numericsLimit bounds each answer the two checks read: 32 tokens with
	// 5 top_logprobs each are some 15 KB of JSON, and a burst of 64 at the
	// bound holds 64 MiB, not 64 times answerLimit.
	numericsLimit = 1 << 20
)

// numericsHint says why a real server fails these checks, for their
// failures' details.
const numericsHint = "many servers are not, by default: a batch's size changes the kernels' reduction order, and a prefix cache the prefill's " +
	"(SGLang is deterministic with --enable-deterministic-inference; vLLM batch-invariant with VLLM_BATCH_INVARIANT=1)"

// sample is one answer as the numerics checks compare it: its tokens with
// their logprobs when the endpoint gives them, its text otherwise.
type sample struct {
	finish string
	text   []rune
	// toks is choices[0].logprobs.content; nil when the answer has none.
	toks []tokenLogprob
}

func sampleOf(c *chatCompletion) sample {
	r := replyOf(c)
	s := sample{finish: r.finish, text: []rune(r.text())}
	if lp := c.Choices[0].Logprobs; lp != nil && len(lp.Content) > 0 {
		s.toks = lp.Content
	}
	return s
}

// gap is how far apart two answers are. Positions count from 0, in tokens
// where both answers carry logprobs and in characters of their text where
// either does not.
type gap struct {
	// at is the first position where anything differs (a token, its
	// logprob, its top_logprobs, the end), -1 when the answers are
	// identical.
	at int
	// tokenAt is the first position where the tokens (or characters)
	// differ, or one answer ends before the other; -1 when none does. It is
	// later than at when logprobs differ first.
	tokenAt int
	// what says what differs at at.
	what string
	// delta is the largest |Δ logprob| over the positions both answers
	// reached from the same tokens (tokenAt included: its context is the
	// same), over every token either ranked there that both did: the chosen
	// token and the top_logprobs.
	delta float64
	// byText is set when the answers were compared by their text, for want
	// of logprobs.
	byText bool
}

func (g gap) identical() bool { return g.at < 0 }

// tokenKey names a token by its text and bytes.
func tokenKey(t tokenLogprob) string { return fmt.Sprintf("%q %s", t.Token, t.Bytes) }

// ranked is the logprob of every token an entry names, the chosen one and
// its top_logprobs, by tokenKey.
func ranked(t tokenLogprob) map[string]float64 {
	m := map[string]float64{tokenKey(t): t.Logprob}
	for _, x := range t.TopLogprobs {
		m[tokenKey(x)] = x.Logprob
	}
	return m
}

// sameTop reports whether two top_logprobs lists are the same, in order
// and number.
func sameTop(a, b []tokenLogprob) bool {
	return slices.EqualFunc(a, b, func(x, y tokenLogprob) bool {
		return tokenKey(x) == tokenKey(y) && x.Logprob == y.Logprob
	})
}

// compare says how far apart b is from a; r redacts the tokens it quotes.
func compare(r redactor, a, b sample) gap {
	g := gap{at: -1, tokenAt: -1}
	mark := func(i int, what string) {
		if g.at < 0 {
			g.at, g.what = i, what
		}
	}
	// end is the gap once the first n units agree: one answer is longer,
	// or the two stop for different reasons, or none.
	end := func(n int, sameLen bool) gap {
		if !sameLen {
			g.tokenAt = n
			mark(n, "one answer ends there")
		} else if a.finish != b.finish {
			mark(n, fmt.Sprintf("finish_reason %q then %q", a.finish, b.finish))
		}
		return g
	}
	if a.toks == nil || b.toks == nil {
		g.byText = true
		n := min(len(a.text), len(b.text))
		for i := range n {
			if a.text[i] != b.text[i] {
				g.tokenAt = i
				mark(i, "the text differs")
				return g
			}
		}
		return end(n, len(a.text) == len(b.text))
	}
	n := min(len(a.toks), len(b.toks))
	for i := range n {
		x, y := a.toks[i], b.toks[i]
		mx, my := ranked(x), ranked(y)
		for k, v := range mx {
			if w, ok := my[k]; ok {
				// NaN never counts as larger: a NaN logprob differs
				// (below), but has no size.
				if d := math.Abs(v - w); d > g.delta {
					g.delta = d
				}
			}
		}
		switch {
		case tokenKey(x) != tokenKey(y):
			g.tokenAt = i
			mark(i, fmt.Sprintf("the tokens differ, %q then %q", r.clip(x.Token, 16), r.clip(y.Token, 16)))
			return g
		case x.Logprob != y.Logprob:
			mark(i, "the same token, another logprob")
		case !sameTop(x.TopLogprobs, y.TopLogprobs):
			mark(i, "the same token, other top_logprobs")
		}
	}
	return end(n, len(a.toks) == len(b.toks))
}

// unit is what a gap's positions count.
func (g gap) unit() string {
	if g.byText {
		return "character"
	}
	return "token"
}

// size says how long an answer is, in the unit it is compared by.
func (smp sample) size(byText bool) string {
	if byText {
		return fmt.Sprintf("%d characters", len(smp.text))
	}
	return fmt.Sprintf("%d tokens", len(smp.toks))
}

// sameFooting drops the logprobs of every sample when one has none, so
// that all are compared by text and every position counts characters.
func sameFooting(samples ...*sample) {
	if slices.ContainsFunc(samples, func(x *sample) bool { return x != nil && x.toks == nil }) {
		for _, x := range samples {
			if x != nil {
				x.toks = nil
			}
		}
	}
}

// numericsBody is the chat both checks send: temperature 0, and logprobs
// with numericsTop top_logprobs unless plain.
func (s *suite) numericsBody(prompt string, plain bool) map[string]any {
	extra := map[string]any{"temperature": 0}
	if !plain {
		extra["logprobs"], extra["top_logprobs"] = true, numericsTop
	}
	return s.chatBody(prompt, numericsTokens, extra)
}

// numericsFirst sends a check's first request for prompt. An endpoint that
// refuses logprobs with a 4xx (one meaning "not this request") is asked
// again without: plain says the check's later requests go without them,
// and note why. When no answer came, problem says why and later says the
// endpoint refused it for now (429, 503).
func (s *suite) numericsFirst(ctx context.Context, prompt string) (smp sample, plain bool, note, problem string, later bool) {
	c, a, p := s.chatAnswerLimit(ctx, s.numericsBody(prompt, false), numericsLimit)
	if p != "" && a.err == nil && endpoints.RefusesRequest(a.Status) {
		refused := a.describe()
		if c, a, p = s.chatAnswerLimit(ctx, s.numericsBody(prompt, true), numericsLimit); p == "" {
			return sampleOf(c), true, "the endpoint refuses logprobs (" + refused + ")", "", false
		}
	}
	if p != "" {
		return sample{}, false, "", p, notNow(a)
	}
	return sampleOf(c), false, "", "", false
}

// byTextNote says why answers were compared by their text: note, or that
// they carry no logprobs.
func byTextNote(note string) string {
	if note == "" {
		note = "the answers carry no logprobs"
	}
	return note + ": their texts compared, character by character"
}

// parting says where differing answers' tokens (or characters: u) part,
// at tokenAt (-1: they never do), and, compared by logprobs, the largest
// |Δ logprob| before; whose opens it ("their", "the").
func parting(whose, u string, tokenAt int, delta float64, byText bool) string {
	s := fmt.Sprintf("%s %ss never part", whose, u)
	if tokenAt >= 0 {
		s = fmt.Sprintf("%s %ss part at %s %d", whose, u, u, tokenAt)
	}
	if !byText {
		s += fmt.Sprintf("; the largest |Δ logprob| %.3g", delta)
	}
	return s
}

// notNow reports whether a refused the request for now (429, 503), as a
// server past its capacity does, rather than failed it.
func notNow(a *answer) bool {
	if a == nil || a.err != nil {
		return false
	}
	c := endpoints.ClassifyStatus(a.Status) // 429, 503 or 529: busy
	return c == schema.RateLimited || c == schema.QueueFull
}

func checkDeterminism(ctx context.Context, s *suite) outcome {
	const n = repeatsInARow + repeatsAtOnce
	// Its own prompt, so that the first request finds no prefix of it in a
	// cache and the later ones do: a cache that changes the numbers fails
	// here.
	prompt := s.nonce + " " + storyPrompt
	when := func(k int) string {
		if k < repeatsInARow {
			return "in a row"
		}
		return "at once"
	}
	got := make([]*sample, n)
	first, plain, note, p, later := s.numericsFirst(ctx, prompt)
	switch {
	case later:
		return skip("request 1 of %d was refused for now (%s): not measured", n, p)
	case p != "":
		return fail("request 1 of %d: %s", n, p)
	}
	got[0] = &first
	answers, problems := s.repeatNumerics(ctx, prompt, plain, got)
	// A request refused for now is not compared, and said; any other
	// failure is the endpoint's, and fails the check.
	var refused []string
	for k, p := range problems {
		switch {
		case p == "":
		case notNow(answers[k]):
			refused = append(refused, fmt.Sprintf("request %d (%s): %s", k+1, when(k), p))
		default:
			return fail("request %d of %d (%s): %s", k+1, n, when(k), p)
		}
	}
	answered := n - len(refused)
	said := ""
	if len(refused) > 0 {
		said = fmt.Sprintf("; %d refused for now, not compared (%s)", len(refused), refused[0])
	}
	if answered < 2 {
		return skip("only %d of %d requests answered%s: nothing to compare", answered, n, said)
	}
	t := s.tally(got, when)
	how := fmt.Sprintf("%d answers (%d in a row, then %d at once)", answered, repeatsInARow, repeatsAtOnce)
	if answered < n {
		how = fmt.Sprintf("%d answers to %d requests (%d in a row, then %d at once)", answered, n, repeatsInARow, repeatsAtOnce)
	}
	if t.byText {
		said += "; " + byTextNote(note)
	}
	if len(t.kinds) == 1 {
		what := "with their logprobs and top-" + fmt.Sprint(numericsTop) + " logprobs, bit for bit"
		if t.byText {
			what = "the same text and finish_reason"
		}
		return pass("%s identical: %s each, %s%s", how, got[0].size(t.byText), what, said)
	}
	u := t.earliest.unit()
	return fail("not deterministic: %s give %d distinct outputs; answers %s differ from the first, the earliest at %s %d (counting from 0: %s) of %s, %s; %s%s",
		how, len(t.kinds), strings.Join(t.who, ", "), u, t.earliest.at, t.earliest.what, got[0].size(t.byText), parting("their", u, t.tokens, t.delta, t.byText), numericsHint, said)
}

// repeatNumerics sends the determinism check's requests 2 to len(got):
// repeatsInARow−1 one after another, then repeatsAtOnce all together.
// got[k] receives answer k's sample when it came, problems[k] what went
// wrong when it did not.
func (s *suite) repeatNumerics(ctx context.Context, prompt string, plain bool, got []*sample) (answers []*answer, problems []string) {
	n := len(got)
	answers, problems = make([]*answer, n), make([]string, n)
	ask := func(k int) {
		c, a, p := s.chatAnswerLimit(ctx, s.numericsBody(prompt, plain), numericsLimit)
		answers[k], problems[k] = a, p
		if p == "" {
			smp := sampleOf(c)
			got[k] = &smp
		}
	}
	for k := 1; k < repeatsInARow; k++ {
		ask(k)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for k := repeatsInARow; k < n; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ask(k)
		}()
	}
	close(start)
	wg.Wait()
	return answers, problems
}

// determinismTally is how the answers of the determinism check differ.
type determinismTally struct {
	kinds    []sample // one answer of each distinct kind
	earliest gap      // the earliest parting from the first answer
	tokens   int      // the earliest token at which one parts, -1 if none
	delta    float64  // the largest |Δ logprob| against the first
	who      []string // the answers that differ from the first
	byText   bool     // some comparison was by text alone
}

// tally counts the distinct outputs by comparing each answer with one of
// each kind seen before it, and measures every answer against the first.
func (s *suite) tally(got []*sample, when func(int) string) determinismTally {
	sameFooting(got...)
	t := determinismTally{earliest: gap{at: -1, tokenAt: -1}, tokens: -1}
	for k, smp := range got {
		if smp == nil {
			continue
		}
		if !slices.ContainsFunc(t.kinds, func(o sample) bool { return compare(s.redact(), o, *smp).identical() }) {
			t.kinds = append(t.kinds, *smp)
		}
		g := compare(s.redact(), *got[0], *smp)
		t.byText = t.byText || g.byText
		t.delta = max(t.delta, g.delta)
		if g.identical() {
			continue
		}
		t.who = append(t.who, fmt.Sprintf("%d (%s)", k+1, when(k)))
		if t.earliest.at < 0 || g.at < t.earliest.at {
			t.earliest = g
		}
		if g.tokenAt >= 0 && (t.tokens < 0 || g.tokenAt < t.tokens) {
			t.tokens = g.tokenAt
		}
	}
	return t
}

func checkBatchInvariance(ctx context.Context, s *suite) outcome {
	prompt := s.nonce + "-alone " + storyPrompt
	// The prompt alone twice: the second finds its prefix cached, as the
	// burst's will, so a cache's effect is not taken for the batch's.
	cold, plain, note, p, later := s.numericsFirst(ctx, prompt)
	switch {
	case later:
		return skip("the prompt alone was refused for now (%s): not measured", p)
	case p != "":
		return fail("the prompt alone: %s", p)
	}
	c, a, p := s.chatAnswerLimit(ctx, s.numericsBody(prompt, plain), numericsLimit)
	switch {
	case p != "" && notNow(a):
		return skip("the prompt alone, again, was refused for now (%s): not measured", p)
	case p != "":
		return fail("the prompt alone, again: %s", p)
	}
	alone := sampleOf(c)
	// The burst's other prompts are short and each its own, so the batch
	// holds 64 different sequences of different lengths.
	bodies := make([]map[string]any, batchBurst)
	bodies[0] = s.numericsBody(prompt, plain)
	for i := 1; i < batchBurst; i++ {
		bodies[i] = s.numericsBody(fmt.Sprintf("%s-%02d Count from %d to %d.", s.nonce, i, i, i+3+i%5), plain)
	}
	// Of the others only whether they were answered is kept: what the
	// burst holds is the target's answer and 63 problems.
	var target *chatCompletion
	var targetAnswer *answer
	problems := make([]string, batchBurst)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			c, a, p := s.chatAnswerLimit(ctx, bodies[i], numericsLimit)
			problems[i] = p
			if i == 0 {
				target, targetAnswer = c, a
			}
		}()
	}
	close(start)
	wg.Wait()
	others, first := 0, ""
	for i := 1; i < batchBurst; i++ {
		if problems[i] != "" {
			others++
			first = cmp.Or(first, problems[i])
		}
	}
	said := ""
	if others > 0 {
		said = fmt.Sprintf("; %d of the %d others got no answer, so the batch was smaller (%s)", others, batchBurst-1, first)
	}
	switch {
	case problems[0] != "" && notNow(targetAnswer):
		return skip("the prompt inside a burst of %d at once was refused for now (%s)%s: not measured at this load", batchBurst, problems[0], said)
	case problems[0] != "":
		return fail("the prompt inside a burst of %d at once: %s", batchBurst, problems[0])
	}
	inBurst := sampleOf(target)
	sameFooting(&cold, &alone, &inBurst)
	g := compare(s.redact(), alone, inBurst)
	if g.byText {
		said += "; " + byTextNote(note)
	}
	if lone := compare(s.redact(), cold, alone); !lone.identical() {
		said += fmt.Sprintf("; the prompt alone twice already differs at %s %d (%s): see determinism", lone.unit(), lone.at, lone.what)
	}
	if g.identical() {
		what := "with their logprobs and top-" + fmt.Sprint(numericsTop) + " logprobs, identical bit for bit"
		if g.byText {
			what = "the same text and finish_reason"
		}
		return pass("the prompt alone and inside a burst of %d different prompts at once: %s, %s%s", batchBurst, alone.size(g.byText), what, said)
	}
	u := g.unit()
	return fail("not batch-invariant: the prompt alone and inside a burst of %d at once differ from %s %d (counting from 0: %s) of %s, %s; %s%s",
		batchBurst, u, g.at, g.what, alone.size(g.byText), parting("the", u, g.tokenAt, g.delta, g.byText), numericsHint, said)
}
