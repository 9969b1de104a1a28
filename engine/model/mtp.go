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
// Draft (spec.go) calls it for the scheduler's speculative decoding, and
// the one-sequence reference (specref.go) for its test.
func (m *Model) MTPForward(seqs []Seq, prev kernels.Mat) *Output {
	if !m.HasDrafter() {
		panic("model: no MTP layer in this checkpoint or its KV cache")
	}
	mtp := m.W.MTP
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
