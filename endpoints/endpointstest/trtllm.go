package endpointstest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// NVIDIA TensorRT-LLM's trtllm-serve on its default PyTorch backend, as one
// 2026 version of its source has it: tensorrt_llm/serve/openai_server.py
// (routes, errors, streams), openai_protocol.py (the request models, all
// OpenAIBaseModel with extra="forbid"), postprocess_handlers.py (chunk and
// usage shapes) and llmapi/llm.py _check_arguments (the prompt check).
// Options.Context is its max_seq_len (prompt plus output); TRTLLMOptions
// the rest. It checks no API key: openai_server.py has no auth middleware
// and trtllm-serve no --api-key (NVIDIA/TensorRT-LLM#9950, asked for in
// December 2025, not planned in January 2026).

// TRTLLMOptions configure the trtllm personality. Zero values take the
// defaults named.
type TRTLLMOptions struct {
	// MaxNumTokens is --max_num_tokens (default 8192), the most tokens of
	// one batch: without ChunkedPrefill a prompt longer than it is refused
	// (llm.py _check_arguments).
	MaxNumTokens int
	// ChunkedPrefill is enable_chunked_prefill: no prompt is held to
	// MaxNumTokens.
	ChunkedPrefill bool
	// IterStats is enable_iter_perf_stats (off by default on the PyTorch
	// backend): /metrics lists the iteration statistics gathered since
	// the last GET; without it the list is always empty.
	IterStats bool
	// PerfMetrics is return_perf_metrics: /prometheus/metrics serves the
	// MetricsCollector's trtllm_ series (else 404).
	PerfMetrics bool
	// MaxTopLogprobs is sampling_params.py's MAX_TOP_LOGPROBS (0: no cap;
	// its value is unverified): a chat top_logprobs or a completions
	// logprobs past it is refused by the check_logprobs before-validator,
	// "... must be less than or equal to N" (the wording around that
	// phrase, which its tests match, is unverified).
	MaxTopLogprobs int
	// Before2026 answers as the 2025 builds (1.0 to 1.2) do: a validation
	// error is create_error_response's flat ErrorResponse, its message
	// the repr of pydantic's list (NVIDIA/TensorRT-LLM#9709 quotes one
	// from 1.2.0rc4), and n > 1 is refused on the PyTorch backend, 400
	// "Multiple response is not supported in PyTorch workflow"
	// (chat_utils.py check_multiple_response). Without it, a validation
	// error is {"error": str(exc)} and n is served, as the 2026 source has
	// it.
	Before2026 bool
}

// defaults fills in the zero values' defaults.
func (o *TRTLLMOptions) defaults() {
	if o.MaxNumTokens <= 0 {
		o.MaxNumTokens = 8192
	}
}

// trtllmVersion is what GET /version answers.
const trtllmVersion = "1.2.0"

// trtllmCounters are what the fake's MetricsCollector and iteration stats
// count: requests answered in full, their prompt and generated tokens, and
// the iterations not yet drained by a GET /metrics.
type trtllmCounters struct {
	succeeded, prompt, generated int
	iters                        int
}

