package endpointstest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// LMDeploy's OpenAI-compatible server (`lmdeploy serve api_server`, the
// TurboMind or PyTorch engine), as its source has it:
// lmdeploy/serve/openai/api_server.py (routes, check_api_key,
// create_error_response, check_request, the chat and completions
// generators, _create_chat_completion_logprobs), protocol.py (ModelCard,
// ErrorResponse, UsageInfo), serving_chat_completion.py (the logprobs_mode
// check), serve/core/async_engine.py (generate: GenOut's finish_reason
// "stop", "length", "error" or "abort"; "run out of tokens"; the error
// text), messages.py (ResponseType) and metrics/loggers.py
// (PrometheusStatLogger). Options.Context is --session-len (prompt plus
// output); LMDeployOptions the rest.
//
// What it does with a session-len overflow is no 400: its 200 answer ends
// with a finish_reason. max_tokens absent leaves session_len - P tokens
// (_determine_gen_config), and none left is an empty "length" answer
// ("run out of tokens", InternLM/lmdeploy#2319; #550 and #1589 quote
// such answers). A max_tokens past what session_len leaves is cut by
// TurboMind to session_len - P - 1, with a warning ("[ProcessInferRequests]
// total sequence length (P + M) exceeds `session_len` (L), `max_new_tokens`
// is truncated to ...", quoted in #4147). A prompt of session_len tokens or
// more with max_tokens given is refused by the engine: the answer is one
// choice of finish_reason "error" whose content is generate's "internal
// error happened, status code ResponseType.INPUT_LENGTH_ERROR" (which
// ResponseType the engine gives here is inferred from its name:
// unverified).

// LMDeployOptions configure the lmdeploy personality.
type LMDeployOptions struct {
	// LogprobsMode is --logprobs-mode ("raw_logprobs", ...): without it a
	// chat request asking logprobs or top_logprobs is refused, 400
	// "Logprobs(True)/top_logprobs(N) requested " (serving_chat_completion.py
	// check_request: the rest of the sentence is a separate statement in
	// the source, so the message ends there; the status is
	// create_error_response's 400, unverified for this check), and a
	// completions request's logprobs are ignored.
	LogprobsMode string
	// ToolCallParser is --tool-call-parser: without it a request's tools
	// reach the chat template and the answer is text (the server logs
	// "Please launch the api_server with --tool-call-parser if you want to
	// use tool."); with it the model's call is streamed as tool_calls
	// deltas and a "stop" finish becomes "tool_calls".
	ToolCallParser string
	// Before2026 answers an overflow as 2024 builds did: a prompt plus
	// max_tokens past session_len is an empty answer, finish_reason
	// "length" and completion_tokens 0 (async_engine.py's check the
	// maintainers point to in InternLM/lmdeploy#1589); no truncation and
	// no "error".
	Before2026 bool
}

// lmdeployErrorText is what generate yields as an engine error's content.
const lmdeployErrorText = "internal error happened, status code ResponseType.INPUT_LENGTH_ERROR"

// lmdeployCounters are what PrometheusStatLogger counts.
type lmdeployCounters struct {
	prompt, generated int
}

// serveLMDeploy answers r as api_server's FastAPI app does.
func (p *Personality) serveLMDeploy(w http.ResponseWriter, r *http.Request, body []byte) {
	route := r.Method + " " + r.URL.Path
	switch {
	case route == "GET /health":
		// 200, empty body; open to all.
		w.WriteHeader(200)
		return
	case route == "GET /metrics":
		// Mounted only with --enable-metrics, and outside check_api_key.
		if !p.Opts.Metrics {
			writeJSON(w, 404, map[string]any{"detail": "Not Found"})
			return
		}
		p.lmdeployMetrics(w)
		return
	}
	if p.Opts.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+p.Opts.APIKey {
		// check_api_key's HTTPException: FastAPI wraps its detail.
		writeJSON(w, 401, map[string]any{"detail": map[string]any{"error": map[string]any{
			"message": "Please request with valid api key!", "type": "invalid_request_error", "param": nil, "code": "invalid_api_key"}}})
		return
	}
	switch route {
	case "GET /v1/models":
		// ModelCard: owned_by "lmdeploy", root, parent, permission; no
		// session length.
		perm := map[string]any{"id": "modelperm-0", "object": "model_permission", "created": time.Now().Unix(), "allow_create_engine": false,
			"allow_sampling": true, "allow_logprobs": true, "allow_search_indices": true, "allow_view": true, "allow_fine_tuning": false,
			"organization": "*", "group": nil, "is_blocking": false}
		writeJSON(w, 200, map[string]any{"object": "list", "data": []any{map[string]any{"id": p.Opts.Model, "object": "model",
			"created": time.Now().Unix(), "owned_by": "lmdeploy", "root": p.Opts.Model, "parent": nil, "permission": []any{perm}}}})
	case "POST /v1/chat/completions":
		p.lmdeployGenerate(w, r, body, true)
	case "POST /v1/completions":
		p.lmdeployGenerate(w, r, body, false)
	default:
		writeJSON(w, 404, map[string]any{"detail": "Not Found"})
	}
}

