package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// near reports whether got is within tol of want (NaN matches only NaN).
func near(got float32, want, tol float64) bool {
	if math.IsNaN(want) {
		return got != got
	}
	return math.Abs(float64(got)-want) <= tol
}

func TestExp32IsWithinTwoUlpsOfMathExp(t *testing.T) {
	check := func(x float32) {
		got, want := exp32(x), math.Exp(float64(x))
		w32 := float32(want)
		ulp := float64(math.Nextafter32(w32, float32(math.Inf(1))) - w32)
		if w32 == 0 || math.IsInf(float64(w32), 0) {
			ulp = float64(math.SmallestNonzeroFloat32)
		}
		if math.IsInf(float64(w32), 1) {
			if !math.IsInf(float64(got), 1) && got < math.MaxFloat32 {
				t.Fatalf("exp32(%v) = %v, want +Inf or MaxFloat32", x, got)
			}
			return
		}
		if !(math.Abs(float64(got)-want) <= 2*ulp) {
			t.Fatalf("exp32(%v) = %v, want %v", x, got, want)
		}
	}
	for x := float32(-105); x < 90; x += 0.0137 {
		check(x)
	}
	for _, x := range []float32{0, -0.0, 1, -1, 88.72, 88.7228, -87.3, -100, -103.9, -104, 1e-8, -1e-8,
		float32(math.Inf(1)), float32(math.Inf(-1))} {
		check(x)
	}
	if v := exp32(float32(math.NaN())); v == v {
		t.Fatalf("exp32(NaN) = %v", v)
	}
}

func TestRMSNormAndLayerNormMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range backends(t) {
		for _, n := range oddSizes {
			x := randMat(rng, 5, n, n+3)
			w, b := randVec(rng, n), randVec(rng, n)
			dst := randMat(rng, 5, n, n+1)
			c.RMSNorm(dst, x, w, 1e-5)
			for i := range x.Rows {
				want := refRMSNorm(x.Row(i), w, 1e-5)
				for j, v := range dst.Row(i) {
					if !near(v, want[j], 1e-6*math.Abs(want[j])+1e-7) {
						t.Fatalf("%s RMSNorm n=%d [%d][%d] = %v, want %v", c.Name(), n, i, j, v, want[j])
					}
				}
			}
			c.LayerNorm(dst, x, w, b, 1e-6)
			for i := range x.Rows {
				want := refLayerNorm(x.Row(i), w, b, 1e-6)
				for j, v := range dst.Row(i) {
					if !near(v, want[j], 1e-5*math.Abs(want[j])+2e-6) {
						t.Fatalf("%s LayerNorm n=%d [%d][%d] = %v, want %v", c.Name(), n, i, j, v, want[j])
					}
				}
			}
			// In place gives the same bits as out of place.
			out := slices.Clone(dst.Data)
			c.LayerNorm(x, x, w, b, 1e-6)
			for i := range x.Rows {
				if !slices.Equal(x.Row(i), out[i*dst.Stride:i*dst.Stride+n]) {
					t.Fatalf("%s LayerNorm in place differs at n=%d row %d", c.Name(), n, i)
				}
			}
		}
	}
}

// softmaxRows runs GatherAttention's softmax over each row of x.
func softmaxRows(c *CPU, x Mat) {
	for i := range x.Rows {
		c.softmaxRow(x.Row(i))
	}
}

func TestSoftmaxMatchesReferenceAndHandlesInfinities(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	c := Default()
	for _, n := range oddSizes {
		x := randMat(rng, 3, n, n)
		for j := range x.Data {
			x.Data[j] *= 30 // spread wide enough that max subtraction matters
		}
		if n > 2 {
			x.Data[1] = float32(math.Inf(-1)) // a masked position
		}
		want := make([][]float64, 3)
		for i := range want {
			want[i] = refSoftmax(x.Row(i))
		}
		softmaxRows(c, x)
		for i := range want {
			var sum float64
			for j, v := range x.Row(i) {
				sum += float64(v)
				if !near(v, want[i][j], 1e-6*want[i][j]+1e-12) {
					t.Fatalf("n=%d softmax[%d][%d] = %v, want %v", n, i, j, v, want[i][j])
				}
			}
			if math.Abs(sum-1) > 1e-5 {
				t.Fatalf("n=%d row %d sums to %v", n, i, sum)
			}
		}
	}
	big := NewMat([]float32{1e30, 1e30, -1e30}, 1, 3)
	softmaxRows(c, big)
	if big.Data[0] != 0.5 || big.Data[1] != 0.5 || big.Data[2] != 0 {
		t.Fatalf("softmax of huge values = %v, want [0.5 0.5 0]", big.Data)
	}
}

