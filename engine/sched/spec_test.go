package sched

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/engine/sampler"
	"github.com/glmbench/glmbench/kernels"
)

// startExec is start with the model wrapped by wrap (nil: the model itself).
func startExec(t testing.TB, cfg Config, pages, pageSize int, wrap func(*model.Model) Executor) *harness {
	t.Helper()
	return startExecObs(t, cfg, pages, pageSize, wrap, nil)
}

// startExecObs is startExec with an observer.
func startExecObs(t testing.TB, cfg Config, pages, pageSize int, wrap func(*model.Model) Executor, obs Observer) *harness {
	t.Helper()
	mc, _ := model.Preset("nano")
	mc.IndexTopK = 8 // so that DSA prunes at test lengths
	m := model.New(mc, model.Synth(mc, 1), kernels.Default(), model.NewKVCache(mc, pages, pageSize))
	cfg.MaxTotalTokens, cfg.PageSize = pages*pageSize, pageSize
	cfg.ContextLength = mc.MaxPositionEmbeddings
	var exec Executor = m
	if wrap != nil {
		exec = wrap(m)
	}
	s, err := New(cfg, exec, []int32{262}, vocabLimit, obs)
	if err != nil {
		t.Fatal(err)
	}
	go s.Run()
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return &harness{m: m, s: s}
}

func eagle(steps int) Config {
	return Config{SpeculativeAlgorithm: "EAGLE", SpeculativeNumSteps: steps}
}

// knownDrafter drafts from the known continuations of a test's prompts:
// the true next tokens (an oracle), or a token the model never picks there.
type knownDrafter struct {
	*model.Model
	prompts, outs [][]int32
	wrong         bool
}

func (d *knownDrafter) Draft(seqs []model.DraftSeq) [][]int32 {
	d.Model.Draft(seqs) // keep the MTP cache filled, as serving does
	res := make([][]int32, len(seqs))
	for i, s := range seqs {
		j := slices.IndexFunc(d.prompts, func(p []int32) bool { return len(s.All) >= len(p) && slices.Equal(s.All[:len(p)], p) })
		out := d.outs[j]
		at := len(s.All) - len(d.prompts[j]) // out[at] follows s.All
		for k := range s.K {
			tok := out[at+k]
			if d.wrong {
				tok = (tok + 1) % vocabLimit
			}
			res[i] = append(res[i], tok)
		}
	}
	return res
}

// specCase is a batch of requests run plainly and speculatively.
type specCase struct {
	prompts [][]int32
	params  []Params
}

func mixedCase(n, salt, maxTokens int) specCase {
	var c specCase
	for i := range n {
		c.prompts = append(c.prompts, prompt(5+(i*23)%70, salt+i))
		c.params = append(c.params, greedy(maxTokens-i%5))
	}
	return c
}

func (c specCase) requests() []*Request {
	reqs := make([]*Request, len(c.prompts))
	for i := range reqs {
		reqs[i] = &Request{ID: fmt.Sprint(i), Prompt: c.prompts[i], Params: c.params[i]}
	}
	return reqs
}

// plainOutputs runs c without speculation in a pool big enough for all.
func plainOutputs(t *testing.T, c specCase) [][]int32 {
	t.Helper()
	h := start(t, Config{}, 4096, 1)
	return collectAll(t, h.s, c.requests())
}

// wantKVFree waits for the scheduler to go idle and checks that every KV
// page is free or held by the prefix cache: none leaked from rejected drafts.
func wantKVFree(t *testing.T, s *Scheduler) {
	t.Helper()
	waitUntil(t, func() bool { st := s.Stats(); return st.Running == 0 && st.Waiting == 0 })
	if st := s.Stats(); st.KVUsedTokens != st.CachedTokens {
		t.Fatalf("%d KV tokens in use after every request ended, %d of them the prefix cache's", st.KVUsedTokens, st.CachedTokens)
	}
}

