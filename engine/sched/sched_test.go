package sched

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/engine/sampler"
	"github.com/glmbench/glmbench/kernels"
)

const vocabLimit = 273 // bytes + GLM specials; above is padding

type harness struct {
	m *model.Model
	s *Scheduler
}

// start runs a scheduler over the nano model with a pool of pages pages.
func start(t *testing.T, cfg Config, pages, pageSize int) *harness {
	t.Helper()
	return startExecObs(t, cfg, pages, pageSize, nil, nil)
}

func prompt(n, salt int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32((i*31 + salt*17 + 3) % 256)
	}
	return out
}

// collect reads a stream to its end.
func collect(t *testing.T, st *Stream) ([]int32, []Event) {
	t.Helper()
	return collectWithin(t, st, 60*time.Second)
}

// collectWithin reads a stream to its end, failing the test after d.
func collectWithin(t *testing.T, st *Stream, d time.Duration) ([]int32, []Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var toks []int32
	var all []Event
	for {
		evs, err := st.Next(ctx)
		if err != nil {
			if err == errStreamDone {
				return toks, all
			}
			t.Fatalf("stream: %v", err)
		}
		for _, ev := range evs {
			toks = append(toks, ev.Tokens...)
			all = append(all, ev)
			if ev.Finish != nil {
				return toks, all
			}
		}
	}
}

// collectAll submits reqs in order, reads their streams at once and
// returns each one's tokens.
func collectAll(t *testing.T, s *Scheduler, reqs []*Request) [][]int32 {
	t.Helper()
	out := make([][]int32, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		st := mustSubmit(t, s, r)
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], _ = collect(t, st)
		}()
	}
	wg.Wait()
	return out
}

func greedy(n int) Params {
	return Params{MaxNewTokens: n, IgnoreEOS: true, Sampling: sampler.Params{Temperature: 0}}
}

// direct decodes greedily with the model alone, one token per forward pass.
func direct(t *testing.T, h *harness, p []int32, n int) []int32 {
	t.Helper()
	mc := h.m.Cfg
	m := model.New(mc, h.m.W, kernels.Default(), model.NewKVCache(mc, (len(p)+n)/4+2, 4))
	pages, _ := m.KV.Alloc(m.KV.Pages)
	toks := slices.Clone(p)
	var out []int32
	pos := 0
	for range n {
		o := m.Forward([]model.Seq{{Tokens: toks[pos:], Pos: pos, Slots: m.KV.SlotsFor(nil, pages, 0, len(toks)), Logits: model.LastRow}})
		row := o.Logits.Row(0)
		for i := vocabLimit; i < len(row); i++ {
			row[i] = float32(math.Inf(-1))
		}
		next := sampler.Argmax(row)
		pos = len(toks)
		toks = append(toks, next)
		out = append(out, next)
	}
	return out
}

func TestGreedyOutputEqualsTheModelAlone(t *testing.T) {
	t.Parallel()
	h := start(t, Config{}, 256, 4)
	p := prompt(30, 1)
	st, err := h.s.Submit(&Request{Prompt: p, Params: greedy(12)})
	if err != nil {
		t.Fatal(err)
	}
	got, evs := collect(t, st)
	if want := direct(t, h, p, 12); !slices.Equal(got, want) {
		t.Fatalf("scheduler %v, model alone %v", got, want)
	}
	last := evs[len(evs)-1]
	if last.Finish.Reason != "length" || last.PromptTokens != 30 || last.CompletionTokens != 12 {
		t.Fatalf("last event %+v", last)
	}
}

func TestTemperatureZeroIsTheSameAloneAndAmong64(t *testing.T) {
	t.Parallel()
	t.Run("prefill first", func(t *testing.T) { t.Parallel(); sameAmong64(t, false) })
	t.Run("mixed chunks", func(t *testing.T) { t.Parallel(); sameAmong64(t, true) })
}

func sameAmong64(t *testing.T, mixed bool) {
	h := start(t, Config{ChunkedPrefillSize: 64, EnableMixedChunk: mixed}, 2048, 1)
	p := prompt(40, 2)
	st, _ := h.s.Submit(&Request{Prompt: p, Params: greedy(10)})
	alone, _ := collect(t, st)
	reqs := make([]*Request, 64)
	for i := range reqs {
		pr := p
		if i%2 == 1 {
			pr = prompt(25+i, 100+i) // others, of other lengths
		}
		reqs[i] = &Request{Prompt: pr, Params: greedy(10)}
	}
	results := collectAll(t, h.s, reqs)
	for i := 0; i < 64; i += 2 {
		if !slices.Equal(results[i], alone) {
			t.Fatalf("request %d among 64 gave %v, alone %v", i, results[i], alone)
		}
	}
}

