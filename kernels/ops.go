package kernels

import (
	"fmt"
	"math"
)

// The row-wise kernels below compute each row on its own, in a fixed order,
// so they are batch-invariant by construction. Their inner loops (x·x, the
// maximum, e^x, scaling, the gates) use the path's vector code; all but the
// RMSNorm sum of squares give the same bits on every path. LayerNorm, RoPE
// and the rest are plain Go: on the model's widths they cost little.

// RMSNorm sets each row of dst to x_row / sqrt(mean(x_row²) + eps) ⊙ weight.
// As in Hugging Face's float32 RMSNorm, the mean of squares is a float32
// sum (here the path's dot product, x · x) and the row is scaled by the
// float32 reciprocal root before the weight. dst may be x.
func (c *CPU) RMSNorm(dst, x Mat, weight []float32, eps float32) {
	checkRows("RMSNorm", dst, x, len(weight))
	for i := range x.Rows {
		xr, dr := x.Row(i), dst.Row(i)
		if len(xr) == 0 {
			continue
		}
		ms := c.dot(xr, xr) / float32(len(xr))
		c.scale(dr, xr, weight, float32(1/math.Sqrt(float64(ms+eps))))
	}
}

// LayerNorm sets each row of dst to (x_row − mean) / sqrt(var + eps) ⊙ weight
// + bias, where var is the biased variance (as torch.nn.LayerNorm), both
// accumulated in float64 in two passes. dst may be x.
func (c *CPU) LayerNorm(dst, x Mat, weight, bias []float32, eps float32) {
	checkRows("LayerNorm", dst, x, len(weight))
	if len(bias) != len(weight) {
		panic(fmt.Sprintf("kernels: LayerNorm: %d weights, %d biases", len(weight), len(bias)))
	}
	for i := range x.Rows {
		xr, dr := x.Row(i), dst.Row(i)
		mean := sum64(xr) / float64(len(xr))
		inv := 1 / math.Sqrt(sumSquares(xr, mean)/float64(len(xr))+float64(eps))
		for j, v := range xr {
			dr[j] = float32(float32((float64(v)-mean)*inv)*weight[j]) + bias[j]
		}
	}
}