func TestSpeculativeDecodingGivesPlainDecodingsTokensAtTemperatureZero(t *testing.T) {
	t.Parallel()
	c := mixedCase(12, 40, 24)
	want := plainOutputs(t, c)
	for _, tc := range []struct {
		name  string
		cfg   Config
		pages int // of ps tokens
		ps    int
		batch int // requests submitted at once (the rest wait their turn)
	}{
		{"one draft token, one request at a time", eagle(1), 2048, 1, 1},
		{"two draft tokens, a batch of four", eagle(2), 2048, 1, 4},
		{"three draft tokens, all twelve at once", eagle(3), 2048, 1, 12},
		{"five draft tokens, all at once, chunked prefill of 16", func() Config { c := eagle(5); c.ChunkedPrefillSize = 16; return c }(), 2048, 1, 12},
		{"NEXTN, five draft tokens, pages of 4, no prefix cache", func() Config {
			c := eagle(5)
			c.SpeculativeAlgorithm, c.DisableRadixCache = "NEXTN", true
			return c
		}(), 128, 4, 12},
		{"three draft tokens, pages of 64, chunked prefill of 64", func() Config { c := eagle(3); c.ChunkedPrefillSize = 64; return c }(), 40, 64, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := startExec(t, tc.cfg, tc.pages, tc.ps, nil)
			reqs := c.requests()
			var got [][]int32
			for i := 0; i < len(reqs); i += tc.batch {
				got = append(got, collectAll(t, h.s, reqs[i:min(i+tc.batch, len(reqs))])...)
			}
			for i := range got {
				if !slices.Equal(got[i], want[i]) {
					t.Fatalf("request %d: speculative %v, plain %v", i, got[i], want[i])
				}
			}
			st := h.s.Stats()
			if st.SpecSteps == 0 || st.SpecAccepted > st.SpecDrafted {
				t.Fatalf("stats %+v", st)
			}
			if strings.Contains(tc.name, "retraction") && st.Retractions == 0 {
				t.Fatal("no request was retracted")
			}
			wantKVFree(t, h.s)
		})
	}
}

// perStep gives the verify steps and draft tokens of a request of n tokens
// whose k drafts are all accepted (full) or all rejected: the first token
// comes from prefill, and a step drafts at most the tokens left less one.
func perStep(n, k int, full bool) (steps, drafted int) {
	for left := n - 1; left > 0; {
		d := min(k, left-1)
		steps++
		drafted += d
		if full {
			left -= d + 1
		} else {
			left--
		}
	}
	return steps, drafted
}

func TestSpeculationOverCachedPrefixesGivesPlainDecodingsTokens(t *testing.T) {
	t.Parallel()
	// Prompts that share 32 or 48 tokens of one base, one at a time, so
	// each finds its predecessors' prefix in the cache: the drafter starts
	// there without their hidden state, and only drafts can suffer.
	var c specCase
	base := prompt(64, 200)
	for i := range 8 {
		p := append(slices.Clone(base[:32+16*(i%2)]), prompt(3+i, 210+i)...)
		c.prompts = append(c.prompts, p)
		c.params = append(c.params, greedy(20))
	}
	want := plainOutputs(t, c)
	h := startExec(t, eagle(3), 2048, 1, nil)
	for i, r := range c.requests() {
		got, _ := collect(t, mustSubmit(t, h.s, r))
		if !slices.Equal(got, want[i]) {
			t.Fatalf("request %d: speculative %v, plain %v", i, got, want[i])
		}
	}
	if st := h.s.Stats(); st.PrefixHit == 0 {
		t.Fatalf("no prefix hit: %+v", st)
	}
	wantKVFree(t, h.s)
}

func TestSpeculationUnderKVPressureRetractsAndKeepsOutputsExact(t *testing.T) {
	t.Parallel()
	// As TestRetractionUnderKVPressureKeepsOutputsExact: 16 × (20 + 40)
	// tokens in a 320-token pool, with chunks of 16 and three drafts a step.
	var c specCase
	for i := range 16 {
		c.prompts = append(c.prompts, prompt(20, 10+i))
		c.params = append(c.params, greedy(40))
	}
	want := plainOutputs(t, c)
	for _, k := range []int{2, 3} {
		t.Run(fmt.Sprint(k, " draft tokens"), func(t *testing.T) {
			t.Parallel()
			cfg := eagle(k)
			cfg.ChunkedPrefillSize, cfg.DisableRadixCache = 16, true
			h := startExec(t, cfg, 320, 1, nil)
			got := collectAll(t, h.s, c.requests())
			if h.s.Stats().Retractions == 0 {
				t.Fatal("no request was retracted")
			}
			for i := range got {
				if !slices.Equal(got[i], want[i]) {
					t.Fatalf("request %d: speculative %v, plain %v", i, got[i], want[i])
				}
			}
			wantKVFree(t, h.s)
		})
	}
}

