package sim

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/engine/sampler"
	"github.com/glmbench/glmbench/engine/sched"
)

func TestAVerifyStepCostsOneForwardOfKPlusOneTokensPerSequence(t *testing.T) {
	cost := CostModel{StepOverhead: 3 * time.Millisecond, PrefillToken: 100 * time.Nanosecond,
		DecodeSeq: 5 * time.Microsecond, KVRead: 2 * time.Nanosecond}
	// 10 sequences at position 99 verifying 3 drafts: overhead + 10 × (a
	// decode + 3 tokens + a read of 103 positions).
	seqs := make([]model.Seq, 10)
	for i := range seqs {
		seqs[i] = model.Seq{Tokens: make([]int32, 4), Pos: 99, Logits: model.AllRows}
	}
	want := 3*time.Millisecond + 10*(5*time.Microsecond+300*time.Nanosecond+206*time.Nanosecond)
	if got := cost.VerifyTime(seqs); got != want {
		t.Fatalf("VerifyTime %v, want %v", got, want)
	}
	clk := &fakeClock{t: time.Unix(0, 0)}
	e := New(cost, 64, 64, 300)
	e.now, e.sleep = clk.now, clk.sleep
	ds := make([]model.DraftSeq, len(seqs))
	for i := range ds {
		ds[i] = model.DraftSeq{Seq: model.Seq{Tokens: make([]int32, 1), Pos: 99}, K: 3}
	}
	e.Draft(ds)
	e.Forward(seqs)
	e.Forward(seqs) // not after a draft: four prompt tokens each
	if len(clk.slept) != 2 || clk.slept[0] != want || clk.slept[1] != cost.StepTime(seqs) {
		t.Fatalf("slept %v, want %v then %v", clk.slept, want, cost.StepTime(seqs))
	}
}

func TestDraftsAreAcceptedAtTheSetRate(t *testing.T) {
	e := New(CostModel{}, 4, 8, 300)
	if err := e.SetAcceptLength(0.5); err == nil {
		t.Fatal("an accept length below 1 was taken")
	}
	if err := e.SetAcceptLength(math.NaN()); err == nil {
		t.Fatal("NaN was taken")
	}
	if err := e.SetAcceptLength(2.5); err != nil {
		t.Fatal(err)
	}
	// Position 30's token is 'e'; its drafts are 'e', 'f', 'g' while true.
	var took []int
	for range 4 {
		d := e.Draft([]model.DraftSeq{{Seq: model.Seq{Tokens: []int32{0}, Pos: 30}, K: 3}})[0]
		n := 0
		for n < len(d) && d[n] == Token(30+n) {
			n++
		}
		took = append(took, n)
	}
	if fmt.Sprint(took) != "[1 2 1 2]" {
		t.Fatalf("accepted %v drafts, want [1 2 1 2]", took)
	}
}

