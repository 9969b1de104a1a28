package model

import (
	"math"
	"slices"
	"testing"

	"github.com/glmbench/glmbench/kernels"
)

// The reference: the GLM-5 forward pass written out plainly in float64 from
// the math of the reference note (§2), with naive MLA, dense or top-k
// attention chosen by its own indexer, and its own router. It shares no code
// with the model but the weights.

type vec []float64

func row(m kernels.Mat, i int) vec {
	out := make(vec, m.Cols)
	for j, v := range m.Row(i) {
		out[j] = float64(v)
	}
	return out
}

func f64(v []float32) vec {
	out := make(vec, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// linear is W·x for a Hugging Face [out × in] weight.
func linear(w kernels.Mat, x vec) vec {
	out := make(vec, w.Rows)
	for i := range w.Rows {
		var s float64
		for j, v := range w.Row(i) {
			s += float64(v) * x[j]
		}
		out[i] = s
	}
	return out
}

func rmsnorm(x, w vec, eps float64) vec {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+eps)
	out := make(vec, len(x))
	for i := range x {
		out[i] = x[i] * inv * w[i]
	}
	return out
}

func layernorm(x, w, b vec, eps float64) vec {
	var mean, vr float64
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		vr += (v - mean) * (v - mean)
	}
	vr /= float64(len(x))
	out := make(vec, len(x))
	for i := range x {
		out[i] = (x[i]-mean)/math.Sqrt(vr+eps)*w[i] + b[i]
	}
	return out
}

// rope rotates interleaved pairs of x (in place) for position p.
func rope(x vec, p int, theta float64) {
	d := len(x)
	for j := 0; j < d/2; j++ {
		a := float64(p) * math.Pow(theta, -float64(2*j)/float64(d))
		c, s := math.Cos(a), math.Sin(a)
		x0, x1 := x[2*j], x[2*j+1]
		x[2*j], x[2*j+1] = x0*c-x1*s, x0*s+x1*c
	}
}

func silu(v float64) float64 { return v / (1 + math.Exp(-v)) }

func mlpRef(m *MLP, x vec) vec {
	g, u := linear(m.Gate, x), linear(m.Up, x)
	for i := range g {
		g[i] = silu(g[i]) * u[i]
	}
	return linear(m.Down, g)
}

// routeRef is noaux_tc in float64: experts and weights for one row.
func routeRef(cfg *Config, e *MoE, x vec) ([]int, []float64) {
	E := cfg.NRoutedExperts
	logits := linear(e.Gate, x)
	s := make(vec, E)
	choice := make(vec, E)
	for i := range s {
		s[i] = 1 / (1 + math.Exp(-logits[i]))
		choice[i] = s[i] + float64(e.Bias[i])
	}
	if g := max(cfg.NGroup, 1); g > 1 {
		per := E / g
		type gs struct {
			g int
			v float64
		}
		var groups []gs
		for gi := range g {
			part := slices.Clone(choice[gi*per : (gi+1)*per])
			slices.Sort(part)
			groups = append(groups, gs{gi, part[per-1] + part[per-2]})
		}
		slices.SortStableFunc(groups, func(a, b gs) int {
			if a.v > b.v {
				return -1
			} else if a.v < b.v {
				return 1
			}
			return 0
		})
		keep := map[int]bool{}
		for _, x := range groups[:cfg.TopKGroup] {
			keep[x.g] = true
		}
		for i := range choice {
			if !keep[i/per] {
				choice[i] = math.Inf(-1)
			}
		}
	}
	idx := topIdx(choice, cfg.NumExpertsPerTok)
	w := make([]float64, len(idx))
	var sum float64
	for i, ex := range idx {
		w[i] = s[ex]
		sum += w[i]
	}
	for i := range w {
		if cfg.NormTopKProb {
			w[i] /= sum + 1e-20
		}
		w[i] *= cfg.RoutedScalingFactor
	}
	return idx, w
}

// topIdx returns the indices of the k largest values, largest first, ties by index.
func topIdx(v vec, k int) []int {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		if v[a] > v[b] {
			return -1
		} else if v[a] < v[b] {
			return 1
		}
		return 0
	})
	return idx[:k]
}

