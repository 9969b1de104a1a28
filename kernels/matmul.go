package kernels

import (
	"fmt"
	"math"
)

// Batch invariance. Every element of a product is one dot product (MatMulT,
// attention scores) or one sum of k products taken down a column
// (MatMul, attention values), and each path computes it in a single fixed
// order that depends only on k: dotGo and one multiply-add chain on the Go
// path, the lane-and-fold order and two interleaved chains described in the
// assembly files on the SIMD paths. Tiles of 4 rows, single rows, tails
// and parallel chunks all use that order, so a row's result has the same bits
// whichever rows share its batch and however the work is split.

// MatMulT sets dst = x · wᵀ: dst is m×n, x is m×k and w is n×k, the layout of
// a Hugging Face Linear weight (out × in). dst must not overlap x or w.
func (c *CPU) MatMulT(dst, x, w Mat) { c.product(jobMatMulT, dst, x, w, w.Rows, w.Cols) }

// MatMul sets dst = x · w: dst is m×n, x is m×k and w is k×n. Each element is
// summed over k in a fixed order (see vecMat). dst must not overlap x or w.
func (c *CPU) MatMul(dst, x, w Mat) { c.product(jobMatMul, dst, x, w, w.Cols, w.Rows) }

// product checks and runs dst = x · wᵀ (jobMatMulT) or x · w (jobMatMul),
// where the weight w has n outputs and k inputs.
func (c *CPU) product(kind int, dst, x, w Mat, n, k int) {
	checkProduct(kind, dst, x, w, n, k)
	m := x.Rows
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		zeroMat(dst)
		return
	}
	c.parallel(kind, dst, x, w, m, n, k)
}

// checkProduct panics unless dst is m×n and x is m×k for the weight's
// n (out) and k (in).
func checkProduct(kind int, dst, x, w Mat, n, k int) {
	op := "MatMulT"
	if kind == jobMatMul {
		op = "MatMul"
	}
	dst.check(op)
	x.check(op)
	w.check(op)
	if dst.Rows != x.Rows || dst.Cols != n || x.Cols != k {
		panic(fmt.Sprintf("kernels: %s: dst %d×%d, x %d×%d, w %d×%d do not match",
			op, dst.Rows, dst.Cols, x.Rows, x.Cols, w.Rows, w.Cols))
	}
	if w.Rows > math.MaxInt32 {
		panic(fmt.Sprintf("kernels: %s: %d weight rows exceed int32 indexing", op, w.Rows))
	}
}

func zeroMat(m Mat) {
	for i := range m.Rows {
		clear(m.Row(i))
	}
}

// The two kinds of product.
const (
	jobMatMulT = iota // dst = x · wᵀ, by gemmT
	jobMatMul         // dst = x · w, by gemmN
)

// gemmJob is a product cut into blocks of rowBlock rows × colBlock columns.
type gemmJob struct {
	c          *CPU
	kind       int
	dst, x, w  Mat
	rowBlock   int
	colBlock   int
	colBlocks  int
	rows, cols int
}

func (j *gemmJob) runChunk(i int) {
	rb, cb := i/j.colBlocks, i%j.colBlocks
	i0, j0 := rb*j.rowBlock, cb*j.colBlock
	i1, j1 := min(i0+j.rowBlock, j.rows), min(j0+j.colBlock, j.cols)
	j.c.block(j.kind, j.dst, j.x, j.w, i0, i1, j0, j1)
}

// block computes rows [i0, i1) × columns [j0, j1) of a product of kind.
func (c *CPU) block(kind int, dst, x, w Mat, i0, i1, j0, j1 int) {
	if kind == jobMatMulT {
		c.gemmT(dst, x, w, i0, i1, j0, j1)
	} else {
		c.gemmN(dst, x, w, i0, i1, j0, j1)
	}
}

