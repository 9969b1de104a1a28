package model

// This file is the reference for speculative decoding with the MTP layer,
// not the serving path: the scheduler (engine/sched, spec.go) drafts with
// Model.Draft (spec.go here), which is tested against RefMTPDrafter, and
// verifies a batch in one Forward. This decodes one sequence at a time,
// greedily, and its test checks that it gives exactly greedy decoding's
// tokens and KV cache. Its names carry the Ref prefix so that nobody takes
// them for what serves requests.

import (
	"fmt"

	"github.com/glmbench/glmbench/kernels"
)

// RefSpecSeq is a sequence decoded with speculation, one sequence at a time.
// Its committed tokens are in both the main and the MTP KV caches.
type RefSpecSeq struct {
	Tokens []int32 // committed tokens, positions 0 … len−1
	Pages  []int32 // KV pages, enough for every position written
	Next   int32   // the token after Tokens, chosen from the last logits, not yet cached
	Hidden []float32
	// Hidden is the main model's final hidden state at position len−1.
}

// RefDrafter proposes k tokens to follow s.Tokens and s.Next.
type RefDrafter interface {
	Draft(m *Model, s *RefSpecSeq, k int) []int32
}

// RefMTPDrafter drafts greedily with the model's own MTP layer, each step
// feeding the layer its own previous output hidden state (EAGLE with one
// MTP layer, topk 1).
type RefMTPDrafter struct{}

// Draft implements RefDrafter.
func (RefMTPDrafter) Draft(m *Model, s *RefSpecSeq, k int) []int32 {
	H := m.Cfg.HiddenSize
	prev := kernels.NewMat(append([]float32(nil), s.Hidden...), 1, H)
	tok := s.Next
	var out []int32
	for i := range k {
		p := len(s.Tokens) + i
		o := m.MTPForward([]Seq{{Tokens: []int32{tok}, Pos: p, Slots: m.refSlots(s, p+1), Logits: LastRow}}, prev)
		tok = argmax(o.Logits.Row(0))
		out = append(out, tok)
		prev = kernels.NewMat(append([]float32(nil), o.Hidden.Row(0)...), 1, H)
	}
	return out
}

func (m *Model) refSlots(s *RefSpecSeq, n int) []int32 {
	need := (n + m.KV.PageSize - 1) / m.KV.PageSize
	if len(s.Pages) < need {
		panic(fmt.Sprintf("model: sequence has %d pages, needs %d for %d positions", len(s.Pages), need, n))
	}
	return m.KV.SlotsFor(nil, s.Pages, 0, n)
}

func argmax(x []float32) int32 {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return int32(best)
}

// RefSpecStep is one greedy speculative step: draft k tokens after s.Next,
// verify [s.Next, drafts…] with the main model in one forward pass, accept
// the longest prefix of drafts that greedy decoding agrees with, and add
// the target's own next token. It commits s.Next and the accepted drafts to
// the caches and returns the new tokens (accepted drafts, then the target's
// token, which becomes s.Next): 1 to k+1 of them, exactly what greedy
// decoding would have produced.
//
// KV rows written for rejected drafts lie beyond the committed length, where
// nothing reads them, and are overwritten when those positions are reached:
// the cache is as if no draft had happened. The MTP layer's rows for the
// committed positions are recomputed from the main model's hidden states,
// so the next draft starts from the same cache a fresh prefill would give.
func (m *Model) RefSpecStep(s *RefSpecSeq, d RefDrafter, k int) []int32 {
	H := m.Cfg.HiddenSize
	P := len(s.Tokens)
	drafts := d.Draft(m, s, k)
	if len(drafts) > k {
		drafts = drafts[:k]
	}
	verify := append([]int32{s.Next}, drafts...)
	out := m.Forward([]Seq{{Tokens: verify, Pos: P, Slots: m.refSlots(s, P+len(verify)), Logits: AllRows}})
	// Row i predicts the token at P+i+1.
	j := 0
	for j < len(drafts) && argmax(out.Logits.Row(j)) == drafts[j] {
		j++
	}
	bonus := argmax(out.Logits.Row(j))
	// Hidden states of the committed positions P … P+j, for the MTP refresh.
	hid := kernels.NewMat(make([]float32, (j+2)*H), j+2, H)
	copy(hid.Row(0), s.Hidden)
	for i := 0; i <= j; i++ {
		copy(hid.Row(i+1), out.Hidden.Row(i))
	}
	committed := verify[:j+1]
	m.MTPForward([]Seq{{Tokens: committed, Pos: P, Slots: m.refSlots(s, P+j+1), Logits: NoRows}}, hid.Slice(0, j+1, 0, H))
	s.Tokens = append(s.Tokens, committed...)
	s.Hidden = append(s.Hidden[:0], hid.Row(j+1)...)
	s.Next = bonus
	return append(append([]int32(nil), drafts[:j]...), bonus)
}

// RefSpecPrefill fills both caches for a new speculative sequence of tokens (the
// prompt) and chooses its first token greedily.
func (m *Model) RefSpecPrefill(s *RefSpecSeq) {
	H := m.Cfg.HiddenSize
	n := len(s.Tokens)
	out := m.Forward([]Seq{{Tokens: s.Tokens, Pos: 0, Slots: m.refSlots(s, n), Logits: AllRows}})
	prev := kernels.NewMat(make([]float32, n*H), n, H)
	for i := 1; i < n; i++ {
		copy(prev.Row(i), out.Hidden.Row(i-1))
	}
	s.Hidden = append(s.Hidden[:0], out.Hidden.Row(n-1)...)
	s.Next = argmax(out.Logits.Row(n - 1))
	m.MTPForward([]Seq{{Tokens: s.Tokens, Pos: 0, Slots: m.refSlots(s, n), Logits: NoRows}}, prev)
}
