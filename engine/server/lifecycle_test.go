package server

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glmbench/glmbench/engine/sched"
)

// longScript never ends on its own: every token is 'x', a forward pass
// takes a millisecond, so a request with a large max_tokens runs until the
// test ends it.
func longScript() *scriptExec {
	x := newScript(nil, 'x')
	x.delay = time.Millisecond
	return x
}

// openStream starts a streaming chat request and reads up to its first
// text chunk, so the request is surely running. cancel ends the client.
func (e *env) openStream(body map[string]any) (*sseReader, context.CancelFunc) {
	e.t.Helper()
	body["stream"] = true
	ctx, cancel := context.WithCancel(context.Background())
	resp := e.open(ctx, http.MethodPost, "/v1/chat/completions", body)
	if resp.StatusCode != http.StatusOK {
		cancel()
		e.t.Fatalf("stream: status %d", resp.StatusCode)
	}
	r := newSSEReader(e.t, resp.Body)
	e.t.Cleanup(func() { cancel(); resp.Body.Close() })
	return r, cancel
}

func (r *sseReader) untilText() {
	r.t.Helper()
	for {
		p := r.next()
		if p == "" || p == "[DONE]" {
			r.t.Fatal("stream ended before any text")
		}
		if strings.Contains(p, `"content":"x`) || strings.Contains(p, `"reasoning_content":"`) {
			return
		}
	}
}

func longBody() map[string]any {
	return chatBody("go on", map[string]any{"max_tokens": 3000, "ignore_eos": true, "temperature": 0})
}

func TestQueueOverflowAnswers503AsSGLang(t *testing.T) {
	e := newEnv(t, envConfig{script: longScript(), sched: sched.Config{MaxRunningRequests: 1, MaxQueuedRequests: 1}})
	running, _ := e.openStream(longBody())
	running.untilText()
	waiting := make(chan struct{})
	go func() {
		defer close(waiting)
		body := longBody()
		body["stream"] = true
		resp := e.open(context.Background(), http.MethodPost, "/v1/chat/completions", body)
		defer resp.Body.Close()
		newSSEReader(t, resp.Body).all() // ends when the scheduler shuts down
	}()
	waitFor(t, "one waiting request", func() bool { return e.sched.Stats().Waiting == 1 })

	code, _, b := e.post("/v1/chat/completions", chatBody("one more", map[string]any{"max_tokens": 2}))
	eb := decode[apiErrorBody](t, b)
	if code != 503 || eb.Error == nil || eb.Error.Message != "The request queue is full." || eb.Error.Code != 503 || eb.Error.Type != "SERVICE_UNAVAILABLE" {
		t.Errorf("non-stream overflow: status %d body %s; want 503 The request queue is full.", code, b)
	}

	payloads := e.stream("/v1/chat/completions", chatBody("one more", map[string]any{"max_tokens": 2, "stream": true}))
	if len(payloads) != 2 || payloads[1] != "[DONE]" {
		t.Fatalf("stream overflow: %q; want an error event then [DONE]", payloads)
	}
	var ev struct {
		Error struct {
			Object, Message, Type string
			Param                 *string
			Code                  int
		}
	}
	if err := json.Unmarshal([]byte(payloads[0]), &ev); err != nil || ev.Error.Code != 503 ||
		ev.Error.Message != "The request queue is full." || ev.Error.Type != "SERVICE_UNAVAILABLE" || ev.Error.Object != "error" {
		t.Errorf("stream overflow event %s; want SGLang's 503 error", payloads[0])
	}
	if _, m := e.get("/metrics"); !strings.Contains(string(m), `glmbench:num_rejected_requests_total{model_name="glmbench-nano",reason="queue_full"} 2`) {
		t.Errorf("metrics do not count the two overflows:\n%s", m)
	}
	e.srv.Shutdown(context.Background())
	<-waiting
}