// serveTRTLLM answers r as trtllm-serve's FastAPI app does.
func (p *Personality) serveTRTLLM(w http.ResponseWriter, r *http.Request, body []byte) {
	switch r.Method + " " + r.URL.Path {
	case "GET /health":
		// 200, no body, while the executor is healthy.
		w.WriteHeader(200)
	case "GET /health_generate":
		w.Write([]byte("Generation health check OK"))
	case "GET /version":
		writeJSON(w, 200, map[string]any{"version": trtllmVersion})
	case "GET /v1/models":
		// ModelList of one ModelCard: owned_by "tensorrt_llm", created now,
		// no context length.
		writeJSON(w, 200, map[string]any{"object": "list", "data": []any{map[string]any{
			"id": p.Opts.Model, "object": "model", "created": time.Now().Unix(), "owned_by": "tensorrt_llm"}}})
	case "GET /metrics":
		p.trtllmIterStats(w)
	case "GET /prometheus/metrics":
		if !p.Opts.TRTLLM.PerfMetrics {
			writeJSON(w, 404, map[string]any{"detail": "Not Found"})
			return
		}
		p.trtllmPrometheus(w)
	case "POST /v1/chat/completions":
		p.trtllmGenerate(w, r, body, true)
	case "POST /v1/completions":
		p.trtllmGenerate(w, r, body, false)
	default:
		if trtllmRoutes[r.URL.Path] {
			writeJSON(w, 405, map[string]any{"detail": "Method Not Allowed"})
			return
		}
		// FastAPI's 404 (no /tokenize, /props, /info or /get_server_info).
		writeJSON(w, 404, map[string]any{"detail": "Not Found"})
	}
}

// trtllmRoutes are the fake's paths (register_routes has more: /perf_metrics,
// /v1/responses, /server_info, ...; none of them is asked by glmbench).
var trtllmRoutes = set("/health", "/health_generate", "/version", "/v1/models", "/metrics", "/v1/chat/completions", "/v1/completions")

// trtllmIterStats is GET /metrics: a JSON list of the iteration statistics
// the engine queued since the last GET (get_stats_async drains them), not
// Prometheus text. One entry per drained GET here, in the executor's
// camelCase keys; [] without IterStats.
func (p *Personality) trtllmIterStats(w http.ResponseWriter) {
	p.mu.Lock()
	running, c := p.inflight, p.trtllm
	p.trtllm.iters++
	p.mu.Unlock()
	stats := []any{}
	if p.Opts.TRTLLM.IterStats {
		stats = append(stats, map[string]any{"iter": c.iters, "iterLatencyMS": 1.5, "numActiveRequests": running,
			"numQueuedRequests": 0, "numCompletedRequests": c.succeeded, "maxNumActiveRequests": 2048,
			"gpuMemUsage": 0, "cpuMemUsage": 0, "pinnedMemUsage": 0, "timestamp": time.Now().UTC().Format("01-02-2006 15:04:05"),
			"kvCacheStats": map[string]any{"maxNumBlocks": 4096, "freeNumBlocks": 4096, "usedNumBlocks": 0, "tokensPerBlock": 32}})
	}
	writeJSON(w, 200, stats)
}

// trtllmPrometheus is /prometheus/metrics with return_perf_metrics: the
// MetricsCollector's series (tensorrt_llm/metrics/collector.py), labelled
// model_name and engine_type "undefined" as openai_server.py makes it.
func (p *Personality) trtllmPrometheus(w http.ResponseWriter) {
	p.mu.Lock()
	running, c := p.inflight, p.trtllm
	p.mu.Unlock()
	const l = `engine_type="undefined",model_name="undefined"`
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	fmt.Fprintf(w, "# TYPE trtllm_num_requests_running gauge\ntrtllm_num_requests_running{%[1]s} %[2]d\n"+
		"# TYPE trtllm_num_requests_waiting gauge\ntrtllm_num_requests_waiting{%[1]s} 0\n"+
		"# TYPE trtllm_request_success_total counter\ntrtllm_request_success_total{%[1]s,finished_reason=\"length\"} %[3]d\n"+
		"# TYPE trtllm_prompt_tokens_total counter\ntrtllm_prompt_tokens_total{%[1]s} %[4]d\n"+
		"# TYPE trtllm_generation_tokens_total counter\ntrtllm_generation_tokens_total{%[1]s} %[5]d\n",
		l, running, c.succeeded, c.prompt, c.generated)
}

// trtllmCount adds one request answered in full to the counters.
func (p *Personality) trtllmCount(prompt, generated int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trtllm.succeeded++
	p.trtllm.prompt += prompt
	p.trtllm.generated += generated
}

