package equiv

import (
	"encoding/json"
	"math"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
)

// cont is a continuation of the given tokens where each position's chosen
// logprob is lp[i] and its top list is {chosen: lp[i], "alt": alt[i]}.
func cont(tokens []string, lp, alt []float64) Continuation {
	c := Continuation{Tokens: tokens, Logprobs: lp}
	for i, t := range tokens {
		c.Top = append(c.Top, map[string]float64{t: lp[i], "alt": alt[i]})
	}
	return c
}

func seq(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + string(rune('a'+i))
	}
	return out
}

func fill(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func want(t *testing.T, name string, got *float64, w float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: nil, want %g", name, w)
	} else if math.Abs(*got-w) > 1e-12 {
		t.Errorf("%s: %.15g, want %.15g", name, *got, w)
	}
}

func wantNil(t *testing.T, name string, got *float64) {
	t.Helper()
	if got != nil {
		t.Errorf("%s: %g, want nil", name, *got)
	}
}

// Two sides that answered every item the same, logprobs and echoes
// included: identical, with every difference 0, a ppl ratio of exactly 1
// and no divergence to place.
func TestIdenticalAnswersAreIdenticalWithZeroDifferences(t *testing.T) {
	t.Parallel()
	var pairs []Pair
	for i := range 3 {
		c := cont(seq("w", 8), fill(8, -0.1*float64(i+1)), fill(8, -3))
		echo := &PromptLogprobs{Tokens: seq("p", 5), Logprobs: []float64{math.NaN(), -1, -2, -0.5, -4}}
		pairs = append(pairs, Pair{ID: string(rune('0' + i)), A: c, B: c, PA: echo, PB: echo})
	}
	eq := Compare(pairs, 8)
	if eq.Verdict != schema.VerdictIdentical || eq.Failure != nil || eq.Items != 3 || eq.Tokens != 8 {
		t.Fatalf("verdict %q, failure %v, items %d, tokens %d; want identical over 3 items of 8", eq.Verdict, eq.Failure, eq.Items, eq.Tokens)
	}
	want(t, "exact match", eq.ExactMatch, 1)
	want(t, "token agreement", eq.TokenAgreement, 1)
	want(t, "top-1 agreement", eq.Top1Agreement, 1)
	want(t, "logprob diff mean", eq.LogprobDiffMean, 0)
	want(t, "logprob diff max", eq.LogprobDiffMax, 0)
	want(t, "KL mean", eq.KLMean, 0)
	want(t, "KL p99", eq.KLP99, 0)
	want(t, "nll diff", eq.NLLDiffMean, 0)
	want(t, "ppl ratio", eq.PPLRatio, 1)
	want(t, "ppl ratio lo", eq.PPLRatioLo, 1)
	want(t, "ppl ratio hi", eq.PPLRatioHi, 1)
	wantNil(t, "first divergence p50", eq.FirstDivergeP50)
	if eq.FirstDivergeCount != nil || eq.KLEstimator != KLEstimator || !strings.Contains(eq.Rule, "identical") {
		t.Errorf("histogram %v, estimator %q, rule %q", eq.FirstDivergeCount, eq.KLEstimator, eq.Rule)
	}
	row := Item(pairs[0], 8)
	if *row.FirstDivergence != -1 || *row.KL != 0 || *row.NLLDiff != 0 || row.Score != 1 || !*row.Correct || row.Eval != EvalName || row.ID != "0" {
		t.Errorf("row %+v: want no divergence, zero KL and nll diff, score 1, correct", row)
	}
}

