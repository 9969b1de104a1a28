package scrape

import "github.com/glmbench/glmbench/reports/schema"

// Kind is how a series is read off its metric family.
type Kind string

const (
	// Counter and Gauge read the sample's value (an untyped sample of the
	// same name is read alike: a server that omits TYPE lines).
	Counter Kind = "counter"
	Gauge   Kind = "gauge"
	// Histogram reads the buckets, merged by upper bound across label sets.
	Histogram Kind = "histogram"
	// HistogramSum reads a histogram's (or summary's) sum as a counter: TGI
	// counts tokens only as histograms of tokens per request.
	HistogramSum Kind = "histogram_sum"
)

// Server prefixes: the Source of a sample is the server whose prefix its
// families carry.
const (
	SGLang   = "sglang"
	VLLM     = "vllm"
	LlamaCpp = "llamacpp"
	TGI      = "tgi"
	Glmbench = "glmbench"
)

// Servers lists the servers the table knows, each with the prefix of its
// series' names, in the order a tie between them is broken.
var Servers = []struct{ Name, Prefix string }{
	{Glmbench, "glmbench:"},
	{SGLang, "sglang:"},
	{VLLM, "vllm:"},
	{LlamaCpp, "llamacpp:"},
	{TGI, "tgi_"},
}

// Series is one row of the table: a server's series and the common name
// (reports/schema's Srv*) it is read as.
//
// Rows of one server with the same common name are alternatives, newest
// name first: the first whose family the scrape has is read and the rest
// are not, so a server that exposes a deprecated name beside its new one
// (vLLM's time_per_output_token_seconds beside inter_token_latency_seconds)
// is not counted twice.
type Series struct {
	Server string
	// Name is the family's name as the exposition writes it: a counter's
	// with its _total (the text format's TYPE line names it so, and expfmt
	// names an OpenMetrics counter family so).
	Name   string
	Kind   Kind
	Common string
	// Plus names a series of the same kind added to this one where the
	// scrape has it (llama.cpp counts cached prompt tokens apart).
	Plus string
	// Per names a gauge this one is divided by (tokens in use over the
	// pool's tokens, a fraction); the row is skipped where that is absent
	// or zero.
	Per string
	// Mean averages across label sets where the rest are summed: a
	// fraction per engine (vLLM's engine label, SGLang's dp_rank) is not
	// a sum.
	Mean bool
	// Doc is where the name is documented (source or docs page).
	Doc string
	// Note says what a reader must know: a unit, a version, a caveat.
	Note string
}

// Where each server's names are documented.
const (
	docSGLang   = "https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/metrics/collector.py"
	docVLLM     = "https://docs.vllm.ai/en/stable/usage/metrics/ (vllm/v1/metrics/loggers.py)"
	docVLLMSpec = "https://github.com/vllm-project/vllm/blob/main/vllm/v1/spec_decode/metrics.py"
	docVLLMOld  = "https://github.com/vllm-project/vllm/blob/main/docs/design/metrics.md (deprecated names)"
	docLlama    = "https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md (--metrics; tools/server/server-context.cpp)"
	docTGI      = "https://huggingface.co/docs/text-generation-inference/reference/metrics"
	docEngine   = "engine/server/metrics.go"
)

