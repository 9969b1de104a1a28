// Package schema holds the types every part of glmbench shares: the per-request
// record, the error classes, phase/eval/check results and the report itself.
//
// It is the leaf of the project: it imports no other glmbench package, so the
// load runner, the evals, the report writers and outside tools can all agree on
// one shape. The JSON names are a contract (DESIGN.md): fields may be added,
// never renamed.
package schema

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
)

// ReportSchema is the value of Report.Schema for this layout.
const ReportSchema = "glmbench/report/v1"

// PercentileMethod names how every percentile in a report is computed.
const PercentileMethod = "linear interpolation between closest ranks (Hyndman-Fan type 7, NumPy's default), montanaflynn/stats.Percentile"

// Formula is one metric's definition.
type Formula struct{ Metric, Formula string }

// Formulas states what each metric means, for reports to print beside it.
var Formulas = []Formula{
	{"ttft", "first content event − t0 (t0: just before the request is written; a content event has non-empty content, reasoning_content or reasoning)"},
	{"tpot", "(last content event − first content event) / (n − 1), per request with n ≥ 2"},
	{"itl", "every gap between consecutive content events, pooled over completed requests"},
	{"lat", "end of stream ([DONE], or EOF after a finish reason) − t0"},
	{"n", "usage.completion_tokens when it is a sound count; without usage, or with usage that is not (bad_usage), the number of content events (n_source: events)"},
	{"in_tput", "Σ usage.prompt_tokens of completed requests / wall_sec; null when completed requests' usage counted no prompt (a stream without usage: n is then counted from events, a prompt cannot be)"},
	{"out_tput", "Σ n of completed requests / wall_sec"},
	{"wall_sec", "first send of the phase → its last completion"},
	{"error_rate", "errors / batch_size; batch_size = completed + errors + cancelled_at_cap + not_sent"},
	{"tokens_per_event", "Σ n / Σ content events over completed requests"},
	{"percentiles", PercentileMethod},
}

// Class is the reason a request failed; the empty Class means it completed (or
// was never an error: cancelled at the cap, or not sent).
type Class string

// The error classes. Exactly one is given to each failed request.
const (
	// RateLimited is an HTTP 429.
	RateLimited Class = "rate_limited"
	// QueueFull is an HTTP 503 or 529, or a 503 error event inside a 200
	// stream. SGLang answers queue overflow with 503 "The request queue is
	// full."; Anthropic's overloaded_error and Dynamo past its busy
	// threshold are a 529.
	QueueFull Class = "queue_full"
	// HTTP5xx is any other 5xx status.
	HTTP5xx Class = "http_5xx"
	// HTTP4xx is any other 4xx status.
	HTTP4xx Class = "http_4xx"
	// Redirect is a 3xx answer. glmbench never follows one (it would carry
	// the key and headers to wherever the Location points); the record's
	// detail names the Location's origin, so the user can give that URL.
	Redirect Class = "redirect"
	// Connect is a dial or TLS failure, a reset before any response, or a
	// response the client could not read at all (headers past its limit).
	Connect Class = "connect"
	// TTFTTimeout is no content event within the TTFT timeout.
	TTFTTimeout Class = "ttft_timeout"
	// Stalled is a hang: after the first content event, no bytes for the stall timeout.
	Stalled Class = "stalled"
	// TotalTimeout is a request that outlived the request timeout.
	TotalTimeout Class = "total_timeout"
	// StreamError is an error event inside a 200 stream (other than 503), or
	// a 200 stream the endpoint broke: far more content events than
	// max_tokens, an SSE line or a body past the client's bounds, a
	// compressed body the request did not ask for.
	StreamError Class = "stream_error"
	// Truncated is a stream that ended with neither [DONE] nor a finish
	// reason, or broke off (a read error) before any content event.
	Truncated Class = "truncated"
	// Empty is a 200 answer whose body ended cleanly with no content event.
	Empty Class = "empty"
	// Unclassified appears only in imported legacy files whose message fits no class.
	Unclassified Class = "unclassified"
)

