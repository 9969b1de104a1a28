package sim

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/engine/sampler"
	"github.com/glmbench/glmbench/engine/sched"
	"github.com/glmbench/glmbench/kernels"
)

// step is what the scheduler decided for one batch: per sequence its
// position, token count, KV slots and which logits it wanted.
type step []string

// recorder wraps an executor and writes down every batch it is given.
type recorder struct {
	sched.Executor
	steps []step
}

func (r *recorder) Forward(seqs []model.Seq) *model.Output {
	var s step
	for _, q := range seqs {
		s = append(s, fmt.Sprintf("pos=%d n=%d slots=%v logits=%d", q.Pos, len(q.Tokens), q.Slots, q.Logits))
	}
	r.steps = append(r.steps, s)
	return r.Executor.Forward(seqs)
}

// trace is a fixed set of requests, all queued before the scheduler runs,
// so that its decisions depend on the requests alone: long prompts that
// chunk, short ones that batch, and more requests than may run at once in
// a KV pool too small for all of them.
func trace() []*sched.Request {
	var out []*sched.Request
	for i, n := range []int{70, 5, 33, 12, 90, 8, 41, 3, 64, 20} {
		p := make([]int32, n)
		for k := range p {
			p[k] = int32((k*7 + i*13 + 1) % 250)
		}
		out = append(out, &sched.Request{ID: fmt.Sprint(i), Prompt: p, Params: sched.Params{
			MaxNewTokens: 6 + 5*(i%4), IgnoreEOS: true, Sampling: sampler.Params{Temperature: 0}}})
	}
	return out
}

