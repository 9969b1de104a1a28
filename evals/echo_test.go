package evals

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
)

// choiceLogprobs digs the logprobs object out of a fake echo answer.
func choiceLogprobs(ans map[string]any) map[string]any {
	return ans["choices"].([]any)[0].(map[string]any)["logprobs"].(map[string]any)
}

// setLogprobs rewrites every prompt logprob but the first with v(i).
func setLogprobs(ans map[string]any, v func(i int) any) {
	lp := choiceLogprobs(ans)
	lps := lp["token_logprobs"].([]any)
	for i := 1; i < len(lps); i++ {
		lps[i] = v(i)
	}
}

// setLists replaces each of the four lists of a fake echo answer's
// logprobs (tokens, token_logprobs, top_logprobs, text_offset) with v(list).
func setLists(ans map[string]any, v func(l []any) []any) {
	lp := choiceLogprobs(ans)
	for _, k := range []string{"tokens", "token_logprobs", "top_logprobs", "text_offset"} {
		lp[k] = v(lp[k].([]any))
	}
}

const hostedEcho500 = `{"error":{"message":"ValidationError.__new__() missing 1 required positional argument: 'line_errors'","type":"InternalServerError","code":500}}`

func TestEachEchoFailureGetsItsKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		configure func(f *fakeLM)
		kind      Kind
		status    int
		body      string
	}{
		{"a 400 to echo is echo_rejected", func(f *fakeLM) {
			f.echoStatus, f.echoBody = 400, `{"error":{"message":"max_tokens must be positive"}}`
		}, EchoRejected, 400, "max_tokens must be positive"},
		{"a 500 to echo while plain generation works is echo_server_error", func(f *fakeLM) {
			f.echoStatus, f.echoBody = 500, hostedEcho500
		}, EchoServerError, 500, "line_errors"},
		{"llama.cpp's 500 Unsupported param: echo is echo_server_error", func(f *fakeLM) {
			f.echoStatus, f.echoBody = 500, `{"error":{"code":500,"message":"Unsupported param: echo","type":"server_error"}}`
		}, EchoServerError, 500, "Unsupported param: echo"},
		{"a 500 to everything is a server failure, not an echo failure", func(f *fakeLM) {
			f.echoStatus, f.echoBody, f.plainStatus = 500, `{"error":{"message":"boom"}}`, 500
		}, HTTPError, 500, "boom"},
		{"a 429 is not an echo rejection", func(f *fakeLM) {
			f.echoStatus, f.echoBody = 429, `{"error":{"message":"slow down"}}`
		}, HTTPError, 429, "slow down"},
		{"logprobs for the generated token only are echo_ignored", func(f *fakeLM) {
			f.mutate = func(ans map[string]any, _ []any) {
				setLists(ans, func(l []any) []any { return l[len(l)-1:] })
				ans["choices"].([]any)[0].(map[string]any)["text"] = "x"
			}
		}, EchoIgnored, 200, ""},
		{"null logprobs are logprobs_missing", func(f *fakeLM) {
			f.mutate = func(ans map[string]any, _ []any) { ans["choices"].([]any)[0].(map[string]any)["logprobs"] = nil }
		}, LogprobsMissing, 200, ""},
		{"one entry more than prompt and generation is echo_misaligned", func(f *fakeLM) {
			f.mutate = func(ans map[string]any, _ []any) {
				setLists(ans, func(l []any) []any { return append(l, l[len(l)-1]) })
			}
		}, EchoMisaligned, 200, ""},
		{"usage.prompt_tokens off by one is echo_misaligned", func(f *fakeLM) {
			f.mutate = func(ans map[string]any, _ []any) {
				u := ans["usage"].(map[string]any)
				u["prompt_tokens"] = u["prompt_tokens"].(int) - 1
			}
		}, EchoMisaligned, 200, ""},
		{"no usage is echo_misaligned", func(f *fakeLM) {
			f.mutate = func(ans map[string]any, _ []any) { delete(ans, "usage") }
		}, EchoMisaligned, 200, ""},
		{"a first prompt logprob that is not null is echo_misaligned", func(f *fakeLM) {
			f.mutate = func(ans map[string]any, _ []any) { choiceLogprobs(ans)["token_logprobs"].([]any)[0] = -1.5 }
		}, EchoMisaligned, 200, ""},
		{"text_offset going backwards is echo_misaligned", func(f *fakeLM) {
			f.mutate = func(ans map[string]any, _ []any) { choiceLogprobs(ans)["text_offset"].([]any)[5] = 1 }
		}, EchoMisaligned, 200, ""},
		{"positive logprobs are echo_implausible", func(f *fakeLM) {
			f.mutate = func(ans map[string]any, _ []any) { setLogprobs(ans, func(int) any { return 0.7 }) }
		}, EchoImplausible, 200, ""},
		{"all-zero logprobs are echo_implausible", func(f *fakeLM) {
			f.mutate = func(ans map[string]any, _ []any) { setLogprobs(ans, func(int) any { return 0.0 }) }
		}, EchoImplausible, 200, ""},
		{"logprobs clamped at -9999 are echo_implausible", func(f *fakeLM) {
			f.mutate = func(ans map[string]any, _ []any) { setLogprobs(ans, func(int) any { return -9999.0 }) }
		}, EchoImplausible, 200, ""},
		{"a null logprob inside the prompt is echo_implausible", func(f *fakeLM) {
			f.mutate = func(ans map[string]any, _ []any) { choiceLogprobs(ans)["token_logprobs"].([]any)[3] = nil }
		}, EchoImplausible, 200, ""},
		{"one distribution repeated at every position is echo_implausible", func(f *fakeLM) {
			f.mutate = func(ans map[string]any, _ []any) {
				tops := choiceLogprobs(ans)["top_logprobs"].([]any)
				for i := 1; i < len(tops); i++ {
					tops[i] = map[string]any{"the": -0.3}
				}
			}
		}, EchoImplausible, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeLM(t, tc.configure)
			probe, fail := ProbeEcho(context.Background(), f.client(), "fake")
			if probe != nil || fail == nil {
				t.Fatalf("probe passed: %+v", probe)
			}
			if Kind(fail.Kind) != tc.kind || fail.HTTPStatus != tc.status {
				t.Fatalf("kind %s HTTP %d (%s), want %s HTTP %d", fail.Kind, fail.HTTPStatus, fail.Detail, tc.kind, tc.status)
			}
			if !strings.Contains(fail.Body, tc.body) || len(fail.Body) > 200 || fail.Body == "" {
				t.Errorf("body %q: want the answer's first 200 bytes, holding %q", fail.Body, tc.body)
			}
			if fail.Request["echo"] != true || fail.Request["logprobs"] != 1 || fail.Request["max_tokens"] != 1 || fail.Request["temperature"] != 0 {
				t.Errorf("request shape %v", fail.Request)
			}
			if n := f.count("echo"); n != 1 {
				t.Errorf("%d echo requests: a deterministic answer is never retried", n)
			}

			// No eval that needs echo scores on such an endpoint.
			res := f.run("ppl", Config{Window: 64}, SampleDocs())
			wantStatus := StatusFailed
			if tc.kind.Unsupported() {
				wantStatus = StatusUnsupported
			}
			if res.Status != wantStatus || res.Metrics != nil || KindOf(res.Failure) != tc.kind {
				t.Errorf("ppl: %+v, want status %s, no metrics, kind %s", res, wantStatus, tc.kind)
			}
		})
	}
}