func TestChunkedPrefillGivesTheSameTokens(t *testing.T) {
	t.Parallel()
	p := prompt(90, 3)
	whole := start(t, Config{ChunkedPrefillSize: -1}, 256, 1)
	st, _ := whole.s.Submit(&Request{Prompt: p, Params: greedy(8)})
	want, _ := collect(t, st)
	chunked := start(t, Config{ChunkedPrefillSize: 16}, 256, 1)
	st, _ = chunked.s.Submit(&Request{Prompt: p, Params: greedy(8)})
	got, _ := collect(t, st)
	if !slices.Equal(got, want) {
		t.Fatalf("chunked %v, whole %v", got, want)
	}
}

func TestPrefixCacheHitsOnASharedPrefixAndMissesOnDistinctOnes(t *testing.T) {
	t.Parallel()
	h := start(t, Config{}, 512, 1)
	base := prompt(64, 4)
	st, _ := h.s.Submit(&Request{Prompt: base, Params: greedy(4)})
	first, evs := collect(t, st)
	if evs[len(evs)-1].CachedTokens != 0 {
		t.Fatal("the first request hit the cache")
	}
	shared := append(slices.Clone(base[:48]), prompt(20, 5)...)
	st, _ = h.s.Submit(&Request{Prompt: shared, Params: greedy(4)})
	_, evs = collect(t, st)
	if c := evs[len(evs)-1].CachedTokens; c != 48 {
		t.Fatalf("shared prefix: %d cached tokens, want 48", c)
	}
	st, _ = h.s.Submit(&Request{Prompt: prompt(64, 6), Params: greedy(4)})
	_, evs = collect(t, st)
	if c := evs[len(evs)-1].CachedTokens; c != 0 {
		t.Fatalf("distinct prompt: %d cached tokens", c)
	}
	// The same prompt again is served from the cache and gives the same tokens.
	st, _ = h.s.Submit(&Request{Prompt: base, Params: greedy(4)})
	again, evs := collect(t, st)
	if !slices.Equal(again, first) || evs[len(evs)-1].CachedTokens != 63 {
		t.Fatalf("repeat: %v (cached %d), first %v", again, evs[len(evs)-1].CachedTokens, first)
	}
	// The counters behind the cache hit rate: every prompt token looked up
	// (64+68+64+64), and the cached ones (0+48+0+63).
	deadline := time.Now().Add(5 * time.Second)
	for st := h.s.Stats(); st.PrefixQueried != 260 || st.PrefixHit != 111; st = h.s.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("prefix queried %d, hit %d; want 260 and 111", st.PrefixQueried, st.PrefixHit)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestQueueOverflowIsAnsweredWith503(t *testing.T) {
	t.Parallel()
	h := start(t, Config{MaxQueuedRequests: 1, MaxRunningRequests: 1}, 256, 1)
	var streams []*Stream
	for i := range 6 {
		st, err := h.s.Submit(&Request{Prompt: prompt(20, i), Params: greedy(30)})
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, st)
	}
	full := 0
	for _, st := range streams {
		_, evs := collect(t, st)
		f := evs[len(evs)-1].Finish
		if f.Err != nil {
			if f.Err != ErrQueueFull || f.Reason != "abort" {
				t.Fatalf("finish %+v", f)
			}
			full++
		}
	}
	if full == 0 || full == 6 {
		t.Fatalf("%d of 6 refused as queue full", full)
	}
}