// parallel runs a product on the pool when it is large enough to pay for the
// split, else on the calling goroutine.
func (c *CPU) parallel(kind int, dst, x, w Mat, m, n, k int) {
	p := c.pool
	work := m * n * k
	if work <= c.parallelMACs || p.threads() == 1 || !p.acquire() {
		c.block(kind, dst, x, w, 0, m, 0, n)
		return
	}
	defer p.release()
	// Up to four chunks per thread balance the load when a core is busy with
	// something else, but no chunk smaller than minChunkMACs, whose cost would
	// be mostly the hand-off. MatMulT splits columns first (in multiples of
	// 16, so the SIMD kernels see whole tiles), rows (in multiples of 4) when
	// the columns alone give too few chunks; MatMul splits rows only, since
	// its kernel runs a whole row's columns at once.
	want := max(p.threads(), min(4*p.threads(), work/minChunkMACs))
	colBlocks := 1
	if kind == jobMatMulT {
		colBlocks = min(want, (n+15)/16)
	}
	colBlock := roundUp((n+colBlocks-1)/colBlocks, 16)
	colBlocks = (n + colBlock - 1) / colBlock
	rowBlocks := min((want+colBlocks-1)/colBlocks, (m+3)/4)
	rowBlock := roundUp((m+rowBlocks-1)/rowBlocks, 4)
	rowBlocks = (m + rowBlock - 1) / rowBlock

	j := &p.gemm
	*j = gemmJob{c: c, kind: kind, dst: dst, x: x, w: w, rowBlock: rowBlock, colBlock: colBlock,
		colBlocks: colBlocks, rows: m, cols: n}
	p.runLocked(j, rowBlocks*colBlocks)
	*j = gemmJob{} // drop the references so the pool does not keep buffers alive
}

func roundUp(v, to int) int { return (v + to - 1) / to * to }

// gemmT computes rows [i0, i1) × columns [j0, j1) of dst = x · wᵀ.
func (c *CPU) gemmT(dst, x, w Mat, i0, i1, j0, j1 int) {
	k := x.Cols
	i := i0
	if c.path != PathGo {
		// Tiles of 4 rows × cols columns; the columns past the last whole tile
		// go through dotsTail, the rows past the last whole tile through dots.
		cols := 4 // gemm4x4AVX512
		if c.path == PathAVX2 {
			cols = 2 // gemm4x2AVX2
		}
		nt := (j1 - j0) / cols
		for ; i+4 <= i1; i += 4 {
			if nt > 0 {
				d, xi, wj := &dst.Data[i*dst.Stride+j0], &x.Data[i*x.Stride], &w.Data[j0*w.Stride]
				if c.path == PathAVX512 {
					gemm4x4AVX512(d, dst.Stride, xi, x.Stride, wj, w.Stride, nt, k, avx512Mask(k%16))
				} else {
					gemm4x2AVX2(d, dst.Stride, xi, x.Stride, wj, w.Stride, nt, k, avx2Mask(k%8))
				}
			}
			if jt := j0 + cols*nt; jt < j1 {
				for r := i; r < i+4; r++ {
					c.dotsTail(dst.Data[r*dst.Stride+jt:r*dst.Stride+j1], x.Row(r), w, nil, jt, j1)
				}
			}
		}
	}
	for ; i < i1; i++ {
		c.dots(dst.Data[i*dst.Stride+j0:i*dst.Stride+j1], x.Row(i), w, nil, j0, j1)
	}
}

// dots sets out[j-j0] = x · w.Row(r(j)) for j in [j0, j1), where r(j) is
// idx[j] when idx is not nil and j otherwise. len(x) must be w.Cols ≥ 1 and
// every idx[j] a valid row.
func (c *CPU) dots(out, x []float32, w Mat, idx []int32, j0, j1 int) {
	if c.path == PathGo {
		for j := j0; j < j1; j++ {
			r := j
			if idx != nil {
				r = int(idx[j])
			}
			out[j-j0] = dotGo(x, w.Row(r))
		}
		return
	}
	if n8 := (j1 - j0) / 8; n8 > 0 {
		base, ip := &w.Data[j0*w.Stride], (*int32)(nil)
		if idx != nil {
			base, ip = &w.Data[0], &idx[j0]
		}
		c.gemv8(&out[0], x, base, w.Stride, ip, n8)
		j0 += 8 * n8
		out = out[8*n8:]
	}
	if j0 < j1 {
		c.dotsTail(out, x, w, idx, j0, j1)
	}
}

