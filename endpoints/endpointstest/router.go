package endpointstest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"time"
)

// The routers production deployments put in front of several workers,
// each worker a personality of its own on loopback that the router reaches
// over HTTP, as the real one does:
//
//   - sglang-router: the SGLang Model Gateway (sgl-router,
//     python -m sglang_router.launch_router) in front of SGLang workers,
//     from sgl-project/sglang sgl-router/src: server.rs (routes),
//     routers/http/router.rs (proxying, retries, circuit outcomes),
//     core/retry.rs, config/types.rs (defaults), middleware.rs (its own
//     limiter), protocols/spec.rs (the typed chat body), metrics.rs.
//   - dynamo: NVIDIA Dynamo's OpenAI frontend in front of vLLM workers,
//     from ai-dynamo/dynamo lib/llm/src/http/service: openai.rs
//     (ErrorMessage, list_models_openai), error.rs (what each failure is
//     answered), health.rs, and lib/runtime's prometheus_names.rs
//     (frontend_service: the dynamo_frontend_* names).
//
// docs/SERVERS.md has the section, with what stays unverified.

// RouterOptions configure the sglang-router and dynamo personalities.
// Options' other fields configure each worker (Context, MaxRunning and
// MaxQueued, Metrics, TTFT, ...); APIKey is the router's key, which
// sgl-router also sends on to its workers.
type RouterOptions struct {
	// Workers is how many workers run behind the router (default 2 for
	// sglang-router, 1 for dynamo); NoWorkers starts none at all.
	Workers   int
	NoWorkers bool
	// Unhealthy is how many of the workers, the first ones, the router's
	// health checker has marked unhealthy: it sends them nothing.
	Unhealthy int
	// MaxRetries is sgl-router's --retry-max-retries: attempts in all, the
	// first included (default 5; 1 retries nothing). Backoff is the first
	// retry's delay (--retry-initial-backoff-ms, default 50 ms), each later
	// one 1.5 times the last (--retry-backoff-multiplier); the fake adds
	// no jitter (the router's default is ±20%).
	MaxRetries int
	Backoff    time.Duration
	// BreakerAfter is the consecutive failed attempts (any answer but a
	// 2xx) that open a worker's circuit (--cb-failure-threshold, default
	// 10); open, it gets nothing for 60 s (--cb-timeout-duration-secs).
	BreakerAfter int
	// MaxConcurrent and Queue are sgl-router's own limiter on generation
	// routes (--max-concurrent-requests 256, --queue-size 100): past
	// MaxConcurrent a request waits in the queue, past both it is answered
	// 429 with no body.
	MaxConcurrent, Queue int
	// QueueTimeout is how long a request may wait in that queue
	// (--queue-timeout-secs, default 60 s); past it the request is
	// answered 408 (middleware.rs QueueProcessor), with no body.
	QueueTimeout time.Duration
	// Admission makes the limiter answer as the newer SGLang Model
	// Gateway's does (lightseekorg/smg model_gateway/src/middleware.rs
	// shed_response, routers/error.rs create_error): its refusals carry
	// the OpenAI error body, its code in X-SMG-Error-Code, and Retry-After
	// (the value the fake's own, 1): queue full 429 admission_queue_full
	// "admission queue is at capacity", queue timeout 408
	// admission_queue_timeout "timed out waiting for an admission slot".
	// (Its newest middleware answers the timeout 503 with the same code.)
	Admission bool
	// NewInfoNames makes the router route SGLang's renamed info routes as
	// the Model Gateway does since the rename (smg server.rs public
	// routes): /server_info and /model_info beside /get_server_info and
	// /get_model_info, the old names kept as deprecated aliases. Without
	// it only the old names are proxied, as sgl-router's server.rs did, and
	// /server_info is the fallback's 404.
	NewInfoNames bool
	// FailEvery is a worker-side fault of the fake's own: every
	// FailEvery-th attempt the router sends to a worker is answered 500
	// by that worker, a status sgl-router retries, so the run's requests
	// succeed on a later attempt and only its retries counter says so
	// (0: no fault).
	FailEvery int
	// Busy is Dynamo's busy threshold, as requests in flight on the
	// frontend: past it every worker is busy and a request is refused 529
	// "Service temporarily overloaded" (0: never).
	Busy int
}

