package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/endpoints/endpointstest/hosted"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

// A provider that refuses ignore_eos in its own words (Gemini's array,
// Groq's "property … is unsupported") stops the run at its first probe with
// the server's sentence and the switch that leaves the field out; with it,
// the calibration and the load complete, n from the usage Gemini puts on its
// finish chunk (envoyproxy/ai-gateway#1503).
func TestAHostedProviderRefusingIgnoreEOSNamesItsSentenceAndTheSwitch(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, body, sentence string }{
		{"Gemini", hosted.GeminiUnknownIgnoreEOS, `HTTP 400: Invalid JSON payload received. Unknown name "ignore_eos": Cannot find field.`},
		{"Groq", hosted.GroqUnknownIgnoreEOS, `HTTP 400: property 'ignore_eos' is unsupported, did you mean 'stop'?`},
	} {
		var refused atomic.Int64
		srv := endpointstest.New(func(r endpointstest.Request) endpointstest.Behavior {
			if r.IgnoreEOS {
				refused.Add(1)
				return endpointstest.Behavior{Fail: endpointstest.Status, Status: 400, Body: c.body}
			}
			return endpointstest.Behavior{Usage: endpointstest.UsageInFinish}
		})
		o := testOptions(t, srv, "60e1a1e0")
		spec := []Spec{{Name: "x", N: 3, In: 120, Out: 6}}
		_, _, err := Prepare(context.Background(), o, spec)
		if err == nil || !strings.Contains(err.Error(), c.sentence+"; the endpoint refuses a field: --ignore-eos=false leaves ignore_eos out)") {
			t.Errorf("%s: %v: want %q and the --ignore-eos=false hint", c.name, err, c.sentence)
		}
		if n := refused.Load(); n != 1 {
			t.Errorf("%s: %d requests refused, want the one probe", c.name, n)
		}
		o.Shape.IgnoreEOS = false
		plans, _, err := Prepare(context.Background(), o, spec)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, r := range RunPhase(context.Background(), o, plans[0]).Records {
			if !r.Completed() || r.N != 6 || r.NSource != schema.NFromUsage {
				t.Errorf("%s: request %d: %+v, want completed with n 6 from usage", c.name, r.I, r)
			}
		}
		srv.Close()
	}
}

// A provider's busy answers during the load are kept apart by what the
// server said: Gemini's quota 429 is rate_limited, Anthropic's 529
// overloaded_error is queue_full (load shed, as a 503) whose error_kinds key names
// "Overloaded"; each record keeps the status and Retry-After, and the key
// quotes the server's message, not its JSON.
func TestAHostedProvidersBusyAnswersAreKeptApartWithTheirMessage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		status int
		body   string
		class  schema.Class
		kind   string
	}{
		{"Gemini's quota", 429, hosted.GeminiQuota, schema.RateLimited, "HTTP 429: Resource has been exhausted (e.g. check quota)."},
		{"Anthropic's overload", 529, hosted.AnthropicOverloaded, schema.QueueFull, "HTTP 529: Overloaded"},
	} {
		srv := endpointstest.New(func(r endpointstest.Request) endpointstest.Behavior {
			if r.I%2 == 1 {
				return endpointstest.Behavior{Fail: endpointstest.Status, Status: c.status, Body: c.body, RetryAfter: "7"}
			}
			return endpointstest.Behavior{}
		})
		o := testOptions(t, srv, "60e1a1e1")
		run := RunPhase(context.Background(), o, plan(4, 64, 5))
		s := summary.Phase("p", 64, 5, run.Records, schema.StatusComplete)
		if s.ByClass[c.class] != 2 || s.Completed != 2 || s.ErrorKinds[c.kind] != 2 || len(s.ErrorKinds) != 1 {
			t.Errorf("%s: by class %v, completed %d, error kinds %v: want 2 %s keyed %q", c.name, s.ByClass, s.Completed, s.ErrorKinds, c.class, c.kind)
		}
		for _, r := range run.Records {
			if !r.Completed() && (r.Status != c.status || r.RetryAfter != "7") {
				t.Errorf("%s: request %d: status %d, Retry-After %q, want %d and 7", c.name, r.I, r.Status, r.RetryAfter, c.status)
			}
		}
		srv.Close()
	}
}

