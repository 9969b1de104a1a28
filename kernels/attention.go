package kernels

import "fmt"

// GatherAttention sets out to the attention of one query over selected rows
// of a key/value store, the shape of DSA's sparse attention (the rows are
// the indexer's top-k for this token) and of decode over a paged KV pool:
//
//	s_t = scale · (q · keys.Row(rows[t]))
//	p   = softmax(s)   (float32, maximum subtracted)
//	out = Σ_t p_t · values.Row(rows[t])
//
// q has keys.Cols elements and out values.Cols. rows == nil means rows 0 …
// keys.Rows−1, i.e. dense attention over keys; with rows, the result is
// bit-identical to dense attention over those rows copied out in the same
// order, because scores and the weighted sum use the MatMulT and MatMul
// orders whichever way the rows are addressed. scores holds at least
// len(rows) elements (keys.Rows when rows is nil); it is left holding p.
// With no rows at all, out is zero.
//
// In absorbed MLA, keys is the [latent | k_rope] cache and values its latent
// columns; for several heads, call it once per head (heads share the rows).
func (c *CPU) GatherAttention(out, q []float32, keys, values Mat, rows []int32, scale float32, scores []float32) {
	keys.check("GatherAttention")
	values.check("GatherAttention")
	n := keys.Rows
	if rows != nil {
		n = len(rows)
		for _, r := range rows {
			if r < 0 || int(r) >= keys.Rows || int(r) >= values.Rows {
				panic(fmt.Sprintf("kernels: GatherAttention: row %d outside keys (%d rows) or values (%d rows)", r, keys.Rows, values.Rows))
			}
		}
	} else if values.Rows != keys.Rows {
		panic(fmt.Sprintf("kernels: GatherAttention: %d key rows, %d value rows", keys.Rows, values.Rows))
	}
	if len(q) != keys.Cols || len(out) != values.Cols || len(scores) < n {
		panic(fmt.Sprintf("kernels: GatherAttention: q [%d], keys ×%d, out [%d], values ×%d, scores [%d] for %d rows",
			len(q), keys.Cols, len(out), values.Cols, len(scores), n))
	}
	if n == 0 {
		clear(out)
		return
	}
	s := scores[:n]
	if len(q) > 0 {
		c.dots(s, q, keys, rows, 0, n)
	} else {
		clear(s) // no features: every score is 0
	}
	for t := range s {
		s[t] *= scale
	}
	c.softmaxRow(s)
	if len(out) > 0 {
		c.vecMat(out, s, values, rows, 0)
	}
}