// defaults fills the router's zero options for personality name.
func (o *RouterOptions) defaults(name string) {
	if o.Workers <= 0 {
		o.Workers = map[string]int{SGLangRouter: 2, Dynamo: 1}[name]
	}
	if o.NoWorkers {
		o.Workers = 0
	}
	if o.MaxRetries <= 0 {
		o.MaxRetries = 5
	}
	if o.Backoff <= 0 {
		o.Backoff = 50 * time.Millisecond
	}
	if o.BreakerAfter <= 0 {
		o.BreakerAfter = 10
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = 256
	}
	if o.Queue <= 0 {
		o.Queue = 100
	}
	if o.QueueTimeout <= 0 {
		o.QueueTimeout = 60 * time.Second
	}
}

// routerState is a router's workers and what it counts.
type routerState struct {
	workers []*Personality
	client  *http.Client
	// metrics is sgl-router's Prometheus exporter, a listener of its own
	// (--prometheus-port, default 29000); nil for dynamo, whose /metrics
	// is on its API port.
	metrics *httptest.Server
	// tokens is sgl-router's limiter: one per request on a generation route.
	tokens chan struct{}
	queued int
	// next is the round robin's next worker; fails and openUntil are each
	// worker's consecutive failures and open circuit.
	next      int
	fails     []int
	openUntil []time.Time
	running   []int
	// attempts counts requests sent to workers, retries those after a
	// first; routed counts 2xx answers by route, errs errors by route and
	// type, exhausted the requests that used up their retries.
	attempts, retries          int
	routed, retried, exhausted map[string]int
	// retryAt is when each retry was sent.
	retryAt []time.Time
	errs    map[[2]string]int
	// Dynamo's frontend counters (metricsDynamo).
	dyn dynamoCounters
}

// dynamoCounters are what Dynamo's frontend counts (dynamo_frontend_*).
type dynamoCounters struct {
	requests                map[[3]string]int // by endpoint, request_type, status
	inflight, queued        int
	outTokens               int
	ttft, dur, in, out      fakeHist
	unavailable, overloaded int
}

// fakeHist is a histogram of a few fixed bounds.
type fakeHist struct {
	counts []int // per bound of the kind's bounds, then +Inf
	sum    float64
	n      int
}

// secondBounds and tokenBounds are the fake's bucket bounds.
var (
	secondBounds = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	tokenBounds  = []float64{16, 64, 256, 1024, 4096, 16384}
)

// observe counts v in h of bounds.
func (h *fakeHist) observe(bounds []float64, v float64) {
	if h.counts == nil {
		h.counts = make([]int, len(bounds)+1)
	}
	i := sort.SearchFloat64s(bounds, v)
	h.counts[i]++
	h.sum += v
	h.n++
}

// RouterCounts returns how many attempts the router sent to its workers,
// and how many of them were retries (attempts after a request's first).
func (p *Personality) RouterCounts() (attempts, retries int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.router == nil {
		return 0, 0
	}
	return p.router.attempts, p.router.retries
}

// RouterRetriesBetween counts the router's retries sent after from and
// not after to.
func (p *Personality) RouterRetriesBetween(from, to time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.router == nil {
		return 0
	}
	n := 0
	for _, t := range p.router.retryAt {
		if t.After(from) && !t.After(to) {
			n++
		}
	}
	return n
}

// Workers are the personalities behind a router (nil for any other).
func (p *Personality) Workers() []*Personality {
	if p.router == nil {
		return nil
	}
	return append([]*Personality(nil), p.router.workers...)
}

// MetricsURL is where the server's Prometheus metrics are: sgl-router's
// exporter listens apart from its API (its /metrics answers 404); the
// others serve /metrics beside /v1.
func (p *Personality) MetricsURL() string {
	if p.router != nil && p.router.metrics != nil {
		return p.router.metrics.URL + "/metrics"
	}
	return p.URL + "/metrics"
}

// Close shuts the server down, and a router's workers and exporter with it.
func (p *Personality) Close() {
	p.Server.Close()
	if p.router == nil {
		return
	}
	if p.router.metrics != nil {
		p.router.metrics.Close()
	}
	for _, wk := range p.router.workers {
		wk.Close()
	}
}

