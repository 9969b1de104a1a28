package conform

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/engine"
	"github.com/glmbench/glmbench/engine/enginetest"
	"github.com/glmbench/glmbench/reports/schema"
)

// startEngine runs a reference engine with a small KV pool (see
// engine/enginetest) for one test, tweaked.
func startEngine(t *testing.T, tweak func(*engine.Options)) *engine.Engine {
	t.Helper()
	return enginetest.Start(t, enginetest.With(tweak)).Engine
}

// withFaults sets the engine's faults from --fault specs.
func withFaults(t *testing.T, specs ...string) func(*engine.Options) {
	return func(o *engine.Options) {
		if err := enginetest.Faults(specs...)(o); err != nil {
			t.Fatal(err)
		}
	}
}

// testConfig is a run against baseURL with limits a healthy engine meets
// with room to spare on a busy machine: a token late by a few seconds under
// load is not a stall. A test that needs the stall limit to fire sets a
// short one of its own (testStallTimeout).
func testConfig(baseURL, model string) Config {
	return Config{Endpoint: &endpoints.Endpoint{BaseURL: baseURL, Model: model},
		Timeout: 20 * time.Second, StallTimeout: 10 * time.Second}
}

// testStallTimeout is the stall limit of a test whose stream stalls on
// purpose: what the stall costs the test.
const testStallTimeout = 2 * time.Second

// run runs the suite and returns its results by id, failing the test on
// any result without a detail.
func run(t *testing.T, cfg Config) map[string]schema.CheckResult {
	t.Helper()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]schema.CheckResult{}
	for _, r := range res {
		if r.Detail == "" {
			t.Errorf("%s %s has no detail", r.ID, r.Status)
		}
		out[r.ID] = r
	}
	return out
}

// wantResult fails the test unless check id's result in res is st with a
// detail that says says.
func wantResult(t *testing.T, res map[string]schema.CheckResult, id string, st Status, says string) {
	t.Helper()
	if r := res[id]; r.Status != string(st) || !strings.Contains(r.Detail, says) {
		t.Errorf("%s: %s %q, want %s saying %q", id, r.Status, r.Detail, st, says)
	}
}

func describe(res map[string]schema.CheckResult) string {
	var b strings.Builder
	for _, id := range IDs() {
		if r, ok := res[id]; ok {
			fmt.Fprintf(&b, "\n  %-19s %-4s %s", id, r.Status, r.Detail)
		}
	}
	return b.String()
}

func TestTheRegistryIsWellFormed(t *testing.T) {
	t.Parallel()
	if len(Checks) < 23 {
		t.Fatalf("%d checks, the issue asks for at least 23", len(Checks))
	}
	seen := map[string]bool{}
	for _, c := range Checks {
		if c.ID == "" || c.Title == "" || c.Asserts == "" || c.Request == "" || c.run == nil {
			t.Errorf("check %q lacks an id, title, assertion, request or function", c.ID)
		}
		if seen[c.ID] {
			t.Errorf("check %s is registered twice", c.ID)
		}
		// A check runs after what it needs, so the need's verdict is known,
		// and what it needs is named (a skip's detail quotes it).
		for _, n := range c.Uses {
			if !seen[n] {
				t.Errorf("check %s uses %s, which does not run before it", c.ID, n)
			}
		}
		for _, n := range c.Needs {
			if !seen[n] {
				t.Errorf("check %s needs %s, which does not run before it", c.ID, n)
			}
			if need, ok := Lookup(n); ok && need.Provides == "" {
				t.Errorf("check %s needs %s, which says nothing it Provides", c.ID, n)
			}
		}
		seen[c.ID] = true
	}
	// The first check to stream must be the one that sends several streams.
	streaming := []string{"stream", "stream-usage", "max-tokens", "concurrent-streams", "disconnect", "go-openai", "rate-limit", "queue-overflow", "tool-choice-stream"}
	for _, id := range IDs() {
		if slices.Contains(streaming, id) {
			if id != "stream" {
				t.Errorf("the first streaming check is %s, not stream", id)
			}
			break
		}
	}
}