// sum64 returns the sum of x in float64, in four interleaved partial sums
// (a single chain would wait on each add's latency) combined in a fixed
// order.
func sum64(x []float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += float64(x[i])
		s1 += float64(x[i+1])
		s2 += float64(x[i+2])
		s3 += float64(x[i+3])
	}
	for ; i < len(x); i++ {
		s0 += float64(x[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// sumSquares returns Σ (x_i − center)² in float64, summed like sum64.
func sumSquares(x []float32, center float64) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		d0, d1 := float64(x[i])-center, float64(x[i+1])-center
		d2, d3 := float64(x[i+2])-center, float64(x[i+3])-center
		s0 += float64(d0 * d0) // rounded: never fused into an FMA
		s1 += float64(d1 * d1)
		s2 += float64(d2 * d2)
		s3 += float64(d3 * d3)
	}
	for ; i < len(x); i++ {
		d := float64(x[i]) - center
		s0 += float64(d * d)
	}
	return (s0 + s1) + (s2 + s3)
}

// dot returns a · b in the path's dot-product order (that of MatVec).
func (c *CPU) dot(a, b []float32) float32 {
	if len(a) == 0 {
		return 0
	}
	var out [1]float32
	c.dots(out[:], a, Mat{Data: b, Rows: 1, Cols: len(b), Stride: len(b)}, nil, 0, 1)
	return out[0]
}

// scale sets dst[i] = float32(x[i]·s) · w[i], or x[i]·s when w is nil, with
// the path's vector code; every path gives the same bits. dst may be x.
func (c *CPU) scale(dst, x, w []float32, s float32) {
	n := len(x)
	if n == 0 {
		return
	}
	_ = dst[n-1]
	wp := optionalPtr(w, n)
	switch c.path {
	case PathAVX512:
		scaleAVX512(&dst[0], &x[0], wp, n, s)
	case PathAVX2:
		scaleAVX2(&dst[0], &x[0], wp, n, s, avx2Mask(n%8))
	default:
		if w == nil {
			for i, v := range x {
				dst[i] = v * s
			}
			return
		}
		for i, v := range x {
			dst[i] = float32(v*s) * w[i]
		}
	}
}

// optionalPtr returns &v[0] for a vector kernel's optional operand, after
// checking that v holds n elements, or nil when v is nil.
func optionalPtr(v []float32, n int) *float32 {
	if v == nil {
		return nil
	}
	_ = v[n-1]
	return &v[0]
}

// checkRows panics unless dst and x are matrices of the same shape with
// cols columns.
func checkRows(op string, dst, x Mat, cols int) {
	dst.check(op)
	x.check(op)
	if dst.Rows != x.Rows || dst.Cols != x.Cols || x.Cols != cols {
		panic(fmt.Sprintf("kernels: %s: dst %d×%d, x %d×%d, %d parameters do not match",
			op, dst.Rows, dst.Cols, x.Rows, x.Cols, cols))
	}
}

// softmaxRow replaces r by its softmax, e^(r−max) · (1 / Σ e^(r−max)), the
// sum accumulated in float64 (GatherAttention's p). −Inf entries get
// probability 0; a row with no finite maximum (all −Inf, or a NaN) comes out
// NaN, as in PyTorch.
func (c *CPU) softmaxRow(r []float32) {
	if len(r) == 0 {
		return
	}
	m := c.max(r)
	c.expAffine(r, r, 1, -m)
	c.scale(r, r, nil, float32(1/sum64(r)))
}

// max returns the largest element of r, which is not empty. With a NaN in r
// the result depends on the path; softmax makes such a row NaN on every
// path.
func (c *CPU) max(r []float32) float32 {
	switch c.path {
	case PathAVX512:
		return maxAVX512(&r[0], len(r))
	case PathAVX2:
		return maxAVX2(&r[0], len(r), avx2Mask(len(r)%8))
	}
	return max32(r)
}

// max32 returns the largest element of r (NaN if r holds one), in four
// running maxima so the loop does not wait on one compare chain.
func max32(r []float32) float32 {
	m0, m1, m2, m3 := r[0], r[0], r[0], r[0]
	i := 0
	for ; i+4 <= len(r); i += 4 {
		m0 = max(m0, r[i])
		m1 = max(m1, r[i+1])
		m2 = max(m2, r[i+2])
		m3 = max(m3, r[i+3])
	}
	for ; i < len(r); i++ {
		m0 = max(m0, r[i])
	}
	return max(max(m0, m1), max(m2, m3))
}

// SwiGLU sets dst = (silu(x · gateᵀ) ⊙ (x · upᵀ)) · downᵀ, the gated MLP of a
// dense layer or one expert: x m×h, gate and up I×h, down h×I, dst m×h. work
// holds at least 2·m·I elements. dst must not overlap x or work.
func (c *CPU) SwiGLU(dst, x, gate, up, down Mat, work []float32) {
	m, inter := x.Rows, gate.Rows
	if len(work) < 2*m*inter {
		panic(fmt.Sprintf("kernels: SwiGLU: work holds %d elements, needs %d", len(work), 2*m*inter))
	}
	g := NewMat(work[:m*inter], m, inter)
	u := NewMat(work[m*inter:2*m*inter], m, inter)
	c.MatMulT(g, x, gate)
	c.MatMulT(u, x, up)
	c.gate(g.Data, g.Data, u.Data) // g = silu(g) ⊙ u
	c.MatMulT(dst, g, down)
}

// Add sets dst = a + b elementwise.
func (c *CPU) Add(dst, a, b []float32) {
	checkLens("Add", len(dst), len(a), len(b))
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}

// AddScaled sets dst += alpha · x elementwise (the product rounded before
// the sum).
func (c *CPU) AddScaled(dst []float32, alpha float32, x []float32) {
	checkLens("AddScaled", len(dst), len(x), len(x))
	for i, v := range x {
		dst[i] += float32(alpha * v)
	}
}

// Sigmoid sets dst = 1 / (1 + e^−x) elementwise. dst may be x.
func (c *CPU) Sigmoid(dst, x []float32) {
	checkLens("Sigmoid", len(dst), len(x), len(x))
	c.gate(dst, x, nil)
}

// gate sets dst[i] = x[i] / (1 + e^−x[i]) · up[i] (silu(x) ⊙ up, SwiGLU's
// gate), or 1 / (1 + e^−x[i]) when up is nil (Sigmoid), with the path's
// vector code; every path gives the same bits. dst may be x or up.
func (c *CPU) gate(dst, x, up []float32) {
	n := len(x)
	if n == 0 {
		return
	}
	_ = dst[n-1]
	upp := optionalPtr(up, n)
	switch c.path {
	case PathAVX512:
		gateAVX512(&dst[0], &x[0], upp, n)
	case PathAVX2:
		gateAVX2(&dst[0], &x[0], upp, n, avx2Mask(n%8))
	default:
		var e [64]float32 // e^−x for one chunk, on the stack
		for i := 0; i < n; i += len(e) {
			xs := x[i:min(i+len(e), n)]
			c.expAffine(e[:len(xs)], xs, -1, 0)
			if up == nil {
				for j := range xs {
					dst[i+j] = 1 / (1 + e[j])
				}
				continue
			}
			for j, g := range xs {
				dst[i+j] = g / (1 + e[j]) * up[i+j]
			}
		}
	}
}

func checkLens(op string, n, a, b int) {
	if n != a || n != b {
		panic(fmt.Sprintf("kernels: %s: lengths %d, %d, %d differ", op, n, a, b))
	}
}

// ReluAXPY sets dst += alpha · max(x, 0) elementwise (a NaN in x counts as
// 0): one head's term of DSA's indexer score Σ_h w_h · ReLU(q_h · k). On the
// SIMD paths every element, tail included, gets the same fused multiply-add,
// so an element's result does not depend on its index or the slice length.
func (c *CPU) ReluAXPY(dst []float32, alpha float32, x []float32) {
	if len(x) != len(dst) {
		panic(fmt.Sprintf("kernels: ReluAXPY: dst [%d], x [%d]", len(dst), len(x)))
	}
	n := len(dst)
	if n == 0 {
		return
	}
	switch c.path {
	case PathAVX512:
		reluAXPYAVX512(&dst[0], &x[0], n, alpha)
	case PathAVX2:
		reluAXPYAVX2(&dst[0], &x[0], n, alpha, avx2Mask(n%8))
	default:
		for i, v := range x {
			if v > 0 {
				dst[i] += alpha * v
			}
		}
	}
}