// startRouter starts a router's workers (and sgl-router's exporter); a
// worker is SGLang behind sglang-router, vLLM behind dynamo.
func (p *Personality) startRouter() error {
	o := p.Opts.Router
	rs := &routerState{client: &http.Client{}, tokens: make(chan struct{}, o.MaxConcurrent),
		routed: map[string]int{}, retried: map[string]int{}, exhausted: map[string]int{}, errs: map[[2]string]int{}}
	rs.dyn.requests = map[[3]string]int{}
	wo := p.Opts
	wo.Router = RouterOptions{}
	wo.Model = p.Opts.Model
	kind := SGLang
	if p.Kind == Dynamo {
		// Dynamo's workers are reached over its own runtime, not an
		// authenticated HTTP API.
		kind, wo.APIKey = VLLM, ""
	}
	for range o.Workers {
		wk, err := NewPersonality(kind, wo)
		if err != nil {
			return err
		}
		rs.workers = append(rs.workers, wk)
	}
	rs.fails = make([]int, len(rs.workers))
	rs.openUntil = make([]time.Time, len(rs.workers))
	rs.running = make([]int, len(rs.workers))
	if p.Kind == SGLangRouter {
		rs.metrics = httptest.NewServer(http.HandlerFunc(p.metricsSGLangRouter))
	}
	p.router = rs
	return nil
}

// serveRouter answers r as the router does.
func (p *Personality) serveRouter(w http.ResponseWriter, r *http.Request, body []byte) {
	if p.Kind == Dynamo {
		p.serveDynamo(w, r, body)
		return
	}
	route := r.Method + " " + r.URL.Path
	switch route {
	case "POST /v1/chat/completions", "POST /v1/completions", "POST /generate":
		p.sglangRouterGenerate(w, r, body)
	case "GET /health":
		// router.rs health: every registered worker healthy, or 503 naming
		// those that are not; an empty registry is all healthy.
		var down []string
		for i, wk := range p.router.workers {
			if i < p.Opts.Router.Unhealthy {
				down = append(down, fmt.Sprintf("%q", wk.URL))
			}
		}
		if len(down) == 0 {
			plain(w, 200, "All servers healthy")
			return
		}
		plain(w, 503, "Unhealthy servers: ["+strings.Join(down, ", ")+"]")
	case "GET /liveness":
		// Always alive while it listens (the body's wording is unverified).
		plain(w, 200, "OK")
	case "GET /readiness":
		// router.rs readiness: ready while one worker is healthy.
		total, healthy := len(p.router.workers), max(len(p.router.workers)-p.Opts.Router.Unhealthy, 0)
		if healthy > 0 {
			writeJSON(w, 200, map[string]any{"status": "ready", "healthy_workers": healthy, "total_workers": total})
			return
		}
		writeJSON(w, 503, map[string]any{"status": "not_ready", "reason": "no healthy workers available", "total_workers": total})
	case "GET /health_generate", "GET /get_server_info", "GET /v1/models", "GET /get_model_info":
		p.sglangRouterFirstWorker(w, r)
	case "GET /server_info", "GET /model_info":
		if !p.Opts.Router.NewInfoNames {
			w.WriteHeader(404) // the fallback, as below
			return
		}
		p.sglangRouterFirstWorker(w, r)
	default:
		// The fallback (sink_handler): 404 with no body, /metrics too (the
		// exporter listens on its own port).
		w.WriteHeader(404)
	}
}

// plain answers status with msg as axum's (StatusCode, &str) does.
func plain(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	io.WriteString(w, msg)
}

// available is the workers a request may go to: healthy, their circuit
// closed (or its timeout past: half open), in round-robin order from the
// next. p.mu is held.
func (p *Personality) availableLocked(now time.Time) []int {
	rs := p.router
	var out []int
	for k := range rs.workers {
		i := (rs.next + k) % len(rs.workers)
		if i >= p.Opts.Router.Unhealthy && !now.Before(rs.openUntil[i]) {
			out = append(out, i)
		}
	}
	return out
}

// sglangRouterFirstWorker proxies a GET to the first healthy worker
// (router.rs proxy_get_request: /v1/models, /get_server_info and the like
// are the worker's own answers, the context length with them), or
// answers 503 "No workers are available".
func (p *Personality) sglangRouterFirstWorker(w http.ResponseWriter, r *http.Request) {
	ws := p.router.workers
	if p.Opts.Router.Unhealthy >= len(ws) {
		plain(w, 503, "No workers are available")
		return
	}
	wk := ws[p.Opts.Router.Unhealthy]
	req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, wk.URL+r.URL.Path, nil)
	copyHeaders(req.Header, r.Header)
	resp, err := p.router.client.Do(req)
	if err != nil {
		plain(w, 500, "Request failed: "+err.Error())
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	copyHeaders(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	w.Write(b)
}

// copyHeaders copies the end-to-end headers of src into dst: not the
// hop-by-hop ones, nor the body's framing (header_utils.rs).
func copyHeaders(dst, src http.Header) {
	for k, vs := range src {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Connection", "Transfer-Encoding", "Keep-Alive", "Host", "Accept-Encoding":
			continue
		}
		dst[k] = append([]string(nil), vs...)
	}
}

