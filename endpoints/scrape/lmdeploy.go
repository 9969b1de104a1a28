package scrape

import "github.com/glmbench/glmbench/reports/schema"

// LMDeploy is lmdeploy serve api_server, whose series are lmdeploy:.
const LMDeploy = "lmdeploy"

const docLMDeploy = "https://github.com/InternLM/lmdeploy/blob/main/lmdeploy/metrics/loggers.py (PrometheusStatLogger; /metrics with --enable-metrics)"

// lmdeployRows are LMDeploy's PrometheusStatLogger series, labelled
// model_name and engine (the DP rank). Its logger is adapted from vLLM's,
// so its names are vLLM's (some of them vLLM's older ones) under its own
// prefix.
func lmdeployRows() []Series {
	var out []Series
	for _, s := range []struct {
		name   string
		kind   Kind
		common string
		mean   bool
		note   string
	}{
		{"num_requests_running", Gauge, schema.SrvRunning, false, ""},
		{"num_requests_waiting", Gauge, schema.SrvQueued, false, ""},
		{"gpu_cache_usage_perc", Gauge, schema.SrvKVUsage, true, "a fraction 0..1 despite the name"},
		{"prompt_tokens_total", Counter, schema.SrvPromptTokens, false, ""},
		{"generation_tokens_total", Counter, schema.SrvGenerationTokens, false, "one 2025 version's record() adds each iteration's count twice: compare with the client's count"},
		{"time_to_first_token_seconds", Histogram, schema.SrvTTFT, false, ""},
		{"time_per_output_token_seconds", Histogram, schema.SrvITL, false, "one observation per token gap of an iteration"},
		{"e2e_request_latency_seconds", Histogram, schema.SrvE2E, false, ""},
	} {
		r := row(LMDeploy, "lmdeploy:"+s.name, s.kind, s.common, docLMDeploy, s.note)
		r.Mean = s.mean
		out = append(out, r)
	}
	return out
}
