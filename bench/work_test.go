package bench

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/glmbench/glmbench/bench/workload"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/engine/enginetest"
	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/engine/sched"
	"github.com/glmbench/glmbench/engine/sim"
	"github.com/glmbench/glmbench/engine/tokenizer"
	"github.com/glmbench/glmbench/reports/schema"
)

// workOptions starts an engine (the built-in's defaults: nano, pages of 64
// tokens, the radix cache on, then opts) and returns the load's options
// for it.
func workOptions(t *testing.T, opts ...enginetest.Option) *Options {
	t.Helper()
	e := enginetest.Start(t, opts...)
	ep := resolve(t, e.BaseURL(), e.ModelName())
	return &Options{
		Endpoint: ep, Shape: Shape{Model: ep.Model, IgnoreEOS: true},
		Limits:         endpoints.StreamLimits{TTFT: 60 * time.Second, Stall: 60 * time.Second},
		ConnectTimeout: 2 * time.Second, Nonce: NewNonce(),
	}
}

// runWork prepares and runs one expanded phase.
func runWork(t *testing.T, o *Options, ph workload.Phase, reqs []workload.Request) (*WorkPlan, PhaseRun) {
	t.Helper()
	plans, warns, err := PrepareWorkload(context.Background(), o, []WorkPhase{{Phase: ph, Reqs: reqs}})
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) > 0 {
		t.Fatalf("warnings: %q", warns)
	}
	run := RunWorkPhase(context.Background(), o, plans[0])
	for _, r := range run.Records {
		if !r.Completed() {
			t.Fatalf("request %d did not complete: %+v", r.I, r)
		}
	}
	return plans[0], run
}