// sglangRouterChatFields are the fields of sgl-router's typed
// ChatCompletionRequest (protocols/spec.rs, as read at commit 010ff4d):
// the body is deserialized into it and serialized again for the worker,
// so any other field is dropped unrefused, and its defaulted fields are
// sent whether the client gave them or not (sglangRouterChatDefaults).
var sglangRouterChatFields = set("messages", "model", "frequency_penalty", "function_call", "functions", "logit_bias",
	"logprobs", "max_tokens", "max_completion_tokens", "metadata", "modalities", "n", "parallel_tool_calls",
	"presence_penalty", "prompt_cache_key", "reasoning_effort", "response_format", "safety_identifier", "seed",
	"service_tier", "stop", "stream", "stream_options", "temperature", "tool_choice", "tools", "top_logprobs", "top_p",
	"verbosity", "top_k", "min_p", "min_tokens", "repetition_penalty", "regex", "ebnf", "stop_token_ids", "no_stop_trim",
	"ignore_eos", "continue_final_message", "skip_special_tokens", "lora_path", "session_params", "separate_reasoning",
	"stream_reasoning", "chat_template_kwargs", "return_hidden_states", "sampling_seed")

// sglangRouterChatDefaults are the typed chat body's serde defaults, which
// the re-serialized body always carries.
var sglangRouterChatDefaults = map[string]json.RawMessage{"logprobs": json.RawMessage("false"), "stream": json.RawMessage("false"),
	"no_stop_trim": json.RawMessage("false"), "ignore_eos": json.RawMessage("false"), "continue_final_message": json.RawMessage("false"),
	"skip_special_tokens": json.RawMessage("true"), "separate_reasoning": json.RawMessage("true"), "stream_reasoning": json.RawMessage("true"),
	"return_hidden_states": json.RawMessage("false")}

// sglangRouterBody is the body sgl-router sends on for route, and whether
// it asks for a stream; or the status and text of axum's Json rejection.
// A completions body keeps every field (CompletionRequest flattens the
// rest into other; unverified for every version).
func sglangRouterBody(route string, body []byte) (out []byte, stream bool, status int, msg string) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, false, 400, "Failed to parse the request body as JSON: " + err.Error()
	}
	required := []string{"model", "prompt"}
	if route == "/v1/chat/completions" {
		required = []string{"messages", "model"}
	} else if route == "/generate" {
		required = nil
	}
	for _, f := range required {
		if _, ok := raw[f]; !ok {
			return nil, false, 422, fmt.Sprintf("Failed to deserialize the JSON body into the target type: missing field `%s` at line 1 column %d", f, len(body))
		}
	}
	_ = json.Unmarshal(raw["stream"], &stream)
	if route == "/v1/chat/completions" {
		kept := map[string]json.RawMessage{}
		for k, v := range sglangRouterChatDefaults {
			kept[k] = v
		}
		for k, v := range raw {
			if sglangRouterChatFields[k] && string(v) != "null" {
				kept[k] = v
			}
		}
		raw = kept
	}
	out, _ = json.Marshal(raw)
	return out, stream, 0, ""
}

