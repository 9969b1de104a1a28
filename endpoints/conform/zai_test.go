package conform

import (
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/schema"
)

// zaiRun runs the checks only against a zai fake started with o.
func zaiRun(t *testing.T, o endpointstest.Options, only ...string) map[string]schema.CheckResult {
	t.Helper()
	p := endpointstest.Start(t, endpointstest.ZAI, o)
	cfg := testConfig(p.BaseURL(), p.Opts.Model)
	cfg.Only, cfg.ProbeLimits = only, 8
	return run(t, cfg)
}

// Z.ai refuses a burst past the account's concurrency with 429 code 1302
// (a rate limit), and past what the service takes with 429 code 1305
// (overloaded: queue_full, no rate limit), in a 200 stream too
// (docs.z.ai/api-reference/api-code; llm-simple-router#95). The
// queue-overflow check counts each by the status it came with and says
// when none was a rate limit: before, it counted classes as statuses, a
// 1305's 429 as "× 503".
func TestAgainstZAIQueueOverflowCountsTheStatusesItSaw(t *testing.T) {
	t.Parallel()
	gap := endpointstest.Options{Gap: 20 * time.Millisecond}
	for _, tc := range []struct {
		name       string
		zai        endpointstest.ZAIOptions
		want, lack string
	}{
		{"concurrency 1302", endpointstest.ZAIOptions{Concurrency: 2}, "× 429), none hung", "503"},
		{"overloaded 1305", endpointstest.ZAIOptions{Overloaded: 2}, "× 429) (no rate limit), none hung", "503"},
		{"1305 in a 200 stream", endpointstest.ZAIOptions{Overloaded: 2, OverloadInStream: true}, "× 1305 error event in a 200 stream) (no rate limit)", "429"},
	} {
		o := gap
		o.ZAI = tc.zai
		r := zaiRun(t, o, "queue-overflow")["queue-overflow"]
		if r.Status != string(Pass) || !strings.Contains(r.Detail, tc.want) || strings.Contains(r.Detail, tc.lack) {
			t.Errorf("%s: %s %q; want a pass saying %q, not %q", tc.name, r.Status, r.Detail, tc.want, tc.lack)
		}
	}
}

// Z.ai's thinking switch is "thinking": {"type": "enabled" | "disabled"}
// (docs.z.ai/guides/capabilities/thinking-mode), the reasoning in
// reasoning_content: the reasoning check sends it at a Z.ai base and
// passes where it is honoured, and fails where the thinking goes on with
// it "disabled".
func TestAgainstZAIReasoningChecksItsThinkingSwitch(t *testing.T) {
	t.Parallel()
	r := zaiRun(t, endpointstest.Options{}, "reasoning")["reasoning"]
	if r.Status != string(Pass) || !strings.Contains(r.Detail, "off (thinking)") {
		t.Errorf("honoured: %s %q; want a pass naming the thinking switch", r.Status, r.Detail)
	}
	r = zaiRun(t, endpointstest.Options{ZAI: endpointstest.ZAIOptions{IgnoreThinking: true}}, "reasoning")["reasoning"]
	if r.Status != string(Fail) || !strings.Contains(r.Detail, "thinking off (thinking), yet") {
		t.Errorf("ignored: %s %q; want a fail: reasoning with thinking disabled", r.Status, r.Detail)
	}
}
