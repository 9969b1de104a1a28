package sampler

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

var (
	inf = float32(math.Inf(1))
	nan = float32(math.NaN())
)

// randomLogits returns n logits from a fixed stream, with some exact ties.
func randomLogits(r *rand.Rand, n int) []float32 {
	l := make([]float32, n)
	for i := range l {
		l[i] = float32(r.NormFloat64() * 3)
		if i > 0 && r.IntN(8) == 0 {
			l[i] = l[r.IntN(i)]
		}
	}
	return l
}

func TestArgmax(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		logits []float32
		want   int32
	}{
		{"the largest wins", []float32{1, 5, 2}, 1},
		{"a tie goes to the lowest id", []float32{1, 3, 3, 2, 3}, 1},
		{"NaN never wins", []float32{nan, -1, nan, -2}, 1},
		{"a NaN first does not block the rest", []float32{nan, -5}, 1},
		{"+Inf wins", []float32{1, inf, 2}, 1},
		{"all −Inf gives 0", []float32{-inf, -inf}, 0},
		{"all NaN gives 0", []float32{nan, nan}, 0},
		{"one logit", []float32{-3}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Argmax(tt.logits); got != tt.want {
				t.Fatalf("Argmax = %d, want %d", got, tt.want)
			}
			// Greedy sampling is Argmax, whatever the filters say.
			s := New(Params{Temperature: 0, TopK: 3, TopP: 0.5}, 1)
			if got := s.Sample(tt.logits); got != tt.want {
				t.Fatalf("greedy Sample = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestParamsGreedy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		temp float32
		want bool
	}{
		{"temperature 0", 0, true},
		{"just under the threshold", 0.9e-5, true},
		{"a negative temperature", -1, true},
		{"NaN", nan, true},
		{"at the threshold", 1e-5, false},
		{"temperature 1", 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := (Params{Temperature: tt.temp}).Greedy(); got != tt.want {
				t.Fatalf("Greedy() = %v", got)
			}
		})
	}
}

func TestFiltersThatLeaveOneTokenAreGreedy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    Params
	}{
		{"top-k 1 at temperature 1", Params{Temperature: 1, TopK: 1}},
		{"top-k 1 at temperature 3", Params{Temperature: 3, TopK: 1}},
		{"a tiny top-p at temperature 1", Params{Temperature: 1, TopP: 1e-6}},
		{"a tiny top-p after top-k", Params{Temperature: 2, TopK: 10, TopP: 1e-6}},
		{"min-p 1 with no tie", Params{Temperature: 1, MinP: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(7, 7))
			s := New(tt.p, 42)
			for trial := range 300 {
				logits := randomLogits(r, 1+r.IntN(600))
				if tt.p.MinP == 1 {
					logits[Argmax(logits)] += 1 // min-p 1 keeps every tie
				}
				if got, want := s.Sample(logits), Argmax(logits); got != want {
					t.Fatalf("trial %d: Sample = %d, want argmax %d", trial, got, want)
				}
			}
		})
	}
}

func TestSameSeedSameTokens(t *testing.T) {
	t.Parallel()
	params := []struct {
		name string
		p    Params
	}{
		{"plain temperature", Params{Temperature: 0.8}},
		{"top-k", Params{Temperature: 1, TopK: 20}},
		{"top-p", Params{Temperature: 1.2, TopP: 0.9}},
		{"every filter", Params{Temperature: 0.7, TopK: 50, TopP: 0.95, MinP: 0.05}},
	}
	for _, tt := range params {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			run := func(seed uint64) []int32 {
				r := rand.New(rand.NewPCG(3, 3)) // same logits every run
				s := New(tt.p, seed)
				out := make([]int32, 500)
				for i := range out {
					out[i] = s.Sample(randomLogits(r, 512))
				}
				return out
			}
			a, b, c := run(1234), run(1234), run(1235)
			if !slices.Equal(a, b) {
				t.Fatal("the same seed gave different tokens")
			}
			if slices.Equal(a, c) {
				t.Fatal("different seeds gave the same 500 tokens")
			}
		})
	}
}

