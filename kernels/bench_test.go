package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// linearShape is one Linear weight of a model preset: out × in.
type linearShape struct {
	name    string
	out, in int
}

// presetLinears are the weights of the two model presets (glm5-engine.md
// §6.1 "tiny" and §6.2 "micro", which the engine calls nano). The nano
// dense MLP width is not in §6.2; 128 (2 × hidden, as in tiny) is assumed.
var presetLinears = []struct {
	preset  string
	linears []linearShape
}{
	{"nano", []linearShape{
		{"q_a", 32, 64}, {"q_b", 32, 32}, {"kv_a", 20, 64}, {"kv_b", 56, 16}, {"o", 64, 32},
		{"mlp_up", 128, 64}, {"mlp_down", 64, 128}, {"router", 16, 64},
		{"expert_up", 16, 64}, {"expert_down", 64, 16}, {"lm_head", 320, 64},
	}},
	{"tiny", []linearShape{
		{"q_a", 128, 256}, {"q_b", 256, 128}, {"kv_a", 80, 256}, {"kv_b", 448, 64}, {"o", 256, 256},
		{"mlp_up", 512, 256}, {"mlp_down", 256, 512}, {"router", 256, 256},
		{"expert_up", 32, 256}, {"expert_down", 256, 32}, {"lm_head", 512, 256},
	}},
}

// benchBatches are the token counts m: one decode step, a decode batch, a
// prefill chunk.
var benchBatches = []int{1, 64, 512}

// BenchmarkMatMulT times dst = x · wᵀ on every Linear shape of the presets
// on the default path, reporting GFLOP/s and, since a single row is bound by
// reading the weight, GB/s of weight and activations read.
// testdata/numpy_matmul.py times the same shapes with numpy.
func BenchmarkMatMulT(b *testing.B) {
	c := Default()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range presetLinears {
		for _, l := range p.linears {
			w := randMat(rng, l.out, l.in, l.in)
			for _, m := range benchBatches {
				x := randMat(rng, m, l.in, l.in)
				dst := NewMat(make([]float32, m*l.out), m, l.out)
				b.Run(fmt.Sprintf("%s/%s_%dx%d/m=%d", p.preset, l.name, l.out, l.in, m), func(b *testing.B) {
					for b.Loop() {
						c.MatMulT(dst, x, w)
					}
					reportProduct(b, m, l.out, l.in)
				})
			}
		}
	}
}

// BenchmarkMatMulTPaths compares the code paths on three shapes.
func BenchmarkMatMulTPaths(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, s := range [][3]int{{1, 512, 256}, {64, 512, 256}, {512, 256, 512}} {
		m, n, k := s[0], s[1], s[2]
		x, w := randMat(rng, m, k, k), randMat(rng, n, k, k)
		dst := NewMat(make([]float32, m*n), m, n)
		for _, c := range backends(b) {
			b.Run(fmt.Sprintf("%dx%dx%d/%v", m, n, k, c.Path()), func(b *testing.B) {
				for b.Loop() {
					c.MatMulT(dst, x, w)
				}
				reportProduct(b, m, n, k)
			})
		}
	}
}

// BenchmarkMatMulTSplit is how defaultParallelMACs was chosen: the same
// products on one goroutine and split over the pool.
func BenchmarkMatMulTSplit(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, s := range [][3]int{{1, 256, 256}, {1, 512, 512}, {4, 256, 256}, {8, 256, 256}, {16, 256, 256}, {64, 64, 64}, {64, 128, 64}} {
		m, n, k := s[0], s[1], s[2]
		x, w := randMat(rng, m, k, k), randMat(rng, n, k, k)
		dst := NewMat(make([]float32, m*n), m, n)
		for _, split := range []bool{false, true} {
			c := *Default()
			c.parallelMACs = math.MaxInt
			if split {
				c.parallelMACs = 0
			}
			b.Run(fmt.Sprintf("%dx%dx%d/split=%v", m, n, k, split), func(b *testing.B) {
				for b.Loop() {
					c.MatMulT(dst, x, w)
				}
				reportProduct(b, m, n, k)
			})
		}
	}
}

// BenchmarkMatMul times the untransposed product of absorbed MLA,
// q_nope (m × nope) · W_UK (nope × kv_lora), per head, tiny preset.
func BenchmarkMatMul(b *testing.B) {
	c := Default()
	rng := rand.New(rand.NewPCG(7, 8))
	w := randMat(rng, 48, 64, 64)
	for _, m := range benchBatches {
		x := randMat(rng, m, 48, 48)
		dst := NewMat(make([]float32, m*64), m, 64)
		b.Run(fmt.Sprintf("tiny/absorb_q_48x64/m=%d", m), func(b *testing.B) {
			for b.Loop() {
				c.MatMul(dst, x, w)
			}
			reportProduct(b, m, 64, 48)
		})
	}
}

