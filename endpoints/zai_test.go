package endpoints_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports/schema"
)

// zaiStream streams one chat request to a zai fake started with o.
func zaiStream(t *testing.T, o endpointstest.ZAIOptions) *endpoints.StreamResult {
	t.Helper()
	p := endpointstest.Start(t, endpointstest.ZAI, endpointstest.Options{ZAI: o})
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: p.BaseURL(), Model: "glm-4.6"}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	c := endpoints.NewClient(ep, endpoints.NewTransport(endpoints.TransportOptions{Conns: 1}))
	body := []byte(`{"model":"glm-4.6","messages":[{"role":"user","content":"x-000001 hi"}],"max_tokens":4,"stream":true}`)
	var res endpoints.StreamResult
	c.StreamAPI(context.Background(), endpoints.APIChat, body, endpoints.StreamLimits{TTFT: 10 * time.Second, Stall: 10 * time.Second, MaxTokens: 4}, nil, &res)
	return &res
}

// Z.ai answers its refusals with HTTP 429 and a business code
// (docs.z.ai/api-reference/api-code, docs.bigmodel.cn/cn/api/api-code):
// 1110-1113 and 1121 are account problems (inactive, missing, locked, in
// arrears, locked for violations) and 1304, 1308-1310 quotas used up (the
// day's calls, a usage limit until its reset, an expired Coding Plan, the
// week's or month's limit): no rate a wait lifts, so http_4xx, which
// nothing retries. 1302 and 1303 are the account's concurrency and
// frequency limits: rate_limited. 1305 (traffic limit: "The service may be
// temporarily overloaded") sheds load as a 503 does: queue_full.
func TestAZAI429IsClassedByItsBusinessCode(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]schema.Class{
		"1110": schema.HTTP4xx, "1111": schema.HTTP4xx, "1112": schema.HTTP4xx, "1113": schema.HTTP4xx, "1121": schema.HTTP4xx,
		"1308": schema.HTTP4xx, "1309": schema.HTTP4xx, "1310": schema.HTTP4xx,
		"1302": schema.RateLimited, "1303": schema.RateLimited, "1305": schema.QueueFull,
	} {
		res := zaiStream(t, endpointstest.ZAIOptions{Refuse: code})
		if res.Status != 429 || res.Class != want || !strings.Contains(res.Detail, "Z.ai code "+code) {
			t.Errorf("code %s: HTTP %d, class %s (%s), want 429 %s", code, res.Status, res.Class, res.Detail, want)
		}
		if got := endpoints.RefusalClass(res.Status, res.Body); got != want {
			t.Errorf("code %s: RefusalClass %s, want %s", code, got, want)
		}
	}
}