// Classes lists every error class in the order reports show them.
var Classes = []Class{
	RateLimited, QueueFull, HTTP5xx, HTTP4xx, Redirect, Connect, TTFTTimeout, Stalled,
	TotalTimeout, StreamError, Truncated, Empty, Unclassified,
}

// Cancel says why a request that was in flight was cut off by the harness itself.
type Cancel string

const (
	// CancelCap is a request in flight when the phase cap expired.
	CancelCap Cancel = "cap"
	// CancelInterrupt is a request in flight when the user interrupted the run.
	CancelInterrupt Cancel = "interrupt"
	// CancelDrain is a sweep request in flight when its point ended: one
	// that started after the window (not measured), or a measured one still
	// running when the drain after the window ran out (unfinished: a miss).
	CancelDrain Cancel = "drain"
)

// The parts of a sweep point's timeline a record started in (Record.Window).
const (
	// WindowWarmup: started before the window; not measured.
	WindowWarmup = "warmup"
	// WindowMeasured: started inside the window; every point metric is
	// computed from these.
	WindowMeasured = "measured"
	// WindowCooldown: started after the window, to keep the load steady
	// while the measured requests end; not measured.
	WindowCooldown = "cooldown"
)

// NSource says where a record's output token count came from.
type NSource string

const (
	// NFromUsage is usage.completion_tokens reported by the endpoint.
	NFromUsage NSource = "usage"
	// NFromEvents is the count of content events, used when no usage came.
	NFromEvents NSource = "events"
)