func TestAbortFreesTheKVCache(t *testing.T) {
	t.Parallel()
	h := start(t, Config{DisableRadixCache: true}, 8192, 1)
	st, _ := h.s.Submit(&Request{Prompt: prompt(50, 7), Params: greedy(8000)}) // long enough to abort mid-way
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := st.Next(ctx); err != nil { // generating now
		t.Fatal(err)
	}
	// Stats are published after each step: wait for one that shows the request.
	for deadline := time.Now().Add(5 * time.Second); h.s.Stats().KVUsedTokens == 0; {
		if time.Now().After(deadline) {
			t.Fatal("a running request holds no KV")
		}
		time.Sleep(time.Millisecond)
	}
	st.Abort()
	_, evs := collect(t, st)
	if evs[len(evs)-1].Finish.Reason != "abort" {
		t.Fatalf("finish %+v", evs[len(evs)-1].Finish)
	}
	deadline := time.Now().Add(5 * time.Second)
	for h.s.Stats().KVUsedTokens != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if used := h.s.Stats().KVUsedTokens; used != 0 {
		t.Fatalf("%d KV tokens still used after the abort", used)
	}
}

func TestRetractionUnderKVPressureKeepsOutputsExact(t *testing.T) {
	t.Parallel()
	// 16 requests of 20 + 40 tokens need 960 slots; the pool has 320, so
	// decode runs out and retracts, and retracted requests re-prefill.
	h := start(t, Config{DisableRadixCache: true}, 320, 1)
	reqs := make([]*Request, 16)
	for i := range reqs {
		reqs[i] = &Request{Prompt: prompt(20, 10+i), Params: greedy(40)}
	}
	got := collectAll(t, h.s, reqs)
	if h.s.Stats().Retractions == 0 {
		t.Fatal("no request was retracted")
	}
	for i := range got {
		if want := direct(t, h, prompt(20, 10+i), 40); !slices.Equal(got[i], want) {
			t.Fatalf("request %d: %v, alone %v", i, got[i], want)
		}
	}
}

func TestEchoPromptLogprobsMatchTheModel(t *testing.T) {
	t.Parallel()
	h := start(t, Config{ChunkedPrefillSize: 8}, 256, 1)
	p := prompt(21, 8)
	st, _ := h.s.Submit(&Request{Prompt: p, Params: Params{MaxNewTokens: 0, PromptLogprobs: true, PromptTopLogprobs: 2}})
	_, evs := collect(t, st)
	lp := evs[0].PromptLogprobs
	if len(lp) != 21 || lp[0] != nil {
		t.Fatalf("%d prompt logprobs, first %v", len(lp), lp[0])
	}
	// The model's own forward pass over the prompt, in one piece.
	mc := h.m.Cfg
	m := model.New(mc, h.m.W, kernels.Default(), model.NewKVCache(mc, 8, 4))
	pages, _ := m.KV.Alloc(8)
	out := m.Forward([]model.Seq{{Tokens: p, Slots: m.KV.SlotsFor(nil, pages, 0, 21), Logits: model.AllRows}})
	for i := 1; i < 21; i++ {
		row := out.Logits.Row(i - 1)
		for j := vocabLimit; j < len(row); j++ {
			row[j] = float32(math.Inf(-1))
		}
		ls := make([]float32, len(row))
		sampler.LogSoftmax(ls, row)
		if d := math.Abs(float64(ls[p[i]] - lp[i].Logprob)); d > 1e-4 {
			t.Fatalf("prompt token %d: logprob %v, model %v", i, lp[i].Logprob, ls[p[i]])
		}
		if len(lp[i].Top) != 2 || lp[i].Top[0].Logprob < lp[i].Top[1].Logprob {
			t.Fatalf("top logprobs %+v", lp[i].Top)
		}
	}
	if f := evs[len(evs)-1].Finish; f.Reason != "length" || evs[len(evs)-1].CompletionTokens != 0 {
		t.Fatalf("finish %+v", f)
	}
}

func TestSubmitRefusesWhatCanNeverFit(t *testing.T) {
	t.Parallel()
	h := start(t, Config{}, 64, 1)
	if _, err := h.s.Submit(&Request{Prompt: prompt(60, 1), Params: greedy(10)}); err == nil {
		t.Fatal("a request larger than the KV pool was accepted")
	}
	if _, err := h.s.Submit(&Request{Prompt: make([]int32, 16380), Params: greedy(10)}); err == nil {
		t.Fatal("a request beyond the context was accepted")
	}
}

// countingExec counts prefill batches and those that also carry decode tokens.
type countingExec struct {
	Executor
	mu                   sync.Mutex
	prefills, withDecode int
}

