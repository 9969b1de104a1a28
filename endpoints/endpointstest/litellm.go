package endpointstest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// A LiteLLM proxy (`litellm --config`, http://0.0.0.0:4000) in front of
// vLLM, as the gateway personality with LiteLLMOptions.On. Its generation
// is vLLM's behind it (the gateway's checkVLLM: hosted_vllm/ passes the
// body's fields on); what differs is the proxy's own surface, from BerriAI/
// litellm: docs/my-website/docs/proxy/health.md (/health calls every model
// behind it and takes the key; /health/liveliness and /health/readiness are
// open), proxy/response_headers.md (x-litellm-* on every answer,
// x-litellm-attempted-retries among them), litellm/proxy/_types.py
// ProxyException (errors {"error": {"message", "type", "param", "code"}},
// code the status as a string), litellm/proxy/hooks/
// parallel_request_limiter.py (its own limiter's 429 "Max parallel request
// limit reached", retry-after the seconds to the next minute) and
// litellm/proxy/common_request_processing.py create_response (a stream
// whose first chunk is an error is answered as a JSON error with its
// status, not a 200).

// LiteLLMOptions make the gateway personality a LiteLLM proxy. Options'
// APIKey is its master key, Concurrency and RPM its key's
// max_parallel_requests and rpm_limit, RetryAfter its retry-after.
type LiteLLMOptions struct {
	// On makes the gateway answer as LiteLLM's proxy.
	On bool
	// Retries is the router's hidden retrying (num_retries): each
	// request's first Retries attempts at the backend fail and are retried
	// inside the proxy, each costing RetryDelay before the answer starts;
	// the answer's x-litellm-attempted-retries says how many. RetryEvery
	// picks the requests (every RetryEvery-th; 0 or 1: all).
	Retries, RetryEvery int
	RetryDelay          time.Duration
}

// liteLLM says whether p answers as a LiteLLM proxy: the gateway with
// LiteLLMOptions.On.
func (p *Personality) liteLLM() bool { return p.Kind == Gateway && p.Opts.LiteLLM.On }

// litellmVersion is the version the fake says it is.
const litellmVersion = "1.74.3"

// litellmCounters are what the fake counts of the proxy's own work.
type litellmCounters struct {
	// healthCalls counts the backend requests /health made (one per model).
	healthCalls int
	// attempts counts the backend attempts generation made, retries too.
	attempts int
}

// LiteLLMCounts returns how many backend requests the proxy's /health
// made, and how many backend attempts its generation made (retries
// included).
func (p *Personality) LiteLLMCounts() (healthCalls, attempts int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.litellm.healthCalls, p.litellm.attempts
}

// serveLiteLLM answers the proxy's own routes and sets its headers on
// every other answer; false when the request goes on to the common path.
func (p *Personality) serveLiteLLM(w http.ResponseWriter, r *http.Request) bool {
	h := w.Header()
	h.Set("x-litellm-version", litellmVersion)
	h.Set("x-litellm-call-id", fmt.Sprintf("%08x-fake-call", time.Now().UnixNano()&0xffffffff))
	switch r.Method + " " + r.URL.Path {
	case "GET /health/liveliness", "GET /health/liveness":
		// Open: the JSON string "I'm alive!".
		writeJSON(w, 200, "I'm alive!")
	case "GET /health/readiness":
		// Open: the proxy's own state, no model called.
		writeJSON(w, 200, map[string]any{"status": "connected", "db": "Not connected", "cache": nil,
			"litellm_version": litellmVersion, "success_callbacks": []any{"_PROXY_MaxParallelRequestsHandler"}})
	case "GET /health":
		// Behind the key; with it, one real request to every model.
		if !p.authorized(w, r) {
			return true
		}
		p.mu.Lock()
		p.litellm.healthCalls++
		p.mu.Unlock()
		writeJSON(w, 200, map[string]any{"healthy_endpoints": []any{map[string]any{"model": "hosted_vllm/" + p.Opts.Model, "api_base": "http://vllm:8000/v1"}},
			"unhealthy_endpoints": []any{}, "healthy_count": 1, "unhealthy_count": 0})
	default:
		return false
	}
	return true
}

// litellmError is ProxyException's body: the status as a string code,
// the type OpenAI's for the status (the proxy's mapping of the backend's
// exception; the types are unverified for every version).
func litellmError(status int, msg string, extra map[string]any) map[string]any {
	typ := map[int]string{400: "invalid_request_error", 401: "auth_error", 404: "invalid_request_error", 429: "rate_limit_error"}[status]
	if typ == "" {
		typ = "None"
	}
	e := map[string]any{"message": msg, "type": typ, "param": "None", "code": strconv.Itoa(status)}
	for k, v := range extra {
		if k != "code" && k != "type" {
			e[k] = v
		}
	}
	return map[string]any{"error": e}
}

// litellmMessage is a backend refusal's message as the proxy passes it on:
// the exception's class and the provider's name before vLLM's own words
// (the prefix's wording is unverified).
func litellmMessage(status int, msg string) string {
	class := map[int]string{400: "BadRequestError", 404: "NotFoundError", 500: "InternalServerError", 503: "ServiceUnavailableError"}[status]
	if class == "" || strings.HasPrefix(msg, "Max parallel") || strings.HasPrefix(msg, "Authentication Error") || strings.HasPrefix(msg, "Invalid model name") {
		return msg
	}
	return "litellm." + class + ": Hosted_vllmException - " + msg
}

// litellmLimited is the proxy's own limiter's 429 (parallel_request_limiter.py).
func (p *Personality) litellmLimited(w http.ResponseWriter) {
	o := p.Opts
	w.Header().Set("retry-after", o.RetryAfter)
	p.fail(w, 429, fmt.Sprintf("Max parallel request limit reached Hit limit for api_key: %x. max_parallel_requests: %d, rpm_limit: %d",
		len(o.APIKey)*7919, o.Concurrency, o.RPM), nil)
}

// litellmRetry holds the request seq while the router retries its failed
// attempts (LiteLLMOptions.Retries), and says how many on the answer;
// false when the client left.
func (p *Personality) litellmRetry(w http.ResponseWriter, r *http.Request, seq int) bool {
	if !p.liteLLM() {
		return true
	}
	o := p.Opts.LiteLLM
	n := o.Retries
	if o.RetryEvery > 1 && (seq-1)%o.RetryEvery != 0 {
		n = 0
	}
	p.mu.Lock()
	p.litellm.attempts += n + 1
	p.mu.Unlock()
	w.Header().Set("x-litellm-attempted-retries", strconv.Itoa(n))
	w.Header().Set("x-litellm-attempted-fallbacks", "0")
	return sleep(r, time.Duration(n)*o.RetryDelay)
}