func TestTheProbePassesAWellBehavedEndpoint(t *testing.T) {
	t.Parallel()
	f := newFakeLM(t, nil)
	probe, fail := ProbeEcho(context.Background(), f.client(), "fake")
	if fail != nil {
		t.Fatalf("%+v", fail)
	}
	if probe.Echo.PromptTokens != len(ProbeText) || len(probe.Echo.Logprobs) != len(ProbeText) {
		t.Fatalf("echo %+v", probe.Echo)
	}
	want := 0.0
	for i := 1; i < len(ProbeText); i++ {
		want -= byteLP(ProbeText[i])
	}
	if got := probe.MeanNLL * float64(len(ProbeText)-1); abs(got-want) > 1e-9 {
		t.Errorf("summed nll %v, want %v", got, want)
	}
	// SGLang answers text_offset -1 everywhere ("not supported yet"): fine.
	g := newFakeLM(t, func(f *fakeLM) {
		f.mutate = func(ans map[string]any, _ []any) {
			offs := choiceLogprobs(ans)["text_offset"].([]any)
			for i := range offs {
				offs[i] = -1
			}
		}
	})
	if _, fail := ProbeEcho(context.Background(), g.client(), "fake"); fail != nil {
		t.Errorf("SGLang's text_offset -1: %+v", fail)
	}
}

