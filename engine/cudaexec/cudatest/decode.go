package cudatest

import (
	"fmt"
	"math"
	"testing"

	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/kernels"
)

// Decode is a script of decode steps that two executors on the same
// weights (an Executor replaying CUDA graphs and one launching directly)
// must run to the same bits. Sequence i has a prompt of Lens[i] tokens;
// step k's batch is the sequences Steps[k], each decoding one token; a
// sequence's first step prefills its prompt first (a batch of the
// step's newcomers, launched directly by both). Tokens are a fixed
// function of sequence and position, so both are fed the same.
type Decode struct {
	Lens  []int
	Steps [][]int
}

// DecodeSteps is a script for batches of up to 8 (buckets 1, 2, 4 and 8)
// on a model whose index_topk is 8: batch sizes changing across buckets
// and back (so a bucket is replayed, and captured again after a larger
// one moved the scratch), sequences joining and leaving, and positions
// from below index_topk to past it, so the indexer chooses in some steps
// and not others.
var DecodeSteps = Decode{
	Lens: []int{6, 2, 9, 2, 3},
	Steps: [][]int{
		{0, 1, 2}, {0, 1, 2}, {0}, {0, 1, 2, 3}, {0, 1, 2, 3, 4}, {0, 2}, {0, 2, 3}, {0, 2, 3},
	},
}

// Same runs d on a and b, whose pools have the same pages (a's pool hands
// them out; the slots are the same numbers in b's), and fails t at the
// first batch whose logits or final hidden rows differ in any bit.
func (d Decode) Same(t testing.TB, a, b Forwarder, pool *model.KVCache, vocab int) {
	t.Helper()
	ps := pool.PageSize
	steps := make([]int, len(d.Lens)) // how many steps each sequence is in
	for _, st := range d.Steps {
		for _, i := range st {
			steps[i]++
		}
	}
	seqs := make([]model.Seq, len(d.Lens))
	started := make([]bool, len(d.Lens))
	tok := func(i, p int) int32 { return int32((p*37 + i*11 + 5) % vocab) }
	for k, st := range d.Steps {
		var fresh []model.Seq
		for _, i := range st {
			if started[i] {
				continue
			}
			started[i] = true
			n := d.Lens[i] + steps[i]
			pages, ok := pool.Alloc((n + ps - 1) / ps)
			if !ok {
				t.Fatal("cudatest: KV pool too small for the decode script")
			}
			toks := make([]int32, d.Lens[i])
			for p := range toks {
				toks[p] = tok(i, p)
			}
			seqs[i] = model.Seq{Slots: pool.SlotsFor(nil, pages, 0, n), Tokens: toks, Logits: model.LastRow}
			fresh = append(fresh, seqs[i])
		}
		if len(fresh) > 0 {
			SameOutput(t, fmt.Sprintf("step %d prefill", k), a.Forward(fresh), b.Forward(fresh))
			for _, i := range st {
				if seqs[i].Pos == 0 {
					seqs[i].Pos = d.Lens[i]
				}
			}
		}
		batch := make([]model.Seq, len(st))
		for j, i := range st {
			seqs[i].Tokens = []int32{tok(i, seqs[i].Pos)}
			batch[j] = seqs[i]
		}
		SameOutput(t, fmt.Sprintf("step %d (batch %v)", k, st), a.Forward(batch), b.Forward(batch))
		for _, i := range st {
			seqs[i].Pos++
		}
	}
}

// SameOutput fails t unless got and want hold the same rows, bit for bit.
func SameOutput(t testing.TB, what string, got, want *model.Output) {
	t.Helper()
	if fmt.Sprint(got.First) != fmt.Sprint(want.First) {
		t.Fatalf("%s: rows start at %v, want %v", what, got.First, want.First)
	}
	SameBits(t, what+" logits", got.Logits, want.Logits)
	SameBits(t, what+" hidden", got.Hidden, want.Hidden)
}

// SameBits fails t unless got and want have one shape and the same bits.
func SameBits(t testing.TB, what string, got, want kernels.Mat) {
	t.Helper()
	if got.Rows != want.Rows || got.Cols != want.Cols {
		t.Fatalf("%s: %d×%d, want %d×%d", what, got.Rows, got.Cols, want.Rows, want.Cols)
	}
	for r := range got.Rows {
		g, w := got.Row(r), want.Row(r)
		for c := range g {
			if math.Float32bits(g[c]) != math.Float32bits(w[c]) {
				t.Fatalf("%s: row %d col %d is %v (%#x), want %v (%#x)", what, r, c, g[c], math.Float32bits(g[c]), w[c], math.Float32bits(w[c]))
			}
		}
	}
}
