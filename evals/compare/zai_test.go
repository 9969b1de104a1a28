package compare

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// zaiSide is a Side on a fake of the personality name.
func zaiSide(t *testing.T, name string, o endpointstest.Options) (Side, *endpointstest.Personality) {
	t.Helper()
	p := endpointstest.Start(t, name, o)
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: p.BaseURL(), Model: p.Opts.Model}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return Side{Client: endpoints.NewClient(ep, endpoints.NewTransport(endpoints.TransportOptions{Conns: 2, ConnectTimeout: time.Second})), Model: p.Opts.Model}, p
}

// thinkingSent is each chat request's thinking field as it arrived, ""
// for none.
func thinkingSent(p *endpointstest.Personality) []string {
	var out []string
	for _, f := range p.BodyFields() {
		out = append(out, string(f["thinking"]))
	}
	return out
}

// Z.ai's GLM-4.6 thinks unless "thinking": {"type": "disabled"}
// (docs.z.ai/guides/capabilities/thinking-mode), and reads no
// chat_template_kwargs: its first continuation comes with reasoning, so
// it is asked again with thinking disabled. A server whose answer holds no
// reasoning (vLLM's model here) is asked once, and an --extra-body that
// sets thinking itself is the user's choice: asked once, as it says.
func TestAReasoningSideIsAskedAgainWithThinkingDisabled(t *testing.T) {
	zai, zp := zaiSide(t, endpointstest.ZAI, endpointstest.Options{})
	vllm, vp := zaiSide(t, endpointstest.VLLM, endpointstest.Options{})
	p := Run(context.Background(), zai, vllm, []Item{{ID: "x", Prompt: "Capital of France?"}}, opts)[0]
	if p.Failure != "" {
		t.Fatalf("failure %q", p.Failure)
	}
	if got := strings.Join(thinkingSent(zp), "|"); got != `|{"type":"disabled"}` {
		t.Errorf("Z.ai got thinking %q, want none, then disabled", got)
	}
	if got := thinkingSent(vp); len(got) != 1 || got[0] != "" {
		t.Errorf("vLLM got thinking %q, want one request without it", got)
	}
	extra := opts
	extra.Extra = json.RawMessage(`{"thinking":{"type":"enabled"}}`)
	zai2, zp2 := zaiSide(t, endpointstest.ZAI, endpointstest.Options{})
	Run(context.Background(), zai2, vllm, []Item{{ID: "x", Prompt: "Capital of France?"}}, extra)
	if got := thinkingSent(zp2); len(got) != 1 || got[0] != `{"type":"enabled"}` {
		t.Errorf("with --extra-body thinking: Z.ai got %q, want the one request as the extra body says", got)
	}
}

// Z.ai's 429 with business code 1113 (an account in arrears,
// docs.z.ai/api-reference/api-code) is no rate limit: asked once, not
// Retries429 times more. Its 1302 (the concurrency limit) is, 1 s apart
// (the fake sends no Retry-After).
func TestAZAIAccountRefusalIsNotRetried(t *testing.T) {
	for code, tries := range map[string]int{"1113": 1, "1302": Retries429 + 1} {
		a, _ := zaiSide(t, endpointstest.VLLM, endpointstest.Options{})
		b, zp := zaiSide(t, endpointstest.ZAI, endpointstest.Options{ZAI: endpointstest.ZAIOptions{Refuse: code}})
		p := Run(context.Background(), a, b, []Item{{ID: "x", Prompt: "p"}}, opts)[0]
		if p.Failure != "reference: HTTP 429" || zp.Requests("POST /api/paas/v4/chat/completions") != tries {
			t.Errorf("code %s: failure %q after %d tries, want HTTP 429 after %d", code, p.Failure, zp.Requests("POST /api/paas/v4/chat/completions"), tries)
		}
	}
}
