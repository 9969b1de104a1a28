package endpointstest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// hold sends n streamed chat requests to p that the workers hold (their
// TTFT is long), and returns once the workers have admitted all n; the
// func it returns lets them go.
func hold(t *testing.T, p *Personality, n int) (release func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, n)
	for range n {
		go func() {
			defer func() { done <- struct{}{} }()
			b, _ := json.Marshal(chatBody(p.Opts.Model, "hold", 4, "stream", true))
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.BaseURL()+"/chat/completions", bytes.NewReader(b))
			req.Header.Set("Content-Type", "application/json")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	if !eventually(10*time.Second, func() bool { return len(p.PromptTokens()) >= n }) {
		cancel()
		t.Fatalf("the workers admitted %d of %d held requests", len(p.PromptTokens()), n)
	}
	return func() {
		cancel()
		for range n {
			<-done
		}
	}
}

// busyRouter is an sgl-router whose two SGLang workers each take one
// request running and one queued (--max-running-requests 1
// --max-queued-requests 1) and hold it: four held requests fill both.
func busyRouter(t *testing.T, ro RouterOptions) *Personality {
	t.Helper()
	ro.Backoff = time.Millisecond
	return Start(t, SGLangRouter, Options{MaxRunning: 1, MaxQueued: 1, TTFT: time.Minute, Router: ro})
}

// The truth: with every worker's queue full, a request not streamed is
// answered 503 by each worker; the router retries it to its five attempts
// in all (four retries) and answers the last worker's own 503, "The
// request queue is full.", in SGLang's shape.
func TestSGLangRouterRetriesAWorkersFullQueueUpToItsAttemptsThenAnswersIt(t *testing.T) {
	p := busyRouter(t, RouterOptions{})
	defer hold(t, p, 4)()
	before, _ := p.RouterCounts()
	r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 4))
	attempts, retries := p.RouterCounts()
	if r.status != 503 || !strings.Contains(string(r.body), "The request queue is full.") {
		t.Fatalf("%d %s; want the worker's 503", r.status, r.body)
	}
	if attempts-before != 5 || retries != 4 {
		t.Errorf("%d attempts, %d retries; want 5 and 4", attempts-before, retries)
	}
}

// The truth: SGLang refuses a stream its full queue cannot take as a 200
// whose one event is the 503 error; a 200 is no retryable status, so the
// router sends it on as it came after one attempt.
func TestSGLangRouterPassesAStreamsQueueFullEventThroughUnretried(t *testing.T) {
	p := busyRouter(t, RouterOptions{})
	defer hold(t, p, 4)()
	before, _ := p.RouterCounts()
	r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 4, "stream", true))
	attempts, _ := p.RouterCounts()
	s := readStream(t, r.body)
	if r.status != 200 || len(s.events) != 1 || !s.done || !strings.Contains(string(r.body), "The request queue is full.") {
		t.Fatalf("%d %s; want SGLang's 200 with one 503 event", r.status, r.body)
	}
	if attempts-before != 1 {
		t.Errorf("%d attempts; want 1", attempts-before)
	}
}

// The truth: with every worker marked unhealthy the router sends nothing
// to any, answers its own plain-text 503 after its five attempts, and its
// /health names both workers; the workers see no request.
func TestSGLangRouterWithNoHealthyWorkerAnswersItsOwn503(t *testing.T) {
	p := Start(t, SGLangRouter, Options{Router: RouterOptions{Unhealthy: 2, Backoff: time.Millisecond}})
	r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 4, "stream", true))
	if r.status != 503 || string(r.body) != "No available workers (all circuits open or unhealthy)" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %q (%s)", r.status, r.body, r.header.Get("Content-Type"))
	}
	if attempts, retries := p.RouterCounts(); attempts != 0 || retries != 4 {
		t.Errorf("%d attempts at workers, %d retries; want 0 and 4", attempts, retries)
	}
	h := get(t, p.URL+"/health")
	if h.status != 503 || strings.Count(string(h.body), "http://127.0.0.1:") != 2 {
		t.Errorf("/health: %d %s", h.status, h.body)
	}
	for _, wk := range p.Workers() {
		if wk.TotalRequests() != 0 {
			t.Errorf("worker %s got %d requests", wk.URL, wk.TotalRequests())
		}
	}
}

