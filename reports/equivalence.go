package reports

import (
	"fmt"
	"strings"

	"github.com/glmbench/glmbench/reports/schema"
)

// equivalenceTable renders eval compare's section: the verdict and its
// rule, then every measure beside what it means, "not measured" where a
// side gave nothing to measure it by.
func (p *printer) equivalenceTable(r *schema.Report) {
	eq := r.Equivalence
	if eq == nil {
		return
	}
	p.f("\n## Equivalence\n\n")
	p.f("Is the endpoint serving the reference's model? The same prompts at temperature 0 to both, compared pair by pair.\n\n")
	p.f("- reference: %s, model `%s`\n", eq.Reference, eq.ReferenceModel)
	p.f("- prompts: %d from %s, greedy continuations of %d tokens\n", eq.Items, eq.Dataset, eq.Tokens)
	if eq.Verdict != "" {
		p.f("- **verdict: %s**\n", eq.Verdict)
	} else {
		detail := ""
		if eq.Failure != nil {
			detail = ": " + eq.Failure.Detail
		}
		p.f("- **no verdict**%s\n", detail)
	}
	if eq.Rule != "" {
		p.f("- rule: %s\n", eq.Rule)
	}
	p.f("\n")
	p.table([]string{"measure", "value", "what it is"}, func(add func(...string)) {
		add("exact match", pctOf(eq.ExactMatch), "share of prompts whose continuations are the same tokens")
		add("token agreement", pctOf(eq.TokenAgreement), "mean share of the tokens before the first divergence")
		add("first divergence p10 / p50 / p90", fmt.Sprintf("%s / %s / %s", opt(eq.FirstDivergeP10, 1, 1), opt(eq.FirstDivergeP50, 1, 1), opt(eq.FirstDivergeP90, 1, 1)), "token position, over the prompts that diverged")
		add("top-1 agreement", pctOf(eq.Top1Agreement), "share of positions whose most likely token is the same")
		add("|Δ logprob| mean / max", fmt.Sprintf("%s / %s", sci(eq.LogprobDiffMean), sci(eq.LogprobDiffMax)), "the chosen token's logprob, endpoint − reference")
		add("KL mean / p99", fmt.Sprintf("%s / %s", sci(eq.KLMean), sci(eq.KLP99)), "KL(endpoint ‖ reference) per position, nats: "+orDash(eq.KLEstimator))
		add("nll difference", sci(eq.NLLDiffMean), "mean per-token nll of the same text by echo, endpoint − reference")
		add("ppl ratio [95% CI]", fmt.Sprintf("%s [%s, %s]", opt(eq.PPLRatio, 1, 4), opt(eq.PPLRatioLo, 1, 4), opt(eq.PPLRatioHi, 1, 4)), "per-document perplexity, endpoint / reference, paired bootstrap")
	})
}

// pctOf writes a share as a percentage, "not measured" for nil.
func pctOf(v *float64) string {
	if v == nil {
		return "not measured"
	}
	return pct(*v)
}

func sci(v *float64) string {
	if v == nil {
		return "not measured"
	}
	return strings.Replace(fmt.Sprintf("%.3g", *v), "e-0", "e-", 1)
}