// A 429 with no Z.ai code (OpenAI's, a gateway's) stays rate_limited, and
// a business code under another status is that status's class.
func TestA429WithoutAZAICodeIsStillRateLimited(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		body   string
		want   schema.Class
	}{
		{429, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`, schema.RateLimited},
		{429, `{"error":{"code":"9999","message":"?"}}`, schema.RateLimited},
		{400, `{"error":{"code":"1113","message":"Insufficient balance"}}`, schema.HTTP4xx},
		{503, `{"error":{"code":"1113","message":"Insufficient balance"}}`, schema.QueueFull},
	} {
		if got := endpoints.RefusalClass(tc.status, []byte(tc.body)); got != tc.want {
			t.Errorf("%d %s: %s, want %s", tc.status, tc.body, got, tc.want)
		}
	}
}

// 1305 also comes as an error event inside a 200 stream
// (zhushanwen321/llm-simple-router#95: "HTTP 200, code 1305";
// caidaoli/ccLoad#41 reads 1305 and 1310 from the SSE): queue_full there
// too, not a stream_error.
func TestAZAI1305InsideAStreamIsQueueFull(t *testing.T) {
	t.Parallel()
	res := zaiStream(t, endpointstest.ZAIOptions{StreamRefuse: "1305"})
	if res.Status != 200 || res.Class != schema.QueueFull || !strings.Contains(res.Detail, "1305") {
		t.Fatalf("HTTP %d, class %s (%s), want 200 queue_full", res.Status, res.Class, res.Detail)
	}
}

// Z.ai streams GLM's reasoning as delta.reasoning_content
// (docs.z.ai/guides/capabilities/thinking-mode): content events, so the
// first of them is the first token.
func TestZAIReasoningContentIsTheFirstToken(t *testing.T) {
	t.Parallel()
	res := zaiStream(t, endpointstest.ZAIOptions{Reasoning: 2})
	if res.Class != "" || len(res.Events) != 4 || !res.Usage || res.CompletionTokens != 4 {
		t.Fatalf("class %q (%s), %d events, usage %v %d; want a completed request of 4 events", res.Class, res.Detail, len(res.Events), res.Usage, res.CompletionTokens)
	}
}

// Z.ai's API base is /api/paas/v4, the Coding Plan's /api/coding/paas/v4
// (docs.z.ai/api-reference/introduction), on api.z.ai and on Zhipu's
// open.bigmodel.cn: an --endpoint there with the OpenAI habit's /v1 (or
// no path) is bad input said in one line naming both bases, before any
// request. Those bases pass, and /v1 on any other host is no concern.
func TestAZAIEndpointWithTheWrongBaseNamesItsBases(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{"https://api.z.ai/v1", "https://open.bigmodel.cn/", "https://API.Z.AI/api/v4"} {
		_, err := endpoints.Resolve(endpoints.Flags{Endpoint: raw, Model: "glm-4.6"}, env(nil))
		if !badinput.Is(err) || !strings.Contains(err.Error(), "/api/paas/v4") || !strings.Contains(err.Error(), "/api/coding/paas/v4") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want one line of bad input naming /api/paas/v4 and /api/coding/paas/v4", raw, err)
		}
	}
	for _, raw := range []string{"https://api.z.ai/api/paas/v4", "https://api.z.ai/api/coding/paas/v4/", "https://open.bigmodel.cn/api/paas/v4", "https://api.example.com/v1"} {
		if _, err := endpoints.Resolve(endpoints.Flags{Endpoint: raw, Model: "glm-4.6"}, env(nil)); err != nil {
			t.Errorf("%s: %v", raw, err)
		}
	}
}

// Z.ai bills its general base and the GLM Coding Plan's apart: a Coding
// Plan key has its quota only at /api/coding/paas/v4, and on the general
// /api/paas/v4 it is refused 429 1113 "Insufficient balance or no resource
// package", the usual first failure of a plan subscriber (zai-org/feedback
// #789; opencode #12671; garcon #142). The truth: 1113 on the general base
// says the Coding Plan's base; on the Coding Plan's base, where the plan is
// what ran out, it does not, nor does any other code on the general base.
func TestAZAIBalanceRefusalOnTheGeneralBaseNamesTheCodingPlansBase(t *testing.T) {
	t.Parallel()
	const hint = "a GLM Coding Plan key is billed only at /api/coding/paas/v4"
	for _, tc := range []struct {
		name string
		o    endpointstest.ZAIOptions
		want bool
	}{
		{"1113 on the general base", endpointstest.ZAIOptions{Refuse: "1113"}, true},
		{"1113 on the Coding Plan's base", endpointstest.ZAIOptions{Refuse: "1113", Coding: true}, false},
		{"1302 on the general base", endpointstest.ZAIOptions{Refuse: "1302"}, false},
	} {
		res := zaiStream(t, tc.o)
		if got := strings.Contains(res.Detail, hint); got != tc.want || res.Class == "" {
			t.Errorf("%s: class %s, detail %q; want the Coding Plan hint %v", tc.name, res.Class, res.Detail, tc.want)
		}
	}
}