func TestRoPEMatchesReferenceAndKeepsRelativePosition(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	c := Default()
	const theta = 1e6
	for _, dim := range []int{2, 4, 8, 16, 64} {
		r := NewRope(dim, 8192, theta)
		pos := []int32{0, 1, 2, 3, 17, 100, 4095, 8191}
		x := randMat(rng, len(pos), dim, dim+2)
		orig := make([][]float32, len(pos))
		for i := range pos {
			orig[i] = slices.Clone(x.Row(i))
		}
		c.RoPE(x, pos, r)
		for i, p := range pos {
			want := refRoPE(orig[i], int(p), theta)
			for j, v := range x.Row(i) {
				// The angle p·f is a float32 product, as in Hugging Face, so its
				// error grows with p.
				if !near(v, want[j], 1e-6+2e-7*float64(p)) {
					t.Fatalf("dim=%d pos=%d x[%d] = %v, want %v", dim, p, j, v, want[j])
				}
			}
		}
		// q·k after rotation depends only on the distance between positions.
		q, k := randVec(rng, dim), randVec(rng, dim)
		dotAt := func(pq, pk int32) float64 {
			qm := NewMat(slices.Clone(q), 1, dim)
			km := NewMat(slices.Clone(k), 1, dim)
			c.RoPE(qm, []int32{pq}, r)
			c.RoPE(km, []int32{pk}, r)
			var s float64
			for j := range dim {
				s += float64(qm.Data[j]) * float64(km.Data[j])
			}
			return s
		}
		if a, b := dotAt(10, 3), dotAt(107, 100); math.Abs(a-b) > 1e-4 {
			t.Fatalf("dim=%d: q·k at (10, 3) = %v but at (107, 100) = %v", dim, a, b)
		}
	}
}

func TestSwiGLUMatchesReferenceAndIsBatchInvariant(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, c := range backends(t) {
		for _, shape := range [][2]int{{1, 1}, {7, 3}, {17, 5}, {64, 16}, {65, 33}, {256, 32}} {
			h, inter := shape[0], shape[1]
			gate, up, down := randMat(rng, inter, h, h), randMat(rng, inter, h, h), randMat(rng, h, inter, inter)
			const m = 9
			x := randMat(rng, m, h, h)
			dst := NewMat(make([]float32, m*h), m, h)
			work := make([]float32, 2*m*inter)
			c.SwiGLU(dst, x, gate, up, down, work)
			for i := range m {
				want := refSwiGLU(x.Row(i), gate, up, down)
				one := make([]float32, h)
				c.SwiGLU(NewMat(one, 1, h), x.Slice(i, i+1, 0, h), gate, up, down, work)
				for j, v := range dst.Row(i) {
					// Two products in a row: the Go path's float32 sums drift most.
					if !near(v, want[j], 5e-5*(1+math.Abs(want[j]))) {
						t.Fatalf("%s h=%d I=%d: dst[%d][%d] = %v, want %v", c.Name(), h, inter, i, j, v, want[j])
					}
					if math.Float32bits(v) != math.Float32bits(one[j]) {
						t.Fatalf("%s h=%d I=%d: row %d alone differs at %d", c.Name(), h, inter, i, j)
					}
				}
			}
		}
	}
}

func TestElementwiseKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	c := Default()
	a, b := randVec(rng, 33), randVec(rng, 33)
	for i := range a {
		a[i] *= 20
	}
	dst := make([]float32, 33)
	c.Add(dst, a, b)
	for i := range dst {
		if dst[i] != a[i]+b[i] {
			t.Fatalf("Add[%d] = %v", i, dst[i])
		}
	}
	acc := slices.Clone(b)
	c.AddScaled(acc, 0.5, a)
	for i := range acc {
		if !near(acc[i], float64(b[i])+0.5*float64(a[i]), 1e-5) {
			t.Fatalf("AddScaled[%d] = %v", i, acc[i])
		}
	}
	c.Sigmoid(dst, a)
	for i := range dst {
		if want := 1 / (1 + math.Exp(-float64(a[i]))); !near(dst[i], want, 2e-7) {
			t.Fatalf("Sigmoid(%v) = %v, want %v", a[i], dst[i], want)
		}
	}
	c.gate(dst, a, b)
	for i := range dst {
		if want := refSiLU(float64(a[i])) * float64(b[i]); !near(dst[i], want, 1e-6*(1+math.Abs(want))) {
			t.Fatalf("silu(%v)·%v = %v, want %v", a[i], b[i], dst[i], want)
		}
	}
	c.gate(dst[:3], []float32{-200, 200, 0}, []float32{1, 1, 1})
	if dst[0] != 0 || dst[1] != 200 || dst[2] != 0 {
		t.Fatalf("SiLU at the extremes = %v, want [-0 200 0]", dst[:3])
	}
}