// Record is one request of a phase, as written to requests.jsonl. Times are
// seconds; t_* and events are measured from t0, the moment just before the
// request was written. Every figure of a phase can be recomputed from these.
type Record struct {
	Phase string `json:"phase"`
	// I is the request's index within the phase. Its prompt's <k:06d> is
	// I plus the requests of the run's earlier phases.
	I int `json:"i"`
	// SendOffset is seconds from the phase start to t0.
	SendOffset float64 `json:"send_offset"`
	// SendLag is seconds between the planned send time and t0: the client's
	// own delay.
	SendLag float64 `json:"send_lag"`
	// QueueWait is seconds a request waited for a slot under
	// --max-concurrency: client-side queueing, not in any latency.
	QueueWait float64 `json:"queue_wait,omitempty"`
	// TFirst is seconds from t0 to the first content event.
	TFirst *float64 `json:"t_first,omitempty"`
	// TLast is seconds from t0 to the last content event.
	TLast *float64 `json:"t_last,omitempty"`
	// TEnd is seconds from t0 to the end of the stream ([DONE], EOF or failure).
	TEnd *float64 `json:"t_end,omitempty"`
	// Events holds seconds from t0 of every content event. A failed request
	// keeps at most the first 2×OUT+32 (a runaway stream's count is in its
	// detail; t_last and n still count them all), so one endpoint that
	// streams without end cannot fill requests.jsonl.
	Events []float64 `json:"events,omitempty"`
	// N is the output token count: usage.completion_tokens, else the number of content events.
	N       int     `json:"n"`
	NSource NSource `json:"n_source,omitempty"`
	// ReasoningTokens is how many of N the endpoint's usage says were
	// reasoning (usage.completion_tokens_details.reasoning_tokens); 0 (left
	// out) when it said nothing, and only beside n_source usage.
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
	// ReasoningEvents counts the content events that carried reasoning
	// text (delta.reasoning_content or delta.reasoning): 0 (left out) when
	// the endpoint streamed none, as those that hide their reasoning do.
	ReasoningEvents int `json:"reasoning_events,omitempty"`
	// ToolCallEvents counts the content events that carried a tool call
	// (a function name or arguments fragment of delta.tool_calls, or of the
	// legacy delta.function_call): 0 (left out) when the model answered in
	// content. They are answer events like content's: t_first, t_last, n
	// from events and TPOT count them alike.
	ToolCallEvents int `json:"tool_call_events,omitempty"`
	// BadUsage, when set, says why the endpoint's usage was not used: a
	// count that is negative, not an integer, absurd (over 1e8, or a
	// completion count past the runaway bound of max_tokens), missing, or
	// zero beside content events. N then counts content events (n_source
	// events) and Prompt is 0 unless its own count was sound.
	BadUsage string `json:"bad_usage,omitempty"`
	// MalformedEvents counts data lines that were not one JSON object in
	// valid UTF-8: skipped, so not content events, but counted here.
	MalformedEvents int    `json:"malformed_events,omitempty"`
	Prompt          int    `json:"prompt_tokens"`
	Finish          string `json:"finish_reason,omitempty"`
	Class           Class  `json:"class,omitempty"`
	Status          int    `json:"status,omitempty"`
	RetryAfter      string `json:"retry_after,omitempty"`
	// ProxyRetries is how many times the proxies in front of the server
	// said they retried the backend before this answer: LiteLLM's
	// x-litellm-attempted-retries, Portkey's x-portkey-retry-attempt-count
	// and Envoy's x-envoy-attempt-count less one, added up.
	// ProxyFallbacks is how many times they fell back to another model or
	// provider: LiteLLM's x-litellm-attempted-fallbacks and Cloudflare AI
	// Gateway's cf-aig-step (0 the primary), added up. Each retry and
	// fallback is inside t_end: the client saw one slow answer. 0 (left
	// out) when the answer said nothing, or nothing that is a count from 0
	// to 1000 (endpoints.ProxyAttempts).
	ProxyRetries   int `json:"proxy_retries,omitempty"`
	ProxyFallbacks int `json:"proxy_fallbacks,omitempty"`
	// ModelAnswered is the model the stream's chunks named where it is not
	// the model asked for nor a dated or tagged version of it
	// (endpoints.SameModel): a proxy's fallback (OpenRouter names one only
	// there), or a name the server serves the model under (an Azure
	// deployment, a LiteLLM alias, llama.cpp's own name; vLLM answers the
	// name asked, a LoRA adapter's own). Left out otherwise.
	ModelAnswered string `json:"model_answered,omitempty"`
	// Body is the first 200 bytes of the response body (or of the error
	// event) on failure, with every secret of the endpoint redacted first.
	Body string `json:"body,omitempty"`
	// Detail is the harness's own one-line account of a failure (a Go error, a timeout).
	Detail string `json:"detail,omitempty"`
	// Cancelled is set when the harness cut the request off (cap or interrupt).
	Cancelled Cancel `json:"cancelled,omitempty"`
	// NotSent is set for a request the phase ended before sending.
	NotSent bool `json:"not_sent,omitempty"`
	// Point is the sweep point (1, 2, …) the request belongs to; 0 (left
	// out) for a run phase's request.
	Point int `json:"point,omitempty"`
	// Window says where in its point's timeline a sweep request started:
	// WindowWarmup, WindowMeasured or WindowCooldown.
	Window string `json:"window,omitempty"`

	// CachedTokens is usage.prompt_tokens_details.cached_tokens (or the
	// server's own spelling of it, see endpoints.Chunk.Cached): the part of
	// the prompt the server served from its prefix cache. Nil when the
	// server's usage said nothing about caching, which is not 0.
	CachedTokens *int `json:"cached_tokens,omitempty"`

	// Workload fields (run --workload); absent for the fixed phases.
	//
	// TargetPrompt is the usage.prompt_tokens the workload asked for; nil
	// for a data set's literal prompt, whose length is what it is.
	TargetPrompt *int `json:"target_prompt_tokens,omitempty"`
	// MaxTokens is the request's max_tokens when requests of the phase
	// differ in it (Short and Long compare n with it, not the phase's OUT).
	MaxTokens int `json:"max_tokens,omitempty"`
	// ExpectedCached is the prompt tokens the workload built to be a prefix
	// an earlier request of the phase sent (a group's system prompt, a
	// session's history): what a prefix cache could serve. Nil when the
	// workload does not say (a data set).
	ExpectedCached *int `json:"expected_cached_tokens,omitempty"`
	// Group is the 1-based shared-prefix group; Session and Turn the 1-based
	// multi-turn session and turn. 0 (left out) when none.
	Group   int `json:"group,omitempty"`
	Session int `json:"session,omitempty"`
	Turn    int `json:"turn,omitempty"`

	// Agent names the glmbench agent that sent the request in a
	// distributed run (run --agents); empty for a run from one host.
	Agent string `json:"agent,omitempty"`
}