// lmdeployFail is create_error_response: ErrorResponse dumped, flat.
func lmdeployFail(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"object": "error", "message": msg, "type": "invalid_request_error", "param": nil, "code": status})
}

// lmdeployMetrics is /metrics with --enable-metrics: PrometheusStatLogger's
// series, labelled model_name and engine (the DP rank).
func (p *Personality) lmdeployMetrics(w http.ResponseWriter) {
	p.mu.Lock()
	running, c := p.inflight, p.lmdeploy
	p.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	for _, m := range []struct {
		name, kind string
		v          int
	}{{"num_requests_running", "gauge", running}, {"num_requests_waiting", "gauge", 0}, {"gpu_cache_usage_perc", "gauge", 0},
		{"prompt_tokens_total", "counter", c.prompt}, {"generation_tokens_total", "counter", c.generated}} {
		// prometheus_client writes every value as a float.
		fmt.Fprintf(w, "# TYPE lmdeploy:%s %s\nlmdeploy:%s{engine=\"0\",model_name=%q} %d.0\n", m.name, m.kind, m.name, p.Opts.Model, m.v)
	}
}

// lmdeployGenerate answers /v1/chat/completions and /v1/completions.
func (p *Personality) lmdeployGenerate(w http.ResponseWriter, r *http.Request, body []byte, chat bool) {
	g, ref := p.parse(body, chat)
	if ref != nil {
		lmdeployFail(w, ref.status, ref.msg)
		return
	}
	if m := trtllmModelOf(body); m != p.Opts.Model {
		// check_request: a name that is neither the model nor an adapter.
		lmdeployFail(w, 404, "The model `"+m+"` does not exist.")
		return
	}
	o := p.Opts.LMDeploy
	if chat && o.LogprobsMode == "" && (g.logprobs || g.topK > 0) {
		lmdeployFail(w, 400, fmt.Sprintf("Logprobs(%s)/top_logprobs(%s) requested ", pyBool(g.logprobs), pyIntOrNone(body)))
		return
	}
	// n > 1 falls back to 1 (_determine_gen_config, with a warning); only
	// a chat request with both logprobs and top_logprobs gets logprobs
	// (gen_logprobs); without --tool-call-parser tools are text.
	g.n = 1
	if chat {
		g.logprobs = g.logprobs && g.topK > 0
	} else {
		g.compLP = g.compLP && o.LogprobsMode != ""
	}
	if o.ToolCallParser == "" {
		g.tool, g.choice = "", ""
	}
	budget, finish := p.checkLMDeploy(g)
	p.mu.Lock()
	p.seq++
	seq := p.seq
	defer p.enterLocked(g)()
	a := answer{finish: finish}
	if finish == "" {
		a = p.answers(g, budget, seq)[0]
	}
	id := strconv.Itoa(seq) // the session id, as a string
	if g.stream {
		p.lmdeployStream(w, r, g, id, a)
		return
	}
	if !p.wholeWait(r, a) {
		return
	}
	p.lmdeployCount(g.promptN, a.n)
	p.lmdeployWhole(w, g, id, a)
}

// pyBool is Python's str of a bool.
func pyBool(b bool) string { return map[bool]string{true: "True", false: "False"}[b] }

// pyIntOrNone is the body's top_logprobs as Python's str shows it.
func pyIntOrNone(body []byte) string {
	var f struct {
		TopLogprobs *int `json:"top_logprobs"`
	}
	if json.Unmarshal(body, &f) != nil || f.TopLogprobs == nil {
		return "None"
	}
	return strconv.Itoa(*f.TopLogprobs)
}

// checkLMDeploy is the engine's session_len rule (see the file's comment):
// the tokens it may generate, or the finish_reason of an answer it gives
// up at once ("length" with no output, or "error").
func (p *Personality) checkLMDeploy(g *genRequest) (budget int64, finish string) {
	P, L := int64(g.promptN), int64(p.Opts.Context)
	switch {
	case !g.hasMax && L-P <= 0:
		return 0, "length"
	case !g.hasMax:
		return L - P, ""
	case P+g.maxTokens <= L:
		return g.maxTokens, ""
	case p.Opts.LMDeploy.Before2026:
		return 0, "length"
	case P >= L:
		return 0, "error"
	}
	return L - P - 1, ""
}

// lmdeployCount adds one answer to the metrics' counters.
func (p *Personality) lmdeployCount(prompt, generated int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lmdeploy.prompt += prompt
	p.lmdeploy.generated += generated
}

// lmdeployUsage is UsageInfo: no details.
func lmdeployUsage(prompt, completion int) map[string]any {
	return map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
}

