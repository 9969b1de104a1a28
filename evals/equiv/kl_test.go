package equiv

import (
	"fmt"
	"math"
	mrand "math/rand/v2"
	"slices"
	"testing"
)

func ln(x float64) float64 { return math.Log(x) }

// Hand-computed estimates: the leftover spread over the unlisted union
// tokens (r / (m + 1) each), the rest as "other", and the cap at a side's
// least listed probability.
func TestKLTopKOnListsWithAKnownAnswer(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		a, b map[string]float64
		want float64
	}{
		{
			// A: x .5, y .3, leftover .2 → z .1, other .1.
			// B: x .4, z .4, leftover .2 → y .1, other .1.
			name: "each side misses one token of the other's list",
			a:    map[string]float64{"x": ln(.5), "y": ln(.3)},
			b:    map[string]float64{"x": ln(.4), "z": ln(.4)},
			want: .5*ln(.5/.4) + .3*ln(.3/.1) + .1*ln(.1/.4),
		},
		{
			// A: x .9, y .02, leftover .08 over w, z and other: .08/3 > .02,
			// so w and z get .02 each (A's least) and other .04.
			// B: x .9, z .05, w .03, leftover .02 → y .01, other .01.
			name: "a missing token is no likelier than the least listed",
			a:    map[string]float64{"x": ln(.9), "y": ln(.02)},
			b:    map[string]float64{"x": ln(.9), "z": ln(.05), "w": ln(.03)},
			want: .02*ln(.02/.03) + .02*ln(.02/.01) + .02*ln(.02/.05) + .04*ln(.04/.01),
		},
		{
			// The same tokens, leftovers .1 and .3: only the lumped buckets.
			name: "the same tokens, other mass apart",
			a:    map[string]float64{"x": ln(.6), "y": ln(.3)},
			b:    map[string]float64{"x": ln(.4), "y": ln(.3)},
			want: .6*ln(.6/.4) + .1*ln(.1/.3),
		},
		{
			// +Inf is not a logprob: not listed, like NaN. −Inf is p = 0:
			// A is x .5, y 0 (its least, so a missing z gets 0 → the
			// floor); B x .5, z .5.
			name: "+Inf is not listed and −Inf is a zero probability",
			a:    map[string]float64{"x": ln(.5), "y": math.Inf(-1), "w": math.Inf(1)},
			b:    map[string]float64{"x": ln(.5), "z": ln(.5)},
			// y: p 0 → the floor on both sides; z: p the floor, q .5;
			// other: A .5, B the floor; each side then sums to 1 + 2e-10.
			want: (.5*ln(.5/1e-10) + 1e-10*ln(1e-10/.5)) / (1 + 2e-10),
		},
		{
			// A NaN entry is not listed: A is then {x .5}, leftover .5 over
			// y and other (.25 each, under the cap .5): the same as B.
			name: "a NaN entry counts as not listed",
			a:    map[string]float64{"x": ln(.5), "y": math.NaN()},
			b:    map[string]float64{"x": ln(.5), "y": ln(.25)},
			want: 0,
		},
	} {
		if got := KLTopK(c.a, c.b); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: KL %.12g, want %.12g", c.name, got, c.want)
		}
	}
}

// randomList is a top-k list: k distinct tokens of a vocabulary of v with
// logprobs of a random distribution's k likeliest, so that its mass is < 1.
func randomList(rng *mrand.Rand, v, k int) map[string]float64 {
	logits := make([]float64, v)
	for i := range logits {
		logits[i] = rng.NormFloat64() * 2
	}
	return topK(logSoftmax(logits), k)
}

func logSoftmax(logits []float64) []float64 {
	m := slices.Max(logits)
	var s float64
	for _, l := range logits {
		s += math.Exp(l - m)
	}
	out := make([]float64, len(logits))
	for i, l := range logits {
		out[i] = l - m - math.Log(s)
	}
	return out
}

// topK is the k likeliest tokens ("t<index>") of a full log distribution.
func topK(lp []float64, k int) map[string]float64 {
	idx := make([]int, len(lp))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case lp[a] > lp[b]:
			return -1
		case lp[a] < lp[b]:
			return 1
		}
		return a - b
	})
	out := make(map[string]float64, k)
	for _, i := range idx[:k] {
		out[tok(i)] = lp[i]
	}
	return out
}

