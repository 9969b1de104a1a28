package endpointstest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Z.ai's hosted GLM API (api.z.ai, and open.bigmodel.cn in China), as its
// documentation states it (docs/SERVERS.md, "Z.ai"): the API base is
// /api/paas/v4 (the GLM Coding Plan's /api/coding/paas/v4), chat at
// base/chat/completions; a request's thinking switch is
// "thinking": {"type": "enabled" | "disabled"}, the reasoning streamed as
// delta.reasoning_content; every refusal carries a business code, a string,
// in {"error": {"code", "message"}} (docs.z.ai/api-reference/api-code; the
// 1113 body as zai-org/GLM-5#49 quotes it).

// ZAIOptions configure the zai personality. Zero values take the defaults
// named.
type ZAIOptions struct {
	// Coding serves the GLM Coding Plan's base, /api/coding/paas/v4, in
	// place of the general /api/paas/v4.
	Coding bool
	// Reasoning is how many of an answer's tokens are its reasoning,
	// streamed as reasoning_content before any content, while thinking is
	// on (default 8). They count in completion_tokens and within
	// max_tokens.
	Reasoning int
	// IgnoreThinking makes the server reason whatever the request's
	// thinking says: a server (or a proxy in front of it) that does not
	// honour the switch, which Z.ai documents it does.
	IgnoreThinking bool
	// Concurrency is the account's concurrency limit: past that many
	// requests in flight, 429 with business code 1302 (0: none).
	Concurrency int
	// Overloaded is how many requests in flight the service takes before
	// it sheds load: past it, 429 with business code 1305, "The service
	// may be temporarily overloaded" (0: never).
	Overloaded int
	// OverloadInStream sends a stream's 1305 past Overloaded inside its
	// 200, as StreamRefuse does, not as a 429.
	OverloadInStream bool
	// Refuse is a business code every generation request is refused with,
	// HTTP 429 (the code's own message, zaiMessages): 1113 for an account
	// in arrears, 1308 for a usage limit reached, 1305 for an overloaded
	// service ("": none).
	Refuse string
	// StreamRefuse is a business code a stream is refused with inside its
	// 200: one error event {"error": {"code", "message"}} and the end, as
	// 1305 is reported to come (zhushanwen321/llm-simple-router#95: "HTTP
	// 200, code 1305"; caidaoli/ccLoad#41 reads 1305 and 1310 from SSE).
	StreamRefuse string
}

func (o *ZAIOptions) defaults() {
	if o.Reasoning <= 0 {
		o.Reasoning = 8
	}
}

// zaiBase is the API base path the personality serves.
func (p *Personality) zaiBase() string {
	if p.Opts.ZAI.Coding {
		return "/api/coding/paas/v4"
	}
	return "/api/paas/v4"
}

// zaiMessages are the business codes' messages. English wording where a
// user quotes it (1113: zai-org/GLM-5#49; 1302: zai-org/feedback#761;
// 1305: NousResearch/hermes-agent#47685); the rest the Chinese docs'
// meaning in English (docs.bigmodel.cn/cn/api/api-code), wording
// unverified.
var zaiMessages = map[string]string{
	"1002": "Authorization Token is invalid.",
	"1110": "Your account is currently inactive. Please check your account information.",
	"1111": "Your account does not exist.",
	"1112": "Your account has been locked. Please contact customer service to unlock it.",
	"1113": "Insufficient balance or no resource package. Please recharge.",
	"1121": "Your account has been locked for violations.",
	"1211": "Unknown Model, please check the model code.",
	"1302": "Rate limit reached for requests",
	"1303": "Your request frequency for this API is too high. Please reduce it or contact customer service to raise the limit.",
	"1305": "The service may be temporarily overloaded, please try again later",
	"1308": "Usage limit reached for 5 hour. Your limit will reset at 2026-01-01 00:00:00",
	"1309": "Your GLM Coding Plan package has expired.",
	"1310": "Weekly/Monthly Limit Exhausted. Your limit will reset at 2026-01-01 00:00:00",
}

// zaiError is a refusal in Z.ai's shape: the business code as a string.
func zaiError(code string) map[string]any {
	return map[string]any{"error": map[string]any{"code": code, "message": zaiMessages[code]}}
}