// One token changed at position 3 of K = 8, beside an item that matched:
// the first divergence is 3, the exact-match rate 1/2, the token agreement
// (1 + 3/8) / 2, every divergence percentile 3 and the histogram's only
// count at 3. Without logprobs the logprob measures are nil and the
// verdict comes from token agreement: 0.6875 < 0.90, a different model.
func TestOneTokenChangedAtPosition3(t *testing.T) {
	t.Parallel()
	a := seq("w", 8)
	b := slices.Clone(a)
	b[3] = "other"
	pairs := []Pair{
		{ID: "same", A: Continuation{Tokens: a}, B: Continuation{Tokens: a}},
		{ID: "changed", A: Continuation{Tokens: a}, B: Continuation{Tokens: b}},
	}
	eq := Compare(pairs, 8)
	want(t, "exact match", eq.ExactMatch, 0.5)
	want(t, "token agreement", eq.TokenAgreement, (1+3.0/8)/2)
	want(t, "p10", eq.FirstDivergeP10, 3)
	want(t, "p50", eq.FirstDivergeP50, 3)
	want(t, "p90", eq.FirstDivergeP90, 3)
	if !slices.Equal(eq.FirstDivergeCount, []int{0, 0, 0, 1, 0, 0, 0, 0}) {
		t.Errorf("histogram %v, want one count at 3 of 8", eq.FirstDivergeCount)
	}
	for name, v := range map[string]*float64{"top-1": eq.Top1Agreement, "Δ mean": eq.LogprobDiffMean, "Δ max": eq.LogprobDiffMax,
		"KL mean": eq.KLMean, "KL p99": eq.KLP99, "nll": eq.NLLDiffMean, "ppl": eq.PPLRatio, "ppl lo": eq.PPLRatioLo, "ppl hi": eq.PPLRatioHi} {
		wantNil(t, name, v)
	}
	// Without logprobs the verdict rests on token agreement: 0.6875 is at
	// least TokenAgreementMin.
	if eq.Verdict != schema.VerdictNumerically {
		t.Errorf("verdict %q, want %q (token agreement %.4f ≥ %g)", eq.Verdict, schema.VerdictNumerically, (1+3.0/8)/2, TokenAgreementMin)
	}
	row := Item(pairs[1], 8)
	if *row.FirstDivergence != 3 || row.Score != 3.0/8 || *row.Correct || row.KL != nil || row.NLLDiff != nil ||
		!slices.Equal(row.Output, a) || !slices.Equal(row.ReferenceOutput, b) {
		t.Errorf("row %+v: want divergence 3, score 3/8, no KL, both outputs", row)
	}
}

// Without any logprobs the verdict is the greedy measures': all exact is
// identical; one item of ten diverging halfway (token agreement 0.95) is
// numerically different; items diverging at once are a different model.
func TestWithoutLogprobsTheVerdictComesFromTheGreedyMeasures(t *testing.T) {
	t.Parallel()
	a := seq("w", 8)
	half := slices.Clone(a)
	half[4] = "x"
	first := slices.Clone(a)
	first[0] = "x"
	build := func(b []string, diverging int) []Pair {
		var ps []Pair
		for i := range 10 {
			p := Pair{A: Continuation{Tokens: a}, B: Continuation{Tokens: a}}
			if i < diverging {
				p.B.Tokens = b
			}
			ps = append(ps, p)
		}
		return ps
	}
	for _, c := range []struct {
		name  string
		pairs []Pair
		agree float64
		want  string
	}{
		{"all exact", build(a, 0), 1, schema.VerdictIdentical},
		{"one halfway", build(half, 1), 0.95, schema.VerdictNumerically},
		{"all at once", build(first, 10), 0, schema.VerdictDifferent},
	} {
		eq := Compare(c.pairs, 8)
		if eq.Verdict != c.want || eq.Top1Agreement != nil || eq.KLMean != nil {
			t.Errorf("%s: verdict %q (top-1 %v, KL %v), want %q from the greedy measures", c.name, eq.Verdict, eq.Top1Agreement, eq.KLMean, c.want)
		}
		want(t, c.name+": token agreement", eq.TokenAgreement, c.agree)
	}
}

