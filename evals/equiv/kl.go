package equiv

import (
	"math"
	"slices"
)

// KLEstimator names how KLTopK estimates a KL divergence from two top-k
// lists; it is written in a report's kl_estimator.
const KLEstimator = "top-k union, leftover spread evenly (capped at the least listed) over unlisted union tokens, rest lumped as other, floor 1e-10"

// klFloor is the least probability a bucket holds (≈ e^−23): a token one
// side did not list and whose leftover was all spent still gets this much,
// so that the estimate stays finite (at most about 23 nats) however the
// lists differ.
const klFloor = 1e-10

// KLTopK estimates KL(A ‖ B) in nats at one position from the two sides'
// top logprob lists (token → logprob), by KLEstimator:
//
//   - the buckets are the union U of the two lists' tokens and one "other"
//     bucket for every token outside U;
//   - each side's leftover mass r = max(0, 1 − Σ exp(listed)) is what it
//     gives to the union tokens it did not list and to "other": each such
//     token gets r / (m + 1), m being how many it did not list, but no more
//     than the least probability the side did list (a token not in a top-k
//     list is no likelier than its k-th); "other" gets the rest of r;
//   - every bucket holds at least klFloor, and each side is renormalized to
//     sum to 1 (a list summing to 1 or more by rounding has r = 0).
//
// The two distributions are then proper ones over the same buckets, so the
// estimate is ≥ 0, 0 for identical lists, and finite. When the lists name
// the same tokens it is the KL of the lumped distributions, a lower bound of
// the exact KL (lumping never raises a divergence) that meets it as the
// lists' mass nears 1. An entry that is not a logprob (NaN, +Inf, out of
// range: see valid) counts as not listed.
func KLTopK(a, b map[string]float64) float64 {
	return max(0, klRaw(a, b))
}

// klRaw is KLTopK before its clamp at 0, which only hides rounding.
func klRaw(a, b map[string]float64) float64 {
	// The union in a fixed order, so that identical lists give bitwise
	// identical sums and a KL of exactly 0.
	union := make([]string, 0, len(a)+len(b))
	for t, lp := range a {
		if listed(lp) {
			union = append(union, t)
		}
	}
	for t, lp := range b {
		if lpA, inA := a[t]; (!inA || !listed(lpA)) && listed(lp) {
			union = append(union, t)
		}
	}
	slices.Sort(union)
	p, q := buckets(a, union), buckets(b, union)
	var kl float64
	for i := range p {
		kl += p[i] * math.Log(p[i]/q[i])
	}
	return kl
}

// buckets is one side's distribution over union's tokens, then "other",
// by KLEstimator.
func buckets(list map[string]float64, union []string) []float64 {
	out := make([]float64, len(union)+1)
	var mass float64
	least := math.Inf(1)
	missing := 0
	for i, t := range union {
		lp, ok := list[t]
		if !ok || !listed(lp) {
			out[i] = math.NaN() // filled below
			missing++
			continue
		}
		pr := math.Exp(lp)
		out[i] = pr
		mass += pr
		least = min(least, pr)
	}
	left := max(0, 1-mass)
	share := left / float64(missing+1)
	if missing > 0 && !math.IsInf(least, 1) {
		share = min(share, least)
	}
	for i := range union {
		if math.IsNaN(out[i]) {
			out[i] = share
		}
	}
	out[len(union)] = max(0, left-share*float64(missing))
	var sum float64
	for i := range out {
		out[i] = max(out[i], klFloor)
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

// listed reports whether a list's logprob counts: a logprob (valid), or
// −Inf, a probability of 0.
func listed(lp float64) bool { return valid(lp) || math.IsInf(lp, -1) }

// A logprob a server gives is at most maxLogprob (0 and rounding) and at
// least minLogprob (vLLM writes −9999 for −inf); valid says whether lp is
// one. NaN, ±Inf and a value out of range (a hostile or broken server's
// 800 or 1e308) are not: they would make a measure Inf or NaN, and a
// report that cannot be written.
const (
	maxLogprob = 1e-3
	minLogprob = -1e6
)

func valid(lp float64) bool { return lp <= maxLogprob && lp >= minLogprob }