// serveZAI answers r as Z.ai's API does. Only the base's routes are
// served; any other path is a 404 (its body there is unverified).
func (p *Personality) serveZAI(w http.ResponseWriter, r *http.Request, body []byte) {
	base := p.zaiBase()
	route := r.Method + " " + r.URL.Path
	if !strings.HasPrefix(r.URL.Path, base+"/") {
		writeJSON(w, 404, map[string]any{"timestamp": time.Now().UTC().Format(time.RFC3339), "status": 404, "error": "Not Found", "path": r.URL.Path})
		return
	}
	if p.Opts.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+p.Opts.APIKey {
		// 401: authentication failed (api-code: 1000-1004).
		writeJSON(w, 401, zaiError("1002"))
		return
	}
	switch route {
	case "GET " + base + "/models":
		// The OpenAI list shape (unverified; the route answers 401
		// without a key, juspay/neurolink's notes).
		writeJSON(w, 200, map[string]any{"object": "list", "data": []any{map[string]any{"id": p.Opts.Model, "object": "model", "created": 1759190400, "owned_by": "z-ai"}}})
	case "POST " + base + "/chat/completions":
		p.zaiChat(w, r, body)
	default:
		writeJSON(w, 404, map[string]any{"timestamp": time.Now().UTC().Format(time.RFC3339), "status": 404, "error": "Not Found", "path": r.URL.Path})
	}
}

// zaiRead reads a chat body's model and thinking switch: thinking is on
// unless {"type": "disabled"} (GLM-4.6 thinks by default, deciding for
// itself how much: the docs' "hybrid thinking"; the fake always thinks).
func zaiRead(body []byte) (model string, thinking bool) {
	var v struct {
		Model    string `json:"model"`
		Thinking *struct {
			Type string `json:"type"`
		} `json:"thinking"`
	}
	_ = json.Unmarshal(body, &v)
	return v.Model, v.Thinking == nil || v.Thinking.Type != "disabled"
}

func (p *Personality) zaiChat(w http.ResponseWriter, r *http.Request, body []byte) {
	o := p.Opts.ZAI
	g, ref := p.parse(body, true)
	if ref != nil {
		writeJSON(w, 400, map[string]any{"error": map[string]any{"code": "1214", "message": ref.msg}})
		return
	}
	model, thinking := zaiRead(body)
	if model != p.Opts.Model {
		writeJSON(w, 400, zaiError("1211"))
		return
	}
	if o.Refuse != "" {
		p.notePrompt(g)
		writeJSON(w, 429, zaiError(o.Refuse))
		return
	}
	promptN, budget, ref := p.checkOpenAI(g)
	if ref != nil {
		p.notePrompt(g)
		writeJSON(w, 400, map[string]any{"error": map[string]any{"code": "1261", "message": ref.msg}})
		return
	}
	p.mu.Lock()
	p.seq++
	seq := p.seq
	for _, limit := range []struct {
		n    int
		code string
	}{{o.Concurrency, "1302"}, {o.Overloaded, "1305"}} {
		if limit.n > 0 && p.inflight >= limit.n {
			p.mu.Unlock()
			p.notePrompt(g)
			if limit.code == "1305" && g.stream && o.OverloadInStream {
				streamRefusal(w, zaiError(limit.code))
				return
			}
			writeJSON(w, 429, zaiError(limit.code))
			return
		}
	}
	release := p.enterLocked(g)
	defer release()
	if g.stream && o.StreamRefuse != "" {
		streamRefusal(w, zaiError(o.StreamRefuse))
		return
	}
	a := p.answers(g, budget, seq)[0]
	think := 0
	if thinking || o.IgnoreThinking {
		think = min(o.Reasoning, len(a.toks))
	}
	id := fmt.Sprintf("%x%06x", time.Now().UnixNano(), seq)
	usage := map[string]any{"prompt_tokens": promptN, "completion_tokens": a.n, "total_tokens": promptN + a.n,
		"prompt_tokens_details": map[string]any{"cached_tokens": 0}}
	if !g.stream {
		if !p.wholeWait(r, a) {
			return
		}
		msg := map[string]any{"role": "assistant", "content": joinText(a.toks[think:])}
		if think > 0 {
			msg["reasoning_content"] = joinText(a.toks[:think])
		}
		writeJSON(w, 200, map[string]any{"id": id, "request_id": id, "created": time.Now().Unix(), "model": p.Opts.Model, "object": "chat.completion",
			"choices": []any{map[string]any{"index": 0, "finish_reason": a.finish, "message": msg}}, "usage": usage})
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "created": time.Now().Unix(), "model": p.Opts.Model, "object": "chat.completion.chunk",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	if !sleep(r, p.Opts.TTFT) {
		return
	}
	for i, t := range a.toks {
		if i > 0 && !sleep(r, p.Opts.Gap) {
			return
		}
		field := "content"
		if i < think {
			field = "reasoning_content"
		}
		sseData(w, rc, chunk(map[string]any{"role": "assistant", field: t.Text}, nil))
	}
	// The last chunk carries the finish and the usage (unverified whether
	// Z.ai waits for stream_options to send it; the fake always does).
	fin := chunk(map[string]any{"role": "assistant", "content": ""}, a.finish)
	fin["usage"] = usage
	sseData(w, rc, fin)
	sseDone(w, rc)
}