func reportProduct(b *testing.B, m, n, k int) {
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(2*float64(m*n*k)/sec/1e9, "GFLOP/s")
	b.ReportMetric(4*float64(n*k+m*k+m*n)/sec/1e9, "GB/s")
}

// BenchmarkGatherAttention times one decode token's absorbed-MLA attention
// for the tiny preset: 4 heads, keys = [latent 64 | rope 16], values =
// latent, over the DSA top-64 rows of a 4096-row pool and densely over 2048
// rows.
func BenchmarkGatherAttention(b *testing.B) {
	c := Default()
	rng := rand.New(rand.NewPCG(9, 10))
	const pool, dk, dv, heads = 4096, 80, 64, 4
	cache := randMat(rng, pool, dk, dk)
	keys, values := cache, cache.Slice(0, pool, 0, dv)
	q := randMat(rng, heads, dk, dk)
	out := make([]float32, dv)
	for _, n := range []int{64, 2048} {
		rows := make([]int32, n)
		for i := range rows {
			rows[i] = int32(rng.IntN(pool))
		}
		scores := make([]float32, n)
		for _, dense := range []bool{false, true} {
			name, r, k, v := "gathered", rows, keys, values
			if dense {
				name, r, k, v = "dense", nil, keys.Slice(0, n, 0, dk), values.Slice(0, n, 0, dv)
			}
			b.Run(fmt.Sprintf("tiny/%s/rows=%d", name, n), func(b *testing.B) {
				for b.Loop() {
					for h := range heads {
						c.GatherAttention(out, q.Row(h), k, v, r, 0.125, scores)
					}
				}
				sec := b.Elapsed().Seconds() / float64(b.N)
				b.ReportMetric(float64(heads*n*2*(dk+dv))/sec/1e9, "GFLOP/s")
				b.ReportMetric(float64(4*n*dk)/sec/1e9, "GB/s")
			})
		}
	}
}

// BenchmarkRowKernels times the row-wise kernels on 64 rows of the tiny
// preset's hidden width (256), or on the router's 256 scores.
func BenchmarkRowKernels(b *testing.B) {
	c := Default()
	rng := rand.New(rand.NewPCG(11, 12))
	const m, h = 64, 256
	x, y, dst := randMat(rng, m, h, h), randMat(rng, m, h, h), NewMat(make([]float32, m*h), m, h)
	w, bias := randVec(rng, h), randVec(rng, h)
	rope := NewRope(16, 8192, 1e6)
	ropeX := randMat(rng, m, 16, 16)
	pos := make([]int32, m)
	for i := range pos {
		pos[i] = int32(i * 61)
	}
	bytes := float64(4 * m * h * 2)
	for _, k := range []struct {
		name  string
		bytes float64
		run   func()
	}{
		{"RMSNorm_64x256", bytes, func() { c.RMSNorm(dst, x, w, 1e-5) }},
		{"LayerNorm_64x256", bytes, func() { c.LayerNorm(dst, x, w, bias, 1e-6) }},
		{"Softmax_64x256", bytes, func() { copy(dst.Data, x.Data); softmaxRows(c, dst) }},
		{"RoPE_64x16", float64(4 * m * 16 * 2), func() { c.RoPE(ropeX, pos, rope) }},
		{"SiLUMul_64x256", float64(4 * m * h * 3), func() { c.gate(dst.Data, x.Data, y.Data) }},
		{"TopK_8of256", float64(4 * h), func() { c.TopK(top8, nil, w) }},
	} {
		b.Run(k.name, func(b *testing.B) {
			for b.Loop() {
				k.run()
			}
			b.ReportMetric(k.bytes/(b.Elapsed().Seconds()/float64(b.N))/1e9, "GB/s")
		})
	}
	scores := randVec(rng, 8192)
	top := make([]int32, 64)
	b.Run("TopK_64of8192", func(b *testing.B) {
		for b.Loop() {
			c.TopK(top, nil, scores)
		}
	})
}

// top8 receives TopK_8of256's indices.
var top8 = make([]int32, 8)

// BenchmarkSwiGLU times one routed expert of the tiny preset (I = 32) and
// the dense MLP (I = 512).
func BenchmarkSwiGLU(b *testing.B) {
	c := Default()
	rng := rand.New(rand.NewPCG(13, 14))
	const h = 256
	for _, inter := range []int{32, 512} {
		gate, up, down := randMat(rng, inter, h, h), randMat(rng, inter, h, h), randMat(rng, h, inter, inter)
		for _, m := range []int{1, 8, 64} {
			x, dst := randMat(rng, m, h, h), NewMat(make([]float32, m*h), m, h)
			work := make([]float32, 2*m*inter)
			b.Run(fmt.Sprintf("tiny/I=%d/m=%d", inter, m), func(b *testing.B) {
				for b.Loop() {
					c.SwiGLU(dst, x, gate, up, down, work)
				}
				sec := b.Elapsed().Seconds() / float64(b.N)
				b.ReportMetric(float64(6*m*h*inter)/sec/1e9, "GFLOP/s")
			})
		}
	}
}