// Table is every known series, by server. SGLang's rows are repeated
// under glmbench: (the built-in engine writes SGLang's names under its own
// prefix), with the engine's own names after them.
var Table = append(sglangRows(SGLang, "sglang:", docSGLang), append(sglangRows(Glmbench, "glmbench:", docEngine), []Series{
	// The engine's names that SGLang lacks: its retraction counter before
	// it took SGLang's name, and the prefix-cache and speculative counters
	// under vLLM's names (which llama.cpp shares for the latter).
	{Glmbench, "glmbench:num_retractions_total", Counter, schema.SrvPreemptions, "", "", false, docEngine, "the engine's name before SGLang's"},
	{Glmbench, "glmbench:spec_decode_num_drafts_total", Counter, schema.SrvSpecSteps, "", "", false, docEngine, "verify steps"},
	{Glmbench, "glmbench:spec_decode_num_draft_tokens_total", Counter, schema.SrvSpecDrafted, "", "", false, docEngine, ""},
	{Glmbench, "glmbench:spec_decode_num_accepted_tokens_total", Counter, schema.SrvSpecAccepted, "", "", false, docEngine, ""},

	{VLLM, "vllm:num_requests_running", Gauge, schema.SrvRunning, "", "", false, docVLLM, ""},
	{VLLM, "vllm:num_requests_waiting", Gauge, schema.SrvQueued, "", "", false, docVLLM, ""},
	{VLLM, "vllm:kv_cache_usage_perc", Gauge, schema.SrvKVUsage, "", "", true, docVLLM, "a fraction 0..1 despite the name"},
	{VLLM, "vllm:gpu_cache_usage_perc", Gauge, schema.SrvKVUsage, "", "", true, docVLLMOld, "the name before kv_cache_usage_perc (v0 and early v1); a fraction"},
	{VLLM, "vllm:gpu_prefix_cache_hit_rate", Gauge, schema.SrvCacheHitRate, "", "", true, docVLLMOld, "v0 only; v1 has the counters below"},
	{VLLM, "vllm:prefix_cache_queries_total", Counter, schema.SrvPrefixQueried, "", "", false, docVLLM, "tokens looked up"},
	{VLLM, "vllm:gpu_prefix_cache_queries_total", Counter, schema.SrvPrefixQueried, "", "", false, docVLLMOld, "the name before 0.9.2"},
	{VLLM, "vllm:prefix_cache_hits_total", Counter, schema.SrvPrefixHit, "", "", false, docVLLM, ""},
	{VLLM, "vllm:gpu_prefix_cache_hits_total", Counter, schema.SrvPrefixHit, "", "", false, docVLLMOld, "the name before 0.9.2"},
	{VLLM, "vllm:prompt_tokens_total", Counter, schema.SrvPromptTokens, "", "", false, docVLLM, ""},
	{VLLM, "vllm:generation_tokens_total", Counter, schema.SrvGenerationTokens, "", "", false, docVLLM, ""},
	{VLLM, "vllm:request_success_total", Counter, schema.SrvRequests, "", "", false, docVLLM, "summed over finished_reason"},
	{VLLM, "vllm:num_preemptions_total", Counter, schema.SrvPreemptions, "", "", false, docVLLM, ""},
	{VLLM, "vllm:spec_decode_num_drafts_total", Counter, schema.SrvSpecSteps, "", "", false, docVLLMSpec, "accept length = 1 + accepted / drafts"},
	{VLLM, "vllm:spec_decode_num_draft_tokens_total", Counter, schema.SrvSpecDrafted, "", "", false, docVLLMSpec, ""},
	{VLLM, "vllm:spec_decode_num_accepted_tokens_total", Counter, schema.SrvSpecAccepted, "", "", false, docVLLMSpec, ""},
	{VLLM, "vllm:time_to_first_token_seconds", Histogram, schema.SrvTTFT, "", "", false, docVLLM, ""},
	{VLLM, "vllm:inter_token_latency_seconds", Histogram, schema.SrvITL, "", "", false, docVLLM, "one observation per token gap"},
	{VLLM, "vllm:time_per_output_token_seconds", Histogram, schema.SrvITL, "", "", false, docVLLMOld, "the name before inter_token_latency_seconds, the same per-gap observations; not request_time_per_output_token_seconds, one mean per request"},
	{VLLM, "vllm:e2e_request_latency_seconds", Histogram, schema.SrvE2E, "", "", false, docVLLM, ""},

	{LlamaCpp, "llamacpp:requests_processing", Gauge, schema.SrvRunning, "", "", false, docLlama, "busy slots"},
	{LlamaCpp, "llamacpp:requests_deferred", Gauge, schema.SrvQueued, "", "", false, docLlama, ""},
	{LlamaCpp, "llamacpp:kv_cache_usage_ratio", Gauge, schema.SrvKVUsage, "", "", true, docLlama, "older builds only; a fraction"},
	{LlamaCpp, "llamacpp:prompt_tokens_total", Counter, schema.SrvPromptTokens, "llamacpp:prompt_tokens_cached_total", "", false, docLlama, "evaluated prompt tokens, plus the cached ones where the build counts them apart"},
	{LlamaCpp, "llamacpp:prompt_tokens_total", Counter, schema.SrvPrefixQueried, "llamacpp:prompt_tokens_cached_total", "", false, docLlama, "as prompt_tokens"},
	{LlamaCpp, "llamacpp:prompt_tokens_cached_total", Counter, schema.SrvPrefixHit, "", "", false, docLlama, "newer builds"},
	{LlamaCpp, "llamacpp:tokens_predicted_total", Counter, schema.SrvGenerationTokens, "", "", false, docLlama, ""},
	{LlamaCpp, "llamacpp:spec_decode_num_drafts_total", Counter, schema.SrvSpecSteps, "", "", false, docLlama, "verify steps"},
	{LlamaCpp, "llamacpp:spec_decode_num_draft_tokens_total", Counter, schema.SrvSpecDrafted, "", "", false, docLlama, ""},
	{LlamaCpp, "llamacpp:tokens_drafted_total", Counter, schema.SrvSpecDrafted, "", "", false, docLlama, "the older name"},
	{LlamaCpp, "llamacpp:spec_decode_num_accepted_tokens_total", Counter, schema.SrvSpecAccepted, "", "", false, docLlama, ""},
	{LlamaCpp, "llamacpp:tokens_drafted_accepted_total", Counter, schema.SrvSpecAccepted, "", "", false, docLlama, "the older name"},

	{TGI, "tgi_batch_current_size", Gauge, schema.SrvRunning, "", "", false, docTGI, ""},
	{TGI, "tgi_queue_size", Gauge, schema.SrvQueued, "", "", false, docTGI, ""},
	{TGI, "tgi_request_success", Counter, schema.SrvRequests, "", "", false, docTGI, "the Rust exporter writes counters without _total"},
	{TGI, "tgi_request_input_length", HistogramSum, schema.SrvPromptTokens, "", "", false, docTGI, "the sum of a histogram of tokens per request"},
	{TGI, "tgi_request_generated_tokens", HistogramSum, schema.SrvGenerationTokens, "", "", false, docTGI, "the sum of a histogram of tokens per request"},
	{TGI, "tgi_request_mean_time_per_token_duration", Histogram, schema.SrvITL, "", "", false, docTGI, "one mean per request, not one observation per gap: its quantiles are of requests"},
	{TGI, "tgi_request_duration", Histogram, schema.SrvE2E, "", "", false, docTGI, ""},
}...)...)

