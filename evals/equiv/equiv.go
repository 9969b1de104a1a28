// Package equiv measures whether an endpoint serves the same model, at the
// same numerics, as a reference (issue 17, eval compare). The same prompts
// are sent at temperature 0 to the endpoint (A) and the reference (B); what
// came back is handed here as Pairs, and Compare makes every measure of
// schema.Equivalence and its verdict:
//
//   - greedy: how many continuations match exactly, how far they agree
//     before the first divergence, where they diverge;
//   - top logprobs, over the positions where both sides still saw the same
//     context (up to and including the first divergence): top-1 agreement,
//     the chosen token's logprob difference and a KL estimate (KLTopK);
//   - echo (prompt logprobs of the same text): the per-token nll difference
//     and the per-document ppl ratio with a paired bootstrap interval.
//
// It is pure: no HTTP, no clock. The command that sends the prompts lives
// elsewhere.
package equiv

import (
	"fmt"
	"math"
	"slices"

	"github.com/glmbench/glmbench/reports/paired"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

// EvalName is the eval field of eval compare's evals.jsonl rows.
const EvalName = "compare"

// The verdict's thresholds (Rule states them). The identical ones are
// rounding-level. The others come from the built-in engine (nano, 41
// prompts of the embedded samples, 64 greedy tokens, top 5 logprobs,
// against fp32; `glmbench eval compare --weight-dtype D` and `--seed 2`):
//
//	            top-1 agreement  token agreement  KL mean (top-5 estimate)
//	bf16            0.979            0.655             8.4e-5
//	fp8_e4m3        0.882            0.258             1.5e-3
//	nvfp4           0.627            0.033             4.4e-3
//	another seed    0.000            0.000             4.3e-2
//
// A random-weight toy model's distributions are flat, so its argmax turns
// on small logit changes: top-1 agreement falls far lower under
// quantization than a trained model's would (which stays above 0.9 for
// fp8 and nvfp4 alike), while another seed agrees on almost no position.
// Top1AgreementMin sits between nvfp4 on the tiny preset (0.43, teacher
// forced) and another seed (under 0.01). The KL estimate from top-5 lists
// of a 320-token vocabulary sees little of the flat mass, so it separates
// less than the agreement does; KLMeanMax only catches a far-off model.
const (
	// IdenticalLogprobMax is the largest |logprob difference| in nats (a
	// chosen token's, or a prompt token's) that identical still allows.
	IdenticalLogprobMax = 1e-5
	// IdenticalKLMax is the largest KL mean in nats that identical allows.
	IdenticalKLMax = 1e-9
	// Top1AgreementMin is the least top-1 agreement of numerically different.
	Top1AgreementMin = 0.40
	// TokenAgreementMin is the least token agreement of numerically
	// different when no side gave top logprobs: coarser, as greedy tokens
	// alone are (nvfp4's 0.033 falls below it, bf16's and fp8's do not).
	TokenAgreementMin = 0.10
	// KLMeanMax is the largest KL mean in nats of numerically different.
	KLMeanMax = 0.1
)

// FailureNoPairs is the failure kind of a comparison with no usable pair
// (every pair failed, or there were none).
const FailureNoPairs = "no_usable_pairs"

// bootstrapSeed seeds the ppl ratio's bootstrap, so that a report is the
// same every time it is made.
const bootstrapSeed = 17

// Continuation is one side's greedy continuation of an item, as its
// answer's logprobs.content gave it.
type Continuation struct {
	// Tokens are the generated tokens' strings (logprobs.content[].token).
	Tokens []string
	// Logprobs are the chosen tokens' logprobs in nats, one per token; nil
	// when not returned, NaN at a position that had none.
	Logprobs []float64
	// Top are each position's top_logprobs (token → logprob); nil when not
	// returned, a nil or empty map at a position that had none.
	Top []map[string]float64
}

// PromptLogprobs is one side's echo of an item's text: its prompt tokens
// and their logprobs in nats (NaN where null: usually the first).
type PromptLogprobs struct {
	Tokens   []string
	Logprobs []float64
}

// Pair is one item as the two sides answered it: A the endpoint, B the
// reference. PA and PB are their prompt logprobs (nil when not asked or not
// given). Failure, when set, says why the pair cannot be compared (a side's
// request failed); Compare skips it and Item reports it.
type Pair struct {
	ID      string
	A, B    Continuation
	PA, PB  *PromptLogprobs
	Failure string
}

// item is one usable pair's measures.
type item struct {
	// diverge is the first position where the two continuations differ,
	// -1 when they never do (then exact).
	diverge   int
	exact     bool
	agreement float64
	// Per position up to the divergence (top1, kl: up to and including
	// it; dlp: before it, where the chosen tokens are the same).
	top1 []bool
	dlp  []float64
	kl   []float64
	// nll are the per-token nll differences A − B of the echo.
	nll []float64
}

// measure makes one pair's measures over its first k tokens (all when k ≤ 0).
func measure(p Pair, k int) item {
	a, b := clip(p.A, k), clip(p.B, k)
	it := item{diverge: FirstDivergence(a.Tokens, b.Tokens)}
	it.exact = it.diverge < 0
	it.agreement = 1
	if !it.exact {
		it.agreement = float64(it.diverge) / float64(max(len(a.Tokens), len(b.Tokens)))
	}
	// The positions both sides reached with the same context: up to and
	// including the first divergence.
	last := min(len(a.Tokens), len(b.Tokens)) - 1
	if !it.exact {
		last = min(last, it.diverge)
	}
	for i := 0; i <= last; i++ {
		same := a.Tokens[i] == b.Tokens[i]
		if la, lb, ok := both(a.Logprobs, b.Logprobs, i); ok && same {
			it.dlp = append(it.dlp, math.Abs(la-lb))
		}
		ta, tb := at(a.Top, i), at(b.Top, i)
		if len(ta) == 0 || len(tb) == 0 {
			continue
		}
		xa, oka := top1(ta)
		xb, okb := top1(tb)
		if !oka || !okb {
			continue
		}
		it.top1 = append(it.top1, xa == xb)
		it.kl = append(it.kl, KLTopK(ta, tb))
	}
	if p.PA != nil && p.PB != nil {
		it.nll = nllDiffs(*p.PA, *p.PB)
	}
	return it
}

// FirstDivergence is the first position where two token lists differ: the
// first unequal token, or the shorter list's length when one is a prefix of
// the other (one side stopped early); -1 when they are the same.
func FirstDivergence(a, b []string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return n
	}
	return -1
}