func TestSelectAddsWhatTheChecksNeedAndRefusesWhatCannotRun(t *testing.T) {
	t.Parallel()
	got, err := Select([]string{"stop", " go-openai"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range got {
		ids = append(ids, c.ID)
	}
	if want := "chat stream stream-usage temperature-0 stop go-openai"; strings.Join(ids, " ") != want {
		t.Fatalf("selected %v, want %s (run order, needs included)", ids, want)
	}
	// A check runs with what it uses (max-tokens: whether to send
	// ignore_eos), though it does not need it.
	if got, err := Select([]string{"disconnect"}, 0); err != nil || len(got) != 3 || got[1].ID != "max-tokens" {
		t.Errorf("Select(disconnect) = %v, %v; want stream max-tokens disconnect", got, err)
	}
	if all, _ := Select(nil, 0); len(all) != len(Checks) {
		t.Fatalf("no --only selects %d checks of %d", len(all), len(Checks))
	}
	for _, tc := range []struct {
		only  []string
		probe int
		want  string
	}{
		{[]string{"stream", "nope"}, 0, `no check "nope"`},
		{[]string{"rate-limit"}, 0, "needs --probe-limits"},
	} {
		if _, err := Select(tc.only, tc.probe); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Select(%v, %d): %v, want %q", tc.only, tc.probe, err, tc.want)
		}
	}
	if _, err := Select([]string{"rate-limit"}, 8); err != nil {
		t.Errorf("rate-limit with a burst size: %v", err)
	}
}

// builtinSkips are the checks the reference engine cannot pass: its model
// has random weights and calls no tool; the probes are off by default.
var builtinSkips = map[string]string{
	"tool-calls":         "random-weight",
	"tool-choice":        "random-weight",
	"tool-choice-stream": "random-weight",
	"rate-limit":         "--probe-limits",
	"queue-overflow":     "--probe-limits",
}

// engineEither are the checks the built-in engine passes or skips as the
// machine's load decides, with what the skip says: stream-incremental
// judges 16 or more content events (or 4 each in a read of its own), and
// the engine's random-weight model, under a parallel test run's load,
// packs its 1024 tokens into a handful of events.
var engineEither = map[string]string{"stream-incremental": "too few to tell a buffered stream"}

func TestTheBuiltInEnginePassesEveryCheckItCan(t *testing.T) {
	t.Parallel()
	e := startEngine(t, nil)
	res := run(t, testConfig(e.BaseURL(), e.ModelName()))
	if len(res) != len(Checks) {
		t.Fatalf("%d results for %d checks", len(res), len(Checks))
	}
	for id, r := range res {
		why, skipped := builtinSkips[id]
		if either, ok := engineEither[id]; ok && r.Status == string(Skip) {
			why, skipped = either, true
		}
		switch {
		case skipped && (r.Status != string(Skip) || !strings.Contains(r.Detail, why)):
			t.Errorf("%s: %s %q, want a skip saying %q", id, r.Status, r.Detail, why)
		case !skipped && r.Status != string(Pass):
			t.Errorf("%s: %s %q, want pass", id, r.Status, r.Detail)
		}
	}
	if t.Failed() {
		t.Log(describe(res))
	}
}

// A fault fails exactly the checks of what it breaks; a check whose need
// could not be met at all (the need's check did not establish what it
// Provides) is a skip naming that need; every other check passes, as on a
// healthy engine (builtinSkips aside). Where a fault leaves what a need
// provides intact (streams that end without [DONE]), the checks built on it
// run, and pass on their own assertions: before the rule that a need is "can
// run at all", drop-done skipped stream-usage, max-tokens,
// concurrent-streams, disconnect and go-openai, and no-usage skipped
// disconnect.
func TestEachFaultFailsExactlyTheChecksOfWhatItBreaks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fault string
		probe int
		// fail maps each check that must fail to what its detail must
		// say, skip each check that must be a skip; either each check that
		// passes or is a skip saying that, as a race decides.
		fail, skip, either map[string]string
	}{
		{fault: "echo=500", fail: map[string]string{"completions-echo": "echo_server_error (HTTP 500)"},
			skip: map[string]string{"echo-max-tokens-0": "needs completions-echo"}},
		{fault: "echo=ignored", fail: map[string]string{"completions-echo": "echo_ignored"},
			skip: map[string]string{"echo-max-tokens-0": "needs completions-echo"}},
		{fault: "stall=0.5", fail: map[string]string{"stream": "stream stalled after the first token"},
			skip: map[string]string{"stream-usage": "needs stream", "max-tokens": "needs stream",
				"concurrent-streams": "needs stream-usage", "disconnect": "needs stream", "go-openai": "needs stream-usage",
				"tool-choice-stream": "needs stream", "stream-incremental": "needs stream"}},
		// Streams that end after their finish_reason without [DONE] are
		// complete for glmbench run: only the strict shape fails.
		{fault: "drop-done", fail: map[string]string{"stream": "without data: [DONE]"}},
		{fault: "no-usage", fail: map[string]string{"usage": "no usage", "stream-usage": "no chunk carries usage"},
			skip: map[string]string{"completions-echo": "needs usage", "echo-max-tokens-0": "needs completions-echo",
				"prompt-token-ids": "needs usage", "max-tokens": "no chunk of the stream carries usage",
				"concurrent-streams": "needs usage", "go-openai": "needs stream-usage"}},
		// A gateway that admits 4 requests at once refuses one of the
		// determinism check's 5, which is not compared, and 60 of the
		// batch-invariance burst's 64: whether the prompt under test is
		// among the 4 admitted is the race for the limiter's slots.
		{fault: "rate-limit=4", probe: 16, fail: map[string]string{"concurrent-streams": "HTTP 429 rate limited (Retry-After 1)"},
			either: map[string]string{"batch-invariance": "refused for now (HTTP 429 rate limited"}},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			t.Parallel()
			e := startEngine(t, withFaults(t, tc.fault))
			cfg := testConfig(e.BaseURL(), e.ModelName())
			cfg.ProbeLimits = tc.probe
			if strings.HasPrefix(tc.fault, "stall=") {
				cfg.StallTimeout = testStallTimeout
			}
			res := run(t, cfg)
			for _, c := range Checks {
				r := res[c.ID]
				wantFail, mustFail := tc.fail[c.ID]
				wantSkip, mustSkip := tc.skip[c.ID]
				if why, ok := tc.either[c.ID]; ok && r.Status == string(Skip) {
					wantSkip, mustSkip = why, true
				}
				if why, ok := engineEither[c.ID]; ok && !mustFail && !mustSkip && r.Status == string(Skip) {
					wantSkip, mustSkip = why, true
				}
				why, builtin := builtinSkips[c.ID]
				if c.Probe && tc.probe > 0 {
					builtin = false // the probes run, and pass
				}
				if mustFail || mustSkip {
					builtin = false // the fault decides first: a need it breaks
				}
				switch {
				case mustFail && (r.Status != string(Fail) || !strings.Contains(r.Detail, wantFail)):
					t.Errorf("%s: %s %q, want a failure saying %q", c.ID, r.Status, r.Detail, wantFail)
				case mustSkip && (r.Status != string(Skip) || !strings.Contains(r.Detail, wantSkip)):
					t.Errorf("%s: %s %q, want a skip saying %q", c.ID, r.Status, r.Detail, wantSkip)
				case builtin && (r.Status != string(Skip) || !strings.Contains(r.Detail, why)):
					t.Errorf("%s: %s %q, want a skip saying %q", c.ID, r.Status, r.Detail, why)
				case !mustFail && !mustSkip && !builtin && r.Status != string(Pass):
					t.Errorf("%s: %s %q, want pass: the fault breaks only %v", c.ID, r.Status, r.Detail, tc.fail)
				}
			}
			if t.Failed() {
				t.Log(describe(res))
			}
		})
	}
}