// The top-logprob measures over hand-made lists: positions up to and
// including the first divergence (3) count for top-1 agreement and KL, the
// ones before it for the chosen logprob's difference, none after it.
func TestTopLogprobMeasuresStopAtTheFirstDivergence(t *testing.T) {
	t.Parallel()
	ta := []string{"a", "b", "c", "d", "e"}
	tb := []string{"a", "b", "c", "X", "e"}
	A := Continuation{Tokens: ta, Logprobs: []float64{-.1, -.2, -.3, -.4, -.5}, Top: []map[string]float64{
		{"a": ln(.5), "z": ln(.3)},
		{"b": ln(.9)},
		{"c": ln(.6), "y": ln(.3)},
		{"d": ln(.5), "X": ln(.4)},
		{"e": ln(.99)},
	}}
	B := Continuation{Tokens: tb, Logprobs: []float64{-.1, -.25, math.NaN(), -.9, -5}, Top: []map[string]float64{
		{"a": ln(.4), "q": ln(.3)},
		{"b": ln(.9)},
		{"c": ln(.4), "y": ln(.3)},
		{"X": ln(.5), "d": ln(.4)},
		{"e": ln(.01)}, // after the divergence: not compared
	}}
	eq := Compare([]Pair{{A: A, B: B}}, 5)
	// Position 0: union {a, q, z}: A a .5 z .3 q .1 other .1; B a .4 q .3
	// z .15 other .15. Position 1: the same lists. Position 2: A c .6 y .3
	// other .1, B c .4 y .3 other .3. Position 3: d and X swapped.
	kl := []float64{
		.5*ln(.5/.4) + .1*ln(.1/.3) + .3*ln(.3/.15) + .1*ln(.1/.15),
		0,
		.6*ln(.6/.4) + .1*ln(.1/.3),
		.5*ln(.5/.4) + .4*ln(.4/.5),
	}
	want(t, "top-1 agreement", eq.Top1Agreement, 3.0/4)
	want(t, "KL mean", eq.KLMean, (kl[0]+kl[1]+kl[2]+kl[3])/4)
	slices.Sort(kl)
	want(t, "KL p99", eq.KLP99, kl[2]+0.97*(kl[3]-kl[2]))
	// Δ over positions 0 and 1 (2 has B's NaN, 3 is the divergence).
	want(t, "Δ mean", eq.LogprobDiffMean, 0.025)
	want(t, "Δ max", eq.LogprobDiffMax, 0.05)
	// Top-1 agreement 0.75 clears Top1AgreementMin; the KL mean decides.
	wantVerdict := schema.VerdictNumerically
	if *eq.KLMean > KLMeanMax {
		wantVerdict = schema.VerdictDifferent
	}
	if eq.Verdict != wantVerdict {
		t.Errorf("verdict %q: top-1 0.75 ≥ %g and KL mean %.4f against %g is %q", eq.Verdict, Top1AgreementMin, *eq.KLMean, KLMeanMax, wantVerdict)
	}
}

// Echo: the per-token nll difference over the tokens both sides hold at
// the same place with a logprob, aligned by text offset across two
// tokenizations; the first token's null is skipped.
func TestEchoNLLDifferenceOverTheSharedTokens(t *testing.T) {
	t.Parallel()
	c := Continuation{Tokens: []string{"x"}}
	pa := &PromptLogprobs{Tokens: []string{"The", " cat", " sat", " down"}, Logprobs: []float64{math.NaN(), -2, -1, -3}}
	// B splits " cat" in two and has its own logprob for the rest.
	pb := &PromptLogprobs{Tokens: []string{"The", " c", "at", " sat", " down"}, Logprobs: []float64{-5, -1, -1, -1.5, -2}}
	eq := Compare([]Pair{{A: c, B: c, PA: pa, PB: pb}}, 1)
	// Shared with logprobs on both: " sat" (nll 1 vs 1.5) and " down"
	// (3 vs 2): differences −0.5 and 1.
	want(t, "nll diff", eq.NLLDiffMean, 0.25)
	want(t, "ppl ratio", eq.PPLRatio, math.Exp(0.25))
	if eq.Verdict == schema.VerdictIdentical {
		t.Errorf("verdict identical with prompt logprobs 1 nat apart")
	}
	if row := Item(Pair{A: c, B: c, PA: pa, PB: pb}, 1); row.NLLDiff == nil || *row.NLLDiff != 0.25 {
		t.Errorf("row nll diff %v, want 0.25", row.NLLDiff)
	}
}