// clip keeps c's first k positions (all when k ≤ 0).
func clip(c Continuation, k int) Continuation {
	if k <= 0 {
		return c
	}
	c.Tokens = c.Tokens[:min(k, len(c.Tokens))]
	c.Logprobs = c.Logprobs[:min(k, len(c.Logprobs))]
	c.Top = c.Top[:min(k, len(c.Top))]
	return c
}

// both returns a[i] and b[i] when both are there and logprobs (valid).
func both(a, b []float64, i int) (float64, float64, bool) {
	if i >= len(a) || i >= len(b) || !valid(a[i]) || !valid(b[i]) {
		return 0, 0, false
	}
	return a[i], b[i], true
}

// logprobAt is lps[i], NaN when missing or not a logprob (valid).
func logprobAt(lps []float64, i int) float64 {
	if i >= len(lps) || !valid(lps[i]) {
		return math.NaN()
	}
	return lps[i]
}

func at(top []map[string]float64, i int) map[string]float64 {
	if i >= len(top) {
		return nil
	}
	return top[i]
}

// top1 is a list's likeliest token (ties: the smallest string, so that two
// identical lists name the same one); false when no entry counts (listed).
func top1(list map[string]float64) (string, bool) {
	best, bestLP, ok := "", math.Inf(-1), false
	for t, lp := range list {
		if !listed(lp) {
			continue
		}
		if !ok || lp > bestLP || (lp == bestLP && t < best) {
			best, bestLP, ok = t, lp, true
		}
	}
	return best, ok
}