// referenceLogits runs the reference over a whole sequence and returns every
// position's logits.
func referenceLogits(cfg *Config, w *Weights, toks []int32) [][]float64 {
	H := cfg.HiddenSize
	heads, dn, dr, dv, r := cfg.NumAttentionHeads, cfg.QKNopeHeadDim, cfg.QKRopeHeadDim, cfg.VHeadDim, cfg.KVLoraRank
	hi, di := cfg.IndexNHeads, cfg.IndexHeadDim
	eps, theta := cfg.RMSNormEps, cfg.RopeParameters.RopeTheta
	T := len(toks)
	x := make([]vec, T)
	for t, tok := range toks {
		x[t] = row(w.Embed, int(tok))
	}
	for _, ly := range w.Layers {
		a := &ly.Attn
		q := make([]vec, T)
		c := make([]vec, T)
		kpe := make([]vec, T)
		iq := make([]vec, T)
		ik := make([]vec, T)
		iw := make([]vec, T)
		for t := range T {
			xn := rmsnorm(x[t], f64(ly.InputNorm), eps)
			qr := rmsnorm(linear(a.QAProj, xn), f64(a.QANorm), eps)
			q[t] = linear(a.QBProj, qr)
			for h := range heads {
				rope(q[t][h*(dn+dr)+dn:(h+1)*(dn+dr)], t, theta)
			}
			kva := linear(a.KVAProj, xn)
			c[t] = rmsnorm(kva[:r], f64(a.KVANorm), eps)
			kpe[t] = slices.Clone(kva[r:])
			rope(kpe[t], t, theta)
			iq[t] = linear(a.Indexer.WqB, qr)
			for h := range hi {
				rope(iq[t][h*di:h*di+dr], t, theta)
			}
			ik[t] = layernorm(linear(a.Indexer.Wk, xn), f64(a.Indexer.KNormW), f64(a.Indexer.KNormB), 1e-6)
			rope(ik[t][:dr], t, theta)
			iw[t] = linear(a.Indexer.WeightsProj, xn)
			for h := range iw[t] {
				iw[t][h] /= math.Sqrt(float64(hi)) * math.Sqrt(float64(di))
			}
		}
		// Up-projections per head: kv_b rows [W_UK ; W_UV].
		uk := func(h int, cs vec) vec {
			return linear(a.KVBProj.Slice(h*(dn+dv), h*(dn+dv)+dn, 0, r), cs)
		}
		uv := func(h int, cs vec) vec {
			return linear(a.KVBProj.Slice(h*(dn+dv)+dn, (h+1)*(dn+dv), 0, r), cs)
		}
		scale := 1 / math.Sqrt(float64(dn+dr))
		for t := range T {
			sel := make([]int, t+1)
			for s := range sel {
				sel[s] = s
			}
			if t+1 > cfg.IndexTopK {
				score := make(vec, t+1)
				for s := range score {
					for h := range hi {
						var d float64
						for k := range di {
							d += iq[t][h*di+k] * ik[s][k]
						}
						score[s] += iw[t][h] * math.Max(d, 0)
					}
				}
				sel = topIdx(score, cfg.IndexTopK)
				slices.Sort(sel)
			}
			o := make(vec, 0, heads*dv)
			for h := range heads {
				qh := q[t][h*(dn+dr) : (h+1)*(dn+dr)]
				sc := make(vec, len(sel))
				m := math.Inf(-1)
				for i, s := range sel {
					k := append(uk(h, c[s]), kpe[s]...)
					var d float64
					for j := range k {
						d += qh[j] * k[j]
					}
					sc[i] = d * scale
					m = math.Max(m, sc[i])
				}
				var z float64
				for i := range sc {
					sc[i] = math.Exp(sc[i] - m)
					z += sc[i]
				}
				oh := make(vec, dv)
				for i, s := range sel {
					v := uv(h, c[s])
					for j := range oh {
						oh[j] += sc[i] / z * v[j]
					}
				}
				o = append(o, oh...)
			}
			out := linear(a.OProj, o)
			for j := range x[t] {
				x[t][j] += out[j]
			}
		}
		for t := range T {
			xn := rmsnorm(x[t], f64(ly.PostNorm), eps)
			var y vec
			if ly.MoE != nil {
				y = mlpRef(&ly.MoE.Shared, xn)
				idx, wts := routeRef(cfg, ly.MoE, xn)
				for i, ex := range idx {
					ye := mlpRef(&ly.MoE.Experts[ex], xn)
					for j := range y {
						y[j] += wts[i] * ye[j]
					}
				}
			} else {
				y = mlpRef(ly.MLP, xn)
			}
			for j := range x[t] {
				x[t][j] += y[j]
			}
		}
	}
	out := make([][]float64, T)
	for t := range T {
		out[t] = linear(w.LMHead, rmsnorm(x[t], f64(w.Norm), eps))
	}
	_ = H
	return out
}

func matchReference(t *testing.T, what string, got kernels.Mat, want [][]float64) {
	t.Helper()
	for i := range got.Rows {
		big := 0.0
		for _, v := range want[i] {
			big = math.Max(big, math.Abs(v))
		}
		for j, g := range got.Row(i) {
			if d := math.Abs(float64(g) - want[i][j]); d > 1e-4*big {
				t.Fatalf("%s: position %d logit %d: model %v, reference %v (tolerance %.2g)", what, i, j, g, want[i][j], 1e-4*big)
			}
		}
	}
}

func TestModelMatchesThePlainReference(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		topk int
		n    int
	}{
		{"DSA with top-k at least the context is dense attention", 64, 40},
		{"DSA with top-k below the context attends to the indexer's top-k", 8, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := microConfig()
			cfg.IndexTopK = tc.topk
			m := newTestModel(t, cfg, 21, 64)
			toks := tokensN(tc.n, 9)
			var pages []int32
			got := m.Forward([]Seq{seqOf(t, m, &pages, tc.n, toks, 0, AllRows)}).Logits
			matchReference(t, tc.name, got, referenceLogits(cfg, m.W, toks))
		})
	}
}