// softmax is the naive reference: exp(l/T) normalised, in float64.
func softmax(logits []float32, temp float64) []float64 {
	p := make([]float64, len(logits))
	sum := 0.0
	for i, l := range logits {
		p[i] = math.Exp(float64(l) / temp)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

// keep zeroes every probability not in ids and renormalises.
func keep(p []float64, ids ...int) []float64 {
	q := make([]float64, len(p))
	sum := 0.0
	for _, id := range ids {
		q[id] = p[id]
		sum += p[id]
	}
	for i := range q {
		q[i] /= sum
	}
	return q
}

func TestSamplingFollowsTheDistribution(t *testing.T) {
	t.Parallel()
	// Ids 0..7 in falling probability except two ties (2 = 3).
	logits := []float32{2.0, 1.5, 1.0, 1.0, 0.2, -0.5, -1.0, -3.0}
	p1 := softmax(logits, 1)
	tests := []struct {
		name string
		p    Params
		want []float64
	}{
		{"temperature 1 is the softmax", Params{Temperature: 1}, p1},
		{"temperature 0.5 sharpens", Params{Temperature: 0.5}, softmax(logits, 0.5)},
		{"temperature 2 flattens", Params{Temperature: 2}, softmax(logits, 2)},
		{"top-k 3 keeps the three likeliest, the tie by lower id", Params{Temperature: 1, TopK: 3}, keep(p1, 0, 1, 2)},
		// Masses 0.378, 0.229, 0.139, 0.139, …: 0.746 < 0.8 ≤ 0.885.
		{"top-p 0.8 keeps the smallest set reaching 0.8", Params{Temperature: 1, TopP: 0.8}, keep(p1, 0, 1, 2, 3)},
		// After top-k 3 the mass is renormalised: 0.508, 0.308 → 0.816 ≥ 0.8.
		{"top-p after top-k works on the renormalised set", Params{Temperature: 1, TopK: 3, TopP: 0.8}, keep(p1, 0, 1)},
		// exp(-1) = 0.37 of the top: ids with logit ≥ 1.0 stay.
		{"min-p 0.3 keeps tokens at least 0.3 of the likeliest", Params{Temperature: 1, MinP: 0.3}, keep(p1, 0, 1, 2, 3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			const draws = 20000
			s := New(tt.p, 20240627) // fixed seed: the test cannot flake
			counts := make([]float64, len(logits))
			for range draws {
				counts[s.Sample(logits)]++
			}
			// Pearson's chi-square over the kept tokens; a dropped token
			// drawn even once fails at once.
			chi2, df := 0.0, -1
			for id, p := range tt.want {
				if p == 0 {
					if counts[id] > 0 {
						t.Fatalf("id %d was filtered out but drawn %v times", id, counts[id])
					}
					continue
				}
				e := p * draws
				chi2 += (counts[id] - e) * (counts[id] - e) / e
				df++
			}
			// The 0.999 quantile of chi-square for df 1..7.
			crit := []float64{0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32}[df]
			if chi2 > crit {
				t.Fatalf("chi-square %.2f > %.2f (df %d): counts %v, want probabilities %v", chi2, crit, df, counts, tt.want)
			}
		})
	}
}

// TestSampleDoesNotAllocate is not parallel: AllocsPerRun counts the whole
// process's allocations and refuses to run beside parallel tests.
func TestSampleDoesNotAllocate(t *testing.T) {
	logits := randomLogits(rand.New(rand.NewPCG(1, 2)), 512)
	params := []struct {
		name string
		p    Params
	}{
		{"greedy", Params{}},
		{"plain temperature", Params{Temperature: 1}},
		{"top-k", Params{Temperature: 1, TopK: 40}},
		{"top-p", Params{Temperature: 1, TopP: 0.9}},
		{"min-p", Params{Temperature: 1, MinP: 0.1}},
		{"every filter", Params{Temperature: 0.7, TopK: 100, TopP: 0.9, MinP: 0.01}},
	}
	for _, tt := range params {
		t.Run(tt.name, func(t *testing.T) {
			s := New(tt.p, 9)
			s.Sample(logits) // first use sizes the scratch space
			if n := testing.AllocsPerRun(200, func() { s.Sample(logits) }); n != 0 {
				t.Fatalf("Sample allocates %v times per call", n)
			}
		})
	}
}

func TestSampleOddRows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		p      Params
		logits []float32
		want   []int32 // every draw must be one of these
	}{
		{"masked tokens are never drawn", Params{Temperature: 1}, []float32{-inf, 0, -inf, 0}, []int32{1, 3}},
		{"masked tokens are never drawn with filters", Params{Temperature: 1, TopP: 0.99, TopK: 3}, []float32{-inf, 0, -inf, 0}, []int32{1, 3}},
		{"NaN counts as masked", Params{Temperature: 1}, []float32{nan, 0, nan}, []int32{1}},
		{"all masked gives argmax", Params{Temperature: 1}, []float32{-inf, -inf}, []int32{0}},
		{"+Inf takes everything", Params{Temperature: 1}, []float32{0, inf, 5}, []int32{1}},
		{"top-k above the vocabulary is off", Params{Temperature: 1, TopK: 100}, []float32{0, 0}, []int32{0, 1}},
		{"a tiny temperature is near greedy", Params{Temperature: 1e-4}, []float32{0, 1, 0.5}, []int32{1}},
		{"huge logits do not overflow", Params{Temperature: 1}, []float32{1e30, -1e30, 1e30 - 1e23}, []int32{0, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := New(tt.p, 5)
			for range 200 {
				if got := s.Sample(tt.logits); !slices.Contains(tt.want, got) {
					t.Fatalf("Sample = %d, want one of %v", got, tt.want)
				}
			}
		})
	}
}

func TestSampleGrowsWithTheVocabulary(t *testing.T) {
	t.Parallel()
	s := New(Params{Temperature: 1, TopK: 2}, 1)
	s.Sample([]float32{0, 1})
	if got := s.Sample([]float32{0, 0, 0, 9, 8}); got != 3 && got != 4 {
		t.Fatalf("Sample = %d after a longer row, want 3 or 4", got)
	}
}