// sglangRouterGenerate routes a generation request: its own limiter, the
// typed body, then up to MaxRetries attempts at the available workers,
// backing off between them, retrying 408, 429, 500, 502, 503 and 504
// (core/retry.rs is_retryable_status) and its own "no available workers"
// 503 alike; the last answer goes back as the worker gave it.
func (p *Personality) sglangRouterGenerate(w http.ResponseWriter, r *http.Request, body []byte) {
	o := p.Opts.Router
	if p.Opts.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+p.Opts.APIKey {
		// auth_middleware: 401 with no body.
		w.WriteHeader(401)
		return
	}
	release, refused := p.sglangRouterToken(r)
	if refused != 0 {
		p.sglangRouterShed(w, refused, o.Admission)
		return
	}
	defer release()
	fwd, stream, status, msg := sglangRouterBody(r.URL.Path, body)
	if status != 0 {
		plain(w, status, msg)
		return
	}
	route := r.URL.Path
	for attempt := 0; ; attempt++ {
		resp, worker := p.sglangRouterAttempt(r, route, fwd, attempt)
		if !retryableStatus(resp.StatusCode) || attempt+1 >= o.MaxRetries {
			p.mu.Lock()
			if resp.StatusCode/100 == 2 {
				p.router.routed[route]++
			} else if retryableStatus(resp.StatusCode) {
				p.router.exhausted[route]++
			} else {
				p.router.errs[[2]string{route, "non_retryable_error"}]++
			}
			p.mu.Unlock()
			p.sglangRouterRelay(w, resp, stream, worker)
			return
		}
		resp.Body.Close()
		p.sglangRouterDone(worker)
		delay := time.Duration(float64(o.Backoff) * math.Pow(1.5, float64(attempt)))
		if !sleep(r, min(delay, 30*time.Second)) {
			return
		}
	}
}

// sglangRouterToken takes one of the limiter's tokens, waiting in its
// queue while there is room, up to QueueTimeout; refused is 429 when the
// queue is full too, 408 when the wait timed out, -1 when the client left.
func (p *Personality) sglangRouterToken(r *http.Request) (release func(), refused int) {
	rs := p.router
	release = func() { <-rs.tokens }
	select {
	case rs.tokens <- struct{}{}:
		return release, 0
	default:
	}
	p.mu.Lock()
	if rs.queued >= p.Opts.Router.Queue {
		p.mu.Unlock()
		return nil, 429
	}
	rs.queued++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		rs.queued--
		p.mu.Unlock()
	}()
	timer := time.NewTimer(p.Opts.Router.QueueTimeout)
	defer timer.Stop()
	select {
	case rs.tokens <- struct{}{}:
		return release, 0
	case <-timer.C:
		return nil, 408
	case <-r.Context().Done():
		return nil, -1
	}
}

// sglangRouterShed answers a request the limiter refused with status: with
// no body (middleware.rs: "Request queue is full, returning 429"; the
// queue processor's bare 408), or, admission, as the newer gateway's
// shed_response does.
func (p *Personality) sglangRouterShed(w http.ResponseWriter, status int, admission bool) {
	if status < 0 {
		return
	}
	if !admission {
		w.WriteHeader(status)
		return
	}
	code, msg := "admission_queue_full", "admission queue is at capacity"
	if status == 408 {
		code, msg = "admission_queue_timeout", "timed out waiting for an admission slot"
	}
	w.Header().Set("X-SMG-Error-Code", code)
	w.Header().Set("Retry-After", "1")
	writeJSON(w, status, map[string]any{"error": map[string]any{"type": http.StatusText(status), "code": code, "message": msg, "param": nil}})
}

// retryableStatus is core/retry.rs is_retryable_status.
func retryableStatus(s int) bool {
	switch s {
	case 408, 429, 500, 502, 503, 504:
		return true
	}
	return false
}

// sglangRouterAttempt sends one attempt to the next available worker and
// records its outcome for that worker's circuit (any answer but a 2xx is
// a failure); worker is -1 when none was available, and the answer then
// the router's own 503.
func (p *Personality) sglangRouterAttempt(r *http.Request, route string, body []byte, attempt int) (*http.Response, int) {
	rs := p.router
	now := time.Now()
	p.mu.Lock()
	avail := p.availableLocked(now)
	if attempt > 0 {
		rs.retries++
		rs.retried[route]++
		rs.retryAt = append(rs.retryAt, now)
	}
	if len(avail) == 0 {
		rs.errs[[2]string{route, "no_available_workers"}]++
		p.mu.Unlock()
		return &http.Response{StatusCode: 503, Header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}},
			Body: io.NopCloser(strings.NewReader("No available workers (all circuits open or unhealthy)"))}, -1
	}
	i := avail[0]
	rs.next = (i + 1) % len(rs.workers)
	rs.attempts++
	rs.running[i]++
	fault := p.Opts.Router.FailEvery > 0 && rs.attempts%p.Opts.Router.FailEvery == 0
	p.mu.Unlock()
	var resp *http.Response
	var err error
	if fault {
		// The worker's fault, as the fake's own plain 500.
		resp = &http.Response{StatusCode: 500, Header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}},
			Body: io.NopCloser(strings.NewReader("Internal Server Error"))}
	} else {
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, rs.workers[i].URL+route, bytes.NewReader(body))
		copyHeaders(req.Header, r.Header)
		req.Header.Set("Content-Type", "application/json")
		resp, err = rs.client.Do(req)
	}
	if err != nil {
		resp = &http.Response{StatusCode: 500, Header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}},
			Body: io.NopCloser(strings.NewReader("Request failed: " + err.Error()))}
	}
	p.mu.Lock()
	if resp.StatusCode/100 == 2 {
		rs.fails[i] = 0
	} else if rs.fails[i]++; rs.fails[i] >= p.Opts.Router.BreakerAfter {
		rs.openUntil[i], rs.fails[i] = now.Add(60*time.Second), 0
	}
	p.mu.Unlock()
	return resp, i
}