func (c *countingExec) Forward(seqs []model.Seq) *model.Output {
	prefill, decode := false, false
	for _, s := range seqs {
		if len(s.Tokens) > 1 {
			prefill = true
		} else if s.Pos > 0 && s.Logits == model.LastRow {
			decode = true
		}
	}
	c.mu.Lock()
	if prefill {
		c.prefills++
		if decode {
			c.withDecode++
		}
	}
	c.mu.Unlock()
	return c.Executor.Forward(seqs)
}

func TestMixedChunksKeepDecodingWhilePrefillsArrive(t *testing.T) {
	t.Parallel()
	for _, mixed := range []bool{false, true} {
		mc, _ := model.Preset("nano")
		m := model.New(mc, model.Synth(mc, 1), kernels.Default(), model.NewKVCache(mc, 8192, 1))
		exec := &countingExec{Executor: m}
		s, err := New(Config{ChunkedPrefillSize: 32, MaxPrefillTokens: 32, EnableMixedChunk: mixed, MaxTotalTokens: 8192, PageSize: 1, ContextLength: 16384}, exec, nil, vocabLimit, nil)
		if err != nil {
			t.Fatal(err)
		}
		go s.Run()
		first, _ := s.Submit(&Request{Prompt: prompt(10, 1), Params: greedy(6000)})
		if _, err := first.Next(context.Background()); err != nil { // decoding now
			t.Fatal(err)
		}
		// 40 prompts of 160 tokens: 200 prefill batches of 32 tokens.
		var rest []*Stream
		for i := range 40 {
			st, _ := s.Submit(&Request{Prompt: prompt(160, 50+i), Params: greedy(1)})
			rest = append(rest, st)
		}
		for _, st := range rest {
			collect(t, st)
		}
		first.Abort()
		s.Shutdown(context.Background())
		exec.mu.Lock()
		prefills, withDecode := exec.prefills, exec.withDecode
		exec.mu.Unlock()
		// Prefill first pauses decoding while prefills keep coming; mixed
		// chunks decode the running request in every prefill batch.
		if prefills < 200 || (!mixed && withDecode != 0) || (mixed && withDecode < prefills-1) {
			t.Errorf("mixed=%v: %d prefill batches, %d of them with decode tokens", mixed, prefills, withDecode)
		}
	}
}

func TestTokensGrowWithTheOutputWithoutCopyingThePrompt(t *testing.T) {
	t.Parallel()
	p := prompt(1000, 1)
	q := newReq(&Request{Prompt: p, Params: greedy(50)})
	first := &q.tokens()[0]
	want := slices.Clone(p)
	for i := range 50 {
		q.appendOut(int32(i))
		want = append(want, int32(i))
		toks := q.tokens()
		if !slices.Equal(toks, want) || !slices.Equal(q.out, want[len(p):]) {
			t.Fatalf("after %d emits: tokens %d long, out %v", i+1, len(toks), q.out)
		}
		if &toks[0] != first {
			t.Fatalf("after %d emits the prompt was copied to a new array", i+1)
		}
	}
	// Beyond the room reserved for output it still holds prompt + output.
	q = newReq(&Request{Prompt: p, Params: greedy(1)})
	for i := range 3 {
		q.appendOut(int32(i))
	}
	if toks := q.tokens(); !slices.Equal(toks[:len(p)], p) || !slices.Equal(toks[len(p):], []int32{0, 1, 2}) || !slices.Equal(q.out, []int32{0, 1, 2}) {
		t.Fatalf("tokens %v…, out %v", toks[len(p):], q.out)
	}
}

// BenchmarkDecodeTokens is the per-step token bookkeeping of a decode step:
// 929 running requests with 8K-token prompts each emit one token and hand
// their tokens to the batch. Reproduce with
// go test -run '^$' -bench DecodeTokens ./engine/sched/
func BenchmarkDecodeTokens(b *testing.B) {
	qs := make([]*req, 929)
	for i := range qs {
		qs[i] = newReq(&Request{Prompt: prompt(8192, i), Params: greedy(clipMaxNewTokens)})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%clipMaxNewTokens == 0 { // room for output used up: start over
			for _, q := range qs {
				q.all, q.out = q.all[:len(q.r.Prompt)], q.all[len(q.r.Prompt):len(q.r.Prompt)]
			}
		}
		for _, q := range qs {
			q.appendOut(1)
			if toks := q.tokens(); toks[len(toks)-1] != 1 {
				b.Fatal("last token lost")
			}
		}
	}
}