func TestLogSoftmax(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		logits []float32
		want   []float64
	}{
		{"matches the naive formula", []float32{1, 2, 3}, logOf(softmax([]float32{1, 2, 3}, 1))},
		{"large logits do not overflow", []float32{1000, 1001}, []float64{-1.3132617, -0.3132617}},
		{"equal logits are uniform", []float32{7, 7, 7, 7}, []float64{-math.Ln2 * 2, -math.Ln2 * 2, -math.Ln2 * 2, -math.Ln2 * 2}},
		{"−Inf is impossible, the rest share", []float32{0, float32(math.Inf(-1)), 0}, []float64{-math.Ln2, math.Inf(-1), -math.Ln2}},
		{"NaN takes nothing and stays NaN", []float32{0, nan, 0}, []float64{-math.Ln2, math.NaN(), -math.Ln2}},
		{"no finite maximum is NaN everywhere", []float32{float32(math.Inf(-1)), nan}, []float64{math.NaN(), math.NaN()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := make([]float32, len(tt.logits))
			LogSoftmax(got, tt.logits)
			for i := range got {
				g, w := float64(got[i]), tt.want[i]
				if math.IsNaN(w) != math.IsNaN(g) || (!math.IsNaN(w) && !(g == w || math.Abs(g-w) < 1e-6)) {
					t.Fatalf("LogSoftmax = %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func logOf(p []float64) []float64 {
	l := make([]float64, len(p))
	for i := range p {
		l[i] = math.Log(p[i])
	}
	return l
}

func TestLogSoftmaxInPlaceAndPanics(t *testing.T) {
	t.Parallel()
	x := []float32{0, 0}
	LogSoftmax(x, x)
	if math.Abs(float64(x[0])+math.Ln2) > 1e-7 {
		t.Fatalf("in place: %v", x)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("LogSoftmax with mismatched lengths did not panic")
		}
	}()
	LogSoftmax(make([]float32, 1), x)
}

func TestTopLogprobs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		lp       []float32
		k        int
		wantIDs  []int32
		wantVals []float32
	}{
		{"the largest first", []float32{-3, -1, -2, -0.5}, 2, []int32{3, 1}, []float32{-0.5, -1}},
		{"ties by lower id", []float32{-1, -2, -1, -1}, 3, []int32{0, 2, 3}, []float32{-1, -1, -1}},
		{"a tie at the cut keeps the lower id", []float32{-2, -1, -2}, 2, []int32{1, 0}, []float32{-1, -2}},
		{"k above the length is capped", []float32{-1, -2}, 5, []int32{0, 1}, []float32{-1, -2}},
		{"NaN comes last", []float32{nan, -9, nan}, 3, []int32{1, 0, 2}, []float32{-9, nan, nan}},
		{"k 0 gives none", []float32{-1}, 0, nil, nil},
		{"an empty row gives none", nil, 3, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ids, vals := TopLogprobs(tt.lp, tt.k)
			sameVal := func(a, b float32) bool { return a == b || (a != a && b != b) }
			if !slices.Equal(ids, tt.wantIDs) || !slices.EqualFunc(vals, tt.wantVals, sameVal) {
				t.Fatalf("TopLogprobs = %v %v, want %v %v", ids, vals, tt.wantIDs, tt.wantVals)
			}
		})
	}
}

func TestTopLogprobsMatchesASort(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 11))
	for trial := range 200 {
		lp := randomLogits(r, 1+r.IntN(300))
		k := r.IntN(25)
		ids, _ := TopLogprobs(lp, k)
		all := make([]int32, len(lp))
		for i := range all {
			all[i] = int32(i)
		}
		slices.SortStableFunc(all, func(a, b int32) int {
			switch {
			case lp[a] > lp[b]:
				return -1
			case lp[a] < lp[b]:
				return 1
			}
			return 0
		})
		if want := all[:min(k, len(all))]; !slices.Equal(ids, want) && !(len(ids) == 0 && len(want) == 0) {
			t.Fatalf("trial %d: TopLogprobs ids %v, want %v", trial, ids, want)
		}
	}
}

// BenchmarkSample measures one draw over the tiny preset's 512-id vocabulary:
// go test ./engine/sampler -bench Sample -benchmem
func BenchmarkSample(b *testing.B) {
	logits := randomLogits(rand.New(rand.NewPCG(1, 2)), 512)
	for _, bb := range []struct {
		name string
		p    Params
	}{
		{"greedy", Params{}},
		{"temperature", Params{Temperature: 0.8}},
		{"top-k-40", Params{Temperature: 0.8, TopK: 40}},
		{"top-p-0.95", Params{Temperature: 0.8, TopP: 0.95}},
	} {
		b.Run(bb.name, func(b *testing.B) {
			s := New(bb.p, 1)
			b.ReportAllocs()
			for b.Loop() {
				s.Sample(logits)
			}
		})
	}
}