// sglangRows are SGLang's series under prefix p, for server.
func sglangRows(server, p, doc string) []Series {
	return []Series{
		{server, p + "num_running_reqs", Gauge, schema.SrvRunning, "", "", false, doc, ""},
		{server, p + "num_queue_reqs", Gauge, schema.SrvQueued, "", "", false, doc, ""},
		{server, p + "token_usage", Gauge, schema.SrvKVUsage, "", "", true, doc, "a fraction of the KV pool"},
		{server, p + "num_used_tokens", Gauge, schema.SrvKVUsage, "", p + "max_total_num_tokens", true, doc, "tokens over the pool's, where token_usage is absent"},
		{server, p + "cache_hit_rate", Gauge, schema.SrvCacheHitRate, "", "", true, doc, "a fraction"},
		{server, p + "prompt_tokens_total", Counter, schema.SrvPromptTokens, "", "", false, doc, ""},
		{server, p + "prompt_tokens_total", Counter, schema.SrvPrefixQueried, "", "", false, doc, "every prompt token is looked up in the radix cache"},
		{server, p + "cached_tokens_total", Counter, schema.SrvPrefixHit, "", "", false, doc, "prompt tokens found cached"},
		{server, p + "generation_tokens_total", Counter, schema.SrvGenerationTokens, "", "", false, doc, ""},
		{server, p + "num_requests_total", Counter, schema.SrvRequests, "", "", false, doc, ""},
		{server, p + "num_retracted_requests_total", Counter, schema.SrvPreemptions, "", "", false, doc, "not the num_retracted_reqs gauge, the last batch's"},
		{server, p + "spec_accept_length", Gauge, schema.SrvAcceptLength, "", "", true, doc, "mean accepted tokens per verify step, bonus token included"},
		{server, p + "time_to_first_token_seconds", Histogram, schema.SrvTTFT, "", "", false, doc, ""},
		{server, p + "inter_token_latency_seconds", Histogram, schema.SrvITL, "", "", false, doc, "one observation per token gap (a chunk of n tokens counts n)"},
		{server, p + "e2e_request_latency_seconds", Histogram, schema.SrvE2E, "", "", false, doc, ""},
	}
}
