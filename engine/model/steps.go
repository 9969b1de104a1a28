package model

import "github.com/glmbench/glmbench/kernels"

// Steps runs single steps of the forward pass on host matrices with the
// model's own code: the indexer's key selection, absorbed attention over
// the selected keys, the router given its scores, the routed experts and
// their weighted sum. An executor that runs the rest of the pass itself
// (cudaexec's host Ops) calls them, so that it computes Forward's bits.
// Steps keeps its own scratch and is not safe for concurrent use.
type Steps struct {
	m   Model
	cfg Config // the indexer's settings, for SelectKeys
}

// NewSteps returns Steps running on the kernels k.
func NewSteps(k kernels.Backend) *Steps {
	s := &Steps{}
	s.m.K = k
	return s
}

// SelectKeys is Forward's key selection for a batch: for row t of iq (the
// batch's rows, seqs in order; a Seq's Tokens are only counted) the KV
// slots it attends to, in position order — every visible one while at most
// topk (index_topk) are, else the indexer's topk best over the keys ikeys
// (IndexDim × Slots), with iw.Cols indexer heads of iq.Cols/iw.Cols
// features. The lists are valid until the next call.
func (s *Steps) SelectKeys(ikeys, iq, iw kernels.Mat, seqs []Seq, topk int) [][]int32 {
	s.cfg.IndexTopK, s.cfg.IndexNHeads, s.cfg.IndexHeadDim = topk, iw.Cols, iq.Cols/iw.Cols
	s.m.Cfg = &s.cfg
	s.m.prepareWorkers()
	s.m.selectKeys(ikeys, iq, iw, seqs)
	return s.m.rowsOf
}

// Attend is absorbed MLA's attention (attendAbsorbed's): o[t, h·r : (h+1)·r]
// (r = values.Cols) is head h of row t, the query qt[t, h·dk : (h+1)·dk]
// (dk = keys.Cols) over the cache rows rows[t] of keys and values.
func (s *Steps) Attend(o, qt, keys, values kernels.Mat, rows [][]int32, heads int, scale float32) {
	s.m.prepareWorkers()
	own := s.m.rowsOf // SelectKeys' lists, which rows must not become
	s.m.rowsOf = rows
	s.m.attendRows(o, qt, keys, values, heads, scale)
	s.m.rowsOf = own
}

// Route is the MoE router's choice (noaux_tc, as Forward routes) given its
// sigmoid scores (T × experts) and correction bias (experts); cfg gives
// num_experts_per_tok, n_group, topk_group, routed_scaling_factor and
// norm_topk_prob. Row t's experts are idx[t·k : (t+1)·k], highest-scoring
// first, weighed by w[t·k : (t+1)·k]; both are valid until the next call.
func (s *Steps) Route(scores kernels.Mat, bias []float32, cfg *Config) (idx []int32, w []float32) {
	s.m.Cfg = cfg
	rt := s.m.routeScores(scores, bias)
	return rt.idx, rt.w
}

// Experts sets row t·k+i of results to expert idx[t·k+i]'s SwiGLU of row t
// of xn, each expert run once on its rows gathered, as Forward's MoE does.
func (s *Steps) Experts(results, xn kernels.Mat, idx []int32, k int, experts []MLP) {
	s.m.experts(results, xn, idx, k, experts)
}

// Combine adds to row t of out Σ_i w[t·k+i] · results[t·k+i] in Forward's
// fixed order: i ascending, each product rounded before its sum.
func (s *Steps) Combine(out, results kernels.Mat, w []float32, k int) {
	s.m.combine(out, results, w, k)
}