// The truth: any answer but a 2xx is a failure for a worker's circuit:
// after BreakerAfter overlong prompts (SGLang's 400, not retried) the one
// worker's circuit is open, and the next request, however short, gets the
// router's 503 without reaching it.
func TestSGLangRoutersCircuitOpensOnRefusalsToo(t *testing.T) {
	p := Start(t, SGLangRouter, Options{Context: 64, Router: RouterOptions{Workers: 1, BreakerAfter: 3, MaxRetries: 1}})
	long := strings.Repeat("word ", 200)
	for i := range 3 {
		if r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, long, 4)); r.status != 400 {
			t.Fatalf("overlong %d: %d %s", i, r.status, r.body)
		}
	}
	r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 4))
	if r.status != 503 || !strings.Contains(string(r.body), "all circuits open") {
		t.Fatalf("after 3 refusals: %d %s; want the router's 503", r.status, r.body)
	}
	if n := len(p.Workers()[0].PromptTokens()); n != 3 {
		t.Errorf("the worker saw %d prompts; want the 3 refused", n)
	}
}

// The truth: the router's /v1/models is its first healthy worker's, so
// SGLang's max_model_len (its context) comes through; its /metrics is no
// route (404), its exporter apart counts the request it routed.
func TestSGLangRouterStatesTheWorkersContextAndMetricsApart(t *testing.T) {
	p := Start(t, SGLangRouter, Options{Context: 8192})
	m := get(t, p.BaseURL()+"/models")
	data, _ := m.json(t)["data"].([]any)
	if card, _ := data[0].(map[string]any); m.status != 200 || num(card["max_model_len"]) != 8192 || card["owned_by"] != "sglang" {
		t.Fatalf("/v1/models: %d %s", m.status, m.body)
	}
	if r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 4)); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if r := get(t, p.URL+"/metrics"); r.status != 404 || len(r.body) != 0 {
		t.Errorf("/metrics on the API port: %d %q", r.status, r.body)
	}
	if r := get(t, p.MetricsURL()); r.status != 200 || !strings.Contains(string(r.body), `sgl_router_requests_total{route="/v1/chat/completions"} 1`) {
		t.Errorf("exporter: %d %s", r.status, r.body)
	}
}

// The truth: the chat body is re-serialized from the router's typed
// request: a field outside it is dropped, ignore_eos and its other
// defaulted fields reach the worker even when the client left them out.
func TestSGLangRouterSendsTheWorkerItsTypedChatBody(t *testing.T) {
	p := Start(t, SGLangRouter, Options{Router: RouterOptions{Workers: 1}})
	if r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 4, "not_a_field", 1, "top_k", 5)); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	f := p.Workers()[0].BodyFields()[0]
	if _, ok := f["not_a_field"]; ok || string(f["top_k"]) != "5" || string(f["ignore_eos"]) != "false" || string(f["skip_special_tokens"]) != "true" {
		t.Errorf("the worker got %v", f)
	}
}

// The truth: Dynamo's frontend lists the model with no context length,
// answers a model no worker serves 404 "Model not found" in its flat
// shape, a backend past its busy threshold 529, and a worker's 4xx with
// the worker's own words.
func TestDynamoAnswersInItsOwnShapes(t *testing.T) {
	p := Start(t, Dynamo, Options{Context: 64})
	m := get(t, p.BaseURL()+"/models")
	data, _ := m.json(t)["data"].([]any)
	if card, _ := data[0].(map[string]any); len(data) != 1 || card["owned_by"] != "nvidia" || card["max_model_len"] != nil {
		t.Fatalf("/v1/models: %s", m.body)
	}
	r := post(t, p.BaseURL()+"/chat/completions", chatBody("other", "hi", 4))
	if e := r.json(t); r.status != 404 || e["message"] != "Model not found" || e["type"] != "Not Found" || num(e["code"]) != 404 {
		t.Errorf("unknown model: %d %s", r.status, r.body)
	}
	r = post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, strings.Repeat("word ", 200), 4))
	if e := r.json(t); r.status != 400 || !strings.Contains(e["message"].(string), "maximum context length is 64 tokens") || e["type"] != "Bad Request" {
		t.Errorf("overlong: %d %s", r.status, r.body)
	}
	if r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 4, "stream", true, "stream_options", map[string]any{"include_usage": true})); r.status != 200 || !readStream(t, r.body).done {
		t.Errorf("stream: %d %s", r.status, r.body)
	}
	met := get(t, p.MetricsURL())
	for _, want := range []string{`dynamo_frontend_requests_total{endpoint="chat_completions",model="meta-llama/Llama-3.1-8B-Instruct",request_type="stream",status="success"} 1`,
		"dynamo_frontend_inflight_requests", "dynamo_frontend_input_sequence_tokens_sum"} {
		if !strings.Contains(string(met.body), want) {
			t.Errorf("metrics lack %s:\n%s", want, met.body)
		}
	}
	busy := Start(t, Dynamo, Options{TTFT: time.Minute, Router: RouterOptions{Busy: 1}})
	defer hold(t, busy, 1)()
	r = post(t, busy.BaseURL()+"/chat/completions", chatBody(busy.Opts.Model, "hi", 4))
	if e := r.json(t); r.status != 529 || e["type"] != "Overloaded" || e["message"] != "Service temporarily overloaded" {
		t.Errorf("busy: %d %s", r.status, r.body)
	}
}