// lmdeployStream streams a as completion_stream_generator writes it: one
// chunk per token, each chat delta {"role": "assistant", "content"} (no
// role chunk of its own), the finish_reason on a last chunk of its own
// whose content is "" (or, for an engine error, the error's text). With
// stream_options.include_usage every chunk carries the usage so far, the
// last one the final count; without it none does. [DONE] ends it. Chunks
// are model_dump_json: every field written, nulls included.
func (p *Personality) lmdeployStream(w http.ResponseWriter, r *http.Request, g *genRequest, id string, a answer) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(200)
	now := time.Now().Unix()
	obj := "chat.completion.chunk"
	if !g.chat {
		obj = "text_completion"
	}
	send := func(text string, t *genToken, i, n int, finish any) {
		c := map[string]any{"index": 0, "logprobs": nil, "finish_reason": finish}
		if g.chat {
			delta := map[string]any{"role": "assistant", "content": text, "reasoning_content": nil, "tool_calls": nil}
			if g.tool != "" && t != nil {
				delta = p.toolDelta(g, id, i, text, i == lastSent(a.toks) && a.finish != "length")
				delta["role"] = "assistant"
			}
			c["delta"] = delta
			if t != nil && g.logprobs {
				c["logprobs"] = map[string]any{"content": lmdeployChatLogprobs([]genToken{*t})}
			}
		} else {
			c["text"] = text
			if t != nil && g.compLP {
				c["logprobs"] = trtllmCompletionLogprobs([]genToken{*t}, g.topK, 0)
			}
		}
		var usage any
		if g.usage {
			usage = lmdeployUsage(g.promptN, n)
		}
		sseData(w, rc, map[string]any{"id": id, "object": obj, "created": now, "model": p.Opts.Model, "choices": []any{c}, "usage": usage})
	}
	if !sleep(r, p.Opts.TTFT) {
		return
	}
	for i, t := range a.toks {
		if i > 0 && !sleep(r, p.Opts.Gap) {
			return
		}
		send(t.Text, &t, i, i+1, nil)
	}
	text := ""
	if a.finish == "error" {
		text = lmdeployErrorText
	}
	send(text, nil, 0, a.n, p.lmdeployFinish(g, a))
	p.lmdeployCount(g.promptN, a.n)
	sseDone(w, rc)
}

// lmdeployFinish is the answer's finish_reason: a tool call's "stop" is
// "tool_calls" once the parser has streamed one.
func (p *Personality) lmdeployFinish(g *genRequest, a answer) string {
	if g.tool != "" && a.finish == "stop" && len(a.toks) > 0 {
		return "tool_calls"
	}
	return a.finish
}

// lmdeployWhole is a whole answer: one choice, its usage always there.
func (p *Personality) lmdeployWhole(w http.ResponseWriter, g *genRequest, id string, a answer) {
	text := joinText(a.toks)
	if a.finish == "error" {
		text = lmdeployErrorText
	}
	c := map[string]any{"index": 0, "logprobs": nil, "finish_reason": p.lmdeployFinish(g, a)}
	resp := map[string]any{"id": id, "created": time.Now().Unix(), "model": p.Opts.Model, "choices": []any{c}, "usage": lmdeployUsage(g.promptN, a.n)}
	if g.chat {
		resp["object"] = "chat.completion"
		msg := map[string]any{"role": "assistant", "content": text, "tool_calls": nil, "reasoning_content": nil}
		if g.tool != "" && len(a.toks) > 0 {
			msg["content"] = ""
			msg["tool_calls"] = []any{map[string]any{"id": p.toolCallID(id), "type": "function",
				"function": map[string]any{"name": g.tool, "arguments": toolArguments(a.toks, a.finish != "length")}}}
		}
		c["message"] = msg
		if g.logprobs && len(a.toks) > 0 {
			c["logprobs"] = map[string]any{"content": lmdeployChatLogprobs(a.toks)}
		}
	} else {
		resp["object"] = "text_completion"
		c["text"] = text
		if g.compLP && len(a.toks) > 0 {
			c["logprobs"] = trtllmCompletionLogprobs(a.toks, g.topK, 0)
		}
	}
	writeJSON(w, 200, resp)
}

// lmdeployChatLogprobs is _create_chat_completion_logprobs: the sampled
// token's text, bytes and logprob, and as top_logprobs the engine's other
// candidates only: the sampled token is never among them.
func lmdeployChatLogprobs(toks []genToken) []any {
	out := []any{}
	for _, t := range toks {
		top := []any{}
		for _, c := range t.Top {
			if c.Token != t.Text {
				top = append(top, map[string]any{"token": c.Token, "bytes": bytesOf(c.Token), "logprob": c.Logprob})
			}
		}
		out = append(out, map[string]any{"token": t.Text, "bytes": bytesOf(t.Text), "logprob": t.Logprob, "top_logprobs": top})
	}
	return out
}