// refTopK sorts all indices by the documented order and keeps k.
func refTopK(x []float32, k int) []int32 {
	idx := make([]int32, len(x))
	for i := range idx {
		idx[i] = int32(i)
	}
	h := topHeap{x: x}
	slices.SortStableFunc(idx, func(a, b int32) int {
		if h.before(a, b) {
			return -1
		}
		if h.before(b, a) {
			return 1
		}
		return 0
	})
	return idx[:k]
}

func TestTopKIsOrderedByValueThenIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	c := Default()
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	cases := [][]float32{
		{3, 1, 3, 2, 3},
		{0, float32(math.Copysign(0, -1)), 0, -1},
		{nan, 1, nan, -inf, inf, 2},
		{5},
	}
	for range 20 {
		v := make([]float32, 1+rng.IntN(300))
		for i := range v {
			v[i] = float32(rng.IntN(9)) // many ties
		}
		cases = append(cases, v)
	}
	for _, x := range cases {
		for k := 0; k <= len(x); k = k*2 + 1 {
			idx, val := make([]int32, k), make([]float32, k)
			c.TopK(idx, val, x)
			want := refTopK(x, k)
			if !slices.Equal(idx, want) {
				t.Fatalf("TopK(%v, k=%d) = %v, want %v", x, k, idx, want)
			}
			for i := range val {
				if math.Float32bits(val[i]) != math.Float32bits(x[idx[i]]) {
					t.Fatalf("TopK value %d = %v, want %v", i, val[i], x[idx[i]])
				}
			}
		}
	}
	// Spelled out: ties go to the lower index, NaN last.
	idx := make([]int32, 4)
	c.TopK(idx, nil, []float32{1, nan, 7, 7, 1})
	if !slices.Equal(idx, []int32{2, 3, 0, 4}) {
		t.Fatalf("TopK with ties and NaN = %v, want [2 3 0 4]", idx)
	}
}

func TestGatherAttentionEqualsDenseAttentionOverTheSameRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	for _, c := range backends(t) {
		for _, dims := range [][2]int{{1, 1}, {3, 5}, {16, 16}, {17, 9}, {80, 64}, {33, 129}} {
			dk, dv := dims[0], dims[1]
			for _, n := range []int{1, 2, 7, 8, 9, 33, 100} {
				const pool = 150
				keys := randMat(rng, pool, dk, dk+1)
				values := randMat(rng, pool, dv, dv+3)
				rows := make([]int32, n)
				for i := range rows {
					rows[i] = int32(rng.IntN(pool)) // repeats allowed
				}
				q := randVec(rng, dk)
				for i := range q {
					q[i] *= 4
				}
				scale := float32(1 / math.Sqrt(float64(dk)))
				out, scores := make([]float32, dv), make([]float32, n)
				c.GatherAttention(out, q, keys, values, rows, scale, scores)

				want := refAttention(q, keys, values, rows, scale)
				for j := range out {
					if !near(out[j], want[j], 1e-5) {
						t.Fatalf("%s dk=%d dv=%d n=%d: out[%d] = %v, want %v", c.Name(), dk, dv, n, j, out[j], want[j])
					}
				}

				// Dense attention over the gathered rows, copied out.
				k2 := NewMat(make([]float32, n*dk), n, dk)
				v2 := NewMat(make([]float32, n*dv), n, dv)
				for t, r := range rows {
					copy(k2.Row(t), keys.Row(int(r)))
					copy(v2.Row(t), values.Row(int(r)))
				}
				dense, s2 := make([]float32, dv), make([]float32, n)
				c.GatherAttention(dense, q, k2, v2, nil, scale, s2)
				for j := range out {
					if math.Float32bits(out[j]) != math.Float32bits(dense[j]) {
						t.Fatalf("%s dk=%d dv=%d n=%d: gathered out[%d] = %v, dense %v", c.Name(), dk, dv, n, j, out[j], dense[j])
					}
				}
			}
		}
	}
}