// sglangRouterDone counts an attempt at worker out of its running requests.
func (p *Personality) sglangRouterDone(worker int) {
	if worker < 0 {
		return
	}
	p.mu.Lock()
	p.router.running[worker]--
	p.mu.Unlock()
}

// sglangRouterRelay sends the worker's answer on unchanged: its headers,
// status and body, a stream's bytes as they come, with Content-Type set
// to text/event-stream for a request that asked for a stream, whatever
// its status (router.rs send_typed_request).
func (p *Personality) sglangRouterRelay(w http.ResponseWriter, resp *http.Response, stream bool, worker int) {
	defer p.sglangRouterDone(worker)
	defer resp.Body.Close()
	copyHeaders(w.Header(), resp.Header)
	if stream {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	w.WriteHeader(resp.StatusCode)
	relayBody(w, resp.Body, nil, nil)
}

// relayBody copies body to w, flushing after each read, and into tee
// where it is not nil; first, where it is not nil, is called at the first
// bytes read, before they are written.
func relayBody(w http.ResponseWriter, body io.Reader, tee *bytes.Buffer, first func()) {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if first != nil {
				first()
				first = nil
			}
			w.Write(buf[:n])
			rc.Flush()
			if tee != nil {
				tee.Write(buf[:n])
			}
		}
		if err != nil {
			return
		}
	}
}

// metricsSGLangRouter is sgl-router's exporter (metrics.rs names; the
// metrics crate's Prometheus text, a series only once it has a value).
func (p *Personality) metricsSGLangRouter(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/metrics" {
		w.WriteHeader(404)
		return
	}
	rs := p.router
	p.mu.Lock()
	defer p.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	byRoute := func(name string, m map[string]int) {
		fmt.Fprintf(w, "# TYPE %s counter\n", name)
		for _, k := range sortedKeys(m) {
			fmt.Fprintf(w, "%s{route=%q} %d\n", name, k, m[k])
		}
	}
	byRoute("sgl_router_requests_total", rs.routed)
	byRoute("sgl_router_retries_exhausted_total", rs.exhausted)
	byRoute("sgl_router_retries_total", rs.retried)
	fmt.Fprintf(w, "# TYPE sgl_router_request_errors_total counter\n")
	for k, n := range rs.errs {
		fmt.Fprintf(w, "sgl_router_request_errors_total{route=%q,error_type=%q} %d\n", k[0], k[1], n)
	}
	fmt.Fprintf(w, "# TYPE sgl_router_active_workers gauge\nsgl_router_active_workers %d\n", len(rs.workers))
	fmt.Fprintf(w, "# TYPE sgl_router_running_requests gauge\n")
	for i, wk := range rs.workers {
		fmt.Fprintf(w, "sgl_router_running_requests{worker=%q} %d\n", wk.URL, rs.running[i])
	}
	fmt.Fprintf(w, "# TYPE sgl_router_worker_health gauge\n")
	for i, wk := range rs.workers {
		fmt.Fprintf(w, "sgl_router_worker_health{worker=%q} %d\n", wk.URL, map[bool]int{true: 0, false: 1}[i < p.Opts.Router.Unhealthy])
	}
}