func TestOnlyRequestsWithoutAnswerAreRetried(t *testing.T) {
	t.Parallel()
	f := newFakeLM(t, func(f *fakeLM) { f.reset = true })
	_, fail := probeEcho(context.Background(), sender{c: f.client(), backoff: time.Millisecond}, "fake")
	if KindOf(fail) != Transport || fail.HTTPStatus != 0 {
		t.Fatalf("%+v, want transport", fail)
	}
	if n := f.count("echo"); n != Retries+1 {
		t.Errorf("%d tries, want %d", n, Retries+1)
	}
	if !strings.Contains(fail.Detail, "tries") {
		t.Errorf("detail %q", fail.Detail)
	}
}

func TestARequestTimeoutIsNotRetried(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.Copy(io.Discard, r.Body) // so the server notices the client leave
		<-r.Context().Done()        // a server that never answers
	}))
	defer srv.Close()
	c := endpoints.NewClient(&endpoints.Endpoint{BaseURL: srv.URL + "/v1"}, endpoints.NewTransport(endpoints.TransportOptions{}))
	_, fail := probeEcho(context.Background(), sender{c: c, timeout: 50 * time.Millisecond, backoff: time.Millisecond}, "fake")
	if KindOf(fail) != Transport || !strings.Contains(fail.Detail, "timeout") {
		t.Fatalf("%+v", fail)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d calls, want 1", n)
	}
}

// A redirect or a compressed body is an answer, not a lost request: asking
// again would get the same, so each is sent once and is an http_error
// carrying the 3xx or the status of the compressed answer.
func TestAnAnswerTheClientCannotUseIsNotRetried(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		answer func(w http.ResponseWriter)
		status int
		detail string
	}{
		{"a 307 to another origin", func(w http.ResponseWriter) {
			w.Header().Set("Location", "http://127.0.0.2:9/v1/completions")
			w.WriteHeader(http.StatusTemporaryRedirect)
		}, 307, "http://127.0.0.2:9"},
		{"a gzip body nobody asked for", func(w http.ResponseWriter) {
			w.Header().Set("Content-Encoding", "gzip")
			w.WriteHeader(http.StatusOK)
			w.Write([]byte{0x1f, 0x8b, 8, 0})
		}, 200, "gzip-compressed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				io.Copy(io.Discard, r.Body)
				tc.answer(w)
			}))
			defer srv.Close()
			c := endpoints.NewClient(&endpoints.Endpoint{BaseURL: srv.URL + "/v1"}, endpoints.NewTransport(endpoints.TransportOptions{}))
			_, fail := probeEcho(context.Background(), sender{c: c, backoff: time.Millisecond}, "fake")
			if KindOf(fail) != HTTPError || fail.HTTPStatus != tc.status || !strings.Contains(fail.Detail, tc.detail) {
				t.Fatalf("%+v, want http_error %d naming %q", fail, tc.status, tc.detail)
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("%d calls, want 1", n)
			}
		})
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
