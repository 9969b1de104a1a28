// Package cudatest is the check the device path's tests share, wherever
// the kernels run (the GPU, the emulator, the fake driver): an executor's
// forward pass and greedy decoding against the CPU model on the same
// weights. The kernels sum in other orders than the CPU's SIMD code, so the
// truth is a tolerance: logits within Rel of each row's largest, and the
// CPU's greedy token wherever its lead over the runner-up is clear (more
// than twice that tolerance).
package cudatest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/kernels"
)

// Forwarder runs a forward pass: the CPU model or an executor.
type Forwarder interface {
	Forward(seqs []model.Seq) *model.Output
}

// Greedy is one forward-and-decode check.
type Greedy struct {
	// Lens are the prompts' lengths (past index_topk, the indexer chooses).
	Lens []int
	// Steps is how many tokens each sequence then decodes.
	Steps int
	// Rel is the logits' tolerance, relative to each row's largest |logit|.
	Rel float64
	// Reverse takes each sequence's pages in reverse, so its slots are not
	// in order.
	Reverse bool
	// Seed draws the prompts.
	Seed uint64
}

// Check runs g on ex and on the CPU model cpu (whose pool hands out the
// pages both use), prefill then decode, both fed the CPU's greedy token.
func (g Greedy) Check(t testing.TB, ex Forwarder, cpu *model.Model) {
	t.Helper()
	cfg, ps := cpu.Cfg, cpu.KV.PageSize
	rng := rand.New(rand.NewPCG(g.Seed, g.Seed+1))
	seqs := make([]model.Seq, len(g.Lens))
	for j, n := range g.Lens {
		pg, ok := cpu.KV.Alloc((n + g.Steps + ps - 1) / ps)
		if !ok {
			t.Fatal("cudatest: KV pool too small")
		}
		if g.Reverse {
			for a, b := 0, len(pg)-1; a < b; a, b = a+1, b-1 {
				pg[a], pg[b] = pg[b], pg[a]
			}
		}
		toks := make([]int32, n)
		for i := range toks {
			toks[i] = int32(rng.IntN(cfg.VocabSize))
		}
		seqs[j] = model.Seq{Tokens: toks, Slots: cpu.KV.SlotsFor(nil, pg, 0, n+g.Steps), Logits: model.LastRow}
	}
	seqs[len(seqs)-1].Logits = model.AllRows
	want, got := cpu.Forward(seqs), ex.Forward(seqs)
	g.close(t, "prefill", got.Logits, want.Logits)
	next := make([]int32, len(seqs))
	for j := range seqs {
		l, _ := want.SeqRows(j)
		b, _ := Top2(l.Row(l.Rows - 1))
		next[j] = int32(b)
	}
	compared := 0
	for step := range g.Steps {
		for j := range seqs {
			seqs[j] = model.Seq{Tokens: []int32{next[j]}, Pos: g.Lens[j] + step, Slots: seqs[j].Slots, Logits: model.LastRow}
		}
		want, got := cpu.Forward(seqs), ex.Forward(seqs)
		g.close(t, "decode", got.Logits, want.Logits)
		for j := range seqs {
			b, lead := Top2(want.Logits.Row(j))
			if c, _ := Top2(got.Logits.Row(j)); lead > 2*g.Rel*RowMax(want.Logits, j) {
				compared++
				if c != b {
					t.Errorf("step %d sequence %d: the device picks %d, the CPU %d (lead %g)", step, j, c, b, lead)
				}
			}
			next[j] = int32(b)
		}
		if t.Failed() {
			return
		}
	}
	if compared < g.Steps*len(seqs)/2 {
		t.Errorf("only %d of %d greedy steps had a clear CPU choice to compare", compared, g.Steps*len(seqs))
	}
}

// close checks every row of got within g.Rel of the row's largest |want|.
func (g Greedy) close(t testing.TB, what string, got, want kernels.Mat) {
	t.Helper()
	if got.Rows != want.Rows || got.Cols != want.Cols {
		t.Fatalf("%s: logits %d×%d, the CPU's %d×%d", what, got.Rows, got.Cols, want.Rows, want.Cols)
	}
	bad := 0
	for i := range want.Rows {
		tol := g.Rel * RowMax(want, i)
		for j, v := range want.Row(i) {
			if d := math.Abs(float64(got.Row(i)[j]) - float64(v)); !(d <= tol) {
				if bad++; bad <= 5 {
					t.Errorf("%s: row %d logit %d = %g, the CPU's %g (tolerance %.3g)", what, i, j, got.Row(i)[j], v, tol)
				}
			}
		}
	}
}

// RowMax is the largest |x| of row i of m.
func RowMax(m kernels.Mat, i int) float64 {
	big := 0.0
	for _, v := range m.Row(i) {
		big = max(big, math.Abs(float64(v)))
	}
	return big
}

// Top2 is row's argmax and its lead over the runner-up.
func Top2(row []float32) (best int, lead float64) {
	second := math.Inf(-1)
	for j, v := range row {
		switch {
		case v > row[best]:
			second, best = float64(row[best]), j
		case j != best && float64(v) > second:
			second = float64(v)
		}
	}
	return best, float64(row[best]) - second
}
