package kernels

import (
	"math"
	"math/rand/v2"
)

// The naive references below define what each kernel computes. They
// accumulate in float64, so they are closer to exact than any float32 path
// and each path is compared against them with a tolerance.

func refMatMulT(x, w Mat) [][]float64 {
	out := make([][]float64, x.Rows)
	for i := range out {
		out[i] = make([]float64, w.Rows)
		for j := range out[i] {
			var s float64
			for p := range x.Cols {
				s += float64(x.Data[i*x.Stride+p]) * float64(w.Data[j*w.Stride+p])
			}
			out[i][j] = s
		}
	}
	return out
}

// refMatMul is refMatMulT of w transposed: out[i][j] = Σ_p x[i][p]·w[p][j].
func refMatMul(x, w Mat) [][]float64 {
	return refMatMulT(x, transposed(w))
}

// transposed returns a dense copy of mᵀ.
func transposed(m Mat) Mat {
	t := NewMat(make([]float32, m.Rows*m.Cols), m.Cols, m.Rows)
	for i := range m.Rows {
		for j := range m.Cols {
			t.Data[j*t.Stride+i] = m.Data[i*m.Stride+j]
		}
	}
	return t
}

// refAbsMatMulT is Σ|x||w| per element: the scale of the rounding error a
// float32 dot product may make, whatever its order.
func refAbsMatMulT(x, w Mat) [][]float64 {
	ax, aw := absMat(x), absMat(w)
	return refMatMulT(ax, aw)
}

func refAbsMatMul(x, w Mat) [][]float64 {
	return refMatMul(absMat(x), absMat(w))
}

func absMat(m Mat) Mat {
	d := make([]float32, len(m.Data))
	for i, v := range m.Data {
		d[i] = float32(math.Abs(float64(v)))
	}
	return Mat{Data: d, Rows: m.Rows, Cols: m.Cols, Stride: m.Stride}
}

// randMat returns a rows×cols matrix with the given stride (padding filled
// with NaN, so a kernel that reads past a row's end shows it), values
// uniform in [-1, 1).
func randMat(rng *rand.Rand, rows, cols, stride int) Mat {
	if rows == 0 {
		return Mat{Rows: 0, Cols: cols, Stride: stride}
	}
	d := make([]float32, (rows-1)*stride+cols)
	for i := range d {
		d[i] = float32(math.NaN())
	}
	for i := range rows {
		for j := range cols {
			d[i*stride+j] = rng.Float32()*2 - 1
		}
	}
	return Mat{Data: d, Rows: rows, Cols: cols, Stride: stride}
}

func randVec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = rng.Float32()*2 - 1
	}
	return v
}

func refRMSNorm(x []float32, w []float32, eps float32) []float64 {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+float64(eps))
	out := make([]float64, len(x))
	for j, v := range x {
		out[j] = float64(v) * inv * float64(w[j])
	}
	return out
}

func refLayerNorm(x, w, b []float32, eps float32) []float64 {
	var mean float64
	for _, v := range x {
		mean += float64(v)
	}
	mean /= float64(len(x))
	var vr float64
	for _, v := range x {
		vr += (float64(v) - mean) * (float64(v) - mean)
	}
	vr /= float64(len(x))
	out := make([]float64, len(x))
	for j, v := range x {
		out[j] = (float64(v)-mean)/math.Sqrt(vr+float64(eps))*float64(w[j]) + float64(b[j])
	}
	return out
}

func refSoftmax(x []float32) []float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, float64(v))
	}
	out := make([]float64, len(x))
	var s float64
	for j, v := range x {
		out[j] = math.Exp(float64(v) - m)
		s += out[j]
	}
	for j := range out {
		out[j] /= s
	}
	return out
}

// refRoPE rotates interleaved pairs by pos·theta^(−2j/dim), all in float64.
func refRoPE(x []float32, pos int, theta float64) []float64 {
	out := make([]float64, len(x))
	for j := 0; j < len(x); j += 2 {
		a := float64(pos) * math.Pow(theta, -float64(j)/float64(len(x)))
		c, s := math.Cos(a), math.Sin(a)
		out[j] = float64(x[j])*c - float64(x[j+1])*s
		out[j+1] = float64(x[j])*s + float64(x[j+1])*c
	}
	return out
}

func refSiLU(g float64) float64 { return g / (1 + math.Exp(-g)) }

// refSwiGLU is the gated MLP in float64 for one row.
func refSwiGLU(x []float32, gate, up, down Mat) []float64 {
	inter := make([]float64, gate.Rows)
	for i := range inter {
		var g, u float64
		for p, v := range x {
			g += float64(v) * float64(gate.Row(i)[p])
			u += float64(v) * float64(up.Row(i)[p])
		}
		inter[i] = refSiLU(g) * u
	}
	out := make([]float64, down.Rows)
	for j := range out {
		for i, v := range inter {
			out[j] += v * float64(down.Row(j)[i])
		}
	}
	return out
}

// refAttention is dense softmax attention of q over the given rows, in
// float64.
func refAttention(q []float32, keys, values Mat, rows []int32, scale float32) []float64 {
	s := make([]float64, len(rows))
	m := math.Inf(-1)
	for t, r := range rows {
		for j, v := range q {
			s[t] += float64(v) * float64(keys.Row(int(r))[j])
		}
		s[t] *= float64(scale)
		m = math.Max(m, s[t])
	}
	var sum float64
	for t := range s {
		s[t] = math.Exp(s[t] - m)
		sum += s[t]
	}
	out := make([]float64, values.Cols)
	for t, r := range rows {
		for j := range out {
			out[j] += s[t] / sum * float64(values.Row(int(r))[j])
		}
	}
	return out
}