// A probe is not load: a busy endpoint gets two more chances, and
// Anthropic's 529 overloaded_error ("temporarily overloaded", for all
// customers, not the caller's limit) is busy as a 429 or 503 is. A
// calibration that meets one 529 goes on; one that meets only 529s stops
// after three probes, naming the server's "Overloaded".
func TestACalibrationProbeMeetingAnthropicsOverloadTriesAgain(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		overload int64 // how many probes are answered 529
		fails    bool
	}{
		{"once", 1, false},
		{"always", 1 << 20, true},
	} {
		var sent atomic.Int64
		srv := endpointstest.New(func(r endpointstest.Request) endpointstest.Behavior {
			if sent.Add(1) <= c.overload {
				return endpointstest.Behavior{Fail: endpointstest.Status, Status: 529, Body: hosted.AnthropicOverloaded, RetryAfter: "1"}
			}
			return endpointstest.Behavior{}
		})
		o := testOptions(t, srv, "60e1a1e2")
		_, _, err := Prepare(context.Background(), o, []Spec{{Name: "x", N: 1, In: 60, Out: 4}})
		switch {
		case c.fails && (err == nil || !strings.Contains(err.Error(), "HTTP 529: Overloaded")):
			t.Errorf("%s: %v, want the calibration refused with HTTP 529: Overloaded", c.name, err)
		case !c.fails && err != nil:
			t.Errorf("%s: %v, want the calibration through after one 529", c.name, err)
		}
		if c.fails && sent.Load() != 3 {
			t.Errorf("%s: %d probes sent, want 3", c.name, sent.Load())
		}
		srv.Close()
	}
}

// thinkingServer answers chat as a model that thinks think tokens before
// its answer, within max_tokens, streaming none of it and counting it in
// completion_tokens_details.reasoning_tokens, with usage on the finish
// chunk (Gemini 2.5's thinking counts in its output cap; whether its
// OpenAI-compatible route reports reasoning_tokens is unverified).
func thinkingServer(t *testing.T, think int) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req endpoints.ChatRequest
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || !req.Stream || len(req.Messages) != 1 {
			http.Error(w, `{"error":{"message":"not served"}}`, http.StatusNotFound)
			return
		}
		prompt := 10 + (len(req.Messages[0].Content)+3)/4
		hidden := min(think, req.MaxTokens)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n")
		for range req.MaxTokens - hidden {
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" a\"}}]}\n\n")
		}
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d,\"completion_tokens_details\":{\"reasoning_tokens\":%d}}}\n\ndata: [DONE]\n\n",
			prompt, req.MaxTokens, prompt+req.MaxTokens, hidden)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A model whose hidden thinking counts in max_tokens (Gemini 2.5) can
// spend a small OUT before any content: the shape probe's empty stream is
// said as that, from the usage's own reasoning_tokens, with what to change;
// an OUT with room for an answer runs.
func TestAThinkingModelsCapSpentBeforeAnyContentIsSaidSo(t *testing.T) {
	t.Parallel()
	srv := thinkingServer(t, 24)
	ep := resolve(t, srv.URL+"/v1", "gemini-2.5-flash")
	o := &Options{Endpoint: ep, Shape: Shape{Model: "gemini-2.5-flash"},
		Limits: endpoints.StreamLimits{TTFT: 10 * time.Second, Stall: 10 * time.Second}, ConnectTimeout: 2 * time.Second}
	_, _, err := Prepare(context.Background(), o, []Spec{{Name: "x", N: 1, In: 64, Out: 16}})
	if err == nil || !strings.Contains(err.Error(), "empty") || !strings.Contains(err.Error(), "the usage counts 16 reasoning tokens of 16 and no content") || !strings.Contains(err.Error(), "a larger OUT") {
		t.Fatalf("%v: want the empty shape probe said as a cap spent on hidden reasoning", err)
	}
	if _, _, err := Prepare(context.Background(), o, []Spec{{Name: "x", N: 1, In: 64, Out: 40}}); err != nil {
		t.Fatal(err)
	}
}