// dotsTail is dots for fewer than 8 columns on a SIMD path: it runs one
// 8-column tile whose missing columns repeat the last one, and keeps the
// results that exist. The tile kernel gives each column the same bits as a
// full tile would.
func (c *CPU) dotsTail(out, x []float32, w Mat, idx []int32, j0, j1 int) {
	var rows [8]int32
	var res [8]float32
	for t := range rows {
		j := min(j0+t, j1-1)
		if idx != nil {
			rows[t] = idx[j]
		} else {
			rows[t] = int32(j)
		}
	}
	c.gemv8(&res[0], x, &w.Data[0], w.Stride, &rows[0], 1)
	copy(out[:j1-j0], res[:])
}

// gemv8 runs the SIMD path's kernel of n8 tiles of 8 dot products with x
// (gemv8AVX512 or gemv8AVX2): rows w[j·ldw:], or w[idx[j]·ldw:] when idx is
// not nil.
func (c *CPU) gemv8(out *float32, x []float32, w *float32, ldw int, idx *int32, n8 int) {
	k := len(x)
	if c.path == PathAVX512 {
		gemv8AVX512(out, &x[0], w, ldw, idx, n8, k, avx512Mask(k%16))
	} else {
		gemv8AVX2(out, &x[0], w, ldw, idx, n8, k, avx2Mask(k%8))
	}
}

// gemmN computes rows [i0, i1) × columns [j0, j1) of dst = x · w.
func (c *CPU) gemmN(dst, x, w Mat, i0, i1, j0, j1 int) {
	for i := i0; i < i1; i++ {
		c.vecMat(dst.Data[i*dst.Stride+j0:i*dst.Stride+j1], x.Row(i), w, nil, j0)
	}
}

// vecMat sets out[j] = Σ_p x[p] · w.Row(r(p))[j0+j] for j < len(out), where
// r(p) is idx[p] when idx is not nil and p otherwise. The Go path sums each
// element in one multiply-add chain over p = 0, 1, …; the SIMD paths in two
// FMA chains, even and odd p, added at the end, which halves the wait on FMA
// latency. len(x) must be ≥ 1 and every idx[p] a valid row.
func (c *CPU) vecMat(out, x []float32, w Mat, idx []int32, j0 int) {
	n := len(out)
	var ip *int32
	if idx != nil {
		ip = &idx[0]
	}
	switch c.path {
	case PathGo:
		clear(out)
		for p, a := range x {
			r := p
			if idx != nil {
				r = int(idx[p])
			}
			row := w.Data[r*w.Stride+j0 : r*w.Stride+j0+n]
			for j, v := range row {
				out[j] += float32(a * v)
			}
		}
	case PathAVX512:
		for j := 0; j < n; j += 64 {
			vecMatAVX512(&out[j], &x[0], &w.Data[j0+j], w.Stride, ip, len(x), avx512Masks64(min(64, n-j)))
		}
	case PathAVX2:
		for j := 0; j < n; j += 32 {
			vecMatAVX2(&out[j], &x[0], &w.Data[j0+j], w.Stride, ip, len(x), avx2Mask(min(32, n-j)))
		}
	}
}

// dotGo returns a · b summed in four interleaved partial sums, combined as
// (s0+s1)+(s2+s3), then the tail in order. Every Go-path dot product goes
// through it. The float32 conversions round each product, so the compiler
// cannot fuse some of them into FMAs and not others.
func dotGo(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float32(a[i] * b[i])
		s1 += float32(a[i+1] * b[i+1])
		s2 += float32(a[i+2] * b[i+2])
		s3 += float32(a[i+3] * b[i+3])
	}
	s := (s0 + s1) + (s2 + s3)
	for ; i < len(a); i++ {
		s += float32(a[i] * b[i])
	}
	return s
}

// maskTable backs the AVX2 lane masks: &maskTable[32-c] is the start of c
// set lanes followed by clear ones.
var maskTable = [64]int32{
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
}

// avx2Mask returns int32 lane masks with the first c of 32 lanes set.
func avx2Mask(c int) *int32 { return &maskTable[32-c] }

// avx512Mask returns a 16-lane opmask with the first c lanes set.
func avx512Mask(c int) uint64 { return 1<<c - 1 }

// avx512Masks64 returns four 16-lane opmasks, low first, with the first c of
// 64 lanes set (1 ≤ c ≤ 64).
func avx512Masks64(c int) uint64 { return ^uint64(0) >> (64 - c) }
