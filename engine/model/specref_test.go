package model

import (
	"math"
	"slices"
	"testing"
)

// oracle drafts the known greedy continuation; wrong drafts anything else.
type oracle struct{ greedy []int32 }

func (o oracle) Draft(_ *Model, s *RefSpecSeq, k int) []int32 {
	at := len(s.Tokens) + 1 // greedy[at] follows s.Next
	return slices.Clone(o.greedy[at:min(at+k, len(o.greedy))])
}

type wrong struct {
	greedy []int32
	vocab  int32
}

func (w wrong) Draft(_ *Model, s *RefSpecSeq, k int) []int32 {
	out := oracle{w.greedy}.Draft(nil, s, k)
	for i := range out {
		out[i] = (out[i] + 1) % w.vocab
	}
	return out
}

// greedyDecode returns prompt followed by n greedily decoded tokens, one
// forward pass per token, and the model's cache rows for every position.
func greedyDecode(t *testing.T, m *Model, prompt []int32, n int) ([]int32, [][]float32) {
	t.Helper()
	var pages []int32
	toks := slices.Clone(prompt)
	out := m.Forward([]Seq{seqOf(t, m, &pages, len(toks), toks, 0, LastRow)})
	for range n {
		next := argmax(out.Logits.Row(0))
		toks = append(toks, next)
		p := len(toks) - 1
		out = m.Forward([]Seq{seqOf(t, m, &pages, p+1, toks[p:], p, LastRow)})
	}
	return toks, cacheRows(m, pages, len(toks))
}

// cacheRows copies every main layer's cache row of positions [0, n).
func cacheRows(m *Model, pages []int32, n int) [][]float32 {
	var out [][]float32
	slots := m.KV.SlotsFor(nil, pages, 0, n)
	for l := range m.Cfg.NumHiddenLayers {
		c := m.KV.Layer(l)
		for _, s := range slots {
			out = append(out, slices.Clone(c.Row(int(s))))
		}
	}
	return out
}

func TestRefSpecStepGivesGreedysTokensAndCache(t *testing.T) {
	t.Parallel()
	cfg := microConfig()
	prompt := tokensN(14, 5)
	const n, k = 12, 3
	plain := newTestModel(t, cfg, 31, 64)
	greedy, wantCache := greedyDecode(t, plain, prompt, n)

	for _, tc := range []struct {
		name    string
		d       RefDrafter
		perStep int // new tokens each step
	}{
		{"an oracle drafter's tokens are all accepted", oracle{greedy}, k + 1},
		{"a wrong drafter's tokens are all rejected", wrong{greedy, int32(cfg.VocabSize)}, 1},
		{"the MTP layer drafts; greedy's tokens come out whatever it proposes", RefMTPDrafter{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newTestModel(t, cfg, 31, 64)
			pages, ok := m.KV.Alloc(16)
			if !ok {
				t.Fatal("cache full")
			}
			s := &RefSpecSeq{Tokens: slices.Clone(prompt), Pages: pages}
			m.RefSpecPrefill(s)
			got := []int32{s.Next}
			for len(got) < n {
				step := m.RefSpecStep(s, tc.d, k)
				if tc.perStep != 0 && len(step) != tc.perStep && len(got)+len(step) < n {
					t.Fatalf("a step gave %d tokens, want %d", len(step), tc.perStep)
				}
				got = append(got, step...)
			}
			if !slices.Equal(got[:n], greedy[len(prompt):]) {
				t.Fatalf("speculation gave %v, greedy %v", got[:n], greedy[len(prompt):])
			}
			// The committed positions' cache rows are those of plain decoding.
			have := cacheRows(m, s.Pages, len(s.Tokens))
			per := len(s.Tokens)
			for l := range cfg.NumHiddenLayers {
				for p := range per {
					a, b := have[l*per+p], wantCache[l*len(greedy)+p]
					for i := range a {
						if math.Abs(float64(a[i]-b[i])) > 1e-5*(1+math.Abs(float64(b[i]))) {
							t.Fatalf("layer %d position %d: cache %v, plain decoding %v", l, p, a[i], b[i])
						}
					}
				}
			}
		})
	}
}
