// Package paired holds the statistics of paired comparisons: two runs (or
// two endpoints) measured on the same items, compared item by item. Pairing
// removes the items' own spread from the comparison, so a small real
// difference shows where two unpaired means would overlap.
//
// It is a leaf: it imports no glmbench package, so the evals that measure
// and the reports that compare share it.
package paired

import (
	"math"
	mrand "math/rand/v2"
	"slices"

	"github.com/montanaflynn/stats"
)

// Interval is a mean difference with its confidence interval.
type Interval struct {
	Mean, Lo, Hi float64
	N            int
}

// Excludes reports whether the interval lies wholly on one side of v: the
// difference from v is then significant at the interval's level.
func (iv Interval) Excludes(v float64) bool { return iv.Lo > v || iv.Hi < v }

// DefaultResamples is the bootstrap's number of resamples.
const DefaultResamples = 2000

// Bootstrap is the paired bootstrap of the mean of diffs (each item's
// difference, b − a): the percentile interval of the resampled means at
// level (0.95 for 95%), from resamples draws of len(diffs) items with
// replacement, seeded so that a report is the same every time. An empty
// sample gives NaNs; one item, an interval of width 0.
func Bootstrap(diffs []float64, level float64, resamples int, seed uint64) Interval {
	n := len(diffs)
	iv := Interval{N: n, Mean: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	if n == 0 {
		return iv
	}
	iv.Mean = Mean(diffs)
	if resamples <= 0 {
		resamples = DefaultResamples
	}
	rng := mrand.New(mrand.NewPCG(seed, 0x7061697265643a29))
	means := make([]float64, resamples)
	for r := range means {
		var s float64
		for range n {
			s += diffs[rng.IntN(n)]
		}
		means[r] = s / float64(n)
	}
	slices.Sort(means)
	alpha := (1 - level) / 2
	iv.Lo, iv.Hi = quantile(means, alpha), quantile(means, 1-alpha)
	return iv
}

// Diffs pairs two samples by index: b[i] − a[i]. They must be the same
// items in the same order.
func Diffs(a, b []float64) []float64 {
	n := min(len(a), len(b))
	out := make([]float64, n)
	for i := range n {
		out[i] = b[i] - a[i]
	}
	return out
}

// McNemar tests whether two paired accuracies differ: onlyA counts the
// items right in a and wrong in b, onlyB the reverse (the items both got
// right or both wrong say nothing). It returns the two-sided p-value: the
// exact binomial test for fewer than 25 discordant items, else the χ² test
// with continuity correction. No discordant item gives p = 1.
func McNemar(onlyA, onlyB int) float64 {
	n := onlyA + onlyB
	if n == 0 {
		return 1
	}
	if n < 25 {
		k := min(onlyA, onlyB)
		// P(X ≤ k) for X ~ Binomial(n, 1/2), doubled.
		var p float64
		for i := 0; i <= k; i++ {
			p += math.Exp(lchoose(n, i) - float64(n)*math.Ln2)
		}
		return math.Min(1, 2*p)
	}
	d := math.Abs(float64(onlyA-onlyB)) - 1
	chi2 := d * d / float64(n)
	// The χ² distribution with one degree of freedom: P(X > x) = erfc(√(x/2)).
	return math.Erfc(math.Sqrt(chi2 / 2))
}

func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// Mean is the mean of xs (NaN for none).
func Mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// quantile is the q-th quantile of sorted, non-empty xs by the method of
// the phases' percentiles in a report (schema.PercentileMethod: type 7,
// through montanaflynn/stats). The gate's unpaired bootstrap intervals use
// gonum's empirical quantile instead.
func quantile(xs []float64, q float64) float64 {
	v, err := stats.Percentile(xs, q*100)
	if err != nil {
		return math.NaN()
	}
	return v
}
