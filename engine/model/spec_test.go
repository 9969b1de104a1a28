package model

import (
	"slices"
	"testing"

	"github.com/glmbench/glmbench/kernels"
)

// TestBatchedDraftIsTheReferenceDrafters checks Model.Draft, which the
// scheduler calls, against RefMTPDrafter one sequence at a time: for
// prompts of several lengths drafted in one batch, with the draft cache
// filled in the same call as the draft or in a call of its own before it
// (as after a prefill chunk), the drafts are the reference's.
func TestBatchedDraftIsTheReferenceDrafters(t *testing.T) {
	t.Parallel()
	cfg := microConfig()
	H := cfg.HiddenSize
	lens := []int{1, 9, 30}
	const k = 4
	var want [][]int32
	var nexts []int32
	for i, n := range lens {
		ref := newTestModel(t, cfg, 5, 64)
		pages, _ := ref.KV.Alloc(16)
		s := &RefSpecSeq{Tokens: tokensN(n, i), Pages: pages}
		ref.RefSpecPrefill(s)
		want = append(want, RefMTPDrafter{}.Draft(ref, s, k))
		nexts = append(nexts, s.Next)
	}
	for _, split := range []bool{false, true} {
		m := newTestModel(t, cfg, 5, 256)
		var seqs []DraftSeq
		var fill []DraftSeq
		for i, n := range lens {
			var pages []int32
			prompt := tokensN(n, i)
			all := append(slices.Clone(prompt), nexts[i])
			seq := seqOf(t, m, &pages, n+k, prompt, 0, AllRows)
			out := m.Forward([]Seq{seq})
			if got := argmax(out.Logits.Row(n - 1)); got != nexts[i] {
				t.Fatalf("sequence %d: next token %d, reference %d", i, got, nexts[i])
			}
			// hid row r is the main model's hidden state before position r.
			hid := kernels.NewMat(make([]float32, (n+1)*H), n+1, H)
			for r := 1; r <= n; r++ {
				copy(hid.Row(r), out.Hidden.Row(r-1))
			}
			if !split {
				seqs = append(seqs, DraftSeq{Seq: Seq{Tokens: all, Pos: 0, Slots: seq.Slots}, Hidden: hid, K: k, All: all})
				continue
			}
			fill = append(fill, DraftSeq{Seq: Seq{Tokens: prompt, Pos: 0, Slots: seq.Slots}, Hidden: hid.Slice(0, n, 0, H), All: prompt})
			seqs = append(seqs, DraftSeq{Seq: Seq{Tokens: all[n:], Pos: n, Slots: seq.Slots},
				Hidden: kernels.NewMat(slices.Clone(hid.Row(n)), 1, H), K: k, All: all})
		}
		if split {
			if got := m.Draft(fill); len(got) != len(fill) || got[0] != nil {
				t.Fatalf("a fill with K 0 drafted %v", got)
			}
		}
		got := m.Draft(seqs)
		for i := range lens {
			if !slices.Equal(got[i], want[i]) {
				t.Fatalf("split=%v sequence %d: Draft %v, reference %v", split, i, got[i], want[i])
			}
		}
	}
}