// engineTokens is the engine's own count of a body: nano's tokenizer over
// its chat template, as the server renders it; for a completions body (a
// prompt, no messages), over the prompt's raw text.
func engineTokens(t *testing.T, body []byte) []int32 {
	t.Helper()
	cfg, err := model.Preset("nano")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.New(cfg.VocabSize)
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		endpoints.ChatRequest
		Prompt *string `json:"prompt"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	if req.Prompt != nil {
		return tok.EncodeSpecial(*req.Prompt)
	}
	msgs := make([]tokenizer.Message, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = tokenizer.Message{Role: m.Role, Content: m.Content}
	}
	ids, err := tok.ApplyChatTemplate(msgs, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// radixTruth is what the engine's radix cache serves each request of a
// plan sent one at a time in index order: the longest token prefix it
// shares with an earlier prompt, short of its last token, in whole pages;
// and that prefix's own length.
func radixTruth(t *testing.T, plan *WorkPlan, page int) (cached, shared []int) {
	t.Helper()
	var seen [][]int32
	out := make([]int, plan.N())
	shared = make([]int, plan.N())
	for i := range plan.items {
		ids := engineTokens(t, plan.body(i))
		best := 0
		for _, s := range seen {
			n := 0
			for n < len(s) && n < len(ids) && s[n] == ids[n] {
				n++
			}
			best = max(best, n)
		}
		out[i] = min(best, len(ids)-1) / page * page
		shared[i] = best
		seen = append(seen, ids)
	}
	return out, shared
}

func cachedOf(t *testing.T, r *schema.Record) int {
	t.Helper()
	if r.CachedTokens == nil {
		t.Fatalf("request %d: no cached_tokens recorded; the engine always sends them", r.I)
	}
	return *r.CachedTokens
}

func TestWorkloadPromptsLandOnTheirTargetsInTheEnginesTokens(t *testing.T) {
	t.Parallel()
	o := workOptions(t)
	// Lengths across the range a curve's points are apart, none of them a
	// probed one.
	var reqs []workload.Request
	for i, in := range []int{23, 37, 61, 90, 131, 177, 250, 333, 401, 512, 617, 700, 781, 850, 903, 999} {
		reqs = append(reqs, workload.Request{I: i, Input: in, Output: 2})
	}
	_, run := runWork(t, o, workload.Phase{Name: "mix", Kind: workload.Random}, reqs)
	worst := 0
	for _, r := range run.Records {
		d := r.Prompt - *r.TargetPrompt
		if abs(d) > Tolerance(*r.TargetPrompt) {
			t.Errorf("request %d: %d prompt tokens for a target of %d (off by %d, tolerance %d)", r.I, r.Prompt, *r.TargetPrompt, d, Tolerance(*r.TargetPrompt))
		}
		worst = max(worst, abs(d))
		if r.MaxTokens != 2 || r.N != 2 {
			t.Errorf("request %d: max_tokens %d, n %d; want 2 and 2", r.I, r.MaxTokens, r.N)
		}
	}
	t.Logf("largest drift %d tokens", worst)
	if d := run.Result.PromptDrift; d == nil || d.N != len(reqs) {
		t.Errorf("prompt drift %+v: want one over all %d requests", d, len(reqs))
	}
}

// sharedPrefixReqs is G groups of n requests in turn, each P+Q tokens.
func sharedPrefixReqs(groups, n, p, q, out int) []workload.Request {
	var reqs []workload.Request
	for i := range groups * n {
		reqs = append(reqs, workload.Request{I: i, Group: i%groups + 1, Input: p + q, PrefixTokens: p, Output: out})
	}
	return reqs
}

func TestSharedPrefixRequestsAfterTheFirstOfTheirGroupFindTheSystemPromptCached(t *testing.T) {
	t.Parallel()
	o := workOptions(t)
	o.MaxConcurrency = 1 // one at a time: each finds every earlier one cached
	ph := workload.Phase{Name: "chat", Kind: workload.SharedPrefix, Groups: 2, PrefixTokens: 400, QuestionTokens: 40}
	// 8 output tokens, not 2: the random-weight model's detokenizer holds
	// back a token that ends inside a UTF-8 character, and two such tokens
	// made a stream of no content event (empty) once in a CI run.
	plan, run := runWork(t, o, ph, sharedPrefixReqs(2, 4, 400, 40, 8))
	truth, shared := radixTruth(t, plan, 64)
	for i, r := range run.Records {
		got := cachedOf(t, &r)
		if got != truth[i] {
			t.Errorf("request %d (group %d): %d cached tokens; the radix cache holds %d of its prompt", i, r.Group, got, truth[i])
		}
		first := i < 2
		if first && got != 0 {
			t.Errorf("request %d is the first of group %d, yet %d tokens were cached", i, r.Group, got)
		}
		if !first {
			// The system prompt and its template, in whole pages.
			if want := *r.ExpectedCached / 64 * 64; got < want {
				t.Errorf("request %d: %d cached, below the %d pages of its group's %d shared tokens", i, got, want, *r.ExpectedCached)
			}
			// Expected is the system message as the endpoint counted it,
			// built to be 400 tokens: of the tokens really shared, all but
			// the template's first and the user turn's opening up to where
			// the nonce's digits part.
			if exp := *r.ExpectedCached; abs(exp-400) > Tolerance(400) || exp > shared[i] || shared[i]-exp > 32 {
				t.Errorf("request %d expects %d cached tokens; its system message is built to be 400, and it shares %d tokens with its group", i, exp, shared[i])
			}
		}
		if d := r.Prompt - 440; abs(d) > Tolerance(440) {
			t.Errorf("request %d: %d prompt tokens, target 440", i, r.Prompt)
		}
	}
	c := run.Result.Cache
	if c == nil || c.HitRate == nil || c.ExpectedHitRate == nil {
		t.Fatalf("cache block %+v: want hit and expected rates", c)
	}
	t.Logf("hit rate %.3f, expected %.3f", *c.HitRate, *c.ExpectedHitRate)
	if c.Hits != 6 || c.Misses != 2 {
		t.Errorf("%d hits and %d misses; want 6 and 2 (the first of each group)", c.Hits, c.Misses)
	}
}

func TestSharedPrefixTTFTIsLowerWithTheRadixCacheThanWithout(t *testing.T) {
	t.Parallel()
	// The simulated executor costs each prefill token 20 µs: a request that
	// finds its 1,000-token system prompt cached saves 15 of its 16 pages.
	cost := sim.CostModel{StepOverhead: time.Millisecond, PrefillToken: 20 * time.Microsecond, DecodeSeq: 10 * time.Microsecond}
	ph := workload.Phase{Name: "chat", Kind: workload.SharedPrefix, Groups: 2, PrefixTokens: 1000, QuestionTokens: 24}
	ttft := map[bool]float64{}
	for _, disable := range []bool{false, true} {
		o := workOptions(t, enginetest.Sim(cost), enginetest.Sched(func(c *sched.Config) { c.DisableRadixCache = disable }))
		o.MaxConcurrency = 1
		_, run := runWork(t, o, ph, sharedPrefixReqs(2, 6, 1000, 24, 2))
		ttft[disable] = *run.Result.TTFTMed
		if disable {
			for _, r := range run.Records {
				if got := cachedOf(t, &r); got != 0 {
					t.Errorf("radix cache off: request %d reports %d cached tokens", r.I, got)
				}
			}
		}
	}
	t.Logf("ttft median: %.2f ms cached, %.2f ms uncached", ttft[false]*1e3, ttft[true]*1e3)
	// 960 tokens saved at 20 µs is 19 ms; ask for half.
	if ttft[true]-ttft[false] < 0.0095 {
		t.Errorf("ttft median %.2f ms with the cache, %.2f ms without: want at least 9.5 ms less", ttft[false]*1e3, ttft[true]*1e3)
	}
}

// multiTurn is a multi-turn phase of sessions × turns, each turn user
// tokens and an answer of answer tokens, and its requests: turn k's input
// is the history of k−1 turns and answers, then its own user tokens.
func multiTurn(sessions, turns, user, answer int) (workload.Phase, []workload.Request) {
	var reqs []workload.Request
	for s := 1; s <= sessions; s++ {
		for k := 1; k <= turns; k++ {
			reqs = append(reqs, workload.Request{I: len(reqs), Session: s, Turn: k, UserTokens: user, Output: answer, Input: (k-1)*(user+answer) + user})
		}
	}
	return workload.Phase{Name: "talk", Kind: workload.MultiTurn, Sessions: sessions, Turns: turns, UserTokens: user, OutputTokens: answer}, reqs
}

func TestMultiTurnTurnsFindTheirHistoryCached(t *testing.T) {
	t.Parallel()
	o := workOptions(t)
	o.MaxConcurrency = 1
	ph, reqs := multiTurn(2, 4, 40, 8)
	plan, run := runWork(t, o, ph, reqs)
	truth, _ := radixTruth(t, plan, 64)
	for i, r := range run.Records {
		got := cachedOf(t, &r)
		if got != truth[i] {
			t.Errorf("session %d turn %d: %d cached tokens; the radix cache holds %d of its prompt", r.Session, r.Turn, got, truth[i])
		}
		if r.Turn == 1 {
			continue
		}
		prev := run.Records[i-1]
		if *r.ExpectedCached != prev.Prompt {
			t.Errorf("session %d turn %d expects %d cached; its history, turn %d's prompt, was %d tokens", r.Session, r.Turn, *r.ExpectedCached, prev.Turn, prev.Prompt)
		}
		// The history within a page: the whole previous prompt is a prefix.
		if got > prev.Prompt || prev.Prompt-got >= 64 {
			t.Errorf("session %d turn %d: %d cached; its history is %d tokens", r.Session, r.Turn, got, prev.Prompt)
		}
		if d := r.Prompt - *r.TargetPrompt; abs(d) > Tolerance(*r.TargetPrompt) {
			t.Errorf("session %d turn %d: %d prompt tokens, target %d", r.Session, r.Turn, r.Prompt, *r.TargetPrompt)
		}
	}
	// Each turn's body is the last one's, plus an answer and a user message.
	for i := 1; i < plan.N(); i++ {
		if plan.Reqs[i].Turn == 1 {
			continue
		}
		a, b := engineTokens(t, plan.body(i-1)), engineTokens(t, plan.body(i))
		if len(b) <= len(a) || !slices.Equal(a, b[:len(a)]) {
			t.Errorf("turn %d's prompt does not start with turn %d's", plan.Reqs[i].Turn, plan.Reqs[i-1].Turn)
		}
	}
}
