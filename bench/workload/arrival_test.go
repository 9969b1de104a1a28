package workload

import (
	"math"
	"slices"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

// gaps are the seconds between successive times.
func gaps(at []time.Duration) []float64 {
	g := make([]float64, 0, len(at)-1)
	for i := 1; i < len(at); i++ {
		g = append(g, (at[i] - at[i-1]).Seconds())
	}
	return g
}

func TestPoissonAndGammaGapsMatchTheirDistributions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		a    Arrival
		cdf  func(float64) float64
		mean float64
	}{
		{"poisson", Arrival{Kind: Poisson, Rate: 5}, distuv.Exponential{Rate: 5}.CDF, 0.2},
		// vLLM's gamma: shape = burstiness, scale = 1/(rate·burstiness),
		// so gonum's rate β = rate·burstiness.
		{"bursty gamma", Arrival{Kind: Gamma, Rate: 5, Burstiness: 0.5}, distuv.Gamma{Alpha: 0.5, Beta: 2.5}.CDF, 0.2},
		{"steady gamma", Arrival{Kind: Gamma, Rate: 2, Burstiness: 4}, distuv.Gamma{Alpha: 4, Beta: 8}.CDF, 0.5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			at := Arrivals(c.a, ksN+1, 3)
			if at[0] != 0 {
				t.Fatalf("first arrival at %v, want 0", at[0])
			}
			g := gaps(at)
			if d := ksContinuous(g, c.cdf); d > ksCrit {
				t.Errorf("gaps: KS D %.4f > %.4f", d, ksCrit)
			}
			// Against an exponential of the same mean a burstiness ≠ 1
			// is told apart: the test can fail.
			if c.a.Kind == Gamma {
				if d := ksContinuous(g, distuv.Exponential{Rate: 1 / c.mean}.CDF); d <= ksCrit {
					t.Errorf("gamma gaps pass as exponential (D %.4f)", d)
				}
			}
		})
	}
}

func TestRampRescaledGapsAreUnitExponential(t *testing.T) {
	t.Parallel()
	for _, a := range []Arrival{{Kind: Ramp, From: 1, To: 9}, {Kind: Ramp, From: 0, To: 4}, {Kind: Ramp, From: 8, To: 2}} {
		n := ksN + 1
		at := Arrivals(a, n, 11)
		// Λ(t) = ∫ rate: rate rises linearly from From to To over
		// D = 2n/(From+To), then stays at To.
		d := 2 * float64(n) / (a.From + a.To)
		lambda := func(t float64) float64 {
			if t <= d {
				return a.From*t + (a.To-a.From)*t*t/(2*d)
			}
			return float64(n) + a.To*(t-d)
		}
		var g []float64
		for i := 1; i < n; i++ {
			g = append(g, lambda(at[i].Seconds())-lambda(at[i-1].Seconds()))
		}
		if dd := ksContinuous(g, distuv.Exponential{Rate: 1}.CDF); dd > ksCrit {
			t.Errorf("%v: rescaled gaps KS D %.4f > %.4f against unit exponential", a, dd, ksCrit)
		}
		// The expected span: n−1 unit gaps of Λ end near Λ = n, i.e. D.
		if last := at[n-1].Seconds(); math.Abs(last-d) > 0.1*d {
			t.Errorf("%v: last arrival at %.1fs, want near D = %.1fs", a, last, d)
		}
	}
}

func TestConstantBurstAndSeeds(t *testing.T) {
	t.Parallel()
	at := Arrivals(Arrival{Kind: Constant, Rate: 4}, 5, 1)
	if !slices.Equal(at, []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond, time.Second}) {
		t.Errorf("constant 4/s: %v", at)
	}
	if at := Arrivals(Arrival{Kind: Burst}, 3, 1); !slices.Equal(at, []time.Duration{0, 0, 0}) {
		t.Errorf("burst: %v", at)
	}
	p := Arrival{Kind: Poisson, Rate: 3}
	if !slices.Equal(Arrivals(p, 50, 1), Arrivals(p, 50, 1)) || slices.Equal(Arrivals(p, 50, 1), Arrivals(p, 50, 2)) {
		t.Error("poisson arrivals: want the same for a seed, different across seeds")
	}
	if at := Arrivals(Arrival{Kind: Constant, Rate: 1e-12}, 3, 1); at[2] != math.MaxInt64 {
		t.Errorf("a tiny rate's times saturate rather than overflow: %v", at)
	}
	if len(Arrivals(p, 0, 1)) != 0 {
		t.Error("0 arrivals")
	}
}
