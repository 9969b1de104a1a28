package scrape

import "github.com/glmbench/glmbench/reports/schema"

// LMDeploy is lmdeploy serve api_server, whose series are lmdeploy:.
const LMDeploy = "lmdeploy"

const docLMDeploy = "https://github.com/InternLM/lmdeploy/blob/main/lmdeploy/metrics/loggers.py (PrometheusStatLogger; /metrics with --enable-metrics)"

// lmdeployRows are LMDeploy's PrometheusStatLogger series (vLLM's names
// under its own prefix), labelled model_name and engine (the DP rank).
func lmdeployRows() []Series {
	return []Series{
		row(LMDeploy, "lmdeploy:num_requests_running", Gauge, schema.SrvRunning, docLMDeploy, ""),
		row(LMDeploy, "lmdeploy:num_requests_waiting", Gauge, schema.SrvQueued, docLMDeploy, ""),
		row(LMDeploy, "lmdeploy:gpu_cache_usage_perc", Gauge, schema.SrvKVUsage, docLMDeploy, "a fraction 0..1 despite the name").mean(),
		row(LMDeploy, "lmdeploy:prompt_tokens_total", Counter, schema.SrvPromptTokens, docLMDeploy, ""),
		row(LMDeploy, "lmdeploy:generation_tokens_total", Counter, schema.SrvGenerationTokens, docLMDeploy, "one 2025 version's record() adds each iteration's count twice: compare with the client's count"),
		row(LMDeploy, "lmdeploy:time_to_first_token_seconds", Histogram, schema.SrvTTFT, docLMDeploy, ""),
		row(LMDeploy, "lmdeploy:time_per_output_token_seconds", Histogram, schema.SrvITL, docLMDeploy, "one observation per token gap of an iteration"),
		row(LMDeploy, "lmdeploy:e2e_request_latency_seconds", Histogram, schema.SrvE2E, docLMDeploy, ""),
	}
}
