package endpointstest

import (
	"strings"
	"testing"
	"time"
)

// waitInflight waits (at most 5 s) until p holds n requests in flight.
func waitInflight(p *Personality, n int) {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		p.mu.Lock()
		now := p.inflight
		p.mu.Unlock()
		if now >= n {
			return
		}
	}
}

// The zai personality against Z.ai's documentation (docs/SERVERS.md, "Z.ai").

func TestZAIServesChatUnderItsDocumentedBase(t *testing.T) {
	// docs.z.ai/api-reference/introduction: the general base is
	// https://api.z.ai/api/paas/v4, the Coding Plan's
	// https://api.z.ai/api/coding/paas/v4; there is no /v1.
	for _, coding := range []bool{false, true} {
		p := Start(t, ZAI, Options{ZAI: ZAIOptions{Coding: coding}})
		want := map[bool]string{false: "/api/paas/v4", true: "/api/coding/paas/v4"}[coding]
		if !strings.HasSuffix(p.BaseURL(), want) {
			t.Fatalf("base %s, want …%s", p.BaseURL(), want)
		}
		if r := post(t, p.BaseURL()+"/chat/completions", chatBody("glm-4.6", "hi", 4)); r.status != 200 {
			t.Fatalf("chat under %s: %d %s", want, r.status, r.body)
		}
		if r := post(t, p.URL+"/v1/chat/completions", chatBody("glm-4.6", "hi", 4)); r.status != 404 {
			t.Fatalf("/v1/chat/completions: %d, want 404", r.status)
		}
	}
}

func TestZAIThinkingSwitchDecidesWhetherReasoningContentIsStreamed(t *testing.T) {
	// docs.z.ai/guides/capabilities/thinking-mode: thinking is on by
	// default, off with "thinking": {"type": "disabled"}; the reasoning
	// comes as reasoning_content, counted in completion_tokens.
	p := Start(t, ZAI, Options{ZAI: ZAIOptions{Reasoning: 3}})
	for _, tc := range []struct {
		thinking  any
		reasoning int
	}{{nil, 3}, {map[string]any{"type": "enabled"}, 3}, {map[string]any{"type": "disabled"}, 0}} {
		body := chatBody("glm-4.6", "hi", 8, "stream", true)
		if tc.thinking != nil {
			body["thinking"] = tc.thinking
		}
		r := post(t, p.BaseURL()+"/chat/completions", body)
		s := readStream(t, r.body)
		reasoning, content, completion := 0, 0, 0.0
		for _, ev := range s.events {
			d, _ := choice0(ev)["delta"].(map[string]any)
			if v, _ := d["reasoning_content"].(string); v != "" {
				reasoning++
			}
			if v, _ := d["content"].(string); v != "" {
				content++
			}
			if u, ok := ev["usage"].(map[string]any); ok {
				completion = num(u["completion_tokens"])
			}
		}
		if reasoning != tc.reasoning || content != 8-tc.reasoning || completion != 8 || !s.done {
			t.Errorf("thinking %v: %d reasoning and %d content events, completion_tokens %v, done %v; want %d, %d, 8, true",
				tc.thinking, reasoning, content, completion, s.done, tc.reasoning, 8-tc.reasoning)
		}
	}
}

func TestZAIRefusesWithABusinessCodeInsideTheError(t *testing.T) {
	// docs.z.ai/api-reference/api-code: HTTP 429 carries the business
	// code; zai-org/GLM-5#49 quotes the 1113 body whole.
	p := Start(t, ZAI, Options{ZAI: ZAIOptions{Refuse: "1113"}})
	r := post(t, p.BaseURL()+"/chat/completions", chatBody("glm-4.6", "hi", 4))
	if r.status != 429 || string(r.body) != `{"error":{"code":"1113","message":"Insufficient balance or no resource package. Please recharge."}}` {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

func TestZAIConcurrencyLimitIs1302(t *testing.T) {
	// api-code: 1302, the account's concurrency for the API is too high.
	p := Start(t, ZAI, Options{Gap: 20 * time.Millisecond, ZAI: ZAIOptions{Concurrency: 1}})
	done := make(chan reply)
	go func() { done <- post(t, p.BaseURL()+"/chat/completions", chatBody("glm-4.6", "hi", 20)) }()
	waitInflight(p, 1)
	r := post(t, p.BaseURL()+"/chat/completions", chatBody("glm-4.6", "hi", 4))
	if first := <-done; first.status != 200 || r.status != 429 || !strings.Contains(string(r.body), `"code":"1302"`) {
		t.Fatalf("first %d, second %d %s", first.status, r.status, r.body)
	}
}

func TestZAIStreamRefusalIsAnErrorEventInsideA200(t *testing.T) {
	// 1305 arrives in a 200 stream (llm-simple-router#95, ccLoad#41).
	p := Start(t, ZAI, Options{ZAI: ZAIOptions{StreamRefuse: "1305"}})
	r := post(t, p.BaseURL()+"/chat/completions", chatBody("glm-4.6", "hi", 4, "stream", true))
	s := readStream(t, r.body)
	e, _ := s.events[0]["error"].(map[string]any)
	if r.status != 200 || len(s.events) != 1 || e["code"] != "1305" {
		t.Fatalf("%d %s", r.status, r.body)
	}
}
