package eval

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// --window and --gen-tokens past 2^24 tokens exit 2 in one line before the
// endpoint is opened: the one named does not exist, so reaching it would
// say so instead.
func TestATokenCountPast2To24ExitsTwoBeforeTheEndpoint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ppl", "--window", "16777217"}, "--window must be at most 16777216 (2^24 tokens), got 16777217"},
		{[]string{"long-ppl", "--gen-tokens", "16777217"}, "--gen-tokens must be at most 16777216 (2^24 tokens), got 16777217"},
	} {
		code, _, stderr := run(t, append(tc.args, "--endpoint", "http://127.0.0.1:1/v1", "--out", t.TempDir())...)
		if code != cmdutil.ExitBadInput || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "127.0.0.1:1") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 in one line saying %q, before the endpoint", tc.args, code, stderr, tc.want)
		}
	}
}

// An endpoint that states its context (vLLM's max_model_len in GET
// /models, here 1024 tokens) refuses a ppl window or a long-ppl generation
// longer than it with exit 2 and one line naming where it read it, before
// any eval request; one that fits runs. An eval that uses neither flag
// (mmlu) is not held to them.
func TestATokenCountPastTheStatedContextExitsTwoBeforeAnyEvalRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string // "" : not refused
	}{
		{[]string{"ppl", "--window", "1025"}, "--window 1025 passes the endpoint's context of 1024 tokens (max_model_len in GET /models): give --window 1024 or less"},
		{[]string{"long-ppl", "--gen-tokens", "2048"}, "--gen-tokens 2048 passes the endpoint's context of 1024 tokens (max_model_len in GET /models): give --gen-tokens 1024 or less"},
		{[]string{"all", "--window", "512", "--gen-tokens", "4096"}, "--gen-tokens 4096 passes"},
		{[]string{"mmlu", "--window", "4096", "--gen-tokens", "4096", "--limit", "1"}, ""},
	} {
		p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{Context: 1024})
		code, _, stderr := run(t, append(tc.args, "--endpoint", p.BaseURL(), "--out", t.TempDir())...)
		evalRequests := p.Requests("POST /v1/completions") + p.Requests("POST /v1/chat/completions")
		if tc.want == "" {
			if code == cmdutil.ExitBadInput || evalRequests == 0 {
				t.Errorf("%v: exit %d after %d eval requests; want the eval to run:\n%s", tc.args, code, evalRequests, stderr)
			}
			continue
		}
		if code != cmdutil.ExitBadInput || strings.Count(stderr, "glmbench: ") != 1 || !strings.Contains(stderr, tc.want) || evalRequests != 0 {
			t.Errorf("%v: exit %d after %d eval requests, stderr %q; want exit 2 before any, saying %q", tc.args, code, evalRequests, stderr, tc.want)
		}
	}
}