func tok(i int) string { return fmt.Sprintf("t%d", i) }

// exactKL is KL(p ‖ q) of two full log distributions.
func exactKL(p, q []float64) float64 {
	var kl float64
	for i := range p {
		kl += math.Exp(p[i]) * (p[i] - q[i])
	}
	return kl
}

// The estimator's properties over many random lists: identical lists give
// exactly 0 (whatever their map order), the raw estimate is never below 0
// beyond rounding, and lists that share no token, even each holding all of
// its side's mass, give a finite estimate.
func TestKLTopKProperties(t *testing.T) {
	t.Parallel()
	rng := mrand.New(mrand.NewPCG(5, 6))
	for range 500 {
		k := 1 + rng.IntN(20)
		a, b := randomList(rng, 50, k), randomList(rng, 50, 1+rng.IntN(20))
		same := make(map[string]float64, len(a))
		for t, lp := range a {
			same[t] = lp
		}
		if kl := KLTopK(a, same); kl != 0 {
			t.Fatalf("identical lists %v: KL %g, want 0", a, kl)
		}
		if kl := klRaw(a, b); kl < -1e-12 || math.IsNaN(kl) || math.IsInf(kl, 0) {
			t.Fatalf("lists %v and %v: KL %g, want finite and ≥ 0", a, b, kl)
		}
	}
	// Disjoint lists, each all of its side's mass: only the floor is left
	// for the other's tokens, and the estimate is finite (about 23 nats).
	a := map[string]float64{"x": ln(.5), "y": ln(.5)}
	b := map[string]float64{"u": ln(.5), "v": ln(.5)}
	if kl := KLTopK(a, b); math.IsInf(kl, 0) || math.IsNaN(kl) || kl < 20 || kl > 25 {
		t.Errorf("disjoint full lists: KL %g, want finite, about −ln(1e-10) ≈ 23", kl)
	}
	// An empty list on one side: all of its mass is leftover.
	if kl := KLTopK(a, nil); math.IsInf(kl, 0) || math.IsNaN(kl) || kl <= 0 {
		t.Errorf("a list against none: KL %g, want finite and > 0", kl)
	}
}

// When the lists hold almost all the mass the estimate meets the exact KL
// of the full distributions: two close peaked distributions over 1,000
// tokens, their top-20 lists (which may differ at the tail), within 1e-9
// nats plus 0.001% of the exact KL. When both lists name the same tokens the
// estimate is the KL of a lumping of the two distributions, never above
// the exact one.
func TestKLTopKMeetsTheExactKLWhenTheListsHoldAlmostAllTheMass(t *testing.T) {
	t.Parallel()
	rng := mrand.New(mrand.NewPCG(7, 8))
	const v = 1000
	for trial := range 100 {
		la, lb := make([]float64, v), make([]float64, v)
		for i := range la {
			la[i] = -1.2*float64(i) + rng.NormFloat64()*0.3
			lb[i] = la[i] + rng.NormFloat64()*0.2
		}
		pa, pb := logSoftmax(la), logSoftmax(lb)
		exact := exactKL(pa, pb)
		a, b := topK(pa, 20), topK(pb, 20)
		if est := KLTopK(a, b); math.Abs(est-exact) > 1e-9+1e-5*exact {
			t.Errorf("trial %d: estimate %.9g, exact %.9g", trial, est, exact)
		}
		// Flatter distributions, top-5 lists naming the same tokens: a
		// lower bound.
		for i := range la {
			la[i] = -0.3*float64(i) + rng.NormFloat64()
			lb[i] = la[i] + rng.NormFloat64()*0.5
		}
		pa, pb = logSoftmax(la), logSoftmax(lb)
		a = topK(pa, 5)
		b = make(map[string]float64, len(a))
		for i := range pb {
			if _, ok := a[tok(i)]; ok {
				b[tok(i)] = pb[i]
			}
		}
		if est, exact := KLTopK(a, b), exactKL(pa, pb); est > exact+1e-12 {
			t.Errorf("trial %d: lumped estimate %.9g above the exact %.9g", trial, est, exact)
		}
	}
}
