package conform

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// The OpenAI API refuses ignore_eos (400 "Unrecognized request argument
// supplied: ignore_eos", docs/SERVERS.md), so max-tokens is a skip; the
// checks that only need streams that end (concurrency, hang-ups, the
// probe burst) run without it and are judged on what a stream without
// ignore_eos may do: stop early with finish_reason "stop". The fake's
// model stops after 6 tokens unless ignore_eos (EOSAfter), so most of the
// 32 crossing streams (max_tokens 4 to 35) stop before their max_tokens.
// Before, those four checks were skips "needs max-tokens (streams with
// ignore_eos accepted that end)", though none needs ignore_eos to run.
func TestAgainstTheOpenAIAPITheStreamChecksRunWithoutIgnoreEOS(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.OpenAI, endpointstest.Options{EOSAfter: 6})
	cfg := testConfig(p.BaseURL(), p.Opts.Model)
	cfg.ProbeLimits = 8
	res := run(t, cfg)
	wantResult(t, res, "stream", Pass, "streams")
	wantResult(t, res, "max-tokens", Skip, "refuses ignore_eos")
	wantResult(t, res, "concurrent-streams", Pass, "without ignore_eos, which the endpoint refuses")
	wantResult(t, res, "disconnect", Pass, "without ignore_eos, which the endpoint refuses")
	for _, id := range []string{"concurrent-streams", "disconnect", "rate-limit", "queue-overflow"} {
		if r := res[id]; r.Status == string(Skip) && strings.Contains(r.Detail, "needs") {
			t.Errorf("%s: a skip %q; it needs streams that end, not ignore_eos", id, r.Detail)
		}
	}
	// The burst ran: the fake has no limiter, so all 8 are served, and
	// the details say the burst went without ignore_eos.
	wantResult(t, res, "rate-limit", Skip, "none of 8 requests at once was rate-limited")
	wantResult(t, res, "queue-overflow", Skip, "all 8 requests at once were served")
	for _, id := range []string{"rate-limit", "queue-overflow"} {
		if r := res[id]; !strings.Contains(r.Detail, "the burst went without ignore_eos, which the endpoint refuses") {
			t.Errorf("%s: %q does not say the burst went without ignore_eos", id, r.Detail)
		}
	}
	t.Log(describe(res)) // the whole run against the OpenAI API, for -v
}