func TestAnAbortCarriesItsReasonAndTheTokensGeneratedSoFar(t *testing.T) {
	t.Parallel()
	mc, _ := model.Preset("nano")
	m := model.New(mc, model.Synth(mc, 1), kernels.Default(), model.NewKVCache(mc, 64, 1))
	s, err := New(Config{MaxTotalTokens: 64, PageSize: 1, ContextLength: 1024}, m, nil, vocabLimit, nil) // not run: abort is called directly
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ err error }{{ErrShuttingDown}, {ErrQueueFull}, {nil}} {
		q := newReq(&Request{Prompt: prompt(10, 1), Params: greedy(20)})
		for i := range 3 {
			q.appendOut(int32(i))
		}
		s.abort(q, c.err)
		_, evs := collect(t, q.stream)
		f := evs[len(evs)-1].Finish
		if f.Reason != "abort" || f.Err != c.err || evs[len(evs)-1].CompletionTokens != 3 || evs[len(evs)-1].PromptTokens != 10 {
			t.Errorf("abort with %v: finish %+v, usage %d + %d", c.err, f, evs[len(evs)-1].PromptTokens, evs[len(evs)-1].CompletionTokens)
		}
	}
}

func TestSubmitRefusesHugeTokenCountsWithoutOverflow(t *testing.T) {
	t.Parallel()
	h := start(t, Config{}, 64, 1) // 64-token pool, context 16384
	const ctx = 16384
	tests := []struct {
		name   string
		prompt int
		p      Params
		want   string
	}{
		{"max_tokens at MaxInt (the issue's 9223372036854775807)", 2, Params{MaxNewTokens: math.MaxInt, IgnoreEOS: true},
			"'max_tokens' or 'max_completion_tokens' is too large: 9223372036854775807. This model's maximum context length is 16384 tokens and your request has 2 input tokens (9223372036854775807 > 16384 - 2)."},
		{"max_tokens one past the context", 2, Params{MaxNewTokens: ctx - 1}, "is too large: 16383"},
		{"a prompt as long as the context with output asked", ctx, Params{MaxNewTokens: 1},
			"This model's maximum context length is 16384 tokens. However, your request has 16384 input tokens. Please reduce the length of the input messages."},
		{"min_tokens above max_tokens", 2, Params{MaxNewTokens: 16, MinNewTokens: 20000}, "min_tokens must be less than or equal to max_tokens=16, got 20000."},
		{"min_tokens at MaxInt", 2, Params{MaxNewTokens: 16, MinNewTokens: math.MaxInt}, "min_tokens must be less than or equal to"},
		{"negative max_tokens", 2, Params{MaxNewTokens: -1}, "max_tokens must be at least 0"},
		{"negative min_tokens", 2, Params{MaxNewTokens: 4, MinNewTokens: math.MinInt}, "min_tokens must be greater than or equal to 0"},
		{"more KV than the pool, within the context", 2, Params{MaxNewTokens: 100}, "tokens of KV cache"},
	}
	for _, tc := range tests {
		_, err := h.s.Submit(&Request{Prompt: prompt(tc.prompt, 1), Params: tc.p})
		var re *RequestError
		if !errors.As(err, &re) || re.Status != 400 || !strings.Contains(re.Message, tc.want) {
			t.Errorf("%s: got %v, want a 400 containing %q", tc.name, err, tc.want)
		}
	}
	// The scheduler still serves.
	toks, _ := collect(t, mustSubmit(t, h.s, &Request{Prompt: prompt(4, 2), Params: greedy(3)}))
	if len(toks) != 3 {
		t.Fatalf("after the refusals a request got %d tokens, want 3", len(toks))
	}
}