// trtllmGenerate answers /v1/chat/completions and /v1/completions: the
// body is validated as pydantic does (trtllmValidate), then the prompt is
// checked (checkTRTLLM), then the answer is generated.
func (p *Personality) trtllmGenerate(w http.ResponseWriter, r *http.Request, body []byte, chat bool) {
	if errs := trtllmValidate(body, chat, p.Opts.TRTLLM.MaxTopLogprobs); len(errs) > 0 {
		// RequestValidationError's handler: 400 with str(exc), the repr of
		// pydantic's error list, as {"error": ...} (2026; the
		// CherryHQ/cherry-studio#12450 report quotes one) or, before, as
		// an ErrorResponse's message.
		msg := "[" + strings.Join(errs, ", ") + "]"
		if p.Opts.TRTLLM.Before2026 {
			p.fail(w, 400, msg, nil)
			return
		}
		writeJSON(w, 400, map[string]any{"error": msg})
		return
	}
	g, ref := p.parse(body, chat)
	if ref != nil {
		// What passes validation and fails later (the chat template, the
		// prompt) is create_error_response's 400 ErrorResponse.
		p.fail(w, 400, ref.msg, nil)
		return
	}
	// No --tool_parser is set by default: tools reach the template and
	// the answer is text (a named tool_choice's raw-text arguments are not
	// modelled).
	g.tool, g.choice = "", ""
	g.usage = trtllmIncludeUsage(body)
	promptN, budget, ref, late := p.checkTRTLLM(g)
	if g.n > 1 && p.Opts.TRTLLM.Before2026 {
		// check_multiple_response, the first check of the handler.
		ref, late = &refusal{400, "Multiple response is not supported in PyTorch workflow", nil}, false
	}
	if ref == nil && (g.n < 1 || g.n > maxN) {
		ref = &refusal{400, fmt.Sprintf("n must be between 1 and %d", maxN), nil}
	}
	if ref != nil && !(late && g.stream) {
		p.notePrompt(g)
		p.fail(w, ref.status, ref.msg, nil)
		return
	}
	p.mu.Lock()
	p.seq++
	seq := p.seq
	defer p.enterLocked(g)()
	if ref != nil {
		// The worker's refusal reaches a stream after its 200: the
		// generator raises at its first anext and uvicorn drops the
		// connection, the chunked body never ended. The 2026
		// completion_generator catches it instead and says it in an
		// error event and [DONE], and generator_wrapper adds its own
		// [DONE] (serve/openai_server.py); the chat stream still drops.
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.WriteHeader(200)
		if !g.chat && !p.Opts.TRTLLM.Before2026 {
			ev, _ := json.Marshal(map[string]any{"error": map[string]any{"message": ref.msg, "type": "server_error", "code": nil, "param": nil}})
			fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\ndata: [DONE]\n\n", ev)
			return
		}
		http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	}
	choices := p.answers(g, budget, seq)
	id := fmt.Sprintf("%x%06x", time.Now().UnixNano(), seq)
	if g.stream {
		p.trtllmStream(w, r, g, id, promptN, choices[0], body)
		return
	}
	if !p.wholeWait(r, choices[0]) {
		return
	}
	n := 0
	for _, a := range choices {
		n += a.n
	}
	p.trtllmCount(promptN, n)
	p.trtllmWhole(w, g, id, promptN, choices, body)
}

