package workload

import (
	"math"
	"reflect"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// ksN is the sample size of the Kolmogorov–Smirnov tests; ksCrit their
// critical D at α = 0.001 (≈1.95/√n for large n). A discrete
// distribution's test is conservative at the same value.
const ksN = 4000

var ksCrit = 1.95 / math.Sqrt(ksN)

// ksDiscrete is D between the empirical CDF of xs and cdf, both step
// functions on the integers, checked at every integer of [lo, hi].
func ksDiscrete(xs []int, lo, hi int, cdf func(k int) float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	d, j := 0.0, 0
	for k := lo; k <= hi; k++ {
		for j < len(s) && s[j] <= k {
			j++
		}
		d = math.Max(d, math.Abs(float64(j)/float64(len(s))-cdf(k)))
	}
	return d
}

// ksContinuous is D between the empirical CDF of xs and a continuous cdf.
func ksContinuous(xs []float64, cdf func(x float64) float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := float64(len(s))
	d := 0.0
	for i, x := range s {
		f := cdf(x)
		d = math.Max(d, math.Max(float64(i+1)/n-f, f-float64(i)/n))
	}
	return d
}

// expandRandom parses a random phase and expands ksN requests of it.
func expandRandom(t *testing.T, spec string) (in, out []int) {
	t.Helper()
	f, err := Parse("r.yaml", []byte(spec), "")
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := f.Phases[0].Expand(7)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		in, out = append(in, r.Input), append(out, r.Output)
	}
	return in, out
}

// roundedTruncated is the exact CDF at k of a continuous distribution
// rounded to whole numbers and kept only in [lo, hi].
func roundedTruncated(c func(float64) float64, lo, hi int) func(k int) float64 {
	z := c(float64(hi)+0.5) - c(float64(lo)-0.5)
	return func(k int) float64 { return (c(float64(k)+0.5) - c(float64(lo)-0.5)) / z }
}

func TestRangeRatioDrawsUniformlyFromTheTopOfTheRange(t *testing.T) {
	t.Parallel()
	in, out := expandRandom(t, `phases: [{name: r, kind: random, requests: 4000, input_tokens: 1000, output_tokens: 10, range_ratio: 0.4}]`)
	// 0.4·1000 = 400 (SGLang's reading): uniform over the 601 integers 400..1000.
	if lo, hi := slices.Min(in), slices.Max(in); lo < 400 || hi > 1000 {
		t.Fatalf("inputs in [%d, %d], want within [400, 1000]", lo, hi)
	}
	if d := ksDiscrete(in, 400, 1000, func(k int) float64 { return float64(k-399) / 601 }); d > ksCrit {
		t.Errorf("inputs: KS D %.4f > %.4f against uniform 400..1000", d, ksCrit)
	}
	// 0.4·10 = 4: uniform over 4..10.
	if d := ksDiscrete(out, 4, 10, func(k int) float64 { return float64(k-3) / 7 }); d > ksCrit {
		t.Errorf("outputs: KS D %.4f > %.4f against uniform 4..10", d, ksCrit)
	}
	in, _ = expandRandom(t, `phases: [{name: r, kind: random, requests: 50, input_tokens: 777, output_tokens: 10, range_ratio: 1}]`)
	if slices.Min(in) != 777 || slices.Max(in) != 777 {
		t.Errorf("range_ratio 1 drew %d..%d, want 777 every time", slices.Min(in), slices.Max(in))
	}
	in, _ = expandRandom(t, `phases: [{name: r, kind: random, requests: 4000, input_tokens: 3, output_tokens: 10, range_ratio: 0}]`)
	if d := ksDiscrete(in, 1, 3, func(k int) float64 { return float64(k) / 3 }); d > ksCrit {
		t.Errorf("range_ratio 0: KS D %.4f > %.4f against uniform 1..3 (never 0)", d, ksCrit)
	}
}

func TestDistributionsMatchTheirRoundedTruncatedCDF(t *testing.T) {
	t.Parallel()
	normal := distuv.Normal{Mu: 300, Sigma: 150}
	// A log-normal with length mean 300 and stddev 200: σ² = ln(1+(200/300)²).
	s2 := math.Log(1 + 4.0/9)
	logn := distuv.LogNormal{Mu: math.Log(300) - s2/2, Sigma: math.Sqrt(s2)}
	cases := []struct {
		name, dist string
		lo, hi     int
		cdf        func(int) float64
	}{
		{"uniform", "{dist: uniform, min: 10, max: 50}", 10, 50, func(k int) float64 { return float64(k-9) / 41 }},
		{"truncated normal", "{dist: normal, mean: 300, stddev: 150, min: 100, max: 600}", 100, 600, roundedTruncated(normal.CDF, 100, 600)},
		{"truncated lognormal", "{dist: lognormal, mean: 300, stddev: 200, min: 32, max: 1024}", 32, 1024, roundedTruncated(logn.CDF, 32, 1024)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			in, out := expandRandom(t, `phases: [{name: r, kind: random, requests: 4000, input: `+c.dist+`, output: {dist: uniform, min: 1, max: 2}}]`)
			if lo, hi := slices.Min(in), slices.Max(in); lo < c.lo || hi > c.hi {
				t.Fatalf("drew [%d, %d], want within [%d, %d]", lo, hi, c.lo, c.hi)
			}
			if d := ksDiscrete(in, c.lo, c.hi, c.cdf); d > ksCrit {
				t.Errorf("KS D %.4f > %.4f", d, ksCrit)
			}
			// The test has power: the same draws are refused against
			// the distribution shifted by a twentieth of its range.
			shift := (c.hi - c.lo) / 20
			if d := ksDiscrete(in, c.lo, c.hi, func(k int) float64 { return c.cdf(max(k-shift, c.lo-1)) }); d <= ksCrit {
				t.Errorf("KS D %.4f against a shifted CDF, want over %.4f", d, ksCrit)
			}
			if slices.Min(out) != 1 || slices.Max(out) != 2 {
				t.Errorf("outputs %d..%d, want 1..2", slices.Min(out), slices.Max(out))
			}
		})
	}
}

func TestTheSameSeedDrawsTheSameLengths(t *testing.T) {
	t.Parallel()
	spec := `phases: [{name: r, kind: random, requests: 100, input: {dist: lognormal, mean: 300, stddev: 200, min: 32, max: 1024}, output_tokens: 16, range_ratio: 0.5}]`
	f, _ := Parse("r.yaml", []byte(spec), "")
	a, _ := f.Phases[0].Expand(1)
	b, _ := f.Phases[0].Expand(1)
	c, _ := f.Phases[0].Expand(2)
	if !reflect.DeepEqual(a, b) {
		t.Error("seed 1 twice gave different requests")
	}
	if reflect.DeepEqual(a, c) {
		t.Error("seeds 1 and 2 gave the same requests")
	}
	seed := int64(1)
	f.Phases[0].Seed = &seed
	d, _ := f.Phases[0].Expand(99)
	if !reflect.DeepEqual(a, d) {
		t.Error("the phase's own seed 1 was not used over Expand's 99")
	}
}
