package conform

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
)

// These tests put a misbehaving proxy in front of a healthy engine: each
// breaks one feature the way some real server does, and the check of that
// feature must fail, saying why.

// middleware wraps the engine's handler.
type middleware func(next http.Handler) http.Handler

// rewriteRequest edits the JSON body of every POST before the engine reads it.
func rewriteRequest(edit func(path string, body map[string]any)) middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				raw, _ := io.ReadAll(r.Body)
				var body map[string]any
				if json.Unmarshal(raw, &body) == nil {
					edit(r.URL.Path, body)
					raw, _ = json.Marshal(body)
				}
				r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(raw)), int64(len(raw))
			}
			next.ServeHTTP(w, r)
		})
	}
}

// rewriteAnswer edits every whole JSON answer of status (and path) before
// the client reads it.
func rewriteAnswer(path string, status int, edit func(body map[string]any)) middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := &recorder{ResponseWriter: w, status: http.StatusOK}
			next.ServeHTTP(rec, r)
			if rec.streaming {
				return
			}
			b := rec.buf.Bytes()
			var body map[string]any
			if r.URL.Path == path && rec.status == status && json.Unmarshal(b, &body) == nil {
				edit(body)
				b, _ = json.Marshal(body)
			}
			w.Header().Set("Content-Length", strconv.Itoa(len(b)))
			w.WriteHeader(rec.status)
			w.Write(b)
		})
	}
}

// recorder holds a whole answer back; a stream passes through untouched.
type recorder struct {
	http.ResponseWriter
	status    int
	buf       bytes.Buffer
	streaming bool
	wrote     bool
}

func (r *recorder) WriteHeader(code int) {
	r.status = code
	if r.Header().Get("Content-Type") == "text/event-stream" {
		r.streaming = true
		r.ResponseWriter.WriteHeader(code)
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.streaming {
		return r.ResponseWriter.Write(b)
	}
	return r.buf.Write(b)
}

func (r *recorder) Flush() {
	if r.streaming {
		http.NewResponseController(r.ResponseWriter).Flush()
	}
}

// rewriteEvents replaces each streamed event: edit gets the event's data
// and returns the bytes to send in its place. The engine writes one whole
// event per Write.
func rewriteEvents(edit func(data []byte) []byte) middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(&eventWriter{ResponseWriter: w, edit: edit}, r)
		})
	}
}

type eventWriter struct {
	http.ResponseWriter
	edit func(data []byte) []byte
}

func (e *eventWriter) Write(b []byte) (int, error) {
	data, ok := bytes.CutPrefix(b, []byte("data: "))
	if !ok || e.Header().Get("Content-Type") != "text/event-stream" {
		return e.ResponseWriter.Write(b)
	}
	_, err := e.ResponseWriter.Write(e.edit(bytes.TrimSpace(data)))
	return len(b), err
}

func (e *eventWriter) Flush() { http.NewResponseController(e.ResponseWriter).Flush() }

// errWriter notes whether a write to the client failed.
type errWriter struct {
	http.ResponseWriter
	failed bool
}

func (e *errWriter) Write(b []byte) (int, error) {
	n, err := e.ResponseWriter.Write(b)
	e.failed = e.failed || err != nil
	return n, err
}

func (e *errWriter) FlushError() error {
	err := http.NewResponseController(e.ResponseWriter).Flush()
	e.failed = e.failed || err != nil
	return err
}

// editEvent applies edit to each JSON event, keeping [DONE].
func editEvent(edit func(ev map[string]any)) func([]byte) []byte {
	return func(data []byte) []byte {
		var ev map[string]any
		if json.Unmarshal(data, &ev) == nil {
			edit(ev)
			data, _ = json.Marshal(ev)
		}
		return append(append([]byte("data: "), data...), "\n\n"...)
	}
}

// beyond answers requests to the generation endpoints past n in flight
// with refuse; the others reach the engine.
func beyond(n int, refuse http.HandlerFunc) middleware {
	var inflight atomic.Int64
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				next.ServeHTTP(w, r)
				return
			}
			defer inflight.Add(-1)
			if inflight.Add(1) > int64(n) {
				// Read the body as a server does: only then does Go's
				// server watch the connection, and end r's context when
				// the client leaves.
				io.Copy(io.Discard, r.Body)
				refuse(w, r)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func jsonError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "Error", "code": status}})
	w.Write(b)
}

func isStream(body map[string]any) bool { s, _ := body["stream"].(bool); return s }

