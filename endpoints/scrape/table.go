package scrape

import (
	"slices"

	"github.com/glmbench/glmbench/reports/schema"
)

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
	// The routers in front of workers (router.go in endpointstest): their
	// series are the router's view of the deployment.
	SGLangRouter = "sglang-router"
	SMG          = "smg"
	Dynamo       = "dynamo"
)

// Servers lists the servers the table knows, each with the prefix of its
// series' names, in the order a tie between them is broken.
var Servers = []struct{ Name, Prefix string }{
	{Glmbench, "glmbench:"},
	{SGLang, "sglang:"},
	{VLLM, "vllm:"},
	{LlamaCpp, "llamacpp:"},
	{TGI, "tgi_"},
	{TRTLLM, "trtllm_"},
	{LMDeploy, "lmdeploy:"},
	{SGLangRouter, "sgl_router_"},
	{SMG, "smg_"},
	{Dynamo, "dynamo_frontend_"},
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
	docRouter   = "https://github.com/sgl-project/sglang/blob/main/sgl-router/src/metrics.rs (exporter on --prometheus-port, default 29000, not the API port)"
	docDynamo   = "https://github.com/ai-dynamo/dynamo/blob/main/lib/runtime/src/metrics/prometheus_names.rs (frontend_service; prefix DYN_METRICS_PREFIX, default dynamo_frontend)"
)