// checkTRTLLM is the PyTorch backend's check. A prompt past max_num_tokens
// (no chunked prefill) is refused in generate_async (llm.py
// _check_arguments), before any answer. max_tokens is then bounded by what
// max_seq_len leaves (base_worker.py _deduce_max_tokens: absent, it is all
// of it; larger, it is cut to it with a logged warning "User-specified
// `max_tokens` (M) is greater than deduced `default_max_tokens` (D), using
// default_max_tokens instead"), and a prompt that leaves nothing is refused
// by the worker, after generate_async returned: late is then true, and a
// stream learns it only after its 200. A max_tokens below 1 is refused
// (SamplingParams' check; the wording here is the fake's, unverified).
func (p *Personality) checkTRTLLM(g *genRequest) (promptN int, budget int64, ref *refusal, late bool) {
	o := p.Opts.TRTLLM
	P, L := g.promptN, p.Opts.Context
	if g.hasMax && g.maxTokens < 1 {
		return 0, 0, &refusal{400, fmt.Sprintf("max_tokens must be greater than 0, got %d", g.maxTokens), nil}, false
	}
	if !o.ChunkedPrefill && P > o.MaxNumTokens {
		// prompt_len / cp_size is a float in Python: "(5000.0)".
		return 0, 0, &refusal{400, fmt.Sprintf("The sum of prompt length (%d.0), query length (0) should not exceed max_num_tokens (%d)", P, o.MaxNumTokens), nil}, false
	}
	left := int64(L - P)
	if left <= 0 {
		return 0, 0, &refusal{400, fmt.Sprintf("`default_max_tokens` (%d) must be greater than 0, `default_max_tokens` (%d) = max_seq_len (%d) - `splited_prompt_len` (%d) - `query_token_len` (0)", left, left, L, P), nil}, true
	}
	M := g.maxTokens
	if !g.hasMax || M > left {
		M = left
	}
	return P, M, nil, false
}

// trtllmStream streams a as chat_stream_post_processor and
// completion_stream_post_processor write it. A chat stream opens with a
// role chunk ({"role": "assistant"}, sent with the first token: the
// generator awaits the first result before it yields), its line "data:
// {...} \n\n" with a space before the blank line; its chunks are dumped
// with exclude_none (no usage, logprobs or finish_reason keys until set)
// and each delta has reasoning_content "" beside its content; the finish
// reason rides on the last token's chunk. A completions chunk is dumped
// whole, nulls included ("usage": null). Usage comes only with
// stream_options (include_usage defaults to true there), in a last chunk of
// its own with choices [] and prompt_tokens_details.cached_tokens. [DONE]
// ends both.
func (p *Personality) trtllmStream(w http.ResponseWriter, r *http.Request, g *genRequest, id string, promptN int, a answer, body []byte) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(200)
	model := trtllmModelOf(body)
	now := time.Now().Unix()
	chunk := func(choices []any) map[string]any {
		if g.chat {
			return map[string]any{"id": "chatcmpl-" + id, "object": "chat.completion.chunk", "created": now, "model": model, "choices": choices}
		}
		return map[string]any{"id": "cmpl-" + id, "object": "text_completion", "created": now, "model": model, "choices": choices, "usage": nil}
	}
	if !sleep(r, p.Opts.TTFT) {
		return
	}
	if g.chat {
		b, _ := json.Marshal(chunk([]any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant"}}}))
		fmt.Fprintf(w, "data: %s \n\n", b)
	}
	off := 0
	for i, t := range a.toks {
		if i > 0 && !sleep(r, p.Opts.Gap) {
			return
		}
		c := map[string]any{"index": 0}
		if g.chat {
			c["delta"] = map[string]any{"content": t.Text, "reasoning_content": ""}
			if g.logprobs {
				c["logprobs"] = map[string]any{"content": trtllmChatLogprobs([]genToken{t}, g.topK > 0)}
			}
		} else {
			text := t.Text
			if i == 0 && g.echo {
				text = g.prompt + text
			}
			c["text"], c["token_ids"], c["logprobs"], c["finish_reason"], c["stop_reason"], c["avg_decoded_tokens_per_iter"] = text, nil, nil, nil, nil, nil
			if g.compLP {
				c["logprobs"] = trtllmCompletionLogprobs([]genToken{t}, g.topK, off)
			}
			off += utf8.RuneCountInString(t.Text)
		}
		if i == len(a.toks)-1 {
			c["finish_reason"] = a.finish
		}
		sseData(w, rc, chunk([]any{c}))
	}
	if g.usage {
		u := chunk([]any{})
		u["usage"] = trtllmUsage(promptN, a.n)
		sseData(w, rc, u)
	}
	p.trtllmCount(promptN, a.n)
	sseDone(w, rc)
}

// trtllmWhole is a whole answer, model_dump()ed: every field written, nulls
// included; the model is the request's, echoed.
func (p *Personality) trtllmWhole(w http.ResponseWriter, g *genRequest, id string, promptN int, choices []answer, body []byte) {
	var cs []any
	total := 0
	for i, a := range choices {
		total += a.n
		text := joinText(a.toks)
		c := map[string]any{"index": i, "logprobs": nil, "finish_reason": a.finish, "stop_reason": nil, "avg_decoded_tokens_per_iter": nil,
			"disaggregated_params": nil}
		if g.chat {
			c["message"] = map[string]any{"role": "assistant", "content": text, "reasoning_content": "", "reasoning": nil, "tool_calls": []any{}}
			c["mm_embedding_handle"] = nil
			if g.logprobs {
				c["logprobs"] = map[string]any{"content": trtllmChatLogprobs(a.toks, g.topK > 0)}
			}
		} else {
			if g.echo {
				// echo prepends the prompt's text; its logprobs stay the
				// generated tokens' alone (no prompt logprobs).
				text = g.prompt + text
			}
			c["text"], c["token_ids"], c["context_logits"] = text, nil, nil
			if g.compLP {
				c["logprobs"] = trtllmCompletionLogprobs(a.toks, g.topK, 0)
			}
		}
		cs = append(cs, c)
	}
	resp := map[string]any{"model": trtllmModelOf(body), "choices": cs, "usage": trtllmUsage(promptN, total), "prompt_token_ids": nil}
	if g.chat {
		resp["id"], resp["object"], resp["prompt_token_ids_b64"] = "chatcmpl-"+id, "chat.completion", nil
	} else {
		resp["id"], resp["object"] = "cmpl-"+id, "text_completion"
	}
	resp["created"] = time.Now().Unix()
	writeJSON(w, 200, resp)
}

// trtllmModelOf is the model field of body, which trtllm-serve echoes in
// its answers whatever it serves.
func trtllmModelOf(body []byte) string {
	var f struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &f)
	return f.Model
}