func TestGatherAttentionOverNoRowsIsZero(t *testing.T) {
	c := Default()
	out := []float32{1, 2}
	c.GatherAttention(out, []float32{1}, NewMat([]float32{1}, 1, 1), NewMat([]float32{1, 1}, 1, 2), []int32{}, 1, nil)
	if out[0] != 0 || out[1] != 0 {
		t.Fatalf("out = %v, want zeros", out)
	}
}

func TestVectorExpGivesTheSameBitsAsExp32OnEveryPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	src := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 88.72283, 88.72284, 88.7228, -103.97208, -103.9721,
		-87.33, -87.34, -100, -126, -149, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-30, -1e-30}
	for range 3000 {
		src = append(src, (rng.Float32()*2-1)*110)
	}
	for _, c := range backends(t) {
		for _, aff := range [][2]float32{{1, 0}, {-1, 0}, {1, -3.5}, {0.125, 2}} {
			for _, n := range []int{len(src), 1, 7, 8, 9, 15, 16, 17, 33} {
				dst := make([]float32, n+1)
				dst[n] = 42 // must survive: nothing is written past n
				c.expAffine(dst[:n], src[:n], aff[0], aff[1])
				for i, v := range src[:n] {
					want := exp32(float32(aff[0]*v) + aff[1])
					if math.Float32bits(dst[i]) != math.Float32bits(want) {
						t.Fatalf("%s exp(%v·%v + %v) = %v, exp32 gives %v", c.Name(), aff[0], v, aff[1], dst[i], want)
					}
				}
				if dst[n] != 42 {
					t.Fatalf("%s wrote past %d elements", c.Name(), n)
				}
			}
		}
	}
}

func TestVectorScaleGivesTheSameBitsOnEveryPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 30))
	x, w := randVec(rng, 70), randVec(rng, 70)
	for _, c := range backends(t) {
		for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 33, 70} {
			for _, weighted := range []bool{false, true} {
				dst := make([]float32, n+1)
				dst[n] = 42
				var ws []float32
				if weighted {
					ws = w[:n]
				}
				c.scale(dst[:n], x[:n], ws, 0.37)
				for i := range n {
					want := x[i] * 0.37
					if weighted {
						want = float32(x[i]*0.37) * w[i]
					}
					if math.Float32bits(dst[i]) != math.Float32bits(want) {
						t.Fatalf("%s n=%d weighted=%v: dst[%d] = %v, want %v", c.Name(), n, weighted, i, dst[i], want)
					}
				}
				if dst[n] != 42 {
					t.Fatalf("%s wrote past %d elements", c.Name(), n)
				}
			}
		}
	}
}

func TestVectorSigmoidAndSiLUGiveTheSameBitsOnEveryPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	x := []float32{0, float32(math.Copysign(0, -1)), 90, -90, 200, -200, 1e-20}
	for len(x) < 300 {
		x = append(x, (rng.Float32()*2-1)*30)
	}
	up := randVec(rng, len(x))
	for _, c := range backends(t) {
		for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 33, len(x)} {
			sig, silu := make([]float32, n+1), make([]float32, n+1)
			sig[n], silu[n] = 42, 42
			c.Sigmoid(sig[:n], x[:n])
			c.gate(silu[:n], x[:n], up[:n])
			inPlace := slices.Clone(x[:n])
			c.gate(inPlace, inPlace, up[:n])
			for i := range n {
				e := exp32(-x[i] + 0)
				if want := 1 / (1 + e); math.Float32bits(sig[i]) != math.Float32bits(want) {
					t.Fatalf("%s sigmoid(%v) = %v, want %v", c.Name(), x[i], sig[i], want)
				}
				want := x[i] / (1 + e) * up[i]
				if math.Float32bits(silu[i]) != math.Float32bits(want) || math.Float32bits(inPlace[i]) != math.Float32bits(want) {
					t.Fatalf("%s silu(%v)·%v = %v (in place %v), want %v", c.Name(), x[i], up[i], silu[i], inPlace[i], want)
				}
			}
			if sig[n] != 42 || silu[n] != 42 {
				t.Fatalf("%s wrote past %d elements", c.Name(), n)
			}
		}
	}
}