func TestAnOracleDrafterIsFullyAcceptedAndAWrongOneNever(t *testing.T) {
	t.Parallel()
	c := mixedCase(6, 70, 20)
	want := plainOutputs(t, c)
	for _, k := range []int{1, 3, 5} {
		for _, wrong := range []bool{false, true} {
			t.Run(fmt.Sprintf("k=%d wrong=%v", k, wrong), func(t *testing.T) {
				t.Parallel()
				h := startExec(t, eagle(k), 2048, 1, func(m *model.Model) Executor {
					return &knownDrafter{Model: m, prompts: c.prompts, outs: want, wrong: wrong}
				})
				got := collectAll(t, h.s, c.requests())
				var steps, drafted int
				for i := range got {
					if !slices.Equal(got[i], want[i]) {
						t.Fatalf("request %d: %v, plain %v", i, got[i], want[i])
					}
					s, d := perStep(len(want[i]), k, !wrong)
					steps, drafted = steps+s, drafted+d
				}
				st := h.s.Stats()
				accepted := drafted
				if wrong {
					accepted = 0
				}
				if st.SpecSteps != int64(steps) || st.SpecDrafted != int64(drafted) || st.SpecAccepted != int64(accepted) {
					t.Fatalf("steps, drafted, accepted = %d, %d, %d; want %d, %d, %d",
						st.SpecSteps, st.SpecDrafted, st.SpecAccepted, steps, drafted, accepted)
				}
				if wrong && st.AcceptLength() != 1 {
					t.Fatalf("a wrong drafter's accept length %v, want 1", st.AcceptLength())
				}
				wantKVFree(t, h.s)
			})
		}
	}
}

func TestAStopInsideAnAcceptedRunEndsTheRequestThereAndEveryTokenIsItsOwnEvent(t *testing.T) {
	t.Parallel()
	c := mixedCase(4, 90, 24)
	free := plainOutputs(t, c)
	// Each request stops at its 7th token: the oracle drafts past it.
	for i := range c.params {
		c.params[i].IgnoreEOS, c.params[i].StopTokens = false, []int32{free[i][6]}
	}
	want := plainOutputs(t, c)
	h := startExec(t, eagle(5), 2048, 1, func(m *model.Model) Executor {
		return &knownDrafter{Model: m, prompts: c.prompts, outs: free}
	})
	for i, r := range c.requests() {
		got, evs := collect(t, mustSubmit(t, h.s, r))
		if !slices.Equal(got, want[i]) || len(got) > 7 {
			t.Fatalf("request %d: %v, plain %v", i, got, want[i])
		}
		for j, ev := range evs {
			if len(ev.Tokens) != 1 || ev.CompletionTokens != j+1 {
				t.Fatalf("request %d event %d: %d tokens, usage %d", i, j, len(ev.Tokens), ev.CompletionTokens)
			}
		}
		if f := evs[len(evs)-1].Finish; f == nil || f.Reason != "stop" || f.Matched != free[i][6] {
			t.Fatalf("request %d finish %+v", i, f)
		}
	}
	wantKVFree(t, h.s)
}

func TestSeededSampledRequestsDrawTheSameTokensWithSpeculation(t *testing.T) {
	t.Parallel()
	c := mixedCase(6, 120, 20)
	for i := range c.params {
		c.params[i].Sampling = sampler.Params{Temperature: 0.9, TopP: 0.95}
		c.params[i].Seed, c.params[i].HasSeed = uint64(7+i), true
	}
	want := plainOutputs(t, c)
	h := startExec(t, eagle(3), 2048, 1, nil)
	got := collectAll(t, h.s, c.requests())
	for i := range got {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("request %d: speculative %v, plain %v", i, got[i], want[i])
		}
	}
}

