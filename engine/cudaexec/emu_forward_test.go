package cudaexec_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glmbench/glmbench/engine/cudaexec"
	"github.com/glmbench/glmbench/engine/cudaexec/emu"
	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/kernels"
)

// The whole GPU path without a GPU: the Executor over NewLaunchOps, every
// op a kernel of kernels.cu run by the emulator, against the CPU model on
// the same weights. The truth is the CPU model's logits: the kernels sum in
// other orders than the CPU's SIMD code, so the logits agree within 1e-4
// of each row's largest (the bound for the device), and greedy
// decoding picks the CPU's token wherever the CPU's lead is clear.

// rowMax is the largest |x| of row i.
func rowMax(m kernels.Mat, i int) float64 {
	big := 0.0
	for _, v := range m.Row(i) {
		big = max(big, math.Abs(float64(v)))
	}
	return big
}

// argmax2 is row's argmax and its lead over the runner-up.
func argmax2(row []float32) (best int, lead float64) {
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

func closeLogits(t *testing.T, what string, got, want kernels.Mat) {
	t.Helper()
	if got.Rows != want.Rows || got.Cols != want.Cols {
		t.Fatalf("%s: logits %d×%d, the CPU's %d×%d", what, got.Rows, got.Cols, want.Rows, want.Cols)
	}
	bad := 0
	for i := range want.Rows {
		tol := 1e-4 * rowMax(want, i)
		for j, v := range want.Row(i) {
			if d := math.Abs(float64(got.Row(i)[j]) - float64(v)); !(d <= tol) {
				if bad++; bad <= 5 {
					t.Errorf("%s: row %d logit %d = %g, the CPU's %g (tolerance %.3g)", what, i, j, got.Row(i)[j], v, tol)
				}
			}
		}
	}
}

func TestEmulatedExecutorMatchesTheCPUModelWithin1e4(t *testing.T) {
	t.Parallel()
	d, err := emu.Start()
	if errors.Is(err, emu.ErrNoCompiler) {
		t.Skip("g++ is not on PATH: the kernel emulator cannot be built")
	}
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := model.Preset("nano")
	if err != nil {
		t.Fatal(err)
	}
	w := model.Synth(cfg, 11)
	const pages, pageSize, steps = 16, 16, 4
	ex, err := cudaexec.NewExecutor(cfg, w, d.Ops(), pages, pageSize, false)
	if err != nil {
		d.Close()
		t.Fatal(err)
	}
	defer func() {
		if err := ex.Close(); err != nil {
			t.Error(err)
		}
	}()
	cpu := model.New(cfg, w, kernels.Default(), model.NewKVCacheNoMTP(cfg, pages, pageSize))
	rng := rand.New(rand.NewPCG(5, 6))
	// 5 tokens attend densely; 70 pass nano's index_topk of 64, so the
	// indexer's top-k chooses the keys of its last rows. Pages are taken
	// from the CPU model's pool, in reverse, so slots are not in order.
	lens := []int{5, 70}
	seqs := make([]model.Seq, len(lens))
	for j, n := range lens {
		pg, ok := cpu.KV.Alloc((n + steps + pageSize - 1) / pageSize)
		if !ok {
			t.Fatal("KV pool too small")
		}
		for a, b := 0, len(pg)-1; a < b; a, b = a+1, b-1 {
			pg[a], pg[b] = pg[b], pg[a]
		}
		toks := make([]int32, n)
		for i := range toks {
			toks[i] = int32(rng.IntN(cfg.VocabSize))
		}
		seqs[j] = model.Seq{Tokens: toks, Slots: cpu.KV.SlotsFor(nil, pg, 0, n+steps), Logits: model.AllRows}
	}
	want := cpu.Forward(seqs)
	got := ex.Forward(seqs)
	closeLogits(t, "prefill", got.Logits, want.Logits)
	next := make([]int32, len(seqs))
	for j := range seqs {
		l, _ := want.SeqRows(j)
		b, _ := argmax2(l.Row(l.Rows - 1))
		next[j] = int32(b)
	}
	compared := 0
	for step := range steps {
		for j := range seqs {
			seqs[j] = model.Seq{Tokens: []int32{next[j]}, Pos: lens[j] + step, Slots: seqs[j].Slots, Logits: model.LastRow}
		}
		want, got := cpu.Forward(seqs), ex.Forward(seqs)
		closeLogits(t, "decode", got.Logits, want.Logits)
		for j := range seqs {
			b, lead := argmax2(want.Logits.Row(j))
			if g, _ := argmax2(got.Logits.Row(j)); lead > 2e-4*rowMax(want.Logits, j) {
				compared++
				if g != b {
					t.Errorf("step %d sequence %d: the emulated GPU picks %d, the CPU %d (lead %g)", step, j, g, b, lead)
				}
			}
			next[j] = int32(b) // both go on from the CPU's token
		}
	}
	if compared < steps*len(seqs)/2 {
		t.Errorf("only %d of %d greedy steps had a clear CPU choice to compare", compared, steps*len(seqs))
	}
}