func TestVectorMaxFindsTheLargestElementOnEveryPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	for _, c := range backends(t) {
		for _, n := range []int{1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 65, 100} {
			for range 20 {
				x := randVec(rng, n+1)
				for i := range x {
					x[i] = x[i]*100 - 200 // all negative: a zero-filled tail would win
				}
				x[n] = 1e30 // past the end: must be ignored
				x[rng.IntN(n)] = -1
				if got := c.max(x[:n]); got != -1 {
					t.Fatalf("%s max of %d = %v, want -1", c.Name(), n, got)
				}
			}
		}
	}
}

func TestSoftmaxGivesTheSameBitsOnEveryPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	x := randMat(rng, 9, 77, 80)
	for i := range x.Data {
		x.Data[i] *= 40
	}
	var first []float32
	for _, c := range backends(t) {
		y := Mat{Data: slices.Clone(x.Data), Rows: x.Rows, Cols: x.Cols, Stride: x.Stride}
		softmaxRows(c, y)
		if first == nil {
			first = y.Data
			continue
		}
		for i := range y.Data {
			if math.Float32bits(y.Data[i]) != math.Float32bits(first[i]) && !(y.Data[i] != y.Data[i]) {
				t.Fatalf("%s softmax element %d = %v, the Go path gives %v", c.Name(), i, y.Data[i], first[i])
			}
		}
	}
}

// TestGatheredDotsEqualDenseDotsOverTheSameRows checks the row-gathering dot
// products behind GatherAttention's scores on every k, tails included.
func TestGatheredDotsEqualDenseDotsOverTheSameRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, c := range backends(t) {
		for _, k := range oddSizes {
			for _, n := range []int{1, 3, 7, 8, 9, 17, 100} {
				const pool = 130
				w := randMat(rng, pool, k, k+5)
				rows := make([]int32, n)
				for i := range rows {
					rows[i] = int32(rng.IntN(pool))
				}
				x := randVec(rng, k)
				got := make([]float32, n)
				c.dots(got, x, w, rows, 0, n)
				dense := NewMat(make([]float32, n*k), n, k)
				for i, r := range rows {
					copy(dense.Row(i), w.Row(int(r)))
				}
				want := make([]float32, n)
				c.dots(want, x, dense, nil, 0, n)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s k=%d n=%d: row %d gathered %v, copied %v", c.Name(), k, n, i, got[i], want[i])
					}
				}
			}
		}
	}
}

func TestReluAXPYMatchesReferenceAndIgnoresLength(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for _, c := range backends(t) {
		for _, n := range append(oddSizes, 0, 250) {
			x := randVec(rng, n)
			if n > 2 {
				x[1] = float32(math.NaN())
			}
			base := randVec(rng, n)
			dst := append([]float32(nil), base...)
			c.ReluAXPY(dst, 0.75, x)
			for i := range dst {
				want := float64(base[i])
				if v := float64(x[i]); v > 0 {
					want += 0.75 * v
				}
				if math.Abs(float64(dst[i])-want) > 1e-5*(1+math.Abs(want)) {
					t.Fatalf("%s n=%d: dst[%d] = %v, want %v", c.Name(), n, i, dst[i], want)
				}
			}
			// Every prefix length gives each element the same bits.
			for m := range min(n, 20) {
				part := append([]float32(nil), base[:m]...)
				c.ReluAXPY(part, 0.75, x[:m])
				for i := range part {
					if math.Float32bits(part[i]) != math.Float32bits(dst[i]) {
						t.Fatalf("%s: element %d of a %d-long call differs from the %d-long one", c.Name(), i, m, n)
					}
				}
			}
		}
	}
}

func TestFilterGEKeepsExactlyWhatPassesInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	for _, c := range backends(t) {
		for _, n := range append(oddSizes, 0, 1000) {
			x := randVec(rng, n)
			for i := range x {
				if i%7 == 3 {
					x[i] = 0.25 // ties at the threshold pass
				}
				if i%11 == 5 {
					x[i] = float32(math.NaN())
				}
			}
			vals, idx := make([]float32, n), make([]int32, n)
			k := c.FilterGE(vals, idx, x, 0.25)
			var want []int32
			for i, v := range x {
				if v >= 0.25 {
					want = append(want, int32(i))
				}
			}
			if k != len(want) {
				t.Fatalf("%s n=%d: %d passed, want %d", c.Name(), n, k, len(want))
			}
			for j := range want {
				if idx[j] != want[j] || vals[j] != x[want[j]] {
					t.Fatalf("%s n=%d: entry %d is (%d, %v), want (%d, %v)", c.Name(), n, j, idx[j], vals[j], want[j], x[want[j]])
				}
			}
		}
	}
}
