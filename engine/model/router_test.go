package model

import (
	"math"
	"testing"

	"github.com/glmbench/glmbench/kernels"
)

func logit(p float64) float32 { return float32(math.Log(p / (1 - p))) }

// routerCase builds a router whose gate, for the input e_0, gives the
// experts exactly the sigmoid scores s.
func routerCase(s []float64, bias []float32, k, groups, keep int) (*Model, *MoE, kernels.Mat) {
	E, H := len(s), 2
	cfg := &Config{NRoutedExperts: E, NumExpertsPerTok: k, NGroup: groups, TopKGroup: keep, NormTopKProb: true, RoutedScalingFactor: 2.5, HiddenSize: H}
	gate := kernels.NewMat(make([]float32, E*H), E, H)
	for e, p := range s {
		gate.Row(e)[0] = logit(p)
	}
	x := kernels.NewMat([]float32{1, 0}, 1, H)
	return &Model{Cfg: cfg, K: kernels.Default()}, &MoE{Gate: gate, Bias: bias}, x
}

func TestRouterHandWorked(t *testing.T) {
	t.Parallel()
	t.Run("the correction bias changes the choice but not the weights", func(t *testing.T) {
		t.Parallel()
		s := []float64{0.88, 0.73, 0.62, 0.27}
		m, e, x := routerCase(s, []float32{0, 0, 0.5, 0}, 2, 1, 1)
		rt := m.route(e, x)
		// Biased scores 0.88, 0.73, 1.12, 0.27 choose experts 2 then 0 (without
		// the bias it would be 0 and 1); their weights come from the unbiased
		// 0.62 and 0.88, normalised, times 2.5.
		if rt.idx[0] != 2 || rt.idx[1] != 0 {
			t.Fatalf("chose %v, want [2 0]", rt.idx[:2])
		}
		want := []float64{2.5 * 0.62 / (0.62 + 0.88), 2.5 * 0.88 / (0.62 + 0.88)}
		for i := range want {
			if math.Abs(float64(rt.w[i])-want[i]) > 1e-5 {
				t.Fatalf("weights %v, want %v", rt.w[:2], want)
			}
		}
		noBias, e2, x2 := routerCase(s, make([]float32, 4), 2, 1, 1)
		if rt := noBias.route(e2, x2); rt.idx[0] != 0 || rt.idx[1] != 1 {
			t.Fatalf("without bias chose %v, want [0 1]", rt.idx[:2])
		}
	})
	t.Run("with n_group > 1 only the best groups compete", func(t *testing.T) {
		t.Parallel()
		// Four groups of two. Expert 0 has the best single score, but its
		// group's top-2 sum (0.9+0.1) loses to groups 1 (1.2) and 2 (1.1).
		s := []float64{0.9, 0.1, 0.6, 0.6, 0.55, 0.55, 0.2, 0.2}
		m, e, x := routerCase(s, make([]float32, 8), 2, 4, 2)
		rt := m.route(e, x)
		if rt.idx[0] != 2 || rt.idx[1] != 3 {
			t.Fatalf("chose %v, want [2 3]", rt.idx[:2])
		}
		if math.Abs(float64(rt.w[0])-1.25) > 1e-5 || math.Abs(float64(rt.w[1])-1.25) > 1e-5 {
			t.Fatalf("weights %v, want [1.25 1.25]", rt.w[:2])
		}
	})
	t.Run("a masked group never wins, even when every score is negative after bias", func(t *testing.T) {
		t.Parallel()
		s := []float64{0.5, 0.5, 0.4, 0.4}
		m, e, x := routerCase(s, []float32{-2, -2, -2, -2}, 2, 2, 1)
		rt := m.route(e, x)
		if rt.idx[0] != 0 || rt.idx[1] != 1 {
			t.Fatalf("chose %v, want [0 1]", rt.idx[:2])
		}
	})
}
