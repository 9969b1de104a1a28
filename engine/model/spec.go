package model

import (
	"fmt"

	"github.com/glmbench/glmbench/kernels"
)

// DraftSeq is one sequence's share of a draft batch (Model.Draft): the
// scheduler's request to bring the MTP layer's cache up to date and to
// propose the tokens after the sequence's last one.
type DraftSeq struct {
	// Seq's Tokens are the positions the main model committed since the
	// sequence's last draft, at Pos, …, then its next token, the last one,
	// which the main model has not cached yet. Slots holds the slot of
	// every position the draft writes: up to the last token's position
	// plus K−1. Logits is ignored.
	Seq
	// Hidden has one row per token of Tokens: the main model's final hidden
	// state at the position before it (zeros before position 0; a matrix of
	// width 0 is all zeros).
	Hidden kernels.Mat
	// K is how many tokens to draft after the last token; 0 only fills the
	// draft cache.
	K int
	// All is every token of the sequence so far, ending with Tokens: the
	// text a drafter that knows the continuation (a test's oracle) reads.
	All []int32
}

// Draft runs the MTP layer as EAGLE's drafter with topk 1: first over each
// sequence's tokens, with the main model's hidden states before them — its
// cache rows for those positions are then those of the real context, as
// RefSpecStep's refresh leaves them — and then K−1 more steps of one token,
// each feeding the layer its own previous output hidden state and the
// token it chose (greedy, as RefMTPDrafter). It returns each sequence's K
// drafted tokens. The rows it writes past the last token's position are
// provisional: the next Draft rewrites those that the verify committed.
func (m *Model) Draft(seqs []DraftSeq) [][]int32 {
	return DraftWith(seqs, m.Cfg.HiddenSize, m.MTPForward)
}

// DraftWith is Draft over any MTP layer's forward pass: mtp runs the layer
// over a batch whose rows read the hidden states prev (MTPForward's
// meaning, hidden state width H), for an executor that runs the layer
// elsewhere than Model (cudaexec's).
func DraftWith(seqs []DraftSeq, H int, mtp func(seqs []Seq, prev kernels.Mat) *Output) [][]int32 {
	T, maxK := 0, 0
	first := make([]Seq, len(seqs))
	for i, s := range seqs {
		if s.Hidden.Rows != len(s.Tokens) || (s.Hidden.Cols != 0 && s.Hidden.Cols != H) {
			panic(fmt.Sprintf("model: Draft: %d×%d hidden state for %d tokens of width %d", s.Hidden.Rows, s.Hidden.Cols, len(s.Tokens), H))
		}
		rows := NoRows
		if s.K > 0 {
			rows = LastRow
		}
		first[i] = Seq{Tokens: s.Tokens, Pos: s.Pos, Slots: s.Slots, Logits: rows}
		T += len(s.Tokens)
		maxK = max(maxK, s.K)
	}
	prev := kernels.NewMat(make([]float32, T*H), T, H)
	t := 0
	for _, s := range seqs {
		for r := range s.Tokens {
			if s.Hidden.Cols == H { // width 0: zeros
				copy(prev.Row(t), s.Hidden.Row(r))
			}
			t++
		}
	}
	drafts := make([][]int32, len(seqs))
	if T == 0 {
		return drafts
	}
	o := mtp(first, prev)
	// hid[i] is sequence i's last MTP hidden state, the next step's input.
	hid := make([][]float32, len(seqs))
	r := 0
	for i, s := range seqs {
		if s.K > 0 {
			drafts[i] = append(drafts[i], argmax(o.Logits.Row(r)))
			hid[i] = append([]float32(nil), o.Hidden.Row(r)...)
			r++
		}
	}
	for step := 1; step < maxK; step++ {
		var batch []Seq
		var who []int
		for i, s := range seqs {
			if s.K > step {
				p := s.Pos + len(s.Tokens) - 1 + step
				batch = append(batch, Seq{Tokens: drafts[i][step-1 : step], Pos: p, Slots: s.Slots[:p+1], Logits: LastRow})
				who = append(who, i)
			}
		}
		in := kernels.NewMat(make([]float32, len(who)*H), len(who), H)
		for j, i := range who {
			copy(in.Row(j), hid[i])
		}
		o := mtp(batch, in)
		for j, i := range who {
			drafts[i] = append(drafts[i], argmax(o.Logits.Row(j)))
			hid[i] = append(hid[i][:0], o.Hidden.Row(j)...)
		}
	}
	return drafts
}

// HasDrafter reports whether the model can draft: its checkpoint has an MTP
// layer and its KV cache a layer for it.
func (m *Model) HasDrafter() bool {
	return m.W.MTP != nil && m.KV.Layers() > m.Cfg.NumHiddenLayers
}