// A side that stopped early: a prefix of the other diverges at its length
// (5 of 8: agreement 5/8); both stopping on the same tokens is an exact
// match with agreement 1. Tokens past K are not compared, and K ≤ 0 means
// the longest continuation.
func TestEarlyStopsAndK(t *testing.T) {
	t.Parallel()
	a := seq("w", 8)
	eq := Compare([]Pair{{A: Continuation{Tokens: a[:5]}, B: Continuation{Tokens: a}}}, 8)
	want(t, "prefix: agreement", eq.TokenAgreement, 5.0/8)
	want(t, "prefix: p50", eq.FirstDivergeP50, 5)
	eq = Compare([]Pair{{A: Continuation{Tokens: a[:5]}, B: Continuation{Tokens: a[:5]}}}, 8)
	want(t, "same early stop: exact", eq.ExactMatch, 1)
	want(t, "same early stop: agreement", eq.TokenAgreement, 1)
	long := append(slices.Clone(a), "y", "z")
	eq = Compare([]Pair{{A: Continuation{Tokens: append(slices.Clone(a), "y", "y")}, B: Continuation{Tokens: long}}}, 8)
	want(t, "past K: exact", eq.ExactMatch, 1)
	eq = Compare([]Pair{{A: Continuation{Tokens: a}, B: Continuation{Tokens: a[:6]}}}, 0)
	if eq.Tokens != 8 {
		t.Errorf("K 0: tokens %d, want the longest continuation, 8", eq.Tokens)
	}
	want(t, "K 0: agreement", eq.TokenAgreement, 6.0/8)
}

// Failed pairs are left out and counted out of Items; with none usable
// there is a failure and no verdict.
func TestFailedPairs(t *testing.T) {
	t.Parallel()
	ok := Pair{ID: "ok", A: Continuation{Tokens: []string{"a"}}, B: Continuation{Tokens: []string{"a"}}}
	bad := Pair{ID: "bad", Failure: "reference: HTTP 500"}
	eq := Compare([]Pair{bad, ok}, 1)
	if eq.Items != 1 || eq.Verdict != schema.VerdictIdentical {
		t.Errorf("one usable pair: items %d verdict %q, want 1 and identical", eq.Items, eq.Verdict)
	}
	for _, pairs := range [][]Pair{nil, {bad, bad}} {
		eq := Compare(pairs, 1)
		if eq.Failure == nil || eq.Failure.Kind != FailureNoPairs || eq.Verdict != "" || eq.ExactMatch != nil {
			t.Errorf("%d pairs, none usable: %+v, want a %s failure and no verdict", len(pairs), eq, FailureNoPairs)
		}
	}
	if row := Item(bad, 1); row.Failure != bad.Failure || row.ID != "bad" || row.FirstDivergence != nil {
		t.Errorf("failed row %+v", row)
	}
}

// sim simulates two engines over n items of k tokens from a vocabulary of
// v: at each position a logit vector; B's is A's plus Gaussian noise of sd
// noise (a different precision), or its own draw when independent (another
// model). Once the two greedy tokens differ the contexts differ, and each
// side draws its own logits from then on. Both give top-20 lists and echo
// logprobs of a 30-token text, scored the same way.
func sim(rng *mrand.Rand, n, k, v int, noise float64, independent bool) []Pair {
	draw := func() []float64 {
		l := make([]float64, v)
		for i := range l {
			l[i] = rng.NormFloat64() * 3
		}
		return l
	}
	perturb := func(l []float64) []float64 {
		out := make([]float64, len(l))
		for i := range l {
			out[i] = l[i] + rng.NormFloat64()*noise
		}
		return out
	}
	step := func(c *Continuation, logits []float64) {
		lp := logSoftmax(logits)
		best := 0
		for i := range lp {
			if lp[i] > lp[best] {
				best = i
			}
		}
		c.Tokens = append(c.Tokens, tok(best))
		c.Logprobs = append(c.Logprobs, lp[best])
		c.Top = append(c.Top, topK(lp, 20))
	}
	var pairs []Pair
	for range n {
		var p Pair
		apart := false
		for range k {
			la := draw()
			lb := perturb(la)
			if independent || apart {
				lb = draw()
			}
			step(&p.A, la)
			step(&p.B, lb)
			apart = apart || p.A.Tokens[len(p.A.Tokens)-1] != p.B.Tokens[len(p.B.Tokens)-1]
		}
		p.PA, p.PB = &PromptLogprobs{}, &PromptLogprobs{}
		for i := range 30 {
			la := draw()
			lb := perturb(la)
			if independent {
				lb = draw()
			}
			t := rng.IntN(v)
			p.PA.Tokens, p.PB.Tokens = append(p.PA.Tokens, tok(t)), append(p.PB.Tokens, tok(t))
			pa, pb := logSoftmax(la)[t], logSoftmax(lb)[t]
			if i == 0 {
				pa, pb = math.NaN(), math.NaN()
			}
			p.PA.Logprobs, p.PB.Logprobs = append(p.PA.Logprobs, pa), append(p.PB.Logprobs, pb)
		}
		pairs = append(pairs, p)
	}
	return pairs
}