func mustSubmit(t *testing.T, s *Scheduler, r *Request) *Stream {
	t.Helper()
	st, err := s.Submit(r)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// panicExec panics on the first forward pass that holds a sequence of
// length poison (a prompt chunk), as a model bug would.
type panicExec struct {
	Executor
	poison int
}

func (p *panicExec) Forward(seqs []model.Seq) *model.Output {
	for _, s := range seqs {
		if len(s.Tokens) == p.poison {
			panic("injected: position beyond max_position_embeddings")
		}
	}
	return p.Executor.Forward(seqs)
}

func TestAPanickingStepFailsItsBatchWith500AndServingGoesOn(t *testing.T) {
	t.Parallel()
	mc, _ := model.Preset("nano")
	kv := model.NewKVCache(mc, 256, 1)
	m := model.New(mc, model.Synth(mc, 1), kernels.Default(), kv)
	var logs strings.Builder
	var mu sync.Mutex
	s, err := New(Config{MaxTotalTokens: 256, PageSize: 1, ContextLength: mc.MaxPositionEmbeddings},
		&panicExec{Executor: m, poison: 7}, []int32{262}, vocabLimit, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.SetLogger(slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil)))
	go s.Run()
	t.Cleanup(func() { s.Shutdown(context.Background()) })

	bad := mustSubmit(t, s, &Request{Prompt: prompt(7, 1), Params: greedy(4)})
	_, evs := collect(t, bad)
	f := evs[len(evs)-1].Finish
	var re *RequestError
	if f == nil || f.Reason != "abort" || !errors.As(f.Err, &re) || re.Status != 500 || !strings.Contains(re.Message, "injected") {
		t.Fatalf("the poisoned request ended with %+v, want an abort carrying a 500 naming the panic", f)
	}
	if s.StepPanics() != 1 {
		t.Errorf("StepPanics = %d, want 1", s.StepPanics())
	}
	mu.Lock()
	logged := logs.String()
	mu.Unlock()
	if !strings.Contains(logged, "scheduler step panicked") || !strings.Contains(logged, "injected") {
		t.Errorf("the panic was not logged: %q", logged)
	}
	// Others are served, and the failed request's KV came back to the pool.
	toks, _ := collect(t, mustSubmit(t, s, &Request{Prompt: prompt(5, 2), Params: greedy(3)}))
	if len(toks) != 3 {
		t.Fatalf("after the panic a request got %d tokens, want 3", len(toks))
	}
	waitUntil(t, func() bool { st := s.Stats(); return st.Running == 0 && st.Waiting == 0 })
	if st := s.Stats(); st.KVUsedTokens > st.CachedTokens {
		t.Errorf("KV in use %d beyond the prefix cache's %d: the failed request's pages leaked", st.KVUsedTokens, st.CachedTokens)
	}
}

type lockedWriter struct {
	w  *strings.Builder
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}

// hooked is a scheduler on the nano model whose moves of a request between
// its lists go through hook first, with its log kept. Requests submitted
// before run are queued together, in order.
type hooked struct {
	h    *harness
	logs strings.Builder
	mu   sync.Mutex
}

func newHooked(t *testing.T, cfg Config, pages int, hook func(stage string, r *Request)) *hooked {
	t.Helper()
	mc, _ := model.Preset("nano")
	m := model.New(mc, model.Synth(mc, 1), kernels.Default(), model.NewKVCache(mc, pages, 1))
	cfg.MaxTotalTokens, cfg.PageSize, cfg.ContextLength = pages, 1, mc.MaxPositionEmbeddings
	s, err := New(cfg, m, []int32{262}, vocabLimit, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.moveHook = hook
	k := &hooked{h: &harness{m: m, s: s}}
	s.SetLogger(slog.New(slog.NewTextHandler(&lockedWriter{w: &k.logs, mu: &k.mu}, nil)))
	return k
}

func (k *hooked) run(t *testing.T) {
	go k.h.s.Run()
	t.Cleanup(func() { k.h.s.Shutdown(context.Background()) })
}

// panicAt is a hook that panics with msg when request id reaches stage.
func panicAt(stage, id, msg string) func(string, *Request) {
	return func(s string, r *Request) {
		if s == stage && r.ID == id {
			panic(msg)
		}
	}
}

// panicsLogged counts the panic records in the log.
func (k *hooked) panicsLogged() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return strings.Count(k.logs.String(), "scheduler step panicked")
}

// wantFailed500 checks that st ends, within seconds, with an abort carrying
// a 500 that names the injected panic.
func wantFailed500(t *testing.T, name string, st *Stream) {
	t.Helper()
	_, evs := collectWithin(t, st, 10*time.Second)
	f := evs[len(evs)-1].Finish
	var re *RequestError
	if f == nil || f.Reason != "abort" || !errors.As(f.Err, &re) || re.Status != 500 || !strings.Contains(re.Message, "injected") {
		t.Fatalf("%s ended with %+v, want an abort carrying a 500 naming the panic", name, f)
	}
}