// Completed reports whether the record counts as a completed request.
func (r *Record) Completed() bool {
	return r.Class == "" && r.Cancelled == "" && !r.NotSent
}

// TPOT is the request's time per output token in seconds, as DESIGN.md
// defines it: (last content event − first content event) / (v − 1), where v
// is the tokens those events span. v is n, but for an endpoint that hides
// its reasoning: one whose usage counts R > 0 reasoning tokens
// (ReasoningTokens) of which it streamed none (ReasoningEvents 0), as
// OpenAI's reasoning models (o-series, gpt-5) do. All R come before the
// first visible token, so the events span n − R tokens, and dividing
// their time by n − 1 would count the hidden tokens as if they had been
// streamed. An endpoint that streams its reasoning and counts it (vLLM,
// LightLLM) keeps v = n: those tokens are events. ok is false when it has
// no value: no content event, v < 2, or no time between the first and
// last content event, where one event carried every token (a gateway that
// sends the answer at once, a tool call sent whole): the client saw no
// time per token, and 0 would read as the fastest stream of all.
func (r *Record) TPOT() (tpot float64, ok bool) {
	v := r.N
	if r.ReasoningTokens > 0 && r.ReasoningEvents == 0 {
		v -= r.ReasoningTokens
	}
	if r.TFirst == nil || r.TLast == nil || v < 2 || *r.TLast <= *r.TFirst {
		return 0, false
	}
	return (*r.TLast - *r.TFirst) / float64(v-1), true
}