// A small perturbation of the logits (sd 0.02, a precision change) keeps
// the argmax almost everywhere: numerically different, with a small,
// nonzero KL. Another model's independent logits: a different model.
func TestSyntheticEnginesGetTheirVerdicts(t *testing.T) {
	t.Parallel()
	rng := mrand.New(mrand.NewPCG(11, 12))
	near := Compare(sim(rng, 40, 32, 100, 0.02, false), 32)
	t.Logf("perturbed: exact %.3f top-1 %.4f KL mean %.3g p99 %.3g Δmax %.3g ppl %.4f [%.4f, %.4f]", *near.ExactMatch, *near.Top1Agreement,
		*near.KLMean, *near.KLP99, *near.LogprobDiffMax, *near.PPLRatio, *near.PPLRatioLo, *near.PPLRatioHi)
	if near.Verdict != schema.VerdictNumerically || *near.KLMean <= 0 || *near.KLMean > 1e-3 || *near.Top1Agreement < 0.95 {
		t.Errorf("perturbed: verdict %q, KL mean %g, top-1 %g; want numerically different, KL in (0, 1e-3], top-1 ≥ 0.95",
			near.Verdict, *near.KLMean, *near.Top1Agreement)
	}
	far := Compare(sim(rng, 40, 32, 100, 0, true), 32)
	t.Logf("independent: exact %.3f top-1 %.4f KL mean %.3g", *far.ExactMatch, *far.Top1Agreement, *far.KLMean)
	if far.Verdict != schema.VerdictDifferent || *far.Top1Agreement > 0.2 || *far.KLMean < 1 {
		t.Errorf("independent: verdict %q, top-1 %g, KL mean %g; want a different model, top-1 ≤ 0.2, KL ≥ 1 nat",
			far.Verdict, *far.Top1Agreement, *far.KLMean)
	}
}

// The ppl ratio's 95% interval covers the true ratio about 95% of the
// time: synthetic documents whose per-token nll on A is B's plus 0.05 nats
// on average (ratio e^0.05), with each document's own level and per-token
// noise; over 200 seeds the share of intervals holding e^0.05 is within
// 0.88–0.99 (the bootstrap runs slightly narrow at 30 documents).
func TestThePPLRatioIntervalCoversTheTrueRatio(t *testing.T) {
	t.Parallel()
	const trials, docs, toks, shift = 200, 30, 40, 0.05
	truth := math.Exp(shift)
	rng := mrand.New(mrand.NewPCG(13, 14))
	covered := 0
	for range trials {
		var pairs []Pair
		for range docs {
			pa, pb := &PromptLogprobs{}, &PromptLogprobs{}
			level := 1 + rng.Float64()*3
			docShift := shift + rng.NormFloat64()*0.05
			for j := range toks {
				nll := level + rng.NormFloat64()
				pa.Tokens, pb.Tokens = append(pa.Tokens, tok(j)), append(pb.Tokens, tok(j))
				pb.Logprobs = append(pb.Logprobs, -nll)
				pa.Logprobs = append(pa.Logprobs, -(nll + docShift + rng.NormFloat64()*0.1))
			}
			pairs = append(pairs, Pair{A: Continuation{Tokens: []string{"a"}}, B: Continuation{Tokens: []string{"a"}}, PA: pa, PB: pb})
		}
		eq := Compare(pairs, 1)
		if *eq.PPLRatioLo > *eq.PPLRatio || *eq.PPLRatio > *eq.PPLRatioHi {
			t.Fatalf("ratio %g outside its interval [%g, %g]", *eq.PPLRatio, *eq.PPLRatioLo, *eq.PPLRatioHi)
		}
		if *eq.PPLRatioLo <= truth && truth <= *eq.PPLRatioHi {
			covered++
		}
	}
	rate := float64(covered) / trials
	t.Logf("coverage %.3f over %d trials", rate, trials)
	if rate < 0.88 || rate > 0.99 {
		t.Errorf("coverage %.3f, want about 0.95 (0.88–0.99)", rate)
	}
}