// Table is every known series, by server. SGLang's rows are repeated
// under glmbench: (the built-in engine writes SGLang's names under its own
// prefix), with the engine's own names after them.
var Table = slices.Concat(sglangRows(SGLang, "sglang:", docSGLang), trtllmRows(), []Series{
	// The engine's names that SGLang lacks, first so that they win over
	// SGLang's rows for the same common name: its prefix cache's counters,
	// counted at admission, under vLLM's names; and speculative counters
	// under the names vLLM and llama.cpp share (SGLang has only its
	// accept-length gauge).
	row(Glmbench, "glmbench:prefix_cache_queries_total", Counter, schema.SrvPrefixQueried, docEngine, "prompt tokens looked up at admission"),
	row(Glmbench, "glmbench:prefix_cache_hits_total", Counter, schema.SrvPrefixHit, docEngine, "of them, found cached"),
	row(Glmbench, "glmbench:spec_decode_num_drafts_total", Counter, schema.SrvSpecSteps, docEngine, "verify steps"),
	row(Glmbench, "glmbench:spec_decode_num_draft_tokens_total", Counter, schema.SrvSpecDrafted, docEngine, ""),
	row(Glmbench, "glmbench:spec_decode_num_accepted_tokens_total", Counter, schema.SrvSpecAccepted, docEngine, ""),
}, sglangRows(Glmbench, "glmbench:", docEngine), []Series{
	row(Glmbench, "glmbench:num_retractions_total", Counter, schema.SrvPreemptions, docEngine, "the engine's name before SGLang's"),

	row(VLLM, "vllm:num_requests_running", Gauge, schema.SrvRunning, docVLLM, ""),
	row(VLLM, "vllm:num_requests_waiting", Gauge, schema.SrvQueued, docVLLM, ""),
	row(VLLM, "vllm:kv_cache_usage_perc", Gauge, schema.SrvKVUsage, docVLLM, "a fraction 0..1 despite the name").mean(),
	row(VLLM, "vllm:gpu_cache_usage_perc", Gauge, schema.SrvKVUsage, docVLLMOld, "the name before kv_cache_usage_perc (v0 and early v1); a fraction").mean(),
	row(VLLM, "vllm:gpu_prefix_cache_hit_rate", Gauge, schema.SrvCacheHitRate, docVLLMOld, "v0 only; v1 has the counters below").mean(),
	row(VLLM, "vllm:prefix_cache_queries_total", Counter, schema.SrvPrefixQueried, docVLLM, "tokens looked up"),
	row(VLLM, "vllm:gpu_prefix_cache_queries_total", Counter, schema.SrvPrefixQueried, docVLLMOld, "the name before 0.9.2"),
	row(VLLM, "vllm:prefix_cache_hits_total", Counter, schema.SrvPrefixHit, docVLLM, ""),
	row(VLLM, "vllm:gpu_prefix_cache_hits_total", Counter, schema.SrvPrefixHit, docVLLMOld, "the name before 0.9.2"),
	row(VLLM, "vllm:prompt_tokens_total", Counter, schema.SrvPromptTokens, docVLLM, ""),
	row(VLLM, "vllm:generation_tokens_total", Counter, schema.SrvGenerationTokens, docVLLM, ""),
	row(VLLM, "vllm:request_success_total", Counter, schema.SrvRequests, docVLLM, "summed over finished_reason"),
	row(VLLM, "vllm:num_preemptions_total", Counter, schema.SrvPreemptions, docVLLM, ""),
	row(VLLM, "vllm:spec_decode_num_drafts_total", Counter, schema.SrvSpecSteps, docVLLMSpec, "accept length = 1 + accepted / drafts"),
	row(VLLM, "vllm:spec_decode_num_draft_tokens_total", Counter, schema.SrvSpecDrafted, docVLLMSpec, ""),
	row(VLLM, "vllm:spec_decode_num_accepted_tokens_total", Counter, schema.SrvSpecAccepted, docVLLMSpec, ""),
	row(VLLM, "vllm:time_to_first_token_seconds", Histogram, schema.SrvTTFT, docVLLM, ""),
	row(VLLM, "vllm:inter_token_latency_seconds", Histogram, schema.SrvITL, docVLLM, "one observation per token gap"),
	row(VLLM, "vllm:time_per_output_token_seconds", Histogram, schema.SrvITL, docVLLMOld, "the name before inter_token_latency_seconds, the same per-gap observations; not request_time_per_output_token_seconds, one mean per request"),
	row(VLLM, "vllm:e2e_request_latency_seconds", Histogram, schema.SrvE2E, docVLLM, ""),

	row(LlamaCpp, "llamacpp:requests_processing", Gauge, schema.SrvRunning, docLlama, "busy slots"),
	row(LlamaCpp, "llamacpp:requests_deferred", Gauge, schema.SrvQueued, docLlama, ""),
	row(LlamaCpp, "llamacpp:kv_cache_usage_ratio", Gauge, schema.SrvKVUsage, docLlama, "older builds only; a fraction").mean(),
	row(LlamaCpp, "llamacpp:prompt_tokens_total", Counter, schema.SrvPromptTokens, docLlama, "evaluated prompt tokens, plus the cached ones where the build counts them apart").plus("llamacpp:prompt_tokens_cached_total"),
	row(LlamaCpp, "llamacpp:prompt_tokens_total", Counter, schema.SrvPrefixQueried, docLlama, "as prompt_tokens").plus("llamacpp:prompt_tokens_cached_total"),
	row(LlamaCpp, "llamacpp:prompt_tokens_cached_total", Counter, schema.SrvPrefixHit, docLlama, "newer builds"),
	row(LlamaCpp, "llamacpp:tokens_predicted_total", Counter, schema.SrvGenerationTokens, docLlama, ""),
	row(LlamaCpp, "llamacpp:spec_decode_num_drafts_total", Counter, schema.SrvSpecSteps, docLlama, "verify steps"),
	row(LlamaCpp, "llamacpp:spec_decode_num_draft_tokens_total", Counter, schema.SrvSpecDrafted, docLlama, ""),
	row(LlamaCpp, "llamacpp:tokens_drafted_total", Counter, schema.SrvSpecDrafted, docLlama, "the older name"),
	row(LlamaCpp, "llamacpp:spec_decode_num_accepted_tokens_total", Counter, schema.SrvSpecAccepted, docLlama, ""),
	row(LlamaCpp, "llamacpp:tokens_drafted_accepted_total", Counter, schema.SrvSpecAccepted, docLlama, "the older name"),

	row(TGI, "tgi_batch_current_size", Gauge, schema.SrvRunning, docTGI, ""),
	row(TGI, "tgi_queue_size", Gauge, schema.SrvQueued, docTGI, ""),
	row(TGI, "tgi_request_success", Counter, schema.SrvRequests, docTGI, "the Rust exporter writes counters without _total"),
	row(TGI, "tgi_request_input_length", HistogramSum, schema.SrvPromptTokens, docTGI, "the sum of a histogram of tokens per request"),
	row(TGI, "tgi_request_generated_tokens", HistogramSum, schema.SrvGenerationTokens, docTGI, "the sum of a histogram of tokens per request"),
	row(TGI, "tgi_request_mean_time_per_token_duration", Histogram, schema.SrvITL, docTGI, "one mean per request, not one observation per gap: its quantiles are of requests"),
	row(TGI, "tgi_request_duration", Histogram, schema.SrvE2E, docTGI, ""),
}, lmdeployRows(), routerRows())

