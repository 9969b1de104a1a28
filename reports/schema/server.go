package schema

// Common names of the server-side series glmbench reads, whatever server
// exposes them (endpoints/scrape maps each server's own names onto these).
// Counters are cumulative since the server started; gauges are the value
// at the scrape.
const (
	// Counters.
	SrvRequests         = "requests"          // finished requests
	SrvPromptTokens     = "prompt_tokens"     // prompt tokens of finished requests
	SrvGenerationTokens = "generation_tokens" // generated tokens
	SrvPreemptions      = "preemptions"       // retracted / preempted requests
	SrvPrefixQueried    = "prefix_queried"    // prompt tokens looked up in the prefix cache
	SrvPrefixHit        = "prefix_hit"        // of them, found cached
	SrvSpecSteps        = "spec_steps"        // speculative verify steps (drafts), per request
	SrvSpecDrafted      = "spec_drafted"      // draft tokens proposed
	SrvSpecAccepted     = "spec_accepted"     // draft tokens accepted
	SrvRetries          = "retries"           // attempts a router sent again after a retryable answer
	// Gauges.
	SrvRunning      = "running"        // requests running
	SrvQueued       = "queued"         // requests waiting
	SrvKVUsage      = "kv_usage"       // fraction of the KV cache in use, 0..1
	SrvCacheHitRate = "cache_hit_rate" // the server's own prefix cache hit rate, 0..1
	SrvAcceptLength = "accept_length"  // the server's own mean speculative accept length
	// Histograms, in seconds.
	SrvTTFT = "ttft"
	SrvITL  = "itl"
	SrvE2E  = "e2e"
)

// MetricsSample is one scrape of an endpoint's metrics, mapped onto the
// common names: one line of metrics.jsonl.
type MetricsSample struct {
	// T is seconds from the phase's (or sweep point's) start to the scrape.
	T float64 `json:"t"`
	// Unix is the scrape's wall-clock time, Unix seconds.
	Unix  float64 `json:"unix"`
	Phase string  `json:"phase"`
	Point int     `json:"point,omitempty"`
	// When is "before", "during" or "after" the phase.
	When string `json:"when"`
	// Source is which server's series were read: sglang, vllm, llamacpp,
	// tgi, trtllm, sglang-router, smg, dynamo or glmbench (scrape.Servers).
	Source string `json:"source,omitempty"`
	// Values holds counters and gauges by common name; a name the server
	// does not expose is absent.
	Values map[string]float64 `json:"values,omitempty"`
	// Hists holds histograms by common name.
	Hists map[string]Histogram `json:"hists,omitempty"`
	// Error says why the scrape gave nothing (an HTTP status, a parse
	// error, a timeout); the sample then has no values.
	Error string `json:"error,omitempty"`
}

// Histogram is a Prometheus histogram at one scrape: cumulative counts per
// upper bound (le), the +Inf bucket last, with its sum and count.
type Histogram struct {
	LE     []float64 `json:"le"`
	Counts []float64 `json:"counts"`
	Sum    float64   `json:"sum"`
	Count  float64   `json:"count"`
}

// ServerStats is a phase's server-side figures, from the scrapes before,
// during and after it: counter deltas over the phase, gauge extremes and
// means over its scrapes, and histogram quantiles of the deltas. Each
// figure is nil where the server does not expose its series.
type ServerStats struct {
	// Source is which server's series were read; Scrapes how many scrapes
	// answered, Failed how many did not.
	Source  string `json:"source"`
	Scrapes int    `json:"scrapes"`
	Failed  int    `json:"failed,omitempty"`

	Requests         *float64 `json:"requests"`
	PromptTokens     *float64 `json:"prompt_tokens"`
	GenerationTokens *float64 `json:"generation_tokens"`
	Preemptions      *float64 `json:"preemptions"`
	// Retries is the attempts a router in front of the workers sent again
	// after a retryable answer (sgl-router's 408, 429 and 5xx): its
	// client saw one slower answer for each request retried. Absent for a
	// server that does not retry.
	Retries *float64 `json:"retries,omitempty"`

	TTFTP50 *float64 `json:"ttft_p50"`
	TTFTP99 *float64 `json:"ttft_p99"`
	ITLP50  *float64 `json:"itl_p50"`
	ITLP99  *float64 `json:"itl_p99"`
	E2EP50  *float64 `json:"e2e_p50"`
	E2EP99  *float64 `json:"e2e_p99"`
	// QuantileMethod names how the quantiles were read off the buckets.
	QuantileMethod string `json:"quantile_method,omitempty"`

	RunningMax  *float64 `json:"running_max"`
	RunningMean *float64 `json:"running_mean"`
	QueuedMax   *float64 `json:"queued_max"`
	QueuedMean  *float64 `json:"queued_mean"`
	KVUsageMax  *float64 `json:"kv_usage_max"`
	KVUsageMean *float64 `json:"kv_usage_mean"`

	// CacheHitRate is the prefix cache's hits over the phase (from the
	// counter deltas where the server has them, else its gauge's mean).
	CacheHitRate *float64 `json:"cache_hit_rate"`
	// AcceptLength is the mean speculative accept length over the phase
	// (1 + accepted/steps from the deltas, else the gauge's mean); nil
	// without speculative decoding.
	AcceptLength *float64 `json:"accept_length"`
	// Note says what the figures cannot (no metrics endpoint, a counter
	// reset), in words.
	Note string `json:"note,omitempty"`
}
