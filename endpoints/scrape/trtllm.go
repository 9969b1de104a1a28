package scrape

import (
	"net/url"

	"github.com/glmbench/glmbench/reports/schema"
)

// TRTLLM is NVIDIA TensorRT-LLM's trtllm-serve, whose series are trtllm_.
const TRTLLM = "trtllm"

const docTRTLLM = "https://github.com/NVIDIA/TensorRT-LLM/blob/main/tensorrt_llm/metrics/collector.py (MetricsCollector; one 2026 version)"

// trtllmRows are trtllm-serve's MetricsCollector series, served at
// /prometheus/metrics with return_perf_metrics (serve/openai_server.py
// mount_metrics), labelled model_name and engine_type.
func trtllmRows() []Series {
	return []Series{
		row(TRTLLM, "trtllm_num_requests_running", Gauge, schema.SrvRunning, docTRTLLM, "active requests, from the iteration stats"),
		row(TRTLLM, "trtllm_num_requests_waiting", Gauge, schema.SrvQueued, docTRTLLM, "queued requests, from the iteration stats"),
		row(TRTLLM, "trtllm_kv_cache_utilization", Gauge, schema.SrvKVUsage, docTRTLLM, "a fraction 0..1 (unverified)").mean(),
		row(TRTLLM, "trtllm_kv_cache_hit_rate", Gauge, schema.SrvCacheHitRate, docTRTLLM, "a fraction 0..1 (unverified)").mean(),
		row(TRTLLM, "trtllm_prompt_tokens_total", Counter, schema.SrvPromptTokens, docTRTLLM, ""),
		row(TRTLLM, "trtllm_generation_tokens_total", Counter, schema.SrvGenerationTokens, docTRTLLM, ""),
		row(TRTLLM, "trtllm_request_success_total", Counter, schema.SrvRequests, docTRTLLM, "summed over finished_reason"),
		row(TRTLLM, "trtllm_time_to_first_token_seconds", Histogram, schema.SrvTTFT, docTRTLLM, ""),
		row(TRTLLM, "trtllm_e2e_request_latency_seconds", Histogram, schema.SrvE2E, docTRTLLM, ""),
	}
}

// FallbackURL is the metrics URL to try where DefaultURL answers with no
// exposition: <origin>/prometheus/metrics, where trtllm-serve serves its
// Prometheus series (with return_perf_metrics) while its /metrics is a
// JSON list of iteration statistics. "" where DefaultURL is "".
func FallbackURL(baseURL string) string {
	d := DefaultURL(baseURL)
	if d == "" {
		return ""
	}
	u, _ := url.Parse(d)
	u.Path = "/prometheus/metrics"
	return u.String()
}