// PhaseResult is one phase of a report. The first fifteen fields are exactly
// those of the older harness's rows (same names and units). Times are seconds,
// rates tokens per second. A metric over an empty sample is null, never NaN.
//
// Distribution fields are named <metric>_<stat>: lat (latency), ttft, tpot and
// itl, each with mean, med (p50), p90, p99 and p999 (p99.9).
type PhaseResult struct {
	Phase      string         `json:"phase"`
	BatchSize  int            `json:"batch_size"`
	InputLen   int            `json:"input_len"`
	OutputLen  int            `json:"output_len"`
	Completed  int            `json:"completed"`
	Errors     int            `json:"errors"`
	WallSec    float64        `json:"wall_sec"`
	LatMed     *float64       `json:"lat_med"`
	LatP99     *float64       `json:"lat_p99"`
	TTFTMed    *float64       `json:"ttft_med"`
	TTFTP99    *float64       `json:"ttft_p99"`
	TPOTMed    *float64       `json:"tpot_med"`
	InTput     *float64       `json:"in_tput"`
	OutTput    float64        `json:"out_tput"`
	ErrorKinds map[string]int `json:"error_kinds"`

	ByClass   map[Class]int `json:"errors_by_class"`
	ErrorRate float64       `json:"error_rate"`
	Status    string        `json:"status"`
	// Cancelled counts requests in flight when the phase was cut off: by its
	// cap, or (status interrupted) by the user.
	Cancelled int `json:"cancelled_at_cap"`
	NotSent   int `json:"not_sent"`
	// Short counts completed requests with fewer output tokens than asked.
	Short int `json:"short_output"`
	// Long counts completed requests with more output tokens than asked: a
	// server that does not honour max_tokens, or a reasoning model whose
	// provider counts its thinking in completion_tokens but not in
	// max_tokens. Not an error; out_tput counts what was served.
	Long int `json:"long_output"`
	// ProxyRetried counts completed requests whose answer said a proxy had
	// retried the backend (proxy_retries > 0): their latency and TTFT
	// include the failed attempts and the proxy's waits. ProxyFallback
	// counts completed requests a proxy answered from a fallback
	// (proxy_fallbacks > 0): another model or provider than the one asked
	// for served them. Not errors; 0 (left out) when no answer said so.
	ProxyRetried  int `json:"proxy_retried,omitempty"`
	ProxyFallback int `json:"proxy_fallback,omitempty"`
	// OtherModel counts completed requests whose stream named another
	// model than the one asked for (model_answered). Not an error; 0 (left
	// out) when none did.
	OtherModel int `json:"other_model,omitempty"`
	// Buffered counts completed requests whose content events arrived in
	// blocks, not one by one (summary.Buffered: 16 events or more, the
	// last 100 ms or more after t0, at least half of the reads that
	// delivered them 8 events or more each): something between glmbench
	// and the server buffers the stream (nginx's proxy_buffering on), so
	// their TTFT is the time to fill its buffer and their ITL mostly 0.
	// 0 (left out) when none did.
	Buffered int `json:"buffered,omitempty"`

	LatMean  *float64 `json:"lat_mean"`
	LatP90   *float64 `json:"lat_p90"`
	LatP999  *float64 `json:"lat_p999"`
	TTFTMean *float64 `json:"ttft_mean"`
	TTFTP90  *float64 `json:"ttft_p90"`
	TTFTP999 *float64 `json:"ttft_p999"`
	TPOTMean *float64 `json:"tpot_mean"`
	TPOTP90  *float64 `json:"tpot_p90"`
	TPOTP99  *float64 `json:"tpot_p99"`
	TPOTP999 *float64 `json:"tpot_p999"`
	ITLMean  *float64 `json:"itl_mean"`
	ITLMed   *float64 `json:"itl_med"`
	ITLP90   *float64 `json:"itl_p90"`
	ITLP99   *float64 `json:"itl_p99"`
	ITLP999  *float64 `json:"itl_p999"`

	// TokensPerEvent is output tokens per content event over completed
	// requests: above 1 when a server packs several tokens into one event.
	TokensPerEvent *float64 `json:"tokens_per_event"`
	// NSources counts completed requests by where their n came from.
	NSources map[NSource]int `json:"n_sources"`
	// CalibratedInputLen is the usage.prompt_tokens the calibration probe got
	// for the filler every request uses; null when the endpoint gave no usage.
	CalibratedInputLen *int `json:"calibrated_input_len"`
	// PromptTokensMean is the mean usage.prompt_tokens of completed requests.
	PromptTokensMean *float64 `json:"prompt_tokens_mean"`
	// CancelledOutTokens counts content events streamed by requests cancelled
	// at the cap: work the server did that out_tput does not include.
	CancelledOutTokens int `json:"cancelled_out_tokens"`
	// MaxSendLag is the largest lag in seconds between a planned and an actual send.
	MaxSendLag float64 `json:"max_send_lag_sec"`
	// MalformedEvents sums the records' malformed_events (data lines that
	// were not JSON or not UTF-8, skipped) over every sent request.
	MalformedEvents int `json:"malformed_events"`
	// MalformedRequests counts the sent requests with any malformed event.
	MalformedRequests int `json:"malformed_requests"`
	// BadUsage counts sent requests whose usage was not used (bad_usage).
	BadUsage int `json:"bad_usage"`
	// Concurrency and RequestRate echo the phase's arrival (0: unlimited, burst).
	Concurrency int     `json:"max_concurrency,omitempty"`
	RequestRate float64 `json:"request_rate,omitempty"`

	// SLO figures, present only when SLOs were given (run --slo, sweep).
	// SLOMet counts the requests that completed and met every per-request
	// SLO; a failed, cancelled, unfinished or unsent request is a miss.
	SLOMet *int `json:"slo_met,omitempty"`
	// Goodput is SLOMet per second of wall_sec (a sweep point: of its window).
	Goodput *float64 `json:"goodput,omitempty"`
	// SLOAttainment is SLOMet / the requests the phase sent or meant to send
	// (batch_size; a sweep point: the requests started in its window).
	SLOAttainment *float64 `json:"slo_attainment,omitempty"`

	// Workload is the workload kind the phase ran (run --workload): fixed,
	// random, dataset, shared-prefix, multi-turn or trace; empty for the
	// built-in and --phase phases.
	Workload string `json:"workload,omitempty"`
	// Cache is the prefix cache's account of the phase, from the records'
	// cached_tokens; nil in reports written before it existed.
	Cache *CacheStats `json:"cache,omitempty"`
	// PromptDrift is how far the prompts' usage.prompt_tokens fell from the
	// workload's targets; nil when no completed record has a target.
	PromptDrift *Drift `json:"prompt_drift,omitempty"`
	// Server is the server's own account of the phase, from its metrics
	// (run --metrics-url); nil when none was scraped.
	Server *ServerStats `json:"server,omitempty"`
	// Agents is each agent's account of a distributed phase (run
	// --agents): its clock offset, start skew and share; nil from one host.
	Agents []AgentStats `json:"agents,omitempty"`
}