// TestTheSchedulersAcceptLengthIsTheSimulatedOne: speculative serving over
// the simulated executor with accept length a reports a, and gives the
// simulated tokens.
func TestTheSchedulersAcceptLengthIsTheSimulatedOne(t *testing.T) {
	for _, tc := range []struct {
		k int
		a float64
	}{{3, 2.5}, {3, 1}, {5, 6}, {2, 1.7}} {
		t.Run(fmt.Sprintf("k=%d a=%v", tc.k, tc.a), func(t *testing.T) {
			e := New(CostModel{}, 4096, 16, 300)
			if err := e.SetAcceptLength(tc.a); err != nil {
				t.Fatal(err)
			}
			cfg := sched.Config{PageSize: 16, MaxTotalTokens: 4096 * 16, ContextLength: 4096,
				SpeculativeAlgorithm: "EAGLE", SpeculativeNumSteps: tc.k}
			s, err := sched.New(cfg, e, []int32{262}, 273, nil)
			if err != nil {
				t.Fatal(err)
			}
			go s.Run()
			defer s.Shutdown(context.Background())
			const n, maxTokens = 16, 600
			var wg sync.WaitGroup
			for i := range n {
				p := make([]int32, 10+i)
				st, err := s.Submit(&sched.Request{Prompt: p, Params: sched.Params{MaxNewTokens: maxTokens, IgnoreEOS: true,
					Sampling: sampler.Params{Temperature: 0}}})
				if err != nil {
					t.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					pos := len(p) - 1
					for {
						evs, err := st.Next(ctx)
						if err != nil {
							t.Errorf("stream: %v", err)
							return
						}
						for _, ev := range evs {
							for _, tok := range ev.Tokens {
								if tok != Token(pos) {
									t.Errorf("token after position %d is %d, want %d", pos, tok, Token(pos))
								}
								pos++
							}
							if ev.Finish != nil {
								if pos-len(p)+1 != maxTokens {
									t.Errorf("%d tokens, want %d", pos-len(p)+1, maxTokens)
								}
								return
							}
						}
					}
				}()
			}
			wg.Wait()
			for s.Stats().Running > 0 {
				time.Sleep(time.Millisecond)
			}
			st := s.Stats()
			// Each request's last step may end short of its accept length
			// (max_tokens): over ~600/a steps that is under 0.01 of it.
			if got := st.AcceptLength(); math.Abs(got-tc.a) > 0.02 {
				t.Fatalf("accept length %.4f, want %v (stats %+v)", got, tc.a, st)
			}
			if st.KVUsedTokens != st.CachedTokens {
				t.Fatalf("%d KV tokens in use, %d cached", st.KVUsedTokens, st.CachedTokens)
			}
		})
	}
}

// TestASpeculativeBenchmarkOnTheSimulatorHasAKnownAnswer: 8 requests of
// 301 tokens at accept length 3 with 3 drafts a step decode in exactly 100
// verify steps after one prefill, each of the modelled verify time (the
// last with 2 drafts), so decode runs at 8 × 3 tokens per VerifyTime.
func TestASpeculativeBenchmarkOnTheSimulatorHasAKnownAnswer(t *testing.T) {
	cost := CostModel{StepOverhead: time.Millisecond, PrefillToken: time.Microsecond, DecodeSeq: 10 * time.Microsecond}
	clk := &fakeClock{t: time.Unix(0, 0)}
	e := New(cost, 1024, 16, 300)
	e.now, e.sleep = clk.now, clk.sleep
	if err := e.SetAcceptLength(3); err != nil {
		t.Fatal(err)
	}
	cfg := sched.Config{PageSize: 16, MaxTotalTokens: 1024 * 16, ContextLength: 4096, SpeculativeAlgorithm: "EAGLE"}
	s, err := sched.New(cfg, e, []int32{262}, 273, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	var streams []*sched.Stream
	for i := range n {
		st, err := s.Submit(&sched.Request{Prompt: make([]int32, 20+i), Params: sched.Params{MaxNewTokens: 301, IgnoreEOS: true}})
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, st)
	}
	go s.Run()
	defer s.Shutdown(context.Background())
	for _, st := range streams {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		for done := false; !done; {
			evs, err := st.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			done = evs[len(evs)-1].Finish != nil
		}
		cancel()
	}
	s.Shutdown(context.Background())
	verify := cost.StepOverhead + n*(cost.DecodeSeq+3*cost.PrefillToken)
	if len(clk.slept) != 101 {
		t.Fatalf("%d steps, want 1 prefill and 100 verify steps", len(clk.slept))
	}
	for i, d := range clk.slept[1:] {
		want := verify
		if i == 99 { // 3 tokens left: 2 drafts and the bonus
			want -= n * cost.PrefillToken
		}
		if d != want {
			t.Fatalf("verify step %d took %v, want %v", i, d, want)
		}
	}
	if st := s.Stats(); st.AcceptLength() != 3 || st.SpecSteps != n*100 {
		t.Fatalf("stats %+v", st)
	}
}