// sortedKeys is m's keys in order.
func sortedKeys(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// dynamoError is Dynamo's ErrorMessage: flat, not under "error", type the
// status's canonical reason ("Overloaded" for its overload status).
func dynamoError(w http.ResponseWriter, status int, msg string) {
	typ := http.StatusText(status)
	if status == 529 {
		typ = "Overloaded"
	}
	writeJSON(w, status, map[string]any{"message": msg, "type": typ, "code": status})
}

// serveDynamo answers r as Dynamo's OpenAI frontend does.
func (p *Personality) serveDynamo(w http.ResponseWriter, r *http.Request, body []byte) {
	switch r.Method + " " + r.URL.Path {
	case "POST /v1/chat/completions", "POST /v1/completions":
		p.dynamoGenerate(w, r, body)
	case "GET /v1/models":
		// list_models_openai: the models its workers registered, "object"
		// as each card's object, owned_by "nvidia", no context length.
		data := []any{}
		if len(p.router.workers) > 0 {
			data = append(data, map[string]any{"id": p.Opts.Model, "object": "object", "created": time.Now().Unix(), "owned_by": "nvidia"})
		}
		writeJSON(w, 200, map[string]any{"object": "list", "data": data})
	case "GET /health":
		// health.rs: healthy once the first discovery is done, with the
		// endpoints and instances it found.
		var instances []any
		for i := range p.router.workers {
			instances = append(instances, map[string]any{"component": "backend", "endpoint": "generate", "namespace": "dynamo", "instance_id": 7000 + i})
		}
		endpoints := []string{}
		if len(instances) > 0 {
			endpoints = append(endpoints, "dyn://dynamo.backend.generate")
		}
		writeJSON(w, 200, map[string]any{"status": "healthy", "message": "Service is healthy", "initial_discovery_complete": true,
			"initial_discovery_error": nil, "endpoints": endpoints, "instances": instances})
	case "GET /live":
		writeJSON(w, 200, map[string]any{"status": "live", "message": "Service is live"})
	case "GET /metrics":
		p.metricsDynamo(w)
	default:
		w.WriteHeader(404)
	}
}

// dynamoGenerate routes a generation request: a model no worker serves is
// 404 "Model not found"; past the busy threshold, 529; no healthy worker,
// 503; else the worker's answer, its 4xx refusals in Dynamo's shape with
// the worker's message, its 5xx as "Internal server error"
// (error.rs from_backend_status).
func (p *Personality) dynamoGenerate(w http.ResponseWriter, r *http.Request, body []byte) {
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		// axum's Json rejection (wording per axum; unverified for Dynamo's
		// own extractor).
		plain(w, 400, "Failed to parse the request body as JSON: "+err.Error())
		return
	}
	rs := p.router
	endpoint, typ := "chat_completions", "unary"
	if r.URL.Path == "/v1/completions" {
		endpoint = "completions"
	}
	if req.Stream {
		typ = "stream"
	}
	if len(rs.workers) == 0 || req.Model != p.Opts.Model {
		p.dynamoCount(endpoint, typ, "error")
		dynamoError(w, 404, "Model not found")
		return
	}
	p.mu.Lock()
	o := p.Opts.Router
	switch {
	case o.Busy > 0 && rs.dyn.inflight >= o.Busy:
		rs.dyn.overloaded++
		p.mu.Unlock()
		p.dynamoCount(endpoint, typ, "error")
		dynamoError(w, 529, "Service temporarily overloaded")
		return
	case o.Unhealthy >= len(rs.workers):
		rs.dyn.unavailable++
		p.mu.Unlock()
		p.dynamoCount(endpoint, typ, "error")
		dynamoError(w, 503, "Service temporarily unavailable")
		return
	}
	avail := p.availableLocked(time.Now())
	i := avail[0]
	rs.next = (i + 1) % len(rs.workers)
	rs.attempts++
	rs.dyn.inflight++
	rs.dyn.queued++
	p.mu.Unlock()
	start := time.Now()
	status := p.dynamoForward(w, r, rs.workers[i], body, start)
	p.mu.Lock()
	rs.dyn.inflight--
	rs.dyn.dur.observe(secondBounds, time.Since(start).Seconds())
	p.mu.Unlock()
	p.dynamoCount(endpoint, typ, status)
}

// dynamoCount counts one request in dynamo_frontend_requests_total.
func (p *Personality) dynamoCount(endpoint, typ, status string) {
	p.mu.Lock()
	p.router.dyn.requests[[3]string{endpoint, typ, status}]++
	p.mu.Unlock()
}

