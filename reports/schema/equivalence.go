package schema

// Verdicts of eval compare: is the endpoint serving the reference's model?
const (
	VerdictIdentical   = "identical"
	VerdictNumerically = "numerically different"
	VerdictDifferent   = "different model"
)

// Equivalence is eval compare's section of a report: the same prompts sent
// at temperature 0 to the endpoint and to a reference, their answers
// compared pair by pair. A measure is nil where it could not be made (one
// side gave no logprobs, say).
type Equivalence struct {
	// Reference names the reference endpoint (its label or redacted URL)
	// and ReferenceModel its model.
	Reference      string `json:"reference"`
	ReferenceModel string `json:"reference_model,omitempty"`
	// Dataset is where the prompts came from; Items how many were compared
	// and Tokens the greedy continuation's length asked (K).
	Dataset string `json:"dataset,omitempty"`
	Items   int    `json:"items"`
	Tokens  int    `json:"tokens"`

	// Greedy continuations: the share of items whose K tokens are the same
	// on both; the mean share of the tokens before the first divergence
	// (of the longer side's, so two sides that stop early on the same
	// tokens agree fully); and the first divergence position's p10/p50/p90
	// over the items that diverged (nil when none did).
	ExactMatch        *float64 `json:"exact_match"`
	TokenAgreement    *float64 `json:"token_agreement"`
	FirstDivergeP10   *float64 `json:"first_divergence_p10,omitempty"`
	FirstDivergeP50   *float64 `json:"first_divergence_p50,omitempty"`
	FirstDivergeP90   *float64 `json:"first_divergence_p90,omitempty"`
	FirstDivergeCount []int    `json:"first_divergence_hist,omitempty"`

	// Top logprobs, over the positions both answered up to the first
	// divergence: top-1 agreement, the chosen token's |logprob difference|
	// (mean and max), and a KL(endpoint ‖ reference) estimate per position
	// (mean, p99) by KLEstimator.
	Top1Agreement   *float64 `json:"top1_agreement"`
	LogprobDiffMean *float64 `json:"logprob_diff_mean"`
	LogprobDiffMax  *float64 `json:"logprob_diff_max"`
	KLMean          *float64 `json:"kl_mean"`
	KLP99           *float64 `json:"kl_p99"`
	KLEstimator     string   `json:"kl_estimator,omitempty"`

	// Prompt logprobs (echo) of the same texts: the mean per-token nll
	// difference (endpoint − reference), and the per-document ppl ratio's
	// mean with its paired bootstrap 95% interval.
	NLLDiffMean *float64 `json:"nll_diff_mean"`
	PPLRatio    *float64 `json:"ppl_ratio"`
	PPLRatioLo  *float64 `json:"ppl_ratio_lo"`
	PPLRatioHi  *float64 `json:"ppl_ratio_hi"`

	// Verdict is one of the Verdict* words, by the rule Rule states.
	Verdict string `json:"verdict"`
	Rule    string `json:"rule"`
	// Failure says why no verdict could be given.
	Failure *EvalFailure `json:"failure,omitempty"`
}

// EvalItem is one line of evals.jsonl: one item of an eval as it was
// scored, so that two reports' evals can be compared item by item; or one
// prompt of eval compare, the two endpoints' answers side by side.
type EvalItem struct {
	Eval string `json:"eval"`
	// ID names the item within its eval, the same in every run of it
	// (MMLU's subject and index, a TriviaQA question id, a document's
	// index), so that runs pair up by it.
	ID         string  `json:"id"`
	Prediction string  `json:"prediction,omitempty"`
	Answer     string  `json:"answer,omitempty"`
	Score      float64 `json:"score"`
	// Correct is set for accuracy evals (McNemar's test pairs them).
	Correct *bool `json:"correct,omitempty"`
	// NLL and Tokens are a perplexity item's summed negative log-likelihood
	// and token count.
	NLL    *float64 `json:"nll,omitempty"`
	Tokens int      `json:"tokens,omitempty"`
	// Logprobs are the logprobs the score used (an answer's, a choice's).
	Logprobs []float64 `json:"logprobs,omitempty"`

	// eval compare's fields: each side's continuation tokens, where they
	// first differ (-1: never), and the item's measures.
	Output          []string `json:"output,omitempty"`
	ReferenceOutput []string `json:"reference_output,omitempty"`
	FirstDivergence *int     `json:"first_divergence,omitempty"`
	KL              *float64 `json:"kl,omitempty"`
	NLLDiff         *float64 `json:"nll_diff,omitempty"`
	Failure         string   `json:"failure,omitempty"`
}
