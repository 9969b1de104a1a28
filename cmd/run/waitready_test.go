package run

import (
	"context"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// llama.cpp lists its model while it loads it and answers everything else
// 503 "Loading model". The truth: the fake is ready after one 503 on
// /health. With --wait-ready the run waits for it and no request but /models
// and /health reaches the server before it is ready (it would be answered
// 503 and counted), so every request completes; without the flag the
// warning names the 503 and the flag, and the calibration probe's refusal
// ends the run before any load.
func TestRunWaitsForALoadingServer(t *testing.T) {
	t.Parallel()
	args := []string{"--phase", "p=3/40/6", "--no-metrics"}
	p := endpointstest.Start(t, endpointstest.LlamaCpp, endpointstest.Options{LoadingChecks: 1})
	in := runOK(t, t.TempDir(), append(args, "--endpoint", p.BaseURL(), "--wait-ready", "1m")...)
	if health, other := p.LoadingAnswers(); health != 1 || other != 0 {
		t.Errorf("answered 503 on /health %d times and elsewhere %d times: want 1 and 0", health, other)
	}
	if len(in.Records) != 3 {
		t.Fatalf("%d records, want 3", len(in.Records))
	}
	for _, r := range in.Records {
		if !r.Completed() {
			t.Errorf("request %d: %+v; want completed", r.I, r)
		}
	}

	late := endpointstest.Start(t, endpointstest.LlamaCpp, endpointstest.Options{LoadingChecks: 100})
	code, stderr := execute(t, context.Background(), append(args, "--endpoint", late.BaseURL(), "--out", t.TempDir())...)
	if code != cmdutil.ExitBadInput || !strings.Contains(stderr, "GET /health answered HTTP 503 (Loading model): the server says it is not ready yet; --wait-ready 10m waits for it") || !strings.Contains(stderr, "Loading model") {
		t.Errorf("exit %d, stderr %q: want exit 2, the warning and the probe's 503", code, stderr)
	}
	if n := late.Requests("POST /v1/chat/completions"); n > 3 {
		t.Errorf("%d chat requests reached the loading server: want only the probe's tries", n)
	}
}