// AgentStats is one agent's part in a distributed phase.
type AgentStats struct {
	// Name is the agent's address (or its pod's name); Index its place,
	// owning request i when i mod Count equals it.
	Name  string `json:"name"`
	Index int    `json:"index"`
	Count int    `json:"count"`
	// OffsetMs is the agent's clock minus the coordinator's, from the
	// minimum-RTT ping, and UncertaintyMs half that RTT.
	OffsetMs      float64 `json:"offset_ms"`
	UncertaintyMs float64 `json:"uncertainty_ms"`
	// StartSkewMs is how late the agent began the phase after the start
	// time broadcast, on the coordinator's clock.
	StartSkewMs float64 `json:"start_skew_ms"`
	// Requests are the phase's requests the agent owned; Records those it
	// sent back.
	Requests int `json:"requests"`
	Records  int `json:"records"`
	// MaxConcurrency is its share of --max-concurrency (0: none).
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// Saturated is the agent's own client_saturated.
	Saturated bool `json:"client_saturated"`
	// Lost says why the agent's records did not all come back (it died,
	// was unreachable): its missing requests are not_sent or cancelled.
	Lost string `json:"lost,omitempty"`
}

// CacheStats is a phase's prefix-cache figures over its completed requests.
type CacheStats struct {
	// Reported counts the completed requests with a prompt count whose
	// usage carried a cached token count; Requests all completed requests
	// with a prompt count.
	Reported int `json:"reported"`
	Requests int `json:"requests"`
	// PromptTokens sums usage.prompt_tokens over the completed requests.
	// When only some reported cached tokens, the others count as 0 cached
	// (SGLang leaves prompt_tokens_details out on a miss) and Note says so.
	PromptTokens int `json:"prompt_tokens"`
	// CachedTokens sums their cached tokens; nil when the server reported
	// none, which is not a hit rate of 0.
	CachedTokens *int `json:"cached_tokens"`
	// HitRate is CachedTokens / PromptTokens; nil when not reported.
	HitRate *float64 `json:"hit_rate"`
	// ExpectedHitRate is the records' expected_cached_tokens over their
	// prompt tokens: what the workload was built to let a cache serve; nil
	// when the workload does not say.
	ExpectedHitRate *float64 `json:"expected_hit_rate"`
	// Hits and Misses count the reporting requests with at least 10% of
	// their prompt cached and the others (summary.IsHit: a few template
	// tokens every request shares are not a hit); the TTFT figures are over
	// each (nil for an empty side).
	Hits        int      `json:"hits"`
	Misses      int      `json:"misses"`
	TTFTMedHit  *float64 `json:"ttft_med_hit"`
	TTFTP99Hit  *float64 `json:"ttft_p99_hit"`
	TTFTMedMiss *float64 `json:"ttft_med_miss"`
	TTFTP99Miss *float64 `json:"ttft_p99_miss"`
	// Note says in words what the figures cannot: "the server reports no
	// cached tokens", or that only some requests reported them.
	Note string `json:"note,omitempty"`
}