// verifyCounter counts what the observer hears of verify steps.
type verifyCounter struct {
	mu                       sync.Mutex
	steps, drafted, accepted int64
	first, gaps              int
}

func (v *verifyCounter) FirstToken(time.Duration) { v.mu.Lock(); v.first++; v.mu.Unlock() }
func (v *verifyCounter) InterToken(time.Duration) { v.mu.Lock(); v.gaps++; v.mu.Unlock() }
func (v *verifyCounter) Tokens(int, int)          {}
func (v *verifyCounter) Verified(drafted, accepted int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.steps, v.drafted, v.accepted = v.steps+1, v.drafted+int64(drafted), v.accepted+int64(accepted)
}

func TestTheObserverHearsEveryVerifyStepThatStatsCount(t *testing.T) {
	t.Parallel()
	var v verifyCounter
	h := startExecObs(t, eagle(3), 2048, 1, nil, &v)
	c := mixedCase(5, 150, 16)
	outs := collectAll(t, h.s, c.requests())
	wantKVFree(t, h.s)
	st := h.s.Stats()
	v.mu.Lock()
	defer v.mu.Unlock()
	if st.SpecSteps == 0 || v.steps != st.SpecSteps || v.drafted != st.SpecDrafted || v.accepted != st.SpecAccepted {
		t.Fatalf("observer heard %d steps, %d drafted, %d accepted; stats %+v", v.steps, v.drafted, v.accepted, st)
	}
	// Every token but each request's first is one inter-token gap, however
	// many a step emitted.
	gaps := 0
	for _, o := range outs {
		gaps += len(o) - 1
	}
	if v.first != len(outs) || v.gaps != gaps {
		t.Fatalf("observer heard %d first tokens and %d gaps, want %d and %d", v.first, v.gaps, len(outs), gaps)
	}
}

func TestSpeculativeSettingsAreCheckedAsSGLangChecksThem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // error text, "" for none
		// steps, draft tokens after Defaults
		steps, draft int
	}{
		{"off by default", Config{}, "", 0, 0},
		{"EAGLE takes 3 steps and 4 draft tokens by default", Config{SpeculativeAlgorithm: "EAGLE"}, "", 3, 4},
		{"NEXTN is EAGLE", Config{SpeculativeAlgorithm: "NEXTN", SpeculativeNumSteps: 2}, "", 2, 3},
		{"draft tokens follow the steps with topk 1", Config{SpeculativeAlgorithm: "EAGLE", SpeculativeNumSteps: 5, SpeculativeNumDraftTokens: 2}, "", 5, 6},
		{"topk 4 is refused", Config{SpeculativeAlgorithm: "EAGLE", SpeculativeEagleTopK: 4}, "speculative_eagle_topk 4", 0, 0},
		{"EAGLE3 is refused", Config{SpeculativeAlgorithm: "EAGLE3"}, `speculative_algorithm "EAGLE3"`, 0, 0},
		{"negative steps are refused", Config{SpeculativeAlgorithm: "EAGLE", SpeculativeNumSteps: -1}, "speculative_num_steps -1", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			c.MaxTotalTokens = 1024
			c.EnableMixedChunk = true
			c.Defaults()
			err := c.Validate()
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.SpeculativeNumSteps != tc.steps || c.SpeculativeNumDraftTokens != tc.draft {
				t.Fatalf("steps %d, draft tokens %d; want %d, %d", c.SpeculativeNumSteps, c.SpeculativeNumDraftTokens, tc.steps, tc.draft)
			}
			if c.Speculative() && (c.EnableMixedChunk || c.SpeculativeAlgorithm != "EAGLE") {
				t.Fatalf("speculative config %+v: mixed chunks on, or the algorithm not EAGLE", c)
			}
		})
	}
}

func TestSpeculationNeedsAnExecutorThatDrafts(t *testing.T) {
	t.Parallel()
	exec := plainExec{model.NewKVPages(64, 1)}
	if _, err := New(Config{MaxTotalTokens: 64, SpeculativeAlgorithm: "EAGLE"}, exec, nil, 0, nil); err == nil || !strings.Contains(err.Error(), "no drafter") {
		t.Fatalf("err %v", err)
	}
}