func TestEachCheckFailsAgainstAServerThatBreaksItsFeature(t *testing.T) {
	t.Parallel()
	e := startEngine(t, nil)
	var lastMessages struct {
		sync.Mutex
		v any
	}
	for _, tc := range []struct {
		name  string
		mw    middleware
		check string
		probe int
		// want is what the failure's detail must say.
		want string
	}{
		{"models are listed without the served one", rewriteAnswer("/v1/models", 200, func(b map[string]any) {
			b["data"] = []map[string]any{{"id": "some-other-model", "object": "model"}}
		}), "models", 0, "is not among the 1 listed: some-other-model"},
		{"a chat answer is labelled as a completion", rewriteAnswer("/v1/chat/completions", 200, func(b map[string]any) {
			b["object"] = "text_completion"
		}), "chat", 0, `object "text_completion"`},
		{"usage does not add up", rewriteAnswer("/v1/chat/completions", 200, func(b map[string]any) {
			if u, ok := b["usage"].(map[string]any); ok {
				u["total_tokens"] = u["total_tokens"].(float64) + 1
			}
		}), "usage", 0, "is not prompt"},
		{"the first delta has no role", rewriteEvents(editEvent(func(ev map[string]any) {
			for _, c := range ev["choices"].([]any) {
				delete(c.(map[string]any)["delta"].(map[string]any), "role")
			}
		})), "stream", 0, `no role "assistant"`},
		{"usage rides on a chunk with a choice", rewriteEvents(editEvent(func(ev map[string]any) {
			if ev["usage"] != nil {
				ev["choices"] = []map[string]any{{"index": 0, "delta": map[string]any{}, "finish_reason": nil}}
			}
		})), "stream-usage", 0, "the usage chunk has 1 choices"},
		{"ignore_eos streams end a token early", rewriteRequest(func(_ string, b map[string]any) {
			if b["ignore_eos"] == true {
				b["max_tokens"] = b["max_tokens"].(float64) - 1
			}
		}), "max-tokens", 0, "max_tokens 24 with ignore_eos gave usage.completion_tokens 23"},
		{"temperature 0 is sampled", rewriteRequest(func(_ string, b map[string]any) {
			if b["temperature"] == 0.0 {
				// Sampled, and never cut short by an early EOS: the "chat"
				// check this one needs must still see text.
				b["temperature"], b["ignore_eos"] = 1.0, true
			}
		}), "temperature-0", 0, "two answers at temperature 0 differ"},
		{"stop strings are ignored", rewriteRequest(func(_ string, b map[string]any) { delete(b, "stop") }), "stop", 0, "appears in the answer"},
		{"seeds are ignored", rewriteRequest(func(_ string, b map[string]any) { delete(b, "seed") }), "seed", 0, "with seed 1234 at temperature 1 differ"},
		{"top_logprobs are dropped", rewriteRequest(func(_ string, b map[string]any) { delete(b, "top_logprobs") }), "logprobs", 0, "0 top_logprobs, want 3"},
		{"max_tokens 0 generates", rewriteRequest(func(_ string, b map[string]any) {
			if b["max_tokens"] == 0.0 {
				b["max_tokens"] = 4
			}
		}), "echo-max-tokens-0", 0, "max_tokens 0 generated 4 tokens"},
		{"token ids are read as text", rewriteRequest(func(_ string, b map[string]any) {
			if ids, ok := b["prompt"].([]any); ok {
				s, _ := json.Marshal(ids)
				b["prompt"] = string(s)
			}
		}), "prompt-token-ids", 0, "the ids were not read as tokens"},
		{"malformed JSON is a 500", func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				raw, _ := io.ReadAll(r.Body)
				if !json.Valid(raw) {
					jsonError(w, 500, "Internal Server Error")
					return
				}
				r.Body = io.NopCloser(bytes.NewReader(raw))
				next.ServeHTTP(w, r)
			})
		}, "bad-request", 0, "malformed JSON: HTTP 500"},
		{"errors come as SGLang's bare object", rewriteAnswer("/v1/chat/completions", 400, func(b map[string]any) {
			e := b["error"].(map[string]any)
			delete(b, "error")
			b["object"], b["message"] = "error", e["message"]
		}), "bad-request", 0, `no "error" object`},
		{"errors name no type", rewriteAnswer("/v1/chat/completions", 400, func(b map[string]any) {
			delete(b["error"].(map[string]any), "type")
		}), "error-type", 0, `malformed JSON: the "error" object has no "type"`},
		{"errors give their type as a number", rewriteAnswer("/v1/chat/completions", 400, func(b map[string]any) {
			b["error"].(map[string]any)["type"] = 400
		}), "error-type", 0, `"type" is 400, not a non-empty string`},
		{"overlong requests are cut to fit", rewriteRequest(func(_ string, b map[string]any) {
			if b["max_tokens"] == float64(overflowTokens) {
				b["max_tokens"] = 4
			}
		}), "context-overflow", 0, "answered 200"},
		{"the model field is ignored", rewriteRequest(func(_ string, b map[string]any) { b["model"] = e.ModelName() }),
			"unknown-model", 0, "the model field is ignored"},
		{"thinking stays in the content with its tags", rewriteAnswer("/v1/chat/completions", 200, func(b map[string]any) {
			m := b["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
			if r, _ := m["reasoning_content"].(string); r != "" {
				m["content"], m["reasoning_content"] = "<think>"+r+"</think>", nil
			}
		}), "reasoning", 0, "<think> left in the text"},
		{"a tool call is left in the content", rewriteAnswer("/v1/chat/completions", 200, func(b map[string]any) {
			m := b["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
			m["content"] = "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"
		}), "tool-calls", 0, "tool_calls is empty, but the content holds a call"},
		{"n is ignored", rewriteRequest(func(_ string, b map[string]any) { delete(b, "n") }), "n", 0, "200 with one choice"},
		{"concurrent streams get each other's prompts", rewriteRequest(func(_ string, b map[string]any) {
			if b["ignore_eos"] == true && isStream(b) {
				lastMessages.Lock()
				b["messages"], lastMessages.v = lastMessages.v, b["messages"]
				if b["messages"] == nil {
					b["messages"] = lastMessages.v
				}
				lastMessages.Unlock()
			}
		}), "concurrent-streams", 0, "but its prompt alone counts"},
		{"a client hanging up breaks the server", func() middleware {
			var broken atomic.Bool
			return func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if broken.Load() {
						jsonError(w, 500, "worker died")
						return
					}
					ew := &errWriter{ResponseWriter: w}
					next.ServeHTTP(ew, r)
					// The engine ends a stream when a write fails or the
					// request's context ends: either way the client left.
					if ew.failed || r.Context().Err() != nil {
						broken.Store(true)
					}
				})
			}
		}(), "disconnect", 0, "HTTP 500: worker died"},
		{"each chunk's JSON is split over two data lines", rewriteEvents(func(data []byte) []byte {
			// Valid SSE (data lines join with a newline, which JSON allows
			// between tokens), but a line-by-line client breaks on it.
			if i := bytes.IndexByte(data, ','); i > 0 && data[0] == '{' {
				return []byte("data: " + string(data[:i+1]) + "\ndata: " + string(data[i+1:]) + "\n\n")
			}
			return append(append([]byte("data: "), data...), "\n\n"...)
		}), "go-openai", 0, "go-openai Recv"},
		{"429s carry no Retry-After", beyond(2, func(w http.ResponseWriter, r *http.Request) {
			jsonError(w, http.StatusTooManyRequests, "slow down")
		}), "rate-limit", 8, "carry no valid Retry-After"},
		{"requests past capacity hang", beyond(2, func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}), "queue-overflow", 8, "hung (ttft_timeout)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tc.mw(e.Server.Handler()))
			defer srv.Close()
			cfg := testConfig(srv.URL+"/v1", e.ModelName())
			cfg.Only, cfg.ProbeLimits = []string{tc.check}, tc.probe
			if tc.check == "queue-overflow" {
				// The requests past capacity hang to the time limit: what
				// each costs the test. The checks the probe needs send a
				// few short requests each, and the two served burst
				// requests stream 128 tokens, well within it even on a
				// loaded machine under -race. The 429 case hangs nothing,
				// so keeps testConfig's wide limit.
				cfg.Timeout = 10 * time.Second
			}
			res := run(t, cfg)
			t.Logf("%s: %s", tc.check, res[tc.check].Detail)
			if r := res[tc.check]; r.Status != string(Fail) || !strings.Contains(r.Detail, tc.want) {
				t.Errorf("%s: %s %q, want a failure saying %q%s", tc.check, r.Status, r.Detail, tc.want, describe(res))
			}
			for id, r := range res {
				if id != tc.check && r.Status != string(Pass) {
					t.Errorf("%s, needed by %s: %s %q", id, tc.check, r.Status, r.Detail)
				}
			}
		})
	}
}

func TestNoSecretReachesADetail(t *testing.T) {
	t.Parallel()
	const key, header = "sk-conform-secret-key", "hdr-conform-secret"
	e := startEngine(t, nil)
	// A server that quotes the request's credentials in its error, as some
	// gateways do.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		jsonError(w, 500, "denied: "+r.Header.Get("Authorization")+" "+r.Header.Get("X-Secret"))
	}))
	defer srv.Close()
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: srv.URL + "/v1", Model: e.ModelName(), Headers: []string{"X-Secret=" + header}},
		func(string) string { return key })
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(ep.BaseURL, ep.Model)
	cfg.Endpoint = ep
	res, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	quoted := false
	for _, r := range res {
		if strings.Contains(r.Detail, key) || strings.Contains(r.Detail, header) {
			t.Errorf("%s leaks a secret: %q", r.ID, r.Detail)
		}
		quoted = quoted || strings.Contains(r.Detail, "denied: Bearer *** ***")
	}
	if !quoted {
		t.Errorf("no detail quotes the server's message with the secrets masked: %+v", res)
	}
}
