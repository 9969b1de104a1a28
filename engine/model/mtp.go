package model

import (
	"fmt"

	"github.com/glmbench/glmbench/kernels"
)

// MTPForward runs the MTP layer. Its row at position q reads the token at q
// and the hidden state before it — the main model's at q−1 (zero at q = 0,
// where the embedding is zeroed too, as vLLM and SGLang do), or the MTP's
// own output when drafting further ahead — and predicts the token at q+1.
// prev has one row per batch row. The layer caches its keys in the MTP's
// own KV layer (index num_hidden_layers), in the sequences' slots.
func (m *Model) MTPForward(seqs []Seq, prev kernels.Mat) *Output {
	mtp := m.W.MTP
	if mtp == nil || m.KV.Layers() <= m.Cfg.NumHiddenLayers {
		panic("model: no MTP layer in this checkpoint or its KV cache")
	}
	cfg := m.Cfg
	H := cfg.HiddenSize
	T, ri := m.begin(seqs)
	if prev.Rows != T || prev.Cols != H {
		panic(fmt.Sprintf("model: MTPForward: %d×%d hidden state for %d tokens of width %d", prev.Rows, prev.Cols, T, H))
	}
	eps := float32(cfg.RMSNormEps)
	in := m.ws.mat("mtp_in", T, 2*H)
	emb := m.ws.mat("mtp_emb", T, H)
	t := 0
	for _, s := range seqs {
		for i, tok := range s.Tokens {
			if s.Pos+i == 0 {
				clear(emb.Row(t))
			} else {
				copy(emb.Row(t), m.W.Embed.Row(int(tok)))
			}
			t++
		}
	}
	// eh_proj reads [enorm(embedding) ; hnorm(hidden)], the embedding first.
	m.K.RMSNorm(in.Slice(0, T, 0, H), emb, mtp.ENorm, eps)
	m.K.RMSNorm(in.Slice(0, T, H, 2*H), prev, mtp.HNorm, eps)
	g := m.ws.mat("mtp_x", T, H)
	m.K.MatMulT(g, in, mtp.EHProj)
	m.layer(cfg.NumHiddenLayers, &mtp.Layer, g, seqs, ri)
	return m.head(g, seqs, mtp.HeadNorm, "mtp_")
}

// SpecSeq is a sequence decoded with speculation, one sequence at a time.
// Its committed tokens are in both the main and the MTP KV caches.
type SpecSeq struct {
	Tokens []int32 // committed tokens, positions 0 … len−1
	Pages  []int32 // KV pages, enough for every position written
	Next   int32   // the token after Tokens, chosen from the last logits, not yet cached
	Hidden []float32
	// Hidden is the main model's final hidden state at position len−1.
}

// Drafter proposes k tokens to follow s.Tokens and s.Next.
type Drafter interface {
	Draft(m *Model, s *SpecSeq, k int) []int32
}

// MTPDrafter drafts greedily with the model's own MTP layer, each step
// feeding the layer its own previous output hidden state (EAGLE with one
// MTP layer, topk 1).
type MTPDrafter struct{}

// Draft implements Drafter.
func (MTPDrafter) Draft(m *Model, s *SpecSeq, k int) []int32 {
	H := m.Cfg.HiddenSize
	prev := kernels.NewMat(append([]float32(nil), s.Hidden...), 1, H)
	tok := s.Next
	var out []int32
	for i := range k {
		p := len(s.Tokens) + i
		o := m.MTPForward([]Seq{{Tokens: []int32{tok}, Pos: p, Slots: m.slots(s, p+1), Logits: LastRow}}, prev)
		tok = argmax(o.Logits.Row(0))
		out = append(out, tok)
		prev = kernels.NewMat(append([]float32(nil), o.Hidden.Row(0)...), 1, H)
	}
	return out
}

func (m *Model) slots(s *SpecSeq, n int) []int32 {
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

// SpecStep is one greedy speculative step: draft k tokens after s.Next,
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
func (m *Model) SpecStep(s *SpecSeq, d Drafter, k int) []int32 {
	H := m.Cfg.HiddenSize
	P := len(s.Tokens)
	drafts := d.Draft(m, s, k)
	if len(drafts) > k {
		drafts = drafts[:k]
	}
	verify := append([]int32{s.Next}, drafts...)
	out := m.Forward([]Seq{{Tokens: verify, Pos: P, Slots: m.slots(s, P+len(verify)), Logits: AllRows}})
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
	m.MTPForward([]Seq{{Tokens: committed, Pos: P, Slots: m.slots(s, P+j+1), Logits: NoRows}}, hid.Slice(0, j+1, 0, H))
	s.Tokens = append(s.Tokens, committed...)
	s.Hidden = append(s.Hidden[:0], hid.Row(j+1)...)
	s.Next = bonus
	return append(append([]int32(nil), drafts[:j]...), bonus)
}

// Prefill fills both caches for a new speculative sequence of tokens (the
// prompt) and chooses its first token greedily.
func (m *Model) Prefill(s *SpecSeq) {
	H := m.Cfg.HiddenSize
	n := len(s.Tokens)
	out := m.Forward([]Seq{{Tokens: s.Tokens, Pos: 0, Slots: m.slots(s, n), Logits: AllRows}})
	prev := kernels.NewMat(make([]float32, n*H), n, H)
	for i := 1; i < n; i++ {
		copy(prev.Row(i), out.Hidden.Row(i-1))
	}
	s.Hidden = append(s.Hidden[:0], out.Hidden.Row(n-1)...)
	s.Next = argmax(out.Logits.Row(n - 1))
	m.MTPForward([]Seq{{Tokens: s.Tokens, Pos: 0, Slots: m.slots(s, n), Logits: NoRows}}, prev)
}