func TestTheQueueOverflowCheckPassesWhenTheEngineRefusesWith503(t *testing.T) {
	t.Parallel()
	e := startEngine(t, func(o *engine.Options) {
		o.Sched.MaxRunningRequests, o.Sched.MaxQueuedRequests = 1, 1
	})
	cfg := testConfig(e.BaseURL(), e.ModelName())
	cfg.Only, cfg.ProbeLimits = []string{"rate-limit", "queue-overflow"}, 8
	res := run(t, cfg)
	wantResult(t, res, "queue-overflow", Pass, "× 503")
	wantResult(t, res, "rate-limit", Skip, "none of 8") // nothing was rate-limited
}

func TestAnInterruptedRunSkipsWhatItDidNotFinish(t *testing.T) {
	t.Parallel()
	e := startEngine(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cfg := testConfig(e.BaseURL(), e.ModelName())
	cfg.Only = []string{"usage", "stream"}
	cfg.OnResult = func(i, n int, r schema.CheckResult) {
		if r.ID == "chat" {
			cancel()
		}
	}
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || res[0].Status != string(Pass) {
		t.Fatalf("%+v", res)
	}
	for _, r := range res[1:] {
		if r.Status != string(Skip) || !strings.Contains(r.Detail, "interrupted") {
			t.Errorf("%s after the interrupt: %s %q", r.ID, r.Status, r.Detail)
		}
	}
}

func TestStopStringsAreLettersFromTheMiddle(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"abcdefghij":        "fgh",
		"abcde\ufffd\ufffd": "de",
		"ab  cd\ufffd":      "cd",
		"xy\ufffd!!!":       "xy",
		"\ufffd\ufffd !!":   "",
		"":                  "",
	} {
		if got := stopString(in); got != want {
			t.Errorf("stopString(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRetryAfterIsSecondsOrAnHTTPDate(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{"1": true, " 30 ": true, "Wed, 21 Oct 2015 07:28:00 GMT": true, "": false, "-1": false, "soon": false, "1.5": false} {
		if got := validRetryAfter(v); got != want {
			t.Errorf("validRetryAfter(%q) = %t", v, got)
		}
	}
}

func TestOpenAIErrorWantsAnErrorObjectWithAMessage(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		`{"error": {"message": "bad n", "type": "BadRequestError"}}`: "",
		`{"error": {"message": ""}}`:                                 "no message",
		`{"object": "error", "message": "bad n"}`:                    `no "error" object`,
		`{"error": null}`:                                            `no "error" object`,
		`Internal Server Error`:                                      "not JSON",
	} {
		msg, p := openAIError(func(s string) string { return s }, []byte(body))
		if (want == "") != (p == "") || !strings.Contains(p, want) || (want == "" && msg != "bad n") {
			t.Errorf("openAIError(%s) = %q, %q; want a problem saying %q", body, msg, p, want)
		}
	}
}

// Without usage in streams, max-tokens is a skip ("no chunk of the stream
// carries usage"): it found nothing about ignore_eos, and the stream with
// it ended, which is all the checks built on it need. They send ignore_eos
// as before, and none says max-tokens found it not honoured.
func TestAMaxTokensWithNoCountSaysNothingOfIgnoreEOS(t *testing.T) {
	t.Parallel()
	e := startEngine(t, withFaults(t, "no-usage"))
	res := run(t, testConfig(e.BaseURL(), e.ModelName()))
	if r := res["max-tokens"]; r.Status != string(Skip) || !strings.Contains(r.Detail, "no chunk of the stream carries usage") {
		t.Fatalf("max-tokens: %s %q, want the skip for no usage", r.Status, r.Detail)
	}
	for id, r := range res {
		if strings.Contains(r.Detail, "found not honoured") {
			t.Errorf("%s: %s %q: max-tokens found no such thing", id, r.Status, r.Detail)
		}
	}
	if r := res["disconnect"]; r.Status != string(Pass) || strings.Contains(r.Detail, "without ignore_eos") {
		t.Errorf("disconnect: %s %q, want a pass with ignore_eos sent", r.Status, r.Detail)
	}
}