// Drift is the distribution of usage.prompt_tokens − target_prompt_tokens
// over the completed requests that have both.
type Drift struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	// AbsP99 is the p99 of |actual − target|; Tolerance the calibration's
	// max(4, 1%) of the mean target, for comparison.
	AbsP99    float64 `json:"abs_p99"`
	Tolerance int     `json:"tolerance"`
}

// Phase statuses.
const (
	StatusComplete    = "complete"
	StatusCapped      = "capped"
	StatusInterrupted = "interrupted"
	// StatusDegraded marks a distributed phase one of whose agents was
	// lost: the figures are over the requests that came back.
	StatusDegraded = "degraded"
)

// EvalResult is one quality eval of a report.
type EvalResult struct {
	Name    string             `json:"name"`
	Status  string             `json:"status"`
	Method  string             `json:"method,omitempty"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
	N       int                `json:"n"`
	Failure *EvalFailure       `json:"failure,omitempty"`
	// Dataset is where the items came from: a path, or "embedded sample".
	Dataset string `json:"dataset,omitempty"`
}

// SubjectMetricPrefix starts the name of an eval's per-subject accuracy
// (mmlu's acc_subject_<subject>). There is one per subject, 57 for MMLU:
// too many for a one-line summary, so renderers list them apart.
const SubjectMetricPrefix = "acc_subject_"

// EvalFailure says why an eval gave no score.
type EvalFailure struct {
	Kind       string         `json:"kind"`
	HTTPStatus int            `json:"http_status,omitempty"`
	Body       string         `json:"body,omitempty"`
	Request    map[string]any `json:"request,omitempty"`
	Detail     string         `json:"detail,omitempty"`
}

// Short names the failure in a few words: its kind, then "(HTTP n)" when
// an HTTP status came with it, as tables and one-line summaries show it.
func (f *EvalFailure) Short() string {
	if f.HTTPStatus == 0 {
		return f.Kind
	}
	return f.Kind + " (HTTP " + strconv.Itoa(f.HTTPStatus) + ")"
}

// CheckResult is one conformance check of a report.
type CheckResult struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// Tool names the program that wrote a report.
type Tool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Options echoes how a run was configured.
type Options struct {
	Phases string `json:"phases"`
	// API is the route every load request went to: "chat"
	// (/chat/completions) or "completions" (/completions, the prompt sent
	// with no chat template). A report written before the field existed
	// has "" here: a chat run.
	API       string `json:"api"`
	IgnoreEOS bool   `json:"ignore_eos"`
	// NoStreamUsage is set when streamed requests carried no
	// stream_options (--stream-usage=false), so n came from usage only
	// where the server sent it anyway.
	NoStreamUsage bool `json:"no_stream_usage,omitempty"`
	// MaxCompletionTokens is set when chat requests carried their cap as
	// max_completion_tokens (--max-completion-tokens) instead of max_tokens.
	MaxCompletionTokens bool `json:"max_completion_tokens,omitempty"`
	// ExtraBody is --extra-body: the JSON object of fields every load
	// request's body carried besides glmbench's own, its fields in name
	// order.
	ExtraBody      json.RawMessage    `json:"extra_body,omitempty"`
	Timeouts       map[string]float64 `json:"timeouts"`
	Arrival        string             `json:"arrival"`
	RequestRate    float64            `json:"request_rate,omitempty"`
	MaxConcurrency int                `json:"max_concurrency,omitempty"`
	Seed           int64              `json:"seed,omitempty"`
	Percentiles    string             `json:"percentile_method,omitempty"`
	// SLOs are run's --slo objectives, in canonical form.
	SLOs []string `json:"slos,omitempty"`
	// Workload is run --workload's file ("embedded NAME" for a built-in
	// example), and Dataset --dataset's path, when given.
	Workload string `json:"workload,omitempty"`
	Dataset  string `json:"dataset,omitempty"`
	// Profile is set when run --profile had the server's own profiler
	// (POST /start_profile, /stop_profile) running around the phases.
	Profile bool `json:"profile,omitempty"`
}

// APIName is the route the load went to in a word: "completions", or
// "chat" for a chat run, a report written before API existed, or any other
// value (glmbench writes no other). Every reader of API goes through it.
func (o *Options) APIName() string {
	if o.API == "completions" {
		return o.API
	}
	return "chat"
}

// Extra is ExtraBody in one canonical line ("" for none, null or {}):
// compact, every object's fields in name order, escapes written one way,
// numbers with their digits, as --extra-body's parser writes it.
// report.json writes it indented, and a report written by hand or by
// another tool may order it otherwise, so every reader of ExtraBody goes
// through it and one object reads as one text.
func (o *Options) Extra() string {
	if len(o.ExtraBody) == 0 {
		return ""
	}
	d := json.NewDecoder(bytes.NewReader(o.ExtraBody))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		var b bytes.Buffer
		if json.Compact(&b, o.ExtraBody) != nil {
			return string(o.ExtraBody)
		}
		return b.String()
	}
	if m, ok := v.(map[string]any); v == nil || ok && len(m) == 0 {
		return ""
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false) // a stop string's <|user|> as given
	if e.Encode(v) != nil {
		return string(o.ExtraBody)
	}
	return string(bytes.TrimSpace(b.Bytes()))
}

// Endpoint describes what was measured. Headers are recorded by name only.
// Insecure and CACert say how an https endpoint's certificate was verified,
// ClientCert which certificate glmbench showed it.
type Endpoint struct {
	BaseURL    string         `json:"base_url"`
	Model      string         `json:"model"`
	Builtin    bool           `json:"builtin"`
	Headers    []string       `json:"headers"`
	ServerInfo map[string]any `json:"server_info,omitempty"`
	// Insecure is true when the certificate was not verified (--insecure).
	Insecure bool `json:"insecure,omitempty"`
	// CACert is the path of the PEM bundle trusted beside the system's
	// roots (--ca-cert, or an endpoints file's ca_cert), "" for none.
	CACert string `json:"ca_cert,omitempty"`
	// ClientCert is the path of the client certificate sent to an
	// endpoint that asks for one (mTLS: --client-cert), "" for none.
	ClientCert string `json:"client_cert,omitempty"`
}

// Client is the harness's account of its own load during the run.
type Client struct {
	// CPUSeconds is user+system CPU time of the glmbench process during the phases.
	CPUSeconds float64 `json:"cpu_seconds"`
	// MaxSendLag is the largest lag in seconds between a planned and an actual send.
	MaxSendLag float64 `json:"max_send_lag_sec"`
	// Saturated is true when MaxSendLag exceeded SaturationLag: the client,
	// not only the server, may have shaped the figures.
	Saturated bool `json:"client_saturated"`
}

// SaturationLag is the send lag past which the client counts as saturated
// (Client.Saturated; a sweep point's, by the p99 of its lags). It lives in
// the leaf so that the runner and a report re-made from requests.jsonl
// judge by the same bound.
const SaturationLag = 10 * time.Millisecond

// Report is report.json.
type Report struct {
	Schema      string        `json:"schema"`
	Tool        Tool          `json:"tool"`
	Label       string        `json:"label"`
	StartedAt   time.Time     `json:"started_at"`
	FinishedAt  time.Time     `json:"finished_at"`
	Nonce       string        `json:"nonce,omitempty"`
	Options     Options       `json:"options"`
	Endpoint    Endpoint      `json:"endpoint"`
	Client      Client        `json:"client"`
	Interrupted bool          `json:"interrupted,omitempty"`
	Phases      []PhaseResult `json:"phases"`
	Evals       []EvalResult  `json:"evals,omitempty"`
	Conformance []CheckResult `json:"conformance,omitempty"`
	Sweeps      []SweepResult `json:"sweeps,omitempty"`
	// Equivalence is eval compare's verdict: is the endpoint serving the
	// reference's model?
	Equivalence *Equivalence `json:"equivalence,omitempty"`
}