// nllDiffs are the per-token nll differences A − B over the tokens both
// echoes hold at the same place of the text with a logprob on both sides.
// The two tokenizations are aligned by character offset, so that a
// different tokenizer pairs only the tokens it shares; with the same one
// this is position by position.
func nllDiffs(a, b PromptLogprobs) []float64 {
	var out []float64
	i, j, oa, ob := 0, 0, 0, 0
	for i < len(a.Tokens) && j < len(b.Tokens) {
		ta, tb := a.Tokens[i], b.Tokens[j]
		if oa == ob && ta == tb {
			la, lb := logprobAt(a.Logprobs, i), logprobAt(b.Logprobs, j)
			if !math.IsNaN(la) && !math.IsNaN(lb) {
				// nll = −logprob: (−la) − (−lb).
				out = append(out, lb-la)
			}
		}
		ea, eb := oa+len(ta), ob+len(tb)
		// Step past whichever token ends first (both when together); an
		// empty token is stepped past on its own.
		switch {
		case ea < eb || (ea == eb && len(ta) == 0 && len(tb) != 0):
			i, oa = i+1, ea
		case eb < ea || (ea == eb && len(tb) == 0 && len(ta) != 0):
			j, ob = j+1, eb
		default:
			i, oa = i+1, ea
			j, ob = j+1, eb
		}
	}
	return out
}

// Compare makes eval compare's section from the pairs, K being the greedy
// continuation's length asked (when k ≤ 0, the longest continuation
// given). Pairs with a Failure are skipped; Items counts the others. The
// caller fills Reference, ReferenceModel and Dataset. A measure is nil
// where no pair could give it; with no usable pair there is a Failure and
// no verdict.
//
// Token agreement of an item is its first divergence over the longer
// side's length (K when both ran the whole way), 1 when there is none: two
// sides that stopped early on the same tokens agree wholly.
func Compare(pairs []Pair, k int) schema.Equivalence {
	eq := schema.Equivalence{Tokens: k, KLEstimator: KLEstimator, Rule: Rule()}
	var usable []Pair
	for _, p := range pairs {
		if p.Failure == "" {
			usable = append(usable, p)
		}
	}
	if k <= 0 {
		for _, p := range usable {
			k = max(k, len(p.A.Tokens), len(p.B.Tokens))
		}
		eq.Tokens = k
	}
	eq.Items = len(usable)
	if len(usable) == 0 {
		detail := "no pairs to compare"
		if len(pairs) > 0 {
			detail = fmt.Sprintf("all %d pairs failed; the first: %s", len(pairs), pairs[0].Failure)
		}
		eq.Failure = &schema.EvalFailure{Kind: FailureNoPairs, Detail: detail}
		return eq
	}

	var (
		exact, agree     float64
		diverged         []float64
		hist             = make([]int, max(k, 1))
		top1s, top1n     int
		dlp, kls         []float64
		nllAll, logRatio []float64
		nllMax           float64
	)
	for _, p := range usable {
		it := measure(p, k)
		if it.exact {
			exact++
		} else {
			diverged = append(diverged, float64(it.diverge))
			hist[min(it.diverge, len(hist)-1)]++
		}
		agree += it.agreement
		for _, same := range it.top1 {
			top1n++
			if same {
				top1s++
			}
		}
		dlp = append(dlp, it.dlp...)
		kls = append(kls, it.kl...)
		nllAll = append(nllAll, it.nll...)
		for _, d := range it.nll {
			nllMax = max(nllMax, math.Abs(d))
		}
		if len(it.nll) > 0 {
			// The document's log ppl ratio: mean nll A − mean nll B over
			// its paired tokens.
			logRatio = append(logRatio, paired.Mean(it.nll))
		}
	}
	n := float64(len(usable))
	eq.ExactMatch = ptr(exact / n)
	eq.TokenAgreement = ptr(agree / n)
	if len(diverged) > 0 {
		eq.FirstDivergeP10 = summary.Percentile(diverged, 10)
		eq.FirstDivergeP50 = summary.Percentile(diverged, 50)
		eq.FirstDivergeP90 = summary.Percentile(diverged, 90)
		eq.FirstDivergeCount = hist
	}
	if top1n > 0 {
		eq.Top1Agreement = ptr(float64(top1s) / float64(top1n))
		eq.KLMean = ptr(paired.Mean(kls))
		eq.KLP99 = summary.Percentile(kls, 99)
	}
	if len(dlp) > 0 {
		eq.LogprobDiffMean = ptr(paired.Mean(dlp))
		eq.LogprobDiffMax = ptr(slices.Max(dlp))
	}
	if len(nllAll) > 0 {
		eq.NLLDiffMean = ptr(paired.Mean(nllAll))
		iv := paired.Bootstrap(logRatio, 0.95, paired.DefaultResamples, bootstrapSeed)
		eq.PPLRatio, eq.PPLRatioLo, eq.PPLRatioHi = ptr(math.Exp(iv.Mean)), ptr(math.Exp(iv.Lo)), ptr(math.Exp(iv.Hi))
	}
	var echoMax *float64
	if len(nllAll) > 0 {
		echoMax = &nllMax
	}
	eq.Verdict = verdict(eq, echoMax)
	return eq
}