func TestGatewayLimiterAnswers429WithRetryAfter(t *testing.T) {
	t.Run("beyond the concurrency cap", func(t *testing.T) {
		e := newEnv(t, envConfig{script: longScript(), opts: Options{RateLimitConcurrency: 1}})
		running, cancel := e.openStream(longBody())
		running.untilText()
		code, h, b := e.post("/v1/chat/completions", chatBody("hi", map[string]any{"max_tokens": 1}))
		eb := decode[apiErrorBody](t, b)
		if code != 429 || h.Get("Retry-After") != "1" || eb.Error == nil || eb.Error.Code != 429 {
			t.Errorf("status %d Retry-After %q body %s; want 429, Retry-After 1", code, h.Get("Retry-After"), b)
		}
		if c, _ := e.get("/health"); c != 200 {
			t.Errorf("/health is limited too: %d", c)
		}
		cancel()
		waitFor(t, "the slot to free", func() bool {
			c, _, _ := e.post("/v1/completions", map[string]any{"prompt": "hi", "max_tokens": 1})
			return c == 200
		})
	})
	t.Run("beyond the requests per minute", func(t *testing.T) {
		var mu sync.Mutex
		now := time.Unix(1000, 0)
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		e := newEnv(t, envConfig{opts: Options{RateLimitRPM: 2, Now: clock}})
		body := map[string]any{"prompt": "hi", "max_tokens": 1}
		for i := range 2 {
			if c, _, b := e.post("/v1/completions", body); c != 200 {
				t.Fatalf("request %d: %d %s", i, c, b)
			}
		}
		code, h, b := e.post("/v1/completions", body)
		if code != 429 || h.Get("Retry-After") != "30" {
			t.Errorf("third request: status %d Retry-After %q %s; want 429 after 30 s (2 per minute)", code, h.Get("Retry-After"), b)
		}
		mu.Lock()
		now = now.Add(30 * time.Second)
		mu.Unlock()
		if c, _, b := e.post("/v1/completions", body); c != 200 {
			t.Errorf("after 30 s: %d %s", c, b)
		}
	})
}

func TestAClientThatDisconnectsFreesItsKV(t *testing.T) {
	e := newEnv(t, envConfig{})
	if used := e.sched.Stats().KVUsedTokens; used != 0 {
		t.Fatalf("KV in use before any request: %d", used)
	}
	r, cancel := e.openStream(longBody())
	r.untilAny()
	// The scheduler publishes its stats after the step whose tokens the
	// stream already carries: the KV shows in use by the next publish.
	waitFor(t, "KV in use while the request runs", func() bool { return e.sched.Stats().KVUsedTokens > 0 })
	cancel()
	waitFor(t, "the KV to be free", func() bool {
		st := e.sched.Stats()
		return st.KVUsedTokens == 0 && st.Running == 0
	})
}

// untilAny reads up to the first chunk after the role chunk.
func (r *sseReader) untilAny() {
	r.t.Helper()
	r.next()
	if p := r.next(); p == "" || p == "[DONE]" {
		r.t.Fatal("stream ended early")
	}
}

func TestShutdownEndsStreamsAndRefusesNewRequests(t *testing.T) {
	e := newEnv(t, envConfig{script: longScript()})
	r, _ := e.openStream(longBody())
	r.untilText()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- e.srv.Shutdown(ctx)
	}()
	var last []string
	for {
		p := r.next()
		if p == "" {
			break
		}
		last = append(last, p)
	}
	n := len(last)
	if n < 2 || last[n-1] != "[DONE]" || !strings.Contains(last[n-2], `"error"`) || !strings.Contains(last[n-2], `"code":503`) {
		t.Fatalf("stream ended with %q; want an error event with code 503, then [DONE]", last[max(0, n-2):])
	}
	if err := <-done; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	code, _, b := e.post("/v1/chat/completions", chatBody("hi", map[string]any{"max_tokens": 1}))
	if eb := decode[apiErrorBody](t, b); code != 503 || eb.Error == nil || eb.Error.Code != 503 {
		t.Errorf("after shutdown: %d %s; want 503", code, b)
	}
	if c, _ := e.get("/health"); c != 503 {
		t.Errorf("/health after shutdown: %d, want 503", c)
	}
}