// decide runs the trace through a scheduler over exec and returns its
// batches and every request's token count.
func decide(t *testing.T, exec sched.Executor, pages, pageSize int) ([]step, []int) {
	t.Helper()
	rec := &recorder{Executor: exec}
	cfg := sched.Config{MaxRunningRequests: 4, ChunkedPrefillSize: 32, MaxPrefillTokens: 64,
		PageSize: pageSize, MaxTotalTokens: pages * pageSize, ContextLength: 4096, EnableMixedChunk: true}
	s, err := sched.New(cfg, rec, []int32{262}, 273, nil)
	if err != nil {
		t.Fatal(err)
	}
	var streams []*sched.Stream
	for _, r := range trace() {
		st, err := s.Submit(r)
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, st)
	}
	go s.Run()
	defer s.Shutdown(context.Background())
	counts := make([]int, len(streams))
	var wg sync.WaitGroup
	for i, st := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for {
				evs, err := st.Next(ctx)
				if err != nil {
					return
				}
				for _, ev := range evs {
					counts[i] += len(ev.Tokens)
					if ev.Finish != nil {
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	s.Shutdown(context.Background())
	return rec.steps, counts
}

func TestSimulatedExecutorGetsTheSameSchedulerDecisionsAsTheModel(t *testing.T) {
	const pages, pageSize = 24, 8
	mc, err := model.Preset("nano")
	if err != nil {
		t.Fatal(err)
	}
	m := model.New(mc, model.Synth(mc, 1), kernels.Default(), model.NewKVCache(mc, pages, pageSize))
	real, realCounts := decide(t, m, pages, pageSize)
	simd, simCounts := decide(t, New(CostModel{}, pages, pageSize, mc.VocabSize), pages, pageSize)

	if !slices.Equal(realCounts, simCounts) {
		t.Fatalf("tokens per request: model %v, sim %v", realCounts, simCounts)
	}
	for i, n := range realCounts {
		if want := 6 + 5*(i%4); n != want {
			t.Errorf("request %d got %d tokens, want %d", i, n, want)
		}
	}
	if len(real) != len(simd) {
		t.Errorf("model ran %d batches, sim %d", len(real), len(simd))
	}
	for i := range min(len(real), len(simd)) {
		if !slices.Equal(real[i], simd[i]) {
			t.Fatalf("batch %d differs:\nmodel %v\nsim   %v", i, real[i], simd[i])
		}
	}
	// The trace must have made the scheduler work: chunks, mixed batches, and
	// more batches than requests.
	chunked, mixed := false, false
	for _, s := range real {
		prefill, decode := 0, 0
		for _, q := range s {
			var pos, n int
			fmt.Sscanf(q, "pos=%d n=%d", &pos, &n)
			if n == 32 {
				chunked = true
			}
			if n == 1 && pos > 0 {
				decode++
			} else {
				prefill++
			}
		}
		mixed = mixed || prefill > 0 && decode > 0
	}
	if !chunked || !mixed || len(real) < 20 {
		t.Errorf("the trace did not exercise the scheduler: chunked %v, mixed %v, %d batches", chunked, mixed, len(real))
	}
}

func TestSimulatedTokensAreTheLetterAfterEachPosition(t *testing.T) {
	e := New(CostModel{}, 4, 8, 300)
	out := e.Forward([]model.Seq{
		{Tokens: make([]int32, 3), Pos: 0, Logits: model.AllRows},
		{Tokens: make([]int32, 1), Pos: 27, Logits: model.LastRow},
		{Tokens: make([]int32, 2), Pos: 5, Logits: model.NoRows},
	})
	if out.Logits.Rows != 4 || !slices.Equal(out.First, []int{0, 3, 4}) {
		t.Fatalf("rows %d, first %v", out.Logits.Rows, out.First)
	}
	for r, want := range []int32{'a', 'b', 'c', 'a' + 27%26} {
		row := out.Logits.Row(r)
		if got := int32(slices.Index(row, slices.Max(row))); got != want {
			t.Errorf("row %d: argmax %d, want %d", r, got, want)
		}
	}
}

// fakeClock is a clock the executor's sleeps move forward.
type fakeClock struct {
	t      time.Time
	calls  int
	slept  []time.Duration
	during time.Duration // time each Forward spends before it sleeps
}

// now is read twice a step, before and after the work: the second read
// finds the work's time gone.
func (c *fakeClock) now() time.Time {
	c.calls++
	if c.calls%2 == 0 {
		c.t = c.t.Add(c.during)
	}
	return c.t
}

func (c *fakeClock) sleep(d time.Duration) { c.slept = append(c.slept, d); c.t = c.t.Add(d) }

func TestStepTimesFollowTheCostModel(t *testing.T) {
	cost := CostModel{StepOverhead: 3 * time.Millisecond, PrefillToken: 100 * time.Nanosecond,
		DecodeSeq: 5 * time.Microsecond, KVRead: 2 * time.Nanosecond}
	batches := []struct {
		seqs []model.Seq
		want time.Duration
	}{
		// one prefill of 1,000 tokens: overhead + 1000·prefill + 1000 read
		{[]model.Seq{{Tokens: make([]int32, 1000), Logits: model.LastRow}},
			3*time.Millisecond + 100*time.Microsecond + 2*time.Microsecond},
		// 100 decodes at position 499 each: overhead + 100·decode + 100·500 read
		{slices.Repeat([]model.Seq{{Tokens: make([]int32, 1), Pos: 499, Logits: model.LastRow}}, 100),
			3*time.Millisecond + 500*time.Microsecond + 100*time.Microsecond},
		// a mixed batch: a 64-token chunk at 64 and one decode at 10
		{[]model.Seq{{Tokens: make([]int32, 64), Pos: 64, Logits: model.NoRows}, {Tokens: make([]int32, 1), Pos: 10, Logits: model.LastRow}},
			3*time.Millisecond + 6400*time.Nanosecond + 5*time.Microsecond + 2*time.Duration(128+11)*time.Nanosecond},
	}
	for _, during := range []time.Duration{0, 40 * time.Microsecond, 10 * time.Millisecond} {
		clk := &fakeClock{t: time.Unix(0, 0), during: during}
		e := New(cost, 64, 64, 300)
		e.now, e.sleep = clk.now, clk.sleep
		for i, b := range batches {
			if got := cost.StepTime(b.seqs); got != b.want {
				t.Errorf("batch %d: StepTime %v, want %v", i, got, b.want)
			}
			start := clk.t
			e.Forward(b.seqs)
			// The step takes its modelled time, or the work's own when that is longer.
			if got, want := clk.t.Sub(start), max(b.want, during); got != want {
				t.Errorf("work %v, batch %d: the step took %v, want %v", during, i, got, want)
			}
		}
	}
}

func TestStepTakesAtLeastItsModelledTimeOnTheRealClock(t *testing.T) {
	cost := CostModel{StepOverhead: 5 * time.Millisecond}
	e := New(cost, 4, 8, 300)
	start := time.Now()
	for range 4 {
		e.Forward([]model.Seq{{Tokens: make([]int32, 1), Pos: 3, Logits: model.LastRow}})
	}
	if got := time.Since(start); got < 20*time.Millisecond {
		t.Errorf("4 steps of 5 ms took %v", got)
	}
}

// lateClock's sleeps wake 1 ms late, and the scheduler spends 0.5 ms between
// steps: back-to-back steps still follow each other at their modelled
// times, so ten 5 ms steps take 50 ms and the last wake-up's lateness, not
// ten times 1.5 ms more.
func TestBackToBackStepsKeepTheModelledPace(t *testing.T) {
	cost := CostModel{StepOverhead: 5 * time.Millisecond}
	clk := &fakeClock{t: time.Unix(0, 0)}
	e := New(cost, 4, 8, 300)
	e.now = clk.now
	e.sleep = func(d time.Duration) { clk.sleep(d + time.Millisecond) }
	start := clk.t
	for range 10 {
		e.Forward([]model.Seq{{Tokens: make([]int32, 1), Pos: 3, Logits: model.LastRow}})
		clk.t = clk.t.Add(500 * time.Microsecond) // the scheduler's own work
	}
	if got, want := clk.t.Sub(start), 50*time.Millisecond+time.Millisecond+500*time.Microsecond; got != want {
		t.Errorf("ten back-to-back 5 ms steps took %v, want %v", got, want)
	}
	// After an idle gap longer than a step, the next step counts from its
	// own start: idle time is not credited to it.
	clk.t = clk.t.Add(time.Second)
	before := clk.t
	e.Forward([]model.Seq{{Tokens: make([]int32, 1), Pos: 3, Logits: model.LastRow}})
	if got, want := clk.t.Sub(before), 6*time.Millisecond; got != want {
		t.Errorf("a step after an idle second took %v, want %v (5 ms and the late wake-up)", got, want)
	}
}

// A request that reaches an idle scheduler 2 ms after the last 5 ms step
// ended gets a whole step: the idle gap, shorter than a step, is not
// credited to it (before Idle, the step counted from the last step's end
// and took 3 ms).
func TestAStepAfterTheSchedulerIdledCountsFromItsOwnStart(t *testing.T) {
	cost := CostModel{StepOverhead: 5 * time.Millisecond}
	clk := &fakeClock{t: time.Unix(0, 0)}
	e := New(cost, 4, 8, 300)
	e.now = clk.now
	e.sleep = clk.sleep
	seqs := []model.Seq{{Tokens: make([]int32, 1), Pos: 3, Logits: model.LastRow}}
	e.Forward(seqs)
	e.Idle()
	clk.t = clk.t.Add(2 * time.Millisecond)
	before := clk.t
	e.Forward(seqs)
	if got, want := clk.t.Sub(before), 5*time.Millisecond; got != want {
		t.Errorf("a step 2 ms into an idle wait took %v, want %v", got, want)
	}
}