// Identical means identical to rounding: the same tokens with chosen
// logprobs 1e-6 apart are identical, 1e-4 apart numerically different.
func TestIdenticalAllowsOnlyRoundingLevelLogprobDifferences(t *testing.T) {
	t.Parallel()
	tokens := seq("w", 4)
	for _, c := range []struct {
		delta float64
		want  string
	}{{1e-6, schema.VerdictIdentical}, {1e-4, schema.VerdictNumerically}} {
		a := Continuation{Tokens: tokens, Logprobs: fill(4, -0.5)}
		b := Continuation{Tokens: tokens, Logprobs: fill(4, -0.5+c.delta)}
		if eq := Compare([]Pair{{A: a, B: b}}, 4); eq.Verdict != c.want {
			t.Errorf("logprobs %g apart: verdict %q, want %q", c.delta, eq.Verdict, c.want)
		}
	}
	if r := Rule(); !strings.Contains(r, "0.40") || !strings.Contains(r, "1e-05") || !strings.Contains(r, schema.VerdictDifferent) {
		t.Errorf("rule %q does not state its thresholds", r)
	}
}

// Ragged answers (fewer logprobs or top lists than tokens, empty lists,
// an empty continuation) are measured where they can be, without a panic.
func TestRaggedAnswersAreMeasuredWhereTheyCanBe(t *testing.T) {
	t.Parallel()
	a := Continuation{Tokens: seq("w", 4), Logprobs: []float64{-1}, Top: []map[string]float64{{"wa": -1}, {}}}
	b := Continuation{Tokens: seq("w", 4), Logprobs: []float64{-1, -2, -3}, Top: []map[string]float64{{"wa": -1}}}
	eq := Compare([]Pair{{A: a, B: b}, {A: Continuation{}, B: Continuation{}}, {A: a, B: Continuation{}, PA: &PromptLogprobs{}, PB: &PromptLogprobs{Tokens: []string{"x"}}}}, 4)
	want(t, "exact match", eq.ExactMatch, 2.0/3)
	want(t, "top-1 agreement (one position has both)", eq.Top1Agreement, 1)
	want(t, "Δ max (one position has both)", eq.LogprobDiffMax, 0)
	wantNil(t, "nll diff (no shared token)", eq.NLLDiffMean)
}

// The truth: values that are not logprobs from a broken or hostile server
// (800, ±1e308, as JSON can carry them) count as missing: every measure
// stays finite and the section and its rows can be written as JSON (an
// Inf or NaN in them made the report unwritable, the run's measures lost).
func TestOutOfRangeLogprobsLeaveEveryMeasureWritable(t *testing.T) {
	p := Pair{ID: "x",
		A: Continuation{Tokens: []string{"a", "b", "c"}, Logprobs: []float64{-1e308, 800, -0.5},
			Top: []map[string]float64{{"a": 800, "z": -1}, {"b": 1e308}, {"c": -0.5}}},
		B: Continuation{Tokens: []string{"a", "b", "c"}, Logprobs: []float64{1e308, -0.1, -0.5},
			Top: []map[string]float64{{"a": -1}, {"b": -1}, {"c": -0.5}}},
		PA: &PromptLogprobs{Tokens: []string{"x", "y"}, Logprobs: []float64{1e308, -1}},
		PB: &PromptLogprobs{Tokens: []string{"x", "y"}, Logprobs: []float64{-1e308, -1}},
	}
	eq := Compare([]Pair{p}, 3)
	if _, err := json.Marshal(eq); err != nil {
		t.Fatalf("the section: %v", err)
	}
	if _, err := json.Marshal(Item(p, 3)); err != nil {
		t.Fatalf("the row: %v", err)
	}
	if eq.LogprobDiffMax == nil || *eq.LogprobDiffMax != 0 {
		t.Errorf("chosen logprob diff max %v, want 0 (only position 2 holds two logprobs)", eq.LogprobDiffMax)
	}
	if k := KLTopK(map[string]float64{"a": 800}, map[string]float64{"a": -0.1}); math.IsNaN(k) || math.IsInf(k, 0) {
		t.Errorf("KL with a logprob of 800: %v, want finite", k)
	}
}