// wantAsAlone checks that st, what name calls it, ends with length after
// the n tokens the model alone gives prompt p: the panic left it unharmed.
func (k *hooked) wantAsAlone(t *testing.T, name string, st *Stream, p []int32, n int) {
	t.Helper()
	got, evs := collectWithin(t, st, 10*time.Second)
	if f := evs[len(evs)-1].Finish; f.Reason != "length" {
		t.Fatalf("%s ended with %+v, want length", name, f)
	}
	if want := direct(t, k.h, p, n); !slices.Equal(got, want) {
		t.Fatalf("%s got %v, the model alone %v", name, got, want)
	}
}

// wantOnePanic checks that the scheduler counted one step panic and
// logged it once.
func (k *hooked) wantOnePanic(t *testing.T) {
	t.Helper()
	if n := k.h.s.StepPanics(); n != 1 {
		t.Errorf("StepPanics = %d, want 1", n)
	}
	if n := k.panicsLogged(); n != 1 {
		t.Errorf("the panic was logged %d times, want once", n)
	}
}

func TestARequestWhoseAdmissionPanicsIsFailedAndTheQueueMovesOn(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{"fcfs", "lpm"} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			var touched atomic.Int64
			k := newHooked(t, Config{SchedulePolicy: policy}, 256, func(stage string, r *Request) {
				if stage == "admit" && r.ID == "poison" {
					touched.Add(1)
					panic("injected: radix match of the queue's head")
				}
			})
			// The poison request is the head of the queue, the next one behind it.
			poison := mustSubmit(t, k.h.s, &Request{ID: "poison", Prompt: prompt(6, 1), Params: greedy(4)})
			next := mustSubmit(t, k.h.s, &Request{ID: "next", Prompt: prompt(5, 2), Params: greedy(3)})
			k.run(t)

			wantFailed500(t, "the request whose admission panicked", poison)
			k.wantAsAlone(t, "the next request", next, prompt(5, 2), 3)
			k.wantOnePanic(t) // more would mean the poison request was retried
			if n := touched.Load(); n != 1 {
				t.Errorf("admission of the poison request began %d times, want 1", n)
			}
			waitUntil(t, func() bool { st := k.h.s.Stats(); return st.Running == 0 && st.Waiting == 0 })
			if st := k.h.s.Stats(); st.KVUsedTokens > st.CachedTokens {
				t.Errorf("KV in use %d beyond the prefix cache's %d: pages leaked", st.KVUsedTokens, st.CachedTokens)
			}
		})
	}
}

func TestAPanicWhileExtendingAChunkedPrefillFailsThatRequestAlone(t *testing.T) {
	t.Parallel()
	k := newHooked(t, Config{ChunkedPrefillSize: 8}, 256, panicAt("chunk", "poison", "injected: chunk continuation"))
	// Step one runs other's 4-token prompt and poison's first 4 tokens; at
	// step two other is decoding while poison's next chunk is formed.
	other := mustSubmit(t, k.h.s, &Request{ID: "other", Prompt: prompt(4, 3), Params: greedy(20)})
	poison := mustSubmit(t, k.h.s, &Request{ID: "poison", Prompt: prompt(20, 4), Params: greedy(3)})
	k.run(t)

	wantFailed500(t, "the chunked request", poison)
	// Anything but length means it was failed with the chunked one.
	k.wantAsAlone(t, "the running request", other, prompt(4, 3), 20)
	k.wantOnePanic(t)
}

