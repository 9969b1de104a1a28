package root

// End-to-end runs of the CLI against the zai personality: Z.ai's hosted GLM
// API as endpoints/endpointstest/zai.go has it (docs/SERVERS.md, "Z.ai").

import (
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/schema"
)

// Z.ai refuses an account in arrears with HTTP 429 and business code 1113
// (docs.z.ai/api-reference/api-code; the body as zai-org/GLM-5#49 quotes
// it): no rate limit, so run stops at its first calibration probe, saying
// the endpoint's words and what the code means in one line (exit 2), and
// sends nothing more.
func TestRunAgainstAZAIAccountInArrearsStopsAtTheFirstProbe(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.ZAI, endpointstest.Options{ZAI: endpointstest.ZAIOptions{Refuse: "1113"}})
	dir := t.TempDir()
	code, _, stderr := executeBounded(t, "run", "--endpoint", p.BaseURL(), "--phase", "x=4/64/4", "--out", dir)
	wantExit2InOneLine(t, code, stderr, dir, "calibration probe", "HTTP 429: Insufficient balance or no resource package. Please recharge.",
		"Z.ai code 1113 (account in arrears): not a rate limit, waiting will not lift it")
	if n := p.Requests("POST /api/paas/v4/chat/completions"); n != 1 {
		t.Errorf("%d requests, want the one probe", n)
	}
}

// Z.ai sheds load past what it takes with HTTP 429 code 1305 ("The service
// may be temporarily overloaded"): a burst's refusals are queue_full, as a
// 503's, not rate_limited.
func TestRunCountsZAIsOverloadAsQueueFull(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.ZAI, endpointstest.Options{TTFT: 200 * time.Millisecond, ZAI: endpointstest.ZAIOptions{Overloaded: 2}})
	rep, _, _ := runReport(t, p.BaseURL(), "--phase", "burst=16/64/4", "--probe-timeout", "10s")
	ph := rep.Phases[0]
	full := ph.ByClass[schema.QueueFull]
	if full == 0 || ph.ByClass[schema.RateLimited] != 0 || ph.Completed+full != 16 {
		t.Fatalf("phase: %d completed, errors by class %v; want only queue_full refusals", ph.Completed, ph.ByClass)
	}
}