// The truth: a Dynamo frontend with no worker has no model registered: an
// empty model list, and every request 404 "Model not found".
func TestDynamoWithoutWorkersServesNoModel(t *testing.T) {
	p := Start(t, Dynamo, Options{Router: RouterOptions{NoWorkers: true}})
	if m := get(t, p.BaseURL()+"/models"); !strings.Contains(string(m.body), `"data":[]`) {
		t.Errorf("/v1/models: %s", m.body)
	}
	if r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "hi", 4)); r.status != 404 {
		t.Errorf("%d %s", r.status, r.body)
	}
}

// The truth: sgl-router's own limiter takes MaxConcurrent requests and
// queues Queue more; one past both is answered 429 with no body and no
// Retry-After, before any worker sees it.
func TestSGLangRoutersOwnLimiterAnswers429WithNoBody(t *testing.T) {
	p := Start(t, SGLangRouter, Options{TTFT: time.Minute, Router: RouterOptions{Workers: 1, MaxConcurrent: 1, Queue: 1}})
	defer hold(t, p, 1)()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		b, _ := json.Marshal(chatBody(p.Opts.Model, "queued", 4))
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.BaseURL()+"/chat/completions", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	queued := func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.router.queued == 1
	}
	if !eventually(10*time.Second, queued) {
		t.Fatal("the second request never queued")
	}
	r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "refused", 4))
	if r.status != 429 || len(r.body) != 0 || r.header.Get("Retry-After") != "" {
		t.Errorf("%d %q Retry-After %q; want 429, no body, none", r.status, r.body, r.header.Get("Retry-After"))
	}
	if n := len(p.Workers()[0].PromptTokens()); n != 1 {
		t.Errorf("the worker saw %d prompts; want the held one", n)
	}
}

// The truth: with FailEvery 2 every second attempt is a worker's 500,
// which sgl-router retries: of 4 requests the first succeeds at attempt 1
// and each later one fails its first attempt (2, 4, 6) and succeeds at the
// next, so 7 attempts, 3 retries, and the exporter's
// sgl_router_retries_total says the same 3.
func TestSGLangRouterRetriesAWorkersFaultAndCountsIt(t *testing.T) {
	p := Start(t, SGLangRouter, Options{Router: RouterOptions{FailEvery: 2, Backoff: time.Millisecond}})
	t0 := time.Now()
	for i := range 4 {
		if r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, fmt.Sprint("hi ", i), 4)); r.status != 200 {
			t.Fatalf("request %d: %d %s", i, r.status, r.body)
		}
	}
	attempts, retries := p.RouterCounts()
	if attempts != 7 || retries != 3 || p.RouterRetriesBetween(t0, time.Now()) != 3 {
		t.Errorf("%d attempts, %d retries (%d in the window); want 7 and 3", attempts, retries, p.RouterRetriesBetween(t0, time.Now()))
	}
	m := get(t, p.MetricsURL())
	if !strings.Contains(string(m.body), `sgl_router_retries_total{route="/v1/chat/completions"} 3`) {
		t.Errorf("the exporter does not count the 3 retries:\n%s", m.body)
	}
}

// The truth: a request that waits in the limiter's queue past QueueTimeout
// is answered 408: with no body by the older router, and by the newer
// gateway (Admission) with its error body, code admission_queue_timeout,
// in X-SMG-Error-Code too, and a Retry-After.
func TestSGLangRoutersQueueTimeoutAndTheNewerGatewaysBodies(t *testing.T) {
	for _, admission := range []bool{false, true} {
		t.Run(fmt.Sprint("admission ", admission), func(t *testing.T) {
			p := Start(t, SGLangRouter, Options{TTFT: time.Minute, Router: RouterOptions{Workers: 1, MaxConcurrent: 1, Queue: 1,
				QueueTimeout: 50 * time.Millisecond, Admission: admission}})
			defer hold(t, p, 1)()
			r := post(t, p.BaseURL()+"/chat/completions", chatBody(p.Opts.Model, "queued", 4))
			var body struct {
				Error struct{ Type, Code, Message string } `json:"error"`
			}
			if !admission {
				if r.status != 408 || len(r.body) != 0 {
					t.Errorf("%d %q; want 408 with no body", r.status, r.body)
				}
				return
			}
			if err := json.Unmarshal(r.body, &body); err != nil || r.status != 408 || body.Error.Code != "admission_queue_timeout" ||
				body.Error.Type != "Request Timeout" || r.header.Get("X-SMG-Error-Code") != "admission_queue_timeout" || r.header.Get("Retry-After") == "" {
				t.Errorf("%d %s %v; want 408 admission_queue_timeout", r.status, r.body, r.header)
			}
		})
	}
}
