package server

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/internal/syncbuf"
)

// okCompletion is a normal request, sent after hostile ones to show the
// server still serves.
func (e *env) okCompletion() {
	e.t.Helper()
	code, _, b := e.post("/v1/completions", map[string]any{"prompt": "hi", "max_tokens": 2, "temperature": 0})
	if code != 200 {
		e.t.Fatalf("a normal request after the hostile ones: %d %s", code, b)
	}
}

// The requests of issue 12, item 5: each once crashed the engine (the
// context check overflowed, and the scheduler later panicked with
// "position 16384 beyond max_position_embeddings").
func TestTheIssuesHugeTokenRequestsGet400AsVLLMWordsItAndTheServerKeepsServing(t *testing.T) {
	e := newEnv(t, envConfig{}) // nano: context 16384, pool 4096
	const huge = "9223372036854775807"
	user := `"messages":[{"role":"user","content":"hi"}]`
	tests := []struct {
		name, path, body, want string
	}{
		{"completions max_tokens at int64 max", "/v1/completions", `{"prompt":"hi","max_tokens":` + huge + `,"ignore_eos":true}`,
			"'max_tokens' or 'max_completion_tokens' is too large: " + huge + ". This model's maximum context length is 16384 tokens and your request has 2 input tokens (" + huge + " > 16384 - 2)."},
		{"completions streamed", "/v1/completions", `{"prompt":"hi","max_tokens":` + huge + `,"ignore_eos":true,"stream":true}`, "is too large: " + huge},
		{"chat max_tokens", "/v1/chat/completions", `{` + user + `,"max_tokens":` + huge + `,"ignore_eos":true}`, "is too large: " + huge},
		{"chat max_completion_tokens", "/v1/chat/completions", `{` + user + `,"max_completion_tokens":` + huge + `,"ignore_eos":true}`, "is too large: " + huge},
		{"chat streamed", "/v1/chat/completions", `{` + user + `,"max_tokens":` + huge + `,"stream":true,"stream_options":{"include_usage":true}}`, "is too large: " + huge},
		{"chat min_tokens 20000 without ignore_eos", "/v1/chat/completions", `{` + user + `,"min_tokens":20000}`, "min_tokens must be less than or equal to max_tokens="},
		{"chat min_tokens 20000 with max_tokens 20000", "/v1/chat/completions", `{` + user + `,"min_tokens":20000,"max_tokens":20000}`, "is too large: 20000"},
		{"completions min_tokens 20000", "/v1/completions", `{"prompt":"hi","min_tokens":20000}`, "min_tokens"},
		{"completions min_tokens at int64 max", "/v1/completions", `{"prompt":"hi","max_tokens":` + huge + `,"min_tokens":` + huge + `}`, "is too large: " + huge},
		{"max_tokens just past the context", "/v1/completions", `{"prompt":"hi","max_tokens":16383}`, "(16383 > 16384 - 2)"},
		{"max_tokens beyond int64", "/v1/completions", `{"prompt":"hi","max_tokens":92233720368547758070}`, "max_tokens"},
		{"negative min_tokens at int64 min", "/v1/completions", `{"prompt":"hi","min_tokens":-9223372036854775808}`, "min_tokens"},
		{"an id prompt longer than the context", "/v1/completions", `{"prompt":[` + strings.Repeat("1,", 20000) + `1]}`,
			"This model's maximum context length is 16384 tokens. However, your request has 20001 input tokens. Please reduce the length of the input messages."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, b := e.post(tc.path, tc.body)
			eb := decode[apiErrorBody](t, b)
			if code != 400 || eb.Error == nil || eb.Error.Code != 400 || !strings.Contains(eb.Error.Message, tc.want) {
				t.Errorf("status %d body %s; want 400 with %q", code, b, tc.want)
			}
			e.okCompletion()
		})
	}
}

func TestAPanickingSchedulerStepFailsOnlyItsRequestsWith500(t *testing.T) {
	// A prompt of exactly 7 token ids poisons the step that prefills it.
	x := newScript(nil, 'x')
	x.panicOn = func(seqs []model.Seq) bool {
		for _, s := range seqs {
			if s.Pos == 0 && len(s.Tokens) == 7 {
				return true
			}
		}
		return false
	}
	logs := &syncbuf.Buffer{}
	e := newEnv(t, envConfig{script: x, opts: Options{Logger: slog.New(slog.NewTextHandler(logs, nil))}})
	poison := []int{1, 2, 3, 4, 5, 6, 7}

	code, _, b := e.post("/v1/completions", map[string]any{"prompt": poison, "max_tokens": 3})
	eb := decode[apiErrorBody](t, b)
	if code != 500 || eb.Error == nil || eb.Error.Code != 500 || !strings.Contains(eb.Error.Message, "injected") {
		t.Errorf("non-streamed: %d %s; want a 500 naming the panic", code, b)
	}
	payloads := e.stream("/v1/completions", map[string]any{"prompt": poison, "max_tokens": 3, "stream": true})
	if len(payloads) < 2 || payloads[len(payloads)-1] != "[DONE]" || !strings.Contains(payloads[len(payloads)-2], `"code":500`) {
		t.Errorf("streamed: %q; want a 500 error event, then [DONE]", payloads)
	}
	e.okCompletion()
	if n := e.sched.StepPanics(); n != 2 {
		t.Errorf("StepPanics = %d, want 2", n)
	}
	if !strings.Contains(logs.String(), "scheduler step panicked") {
		t.Errorf("the panic was not logged: %q", logs.String())
	}
}

// rawConn opens a connection to the test server for hand-written requests.
func (e *env) rawConn() net.Conn {
	e.t.Helper()
	c, err := net.Dial("tcp", e.http.Listener.Addr().String())
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c
}