// plainExec has a pool and no drafter; it is never asked to run a batch.
type plainExec struct{ kv *model.KVCache }

func (plainExec) Forward([]model.Seq) *model.Output { panic("not run") }
func (e plainExec) Pool() *model.KVCache            { return e.kv }

func TestAnAbortMidSpeculationFreesItsKV(t *testing.T) {
	t.Parallel()
	cfg := eagle(3)
	cfg.DisableRadixCache = true
	h := startExec(t, cfg, 8192, 1, nil)
	st := mustSubmit(t, h.s, &Request{Prompt: prompt(50, 7), Params: greedy(8000)})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := st.Next(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return h.s.Stats().SpecSteps > 0 })
	st.Abort()
	if _, evs := collect(t, st); evs[len(evs)-1].Finish.Reason != "abort" {
		t.Fatalf("finish %+v", evs[len(evs)-1].Finish)
	}
	waitUntil(t, func() bool { return h.s.Stats().KVUsedTokens == 0 })
}

// BenchmarkSpeculativeDecode serves batches of greedy requests on nano
// with and without speculation, reporting generated tokens a second and
// the accept length: go test ./engine/sched -run '^$' -bench SpeculativeDecode.
func BenchmarkSpeculativeDecode(b *testing.B) {
	for _, steps := range []int{0, 1, 3} {
		for _, batch := range []int{1, 16} {
			b.Run(fmt.Sprintf("steps=%d/batch=%d", steps, batch), func(b *testing.B) {
				cfg := Config{}
				if steps > 0 {
					cfg = eagle(steps)
				}
				h := startExec(b, cfg, 8192, 1, nil)
				reqs := make([]*Request, batch)
				for i := range reqs {
					reqs[i] = &Request{Prompt: prompt(64, i), Params: greedy(64)}
				}
				b.ResetTimer()
				for range b.N {
					var wg sync.WaitGroup
					for _, r := range reqs {
						st, err := h.s.Submit(r)
						if err != nil {
							b.Fatal(err)
						}
						wg.Add(1)
						go func() {
							defer wg.Done()
							for {
								evs, err := st.Next(context.Background())
								if err != nil || (len(evs) > 0 && evs[len(evs)-1].Finish != nil) {
									return
								}
							}
						}()
					}
					wg.Wait()
				}
				b.ReportMetric(float64(b.N*batch*64)/b.Elapsed().Seconds(), "tok/s")
				b.ReportMetric(h.s.Stats().AcceptLength(), "accept")
			})
		}
	}
}

func TestSpeculativeLogprobsAreThoseOfPlainDecoding(t *testing.T) {
	t.Parallel()
	p := greedy(20)
	p.Logprobs, p.TopLogprobs = true, 2
	r := &Request{Prompt: prompt(33, 300), Params: p}
	logprobs := func(h *harness) []TokenLogprob {
		_, evs := collect(t, mustSubmit(t, h.s, r))
		var out []TokenLogprob
		for _, ev := range evs {
			out = append(out, ev.Logprobs...)
		}
		return out
	}
	want := logprobs(start(t, Config{}, 1024, 1))
	got := logprobs(startExec(t, eagle(3), 1024, 1, func(m *model.Model) Executor {
		return &knownDrafter{Model: m, prompts: [][]int32{r.Prompt}, outs: [][]int32{tokensOf(want)}}
	}))
	if len(got) != 20 || len(want) != 20 {
		t.Fatalf("%d and %d logprobs, want 20", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.ID != w.ID || math.Abs(float64(g.Logprob-w.Logprob)) > 1e-5 || len(g.Top) != 2 || g.Top[0].ID != w.Top[0].ID || g.Top[1].ID != w.Top[1].ID {
			t.Fatalf("token %d: speculative %+v, plain %+v", i, g, w)
		}
	}
}

func tokensOf(lps []TokenLogprob) []int32 {
	out := make([]int32, len(lps))
	for i, lp := range lps {
		out[i] = lp.ID
	}
	return out
}
