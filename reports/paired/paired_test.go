package paired

import (
	"math"
	mrand "math/rand/v2"
	"testing"
)

// The 95% interval of the paired bootstrap covers the true mean difference
// about 95% of the time: over 400 seeded synthetic samples of 60 paired
// items whose differences have mean 0.3 and a spread of their own, the
// share of intervals holding 0.3 lies within three binomial standard
// deviations of the percentile bootstrap's coverage at this n (a little
// under 95%: it is known to run slightly narrow for small n).
func TestTheBootstrapIntervalCoversTheTrueDifferenceAbout95PercentOfTheTime(t *testing.T) {
	t.Parallel()
	const trials, n, truth = 400, 60, 0.3
	rng := mrand.New(mrand.NewPCG(1, 2))
	covered := 0
	for k := range trials {
		a, b := make([]float64, n), make([]float64, n)
		for i := range n {
			item := rng.NormFloat64() * 5 // the items' own spread, shared by both
			a[i] = item + rng.NormFloat64()*0.5
			b[i] = item + truth + rng.NormFloat64()*0.5
		}
		iv := Bootstrap(Diffs(a, b), 0.95, 1000, uint64(k))
		if iv.Lo <= truth && truth <= iv.Hi {
			covered++
		}
	}
	rate := float64(covered) / trials
	sd := math.Sqrt(0.95 * 0.05 / trials)
	t.Logf("coverage %.3f over %d samples", rate, trials)
	if rate < 0.93-3*sd || rate > 0.95+3*sd {
		t.Errorf("coverage %.3f, want about 0.95 (0.93–0.95 ± %.3f)", rate, 3*sd)
	}
}

// Pairing is the point: the same difference that two unpaired samples' spread
// would hide is significant paired.
func TestPairingFindsASmallDifferenceUnderALargeItemSpread(t *testing.T) {
	t.Parallel()
	rng := mrand.New(mrand.NewPCG(3, 4))
	a, b := make([]float64, 200), make([]float64, 200)
	for i := range a {
		item := rng.NormFloat64() * 10
		a[i], b[i] = item, item+0.2+rng.NormFloat64()*0.1
	}
	iv := Bootstrap(Diffs(a, b), 0.95, 2000, 7)
	if !iv.Excludes(0) || math.Abs(iv.Mean-0.2) > 0.03 {
		t.Errorf("interval %+v: want about 0.2, excluding 0", iv)
	}
	// The same seed gives the same interval.
	if again := Bootstrap(Diffs(a, b), 0.95, 2000, 7); again != iv {
		t.Errorf("not reproducible: %+v then %+v", iv, again)
	}
}

func TestBootstrapEdges(t *testing.T) {
	t.Parallel()
	if iv := Bootstrap(nil, 0.95, 100, 1); !math.IsNaN(iv.Mean) || iv.N != 0 {
		t.Errorf("empty: %+v", iv)
	}
	if iv := Bootstrap([]float64{0.5}, 0.95, 100, 1); iv.Mean != 0.5 || iv.Lo != 0.5 || iv.Hi != 0.5 {
		t.Errorf("one item: %+v", iv)
	}
}

// McNemar's p-values against hand computation: the exact test doubles the
// binomial tail, the χ² test uses (|b − c| − 1)² / (b + c).
func TestMcNemar(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b int
		want float64
	}{
		{0, 0, 1},
		{5, 5, 1},
		// 1 of 10 discordant one way: 2·(1 + 10)/1024.
		{1, 9, 2 * 11.0 / 1024},
		// 0 of 6: 2/64.
		{0, 6, 2.0 / 64},
		// 40 against 20: χ² = 19²/60, p = erfc(√(χ²/2)).
		{40, 20, math.Erfc(math.Sqrt(19.0 * 19 / 60 / 2))},
	} {
		if got := McNemar(c.a, c.b); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("McNemar(%d, %d) = %g, want %g", c.a, c.b, got, c.want)
		}
	}
}