func TestShutdownWithAnExpiredDeadlineStillEndsEveryHandler(t *testing.T) {
	// The scheduler's forward pass outlasts Shutdown's deadline: handlers
	// are cut loose with an error event instead of waiting for it. Shutdown
	// begins once the pass after the first token has begun, not between
	// two passes, where the scheduler would stop at once and in time.
	x := newScript(nil, 'x')
	x.delay = 300 * time.Millisecond
	e := newEnv(t, envConfig{script: x})
	r, _ := e.openStream(longBody())
	r.untilText()
	for n := x.passes.Load(); x.passes.Load() == n; {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err == nil {
		t.Error("Shutdown past its deadline returned nil")
	}
	payloads := r.all()
	if n := len(payloads); n < 2 || payloads[n-1] != "[DONE]" || !strings.Contains(payloads[n-2], `"code":503`) {
		t.Errorf("stream ended with %q", payloads)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	e := newEnv(t, envConfig{})
	if c, b := e.get("/health"); c != 200 || len(b) != 0 {
		t.Errorf("/health: %d %q, want 200 and an empty body", c, b)
	}
	e.srv.SetReady(false)
	if c, _ := e.get("/health"); c != 503 {
		t.Errorf("/health when not ready: %d, want 503", c)
	}
	if c, _, _ := e.post("/v1/completions", map[string]any{"prompt": "hi", "max_tokens": 1}); c != 503 {
		t.Errorf("a request when not ready: %d, want 503", c)
	}
	e.srv.SetReady(true)
	if c, _ := e.get("/health"); c != 200 {
		t.Errorf("/health when ready again: %d", c)
	}
}

func TestModelsAndServerInfo(t *testing.T) {
	e := newEnv(t, envConfig{sched: sched.Config{ContextLength: 2048, MaxQueuedRequests: 0}, opts: Options{ModelPath: "preset:nano", Version: "v-test"}})
	c, b := e.get("/v1/models")
	var models struct {
		Object string
		Data   []struct {
			ID, Object  string
			OwnedBy     string `json:"owned_by"`
			Created     int64
			MaxModelLen int `json:"max_model_len"`
		}
	}
	if err := json.Unmarshal(b, &models); c != 200 || err != nil || models.Object != "list" || len(models.Data) != 1 {
		t.Fatalf("/v1/models: %d %s", c, b)
	}
	if m := models.Data[0]; m.ID != "glmbench-nano" || m.Object != "model" || m.MaxModelLen != 2048 || m.Created == 0 {
		t.Errorf("/v1/models entry %s", b)
	}
	if c, b := e.get("/v1/models/glmbench-nano"); c != 200 || !strings.Contains(string(b), `"id":"glmbench-nano"`) {
		t.Errorf("/v1/models/glmbench-nano: %d %s", c, b)
	}

	c, b = e.get("/get_server_info")
	info := decode[map[string]any](t, b)
	want := map[string]any{"model_path": "preset:nano", "served_model_name": "glmbench-nano", "context_length": 2048.0,
		"page_size": 1.0, "max_total_tokens": float64(testPool), "chunked_prefill_size": 4096.0, "max_prefill_tokens": 16384.0,
		"max_running_requests": float64(testPool / 2), "max_queued_requests": nil, "schedule_policy": "fcfs",
		"disable_radix_cache": false, "stream_interval": 1.0, "schedule_conservativeness": 1.0, "version": "v-test"}
	for k, v := range want {
		if got, ok := info[k]; c != 200 || !ok || got != v {
			t.Errorf("/get_server_info %s = %v, want %v", k, got, v)
		}
	}
	if states, ok := info["internal_states"].([]any); !ok || len(states) != 1 {
		t.Errorf("/get_server_info internal_states %v", info["internal_states"])
	}
}

func TestMetricsExposition(t *testing.T) {
	e := newEnv(t, envConfig{})
	r := e.complete(map[string]any{"prompt": "hello", "max_tokens": 3, "ignore_eos": true})
	c, b := e.get("/metrics")
	text := string(b)
	if c != 200 {
		t.Fatalf("/metrics: %d", c)
	}
	for _, name := range []string{
		"glmbench:num_queue_reqs", "glmbench:num_running_reqs", "glmbench:token_usage", "glmbench:num_used_tokens",
		"glmbench:time_to_first_token_seconds_bucket", "glmbench:inter_token_latency_seconds_bucket",
		"glmbench:e2e_request_latency_seconds_count", "glmbench:prompt_tokens_total", "glmbench:generation_tokens_total",
		"glmbench:num_requests_total",
	} {
		if !strings.Contains(text, "\n"+name+"{") {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	// Every sample line is name{labels} value; every family has HELP and TYPE.
	sample := regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*\{[^}]*\} [-+0-9.eInf]+$`)
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if !strings.HasPrefix(line, "# ") && !sample.MatchString(line) {
			t.Errorf("bad sample line %q", line)
		}
	}
	value := func(name string) float64 {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\{[^}]*\} (\S+)$`).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("no %s", name)
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	if got := value("glmbench:prompt_tokens_total"); got != float64(r.Usage.PromptTokens) {
		t.Errorf("prompt_tokens_total %v, want %d", got, r.Usage.PromptTokens)
	}
	if got := value("glmbench:generation_tokens_total"); got != 3 {
		t.Errorf("generation_tokens_total %v, want 3", got)
	}
	if got := value("glmbench:time_to_first_token_seconds_count"); got != 1 {
		t.Errorf("TTFT count %v, want 1", got)
	}
	if got := value("glmbench:inter_token_latency_seconds_count"); got != 2 {
		t.Errorf("ITL count %v, want 2", got)
	}
}