func TestAPanicWhileRetractingFailsTheRetractedRequestAndTheRestFinish(t *testing.T) {
	t.Parallel()
	// As in TestRetractionUnderKVPressureKeepsOutputsExact: 16 × (20 + 40)
	// tokens in a 320-token pool, so decoding retracts. The first request
	// retracted panics after it left the running batch, before it was queued.
	var first atomic.Pointer[string]
	k := newHooked(t, Config{DisableRadixCache: true}, 320, func(stage string, r *Request) {
		if stage == "retract" && first.CompareAndSwap(nil, &r.ID) {
			panic("injected: release of a retracted request")
		}
	})
	streams := make([]*Stream, 16)
	for i := range streams {
		streams[i] = mustSubmit(t, k.h.s, &Request{ID: string(rune('a' + i)), Prompt: prompt(20, 10+i), Params: greedy(40)})
	}
	k.run(t)
	for i, st := range streams {
		toks, evs := collectWithin(t, st, 30*time.Second)
		id := string(rune('a' + i))
		if p := first.Load(); p != nil && *p == id {
			f := evs[len(evs)-1].Finish
			var re *RequestError
			if f.Reason != "abort" || !errors.As(f.Err, &re) || re.Status != 500 {
				t.Errorf("the retracted request %s ended with %+v, want a 500", id, f)
			}
			continue
		}
		if f := evs[len(evs)-1].Finish; f.Reason != "length" || len(toks) != 40 {
			t.Errorf("request %s ended with %+v after %d tokens, want length after 40", id, f, len(toks))
		}
	}
	if first.Load() == nil {
		t.Fatal("no request was retracted")
	}
	if n := k.h.s.StepPanics(); n != 1 {
		t.Errorf("StepPanics = %d, want 1", n)
	}
	waitUntil(t, func() bool { return k.h.s.Stats().KVUsedTokens == 0 })
}

func TestAPanicFreeingAnAbortedRequestFailsItAndTheOthersFinish(t *testing.T) {
	t.Parallel()
	k := newHooked(t, Config{DisableRadixCache: true}, 2048, panicAt("drop", "gone", "injected: release of an aborted request"))
	// The client of "gone" leaves while it is queued; the loop frees it first thing.
	gone := mustSubmit(t, k.h.s, &Request{ID: "gone", Prompt: prompt(8, 5), Params: greedy(1000)})
	stays := mustSubmit(t, k.h.s, &Request{ID: "stays", Prompt: prompt(8, 6), Params: greedy(200)})
	gone.Abort()
	k.run(t)
	wantFailed500(t, "the aborted request", gone)
	toks, evs := collectWithin(t, stays, 10*time.Second)
	if f := evs[len(evs)-1].Finish; f.Reason != "length" || len(toks) != 200 {
		t.Fatalf("the other request ended with %+v after %d tokens, want length after 200", f, len(toks))
	}
	k.wantOnePanic(t)
	waitUntil(t, func() bool { return k.h.s.Stats().KVUsedTokens == 0 })
}

// idleExec records the scheduler's calls: "forward" for each Forward, "idle"
// for each Idle.
type idleExec struct {
	Executor
	mu    sync.Mutex
	calls []string
}

func (x *idleExec) Forward(seqs []model.Seq) *model.Output {
	x.record("forward")
	return x.Executor.Forward(seqs)
}

func (x *idleExec) Idle() { x.record("idle") }

func (x *idleExec) record(call string) {
	x.mu.Lock()
	x.calls = append(x.calls, call)
	x.mu.Unlock()
}

func (x *idleExec) snapshot() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return slices.Clone(x.calls)
}

// The simulated executor paces back-to-back steps from the last one's end,
// so it must hear when the scheduler waits for work, and only then.
func TestTheSchedulerTellsItsExecutorWhenItWaitsForWorkAndOnlyThen(t *testing.T) {
	t.Parallel()
	mc, _ := model.Preset("nano")
	m := model.New(mc, model.Synth(mc, 1), kernels.Default(), model.NewKVCache(mc, 256, 1))
	exec := &idleExec{Executor: m}
	s, err := New(Config{MaxTotalTokens: 256, PageSize: 1, ContextLength: 256}, exec, nil, vocabLimit, nil)
	if err != nil {
		t.Fatal(err)
	}
	go s.Run()
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	for round := range 2 {
		st, err := s.Submit(&Request{Prompt: prompt(8, round), Params: greedy(4)})
		if err != nil {
			t.Fatal(err)
		}
		collect(t, st)
		waitUntil(t, func() bool { calls := exec.snapshot(); return calls[len(calls)-1] == "idle" })
	}
	// Each request's steps back to back, then idle.
	calls := exec.snapshot()
	var runs []int // forwards between idles
	n := 0
	for _, c := range calls {
		if c == "idle" {
			if n > 0 {
				runs = append(runs, n)
			}
			n = 0
		} else {
			n++
		}
	}
	if len(runs) != 2 || runs[0] < 4 || runs[1] < 4 {
		t.Errorf("calls %v: want each request's steps (at least 4) with no idle among them, then idle", calls)
	}
}