// Rule states the verdict's rule in words, with its thresholds.
func Rule() string {
	return fmt.Sprintf("%s: every item's greedy tokens match exactly and, where logprobs exist, "+
		"max |Δ logprob| (chosen and prompt tokens) ≤ %g nats and KL mean ≤ %g; "+
		"%s: top-1 agreement ≥ %.2f (without top logprobs: token agreement ≥ %.2f) "+
		"and KL mean ≤ %g nats where measured; %s: otherwise",
		schema.VerdictIdentical, IdenticalLogprobMax, IdenticalKLMax,
		schema.VerdictNumerically, Top1AgreementMin, TokenAgreementMin, KLMeanMax,
		schema.VerdictDifferent)
}

// verdict applies Rule to eq's measures; echoMax is the largest |prompt
// token nll difference| (nil without echo).
func verdict(eq schema.Equivalence, echoMax *float64) string {
	le := func(v *float64, limit float64) bool { return v == nil || *v <= limit }
	if *eq.ExactMatch == 1 && le(eq.LogprobDiffMax, IdenticalLogprobMax) &&
		le(echoMax, IdenticalLogprobMax) && le(eq.KLMean, IdenticalKLMax) {
		return schema.VerdictIdentical
	}
	agreeing := *eq.TokenAgreement >= TokenAgreementMin
	if eq.Top1Agreement != nil {
		agreeing = *eq.Top1Agreement >= Top1AgreementMin
	}
	if agreeing && le(eq.KLMean, KLMeanMax) {
		return schema.VerdictNumerically
	}
	return schema.VerdictDifferent
}

// Item is pair p's row of evals.jsonl over its first k tokens (all when
// k ≤ 0): both outputs, the first divergence (-1: none), the mean KL over
// its compared positions, the mean nll difference of its echo (A − B),
// its token agreement as Score and its exact match as Correct. A failed
// pair gives its id and failure only.
func Item(p Pair, k int) schema.EvalItem {
	row := schema.EvalItem{Eval: EvalName, ID: p.ID, Failure: p.Failure}
	if p.Failure != "" {
		return row
	}
	it := measure(p, k)
	row.Output, row.ReferenceOutput = clip(p.A, k).Tokens, clip(p.B, k).Tokens
	row.FirstDivergence = ptr(it.diverge)
	row.Score = it.agreement
	row.Correct = ptr(it.exact)
	if len(it.kl) > 0 {
		row.KL = ptr(paired.Mean(it.kl))
	}
	if len(it.nll) > 0 {
		row.NLLDiff = ptr(paired.Mean(it.nll))
	}
	return row
}

func ptr[T any](v T) *T { return &v }