// readStatus reads one response's status code from a raw connection.
func readStatus(t *testing.T, c net.Conn, within time.Duration) (int, string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(within))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no response within %s: %v", within, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestABodyThatNeverCompletesGets408AndHoldsNoLimiterSlot(t *testing.T) {
	e := newEnv(t, envConfig{opts: Options{RateLimitConcurrency: 1, BodyTimeout: 300 * time.Millisecond}})
	// Four clients promise 100 bytes and send 10, as in the issue.
	var slow []net.Conn
	for range 4 {
		c := e.rawConn()
		fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"prompt\":")
		slow = append(slow, c)
	}
	// While they hang, the one limiter slot is free for a whole request.
	e.okCompletion()
	for i, c := range slow {
		code, body := readStatus(t, c, 5*time.Second)
		if code != http.StatusRequestTimeout || !strings.Contains(body, `"code":408`) {
			t.Errorf("slow client %d: %d %s; want an OpenAI-shaped 408", i, code, body)
		}
	}
	e.okCompletion()
}

func TestAnEndlessChunkedBodyGets413(t *testing.T) {
	e := newEnv(t, envConfig{opts: Options{MaxBodyBytes: 1 << 16}})
	c := e.rawConn()
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
	done := make(chan struct{})
	go func() { // keeps sending until the server hangs up
		defer close(done)
		chunk := strings.Repeat("a", 4096)
		for {
			if _, err := fmt.Fprintf(c, "%x\r\n%s\r\n", len(chunk), chunk); err != nil {
				return
			}
		}
	}()
	code, body := readStatus(t, c, 5*time.Second)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "larger than 65536 bytes") {
		t.Errorf("%d %s; want 413", code, body)
	}
	c.Close()
	<-done
	e.okCompletion()
}

func TestNoParsingSlotWithinTheWaitIs503WithRetryAfter(t *testing.T) {
	e := newEnv(t, envConfig{opts: Options{MaxParsing: 1, ParseWait: 50 * time.Millisecond}})
	e.srv.parsing <- struct{}{} // the one slot is busy
	code, h, b := e.post("/v1/completions", map[string]any{"prompt": "hi", "max_tokens": 1})
	if code != 503 || h.Get("Retry-After") != "1" || !strings.Contains(string(b), `"code":503`) {
		t.Errorf("%d Retry-After %q %s; want 503 with Retry-After 1", code, h.Get("Retry-After"), b)
	}
	<-e.srv.parsing
	e.okCompletion()
}

func TestAStreamOutlivesTheBodyDeadline(t *testing.T) {
	// The body deadline is cleared once the body is read: a stream longer
	// than it is not cut.
	x := newScript(nil, 'x')
	x.delay = 2 * time.Millisecond
	e := newEnv(t, envConfig{script: x, opts: Options{BodyTimeout: 50 * time.Millisecond}})
	payloads := e.stream("/v1/completions", map[string]any{"prompt": "hi", "max_tokens": 100, "ignore_eos": true, "stream": true})
	if n := len(payloads); n < 2 || payloads[n-1] != "[DONE]" || strings.Contains(strings.Join(payloads, ""), `"error"`) {
		t.Fatalf("the stream ended early: %d payloads, last %q", n, payloads[max(0, n-2):])
	}
}

func TestStopTokenIDsAndStopListsAreBoundedWhileDecoded(t *testing.T) {
	e := newEnv(t, envConfig{})
	ids := "[" + strings.Repeat("1,", 200000) + "1]"
	code, _, b := e.post("/v1/completions", `{"prompt":"hi","stop_token_ids":`+ids+`}`)
	if code != 400 || !strings.Contains(string(b), "stop_token_ids takes at most 1024 ids, got 200001") {
		t.Errorf("stop_token_ids: %d %s", code, b)
	}
	stops := `["a"` + strings.Repeat(`,"b"`, 100000) + `]`
	code, _, b = e.post("/v1/completions", `{"prompt":"hi","stop":`+stops+`}`)
	if code != 400 || !strings.Contains(string(b), "at most 4") {
		t.Errorf("stop: %d %s", code, b)
	}
	batch := `[` + strings.Repeat(`"a",`, 100000) + `"a"]`
	code, _, b = e.post("/v1/completions", `{"prompt":`+batch+`}`)
	if code != 400 || !strings.Contains(string(b), "batch") {
		t.Errorf("a batch of prompts: %d %s", code, b)
	}
	e.okCompletion()
}

func TestBodiesBeingReadShareABudgetAndGiveItBack(t *testing.T) {
	e := newEnv(t, envConfig{opts: Options{MaxBufferedBytes: 64 << 10, BodyTimeout: 300 * time.Millisecond}})
	// A client that sent 40 KiB of a 100 KiB body holds a 64 KiB buffer.
	c := e.rawConn()
	fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 102400\r\n\r\n{\"prompt\":\"%s", strings.Repeat("a", 40<<10))
	waitFor(t, "the slow body to be buffered", func() bool { return e.srv.buffered.Load() == 64<<10 })
	code, h, b := e.post("/v1/completions", map[string]any{"prompt": "hi", "max_tokens": 1})
	if code != 503 || h.Get("Retry-After") != "1" || !strings.Contains(string(b), "too many request bodies") {
		t.Errorf("with the budget spent: %d %s; want 503 with Retry-After 1", code, b)
	}
	if code, _ := readStatus(t, c, 5*time.Second); code != http.StatusRequestTimeout {
		t.Errorf("the slow body: %d, want 408", code)
	}
	e.okCompletion()
	if n := e.srv.buffered.Load(); n != 0 {
		t.Errorf("%d bytes of the budget were never given back", n)
	}
}