// trtllmIncludeUsage reports whether a stream of body sends usage:
// stream_options is given, not null, and its include_usage (default true)
// is not false (StreamOptions).
func trtllmIncludeUsage(body []byte) bool {
	var f struct {
		StreamOptions *struct {
			IncludeUsage *bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	_ = json.Unmarshal(body, &f)
	return f.StreamOptions != nil && (f.StreamOptions.IncludeUsage == nil || *f.StreamOptions.IncludeUsage)
}

// trtllmUsage is UsageInfo: cached_tokens always stated (0 here).
func trtllmUsage(prompt, completion int) map[string]any {
	return map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
		"prompt_tokens_details": map[string]any{"cached_tokens": 0}}
}

// trtllmChatLogprobs is create_logprobs: token, logprob, bytes, and
// top_logprobs only when top_logprobs was asked (else null), each of them
// a ChatCompletionLogProbsContent too (its own top_logprobs null).
func trtllmChatLogprobs(toks []genToken, top bool) []any {
	out := []any{}
	for _, t := range toks {
		e := map[string]any{"token": t.Text, "logprob": t.Logprob, "bytes": bytesOf(t.Text), "top_logprobs": nil}
		if top {
			list := []any{}
			for _, c := range t.Top {
				list = append(list, map[string]any{"token": c.Token, "logprob": c.Logprob, "bytes": bytesOf(c.Token), "top_logprobs": nil})
			}
			e["top_logprobs"] = list
		}
		out = append(out, e)
	}
	return out
}

// trtllmCompletionLogprobs is create_completion_logprobs over the generated
// tokens: text_offset from off, token_logprobs, tokens, and top_logprobs
// dicts of the k most likely (the sampled token among them; read from
// source, how the sampler fills the dict is unverified).
func trtllmCompletionLogprobs(toks []genToken, k, off int) map[string]any {
	offsets, lps, tokens, tops := []int{}, []any{}, []string{}, []any{}
	for _, t := range toks {
		offsets = append(offsets, off)
		off += utf8.RuneCountInString(t.Text)
		lps = append(lps, t.Logprob)
		tokens = append(tokens, t.Text)
		top := map[string]float64{t.Text: t.Logprob}
		for _, c := range t.Top {
			if len(top) >= max(k, 1) {
				break
			}
			top[c.Token] = c.Logprob
		}
		tops = append(tops, top)
	}
	return map[string]any{"text_offset": offsets, "token_logprobs": lps, "tokens": tokens, "top_logprobs": tops}
}

// trtllmChatFields and trtllmCompletionFields are the fields of
// ChatCompletionRequest and CompletionRequest (openai_protocol.py);
// max_tokens is chat's validation alias of max_completion_tokens.
var (
	trtllmChatFields = set("messages", "prompt_token_ids", "prompt_token_ids_b64", "model", "frequency_penalty", "logit_bias",
		"logprobs", "top_logprobs", "max_completion_tokens", "max_tokens", "n", "presence_penalty", "response_format", "seed", "stop",
		"stream", "stream_options", "temperature", "top_p", "tools", "tool_choice", "parallel_tool_calls", "user", "reasoning_effort",
		"thinking", "thinking_token_budget", "prompt_ignore_length", "best_of", "use_beam_search", "top_k", "top_p_min", "min_p",
		"repetition_penalty", "length_penalty", "early_stopping", "stop_token_ids", "include_stop_str_in_output", "ignore_eos",
		"min_tokens", "skip_special_tokens", "spaces_between_special_tokens", "truncate_prompt_tokens", "lora_request", "echo",
		"add_generation_prompt", "add_special_tokens", "documents", "chat_template", "chat_template_kwargs",
		"injected_chat_template_kwargs", "media_io_kwargs", "disaggregated_params", "conversation_params", "cache_salt", "priority",
		"agent_hierarchy", "mm_processor_kwargs")
	trtllmCompletionFields = set("model", "prompt", "best_of", "echo", "frequency_penalty", "logit_bias", "logprobs", "max_tokens", "n",
		"presence_penalty", "seed", "stop", "stream", "stream_options", "suffix", "temperature", "top_p", "user", "lora_request",
		"prompt_ignore_length", "use_beam_search", "top_k", "top_p_min", "min_p", "repetition_penalty", "length_penalty",
		"early_stopping", "stop_token_ids", "include_stop_str_in_output", "ignore_eos", "min_tokens", "skip_special_tokens",
		"spaces_between_special_tokens", "truncate_prompt_tokens", "return_context_logits", "detokenize", "thinking_token_budget",
		"add_special_tokens", "response_format", "disaggregated_params", "priority", "conversation_params")
)

// trtllmValidate is pydantic's validation of body as the request model of
// the route, each error as the repr of its dict (what str() of FastAPI's
// RequestValidationError lists); none when the body is valid. A body that
// is no JSON object is json_invalid. The model's before-validators run
// first, the last defined first, and the first to raise is the only error
// (value_error, loc ('body',)): check_logprobs (chat's top_logprobs or
// completions' logprobs past maxTop, when it is not 0; chat's top_logprobs
// without logprobs), then the stream_options check (stream_options without
// stream: true; on the completions route, any truthy stream_options).
// Then every field: each unknown one is extra_forbidden, a missing model,
// messages or prompt is missing, a messages that is no list is list_type.
// Python keeps the body's key order; these errors are in sorted key order.
func trtllmValidate(body []byte, chat bool, maxTop int) []string {
	var raw map[string]json.RawMessage
	if json.Unmarshal(body, &raw) != nil || raw == nil {
		return []string{"{'type': 'json_invalid', 'loc': ('body', 0), 'msg': 'JSON decode error', 'input': {}, 'ctx': {'error': 'Expecting value'}}"}
	}
	valueError := func(msg string) []string {
		return []string{fmt.Sprintf("{'type': 'value_error', 'loc': ('body',), 'msg': 'Value error, %s', 'input': %s, 'ctx': {'error': ValueError(%s)}}",
			msg, pyRepr(body), pyString(msg))}
	}
	truthy := func(k string) bool {
		v, ok := raw[k]
		s := string(bytes.TrimSpace(v))
		return ok && s != "null" && s != "false" && s != "0" && s != `""` && s != "{}" && s != "[]"
	}
	field := "logprobs"
	if chat {
		field = "top_logprobs"
	}
	var asked int
	if maxTop > 0 && json.Unmarshal(raw[field], &asked) == nil && asked > maxTop {
		return valueError(fmt.Sprintf("%s must be less than or equal to %d", field, maxTop))
	}
	if _, ok := raw["top_logprobs"]; chat && ok && string(raw["top_logprobs"]) != "null" && !truthy("logprobs") {
		return valueError("logprobs must be true when using top_logprobs")
	}
	switch {
	case chat && len(raw["stream_options"]) > 0 && string(raw["stream_options"]) != "null" && !truthy("stream"):
		return valueError("stream_options can only be set if stream is true")
	case !chat && truthy("stream_options") && !truthy("stream"):
		return valueError("Stream options can only be defined when stream is true.")
	}
	known, need := trtllmCompletionFields, []string{"model", "prompt"}
	if chat {
		known, need = trtllmChatFields, []string{"messages", "model"}
	}
	var errs []string
	for _, k := range need {
		if _, ok := raw[k]; !ok {
			errs = append(errs, fmt.Sprintf("{'type': 'missing', 'loc': ('body', %s), 'msg': 'Field required', 'input': %s}", pyString(k), pyRepr(body)))
		}
	}
	if m, ok := raw["messages"]; chat && ok && (len(m) == 0 || m[0] != '[') {
		errs = append(errs, fmt.Sprintf("{'type': 'list_type', 'loc': ('body', 'messages'), 'msg': 'Input should be a valid list', 'input': %s}", pyRepr(m)))
	}
	for _, k := range unrecognized(raw, known) {
		errs = append(errs, fmt.Sprintf("{'type': 'extra_forbidden', 'loc': ('body', %s), 'msg': 'Extra inputs are not permitted', 'input': %s}", pyString(k), pyRepr(raw[k])))
	}
	return errs
}

// pyRepr is Python's repr of the JSON value v as json.loads reads it:
// None, True, False, ints without a point, strings quoted as repr quotes
// them, dicts with their keys sorted (Python keeps the body's order).
func pyRepr(v []byte) string {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var x any
	if dec.Decode(&x) != nil {
		return "None"
	}
	var b strings.Builder
	writePy(&b, x)
	return b.String()
}

func writePy(b *strings.Builder, x any) {
	switch v := x.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		b.WriteString(map[bool]string{true: "True", false: "False"}[v])
	case json.Number:
		b.WriteString(v.String())
	case string:
		b.WriteString(pyString(v))
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			writePy(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(pyString(k) + ": ")
			writePy(b, v[k])
		}
		b.WriteByte('}')
	}
}

// pyString is Python's repr of a str: single quotes unless it holds a
// single quote and no double one; backslash, newline, tab and carriage
// return escaped (other control characters as \xNN).
func pyString(s string) string {
	q := byte('\'')
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == rune(q):
			b.WriteByte('\\')
			b.WriteByte(q)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x` + strconv.FormatInt(int64(r)+0x100, 16)[1:])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}