// routerRows are the series of the routers in front of workers. What they
// count is the router's view of the deployment: its in-flight requests are
// every worker's together, its TTFT includes its own routing.
func routerRows() []Series {
	const view = "; the router's view of the deployment"
	return []Series{
		row(SGLangRouter, "sgl_router_running_requests", Gauge, schema.SrvRunning, docRouter, "summed over workers: requests sent and not yet ended, kept under the cache_aware policy only"+view),
		row(SGLangRouter, "sgl_router_requests_total", Counter, schema.SrvRequests, docRouter, "requests a worker answered 2xx, counted when the answer starts"+view),
		row(SGLangRouter, "sgl_router_retries_total", Counter, schema.SrvRetries, docRouter, "summed over route: attempts sent again after a retryable answer, hidden from the client"),
		row(SMG, "smg_worker_retries_total", Counter, schema.SrvRetries, docRouter, "summed over worker_type and endpoint: one per backoff (PD mode counts a retry under both prefill and decode)"),
		row(SMG, "smg_worker_requests_active", Gauge, schema.SrvRunning, docRouter, "summed over workers"+view),
		row(SMG, "smg_router_ttft_seconds", Histogram, schema.SrvTTFT, docRouter, "gRPC workers only"+view),
		row(SMG, "smg_router_generation_duration_seconds", Histogram, schema.SrvE2E, docRouter, "gRPC workers only"+view),
		row(Dynamo, "dynamo_frontend_inflight_requests", Gauge, schema.SrvRunning, docDynamo, "requests in flight to the workers"+view),
		row(Dynamo, "dynamo_frontend_queued_requests", Gauge, schema.SrvQueued, docDynamo, "requests not yet given their first response"+view),
		row(Dynamo, "dynamo_frontend_input_sequence_tokens", HistogramSum, schema.SrvPromptTokens, docDynamo, "the sum of a histogram of tokens per request"),
		row(Dynamo, "dynamo_frontend_output_tokens_total", Counter, schema.SrvGenerationTokens, docDynamo, "counted as tokens stream"),
		row(Dynamo, "dynamo_frontend_output_sequence_tokens", HistogramSum, schema.SrvGenerationTokens, docDynamo, "versions before output_tokens_total: the sum of a histogram of tokens per request"),
		row(Dynamo, "dynamo_frontend_time_to_first_token_seconds", Histogram, schema.SrvTTFT, docDynamo, "from the frontend's receipt, tokenizing and routing included"+view),
		row(Dynamo, "dynamo_frontend_inter_token_latency_seconds", Histogram, schema.SrvITL, docDynamo, "one observation per token gap (unverified)"),
		row(Dynamo, "dynamo_frontend_request_duration_seconds", Histogram, schema.SrvE2E, docDynamo, ""+view),
	}
}

// sglangRows are SGLang's series under prefix p, for server.
func sglangRows(server, p, doc string) []Series {
	return []Series{
		row(server, p+"num_running_reqs", Gauge, schema.SrvRunning, doc, ""),
		row(server, p+"num_queue_reqs", Gauge, schema.SrvQueued, doc, ""),
		row(server, p+"token_usage", Gauge, schema.SrvKVUsage, doc, "a fraction of the KV pool").mean(),
		row(server, p+"num_used_tokens", Gauge, schema.SrvKVUsage, doc, "tokens over the pool's, where token_usage is absent").per(p + "max_total_num_tokens").mean(),
		row(server, p+"cache_hit_rate", Gauge, schema.SrvCacheHitRate, doc, "a fraction").mean(),
		row(server, p+"prompt_tokens_total", Counter, schema.SrvPromptTokens, doc, ""),
		row(server, p+"prompt_tokens_total", Counter, schema.SrvPrefixQueried, doc, "every prompt token is looked up in the radix cache"),
		row(server, p+"cached_tokens_total", Counter, schema.SrvPrefixHit, doc, "prompt tokens found cached"),
		row(server, p+"generation_tokens_total", Counter, schema.SrvGenerationTokens, doc, ""),
		row(server, p+"num_requests_total", Counter, schema.SrvRequests, doc, ""),
		row(server, p+"num_retracted_requests_total", Counter, schema.SrvPreemptions, doc, "not the num_retracted_reqs gauge, the last batch's"),
		row(server, p+"spec_accept_length", Gauge, schema.SrvAcceptLength, doc, "mean accepted tokens per verify step, bonus token included").mean(),
		row(server, p+"time_to_first_token_seconds", Histogram, schema.SrvTTFT, doc, ""),
		row(server, p+"inter_token_latency_seconds", Histogram, schema.SrvITL, doc, "one observation per token gap (a chunk of n tokens counts n)"),
		row(server, p+"e2e_request_latency_seconds", Histogram, schema.SrvE2E, doc, ""),
	}
}

// row is a table row of no Plus, Per or Mean.
func row(server, name string, kind Kind, common, doc, note string) Series {
	return Series{Server: server, Name: name, Kind: kind, Common: common, Doc: doc, Note: note}
}

func (s Series) plus(name string) Series { s.Plus = name; return s }
func (s Series) per(name string) Series  { s.Per = name; return s }
func (s Series) mean() Series            { s.Mean = true; return s }