// dynamoForward sends the request to worker and relays its answer, and
// says "success" or "error" for the request counter.
func (p *Personality) dynamoForward(w http.ResponseWriter, r *http.Request, worker *Personality, body []byte, start time.Time) string {
	rs := p.router
	req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, worker.URL+r.URL.Path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := rs.client.Do(req)
	p.mu.Lock()
	rs.dyn.queued--
	p.mu.Unlock()
	if err != nil {
		dynamoError(w, 500, "Internal server error")
		return "error"
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		b, _ := io.ReadAll(resp.Body)
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		msg := e.Error.Message
		if resp.StatusCode >= 500 || msg == "" {
			msg = "Internal server error"
		}
		dynamoError(w, resp.StatusCode, msg)
		return "error"
	}
	copyHeaders(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	var tee bytes.Buffer
	relayBody(w, resp.Body, &tee, func() {
		p.mu.Lock()
		rs.dyn.ttft.observe(secondBounds, time.Since(start).Seconds())
		p.mu.Unlock()
	})
	in, out := usageIn(tee.Bytes())
	p.mu.Lock()
	rs.dyn.in.observe(tokenBounds, float64(in))
	rs.dyn.out.observe(tokenBounds, float64(out))
	rs.dyn.outTokens += out
	p.mu.Unlock()
	return "success"
}

// usageIn reads the last usage object of an answer, whole or streamed:
// its prompt and completion tokens (0 and 0 when it has none).
func usageIn(b []byte) (prompt, completion int) {
	for _, part := range bytes.Split(b, []byte("\n")) {
		part = bytes.TrimPrefix(bytes.TrimSpace(part), []byte("data: "))
		var v struct {
			Usage *struct {
				Prompt     int `json:"prompt_tokens"`
				Completion int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if json.Unmarshal(part, &v) == nil && v.Usage != nil {
			prompt, completion = v.Usage.Prompt, v.Usage.Completion
		}
	}
	return prompt, completion
}

// metricsDynamo is the frontend's /metrics: prometheus_names.rs
// frontend_service under the default prefix dynamo_frontend (the tikv
// prometheus crate's text). The fake's histograms have bounds of its own;
// its token counts are the answers' usage (a stream's only when it asked
// for it).
func (p *Personality) metricsDynamo(w http.ResponseWriter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, m := p.router.dyn, p.Opts.Model
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, "# HELP dynamo_frontend_requests_total Total number of LLM requests processed\n# TYPE dynamo_frontend_requests_total counter\n")
	keys := make([][3]string, 0, len(d.requests))
	for k := range d.requests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return strings.Join(keys[i][:], " ") < strings.Join(keys[j][:], " ") })
	for _, k := range keys {
		fmt.Fprintf(w, "dynamo_frontend_requests_total{endpoint=%q,model=%q,request_type=%q,status=%q} %d\n", k[0], m, k[1], k[2], d.requests[k])
	}
	fmt.Fprintf(w, "# TYPE dynamo_frontend_inflight_requests gauge\ndynamo_frontend_inflight_requests{model=%q} %d\n", m, d.inflight)
	fmt.Fprintf(w, "# TYPE dynamo_frontend_queued_requests gauge\ndynamo_frontend_queued_requests{model=%q} %d\n", m, d.queued)
	fmt.Fprintf(w, "# TYPE dynamo_frontend_output_tokens_total counter\ndynamo_frontend_output_tokens_total{model=%q} %d\n", m, d.outTokens)
	hist := func(name string, bounds []float64, h fakeHist) {
		fmt.Fprintf(w, "# TYPE %s histogram\n", name)
		c := 0
		for i, le := range bounds {
			if h.counts != nil {
				c += h.counts[i]
			}
			fmt.Fprintf(w, "%s_bucket{model=%q,le=\"%g\"} %d\n", name, m, le, c)
		}
		fmt.Fprintf(w, "%s_bucket{model=%q,le=\"+Inf\"} %d\n%s_sum{model=%q} %g\n%s_count{model=%q} %d\n", name, m, h.n, name, m, h.sum, name, m, h.n)
	}
	hist("dynamo_frontend_time_to_first_token_seconds", secondBounds, d.ttft)
	hist("dynamo_frontend_request_duration_seconds", secondBounds, d.dur)
	hist("dynamo_frontend_input_sequence_tokens", tokenBounds, d.in)
	hist("dynamo_frontend_output_sequence_tokens", tokenBounds, d.out)
}
