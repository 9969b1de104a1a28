package evals

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/reports/schema"
)

// fakeLM is an OpenAI-compatible /v1/completions server with a byte-level
// "model" whose answers tests control: by default a well-behaved echo
// server (every byte a token, logprob byteLP(b) whatever its context, no
// BOS), which each test bends into the failure it needs.
type fakeLM struct {
	srv *httptest.Server

	// echoStatus and echoBody answer every echo request when status is set.
	echoStatus int
	echoBody   string
	// plainStatus answers every request without echo when set.
	plainStatus int
	// reset closes the connection of every echo request before answering.
	reset bool
	// mutate changes a well-formed echo answer into a broken one.
	mutate func(ans map[string]any, prompt []any)
	// noTokenIDs ignores return_tokens_as_token_ids, as SGLang does.
	noTokenIDs bool
	// tokenize serves SGLang's and vLLM's POST /tokenize at the root.
	tokenize bool
	// bos puts token 1 before every text prompt, as Llama's tokenizer does.
	bos bool
	// noLogprobs answers generations with logprobs null even when asked.
	noLogprobs bool
	// letter is the MMLU answer this model prefers for a context.
	letter func(context string) string
	// top is the top_logprobs of the token generated after a prompt.
	top func(prompt string) map[string]float64
	// generate is the text generated after a prompt.
	generate func(prompt string) string

	// llamaCpp answers /v1/completions as llama.cpp's server does: echo is
	// a 500 (llamaCppEcho500) and logprobs are ignored (null), while chat
	// gives logprobs (tools/server: oaicompat_completion_params_parse,
	// server-task.cpp to_json_oaicompat_chat).
	llamaCpp bool
	// completionsStatus and completionsBody answer every /v1/completions
	// request when set: a chat-only provider's 404.
	completionsStatus int
	completionsBody   string
	// chat serves /v1/chat/completions (chatAnswer); without it the route
	// is a 404, as on a server that has only /v1/completions.
	chat bool
	// chatNoLogprobs answers chat with "logprobs": null even when asked, as
	// a provider that gives no logprobs at all.
	chatNoLogprobs bool
	// chatStatus answers every chat request when set.
	chatStatus int
	// reasoning makes the chat model a thinking model: it generates
	// reasoning(prompt) before generate(prompt), both within max_tokens,
	// the first part in message.reasoning_content and the rest in content
	// (null when none), logprobs covering both in order, as vLLM's and
	// llama.cpp's reasoning parsers answer.
	reasoning func(prompt string) string
	// thinkInContent leaves the reasoning in content as the model wrote it,
	// "<think>" reasoning "</think>" then the answer, each tag one token, as
	// llama.cpp with --reasoning-format none or a gateway that passes the
	// text through answers (llama.cpp issue 11325).
	thinkInContent bool
	// refuseIgnoreEOS answers a chat request holding ignore_eos as the
	// OpenAI API does (openAIIgnoreEOS400).
	refuseIgnoreEOS bool
	// completionsRefuseIgnoreEOS answers a /v1/completions request holding
	// ignore_eos so too.
	completionsRefuseIgnoreEOS bool

	mu    sync.Mutex
	calls map[string]int
}

// llamaCppEcho500 is llama.cpp's answer to echo on /v1/completions: a
// std::runtime_error in oaicompat_completion_params_parse, which its
// ex_wrapper turns into a 500 of type server_error.
const llamaCppEcho500 = `{"error":{"code":500,"message":"Only no echo is supported","type":"server_error"}}`

// openAIIgnoreEOS400 is the OpenAI API's answer to a field it does not
// know, here ignore_eos (docs/SERVERS.md).
const openAIIgnoreEOS400 = `{"error":{"message":"Unrecognized request argument supplied: ignore_eos","type":"invalid_request_error","param":null,"code":null}}`

// chatOnly404 is OpenAI's answer to a route it does not serve, as hosted
// chat-only gateways give for /v1/completions.
const chatOnly404 = `{"error":{"message":"Invalid URL (POST /v1/completions)","type":"invalid_request_error","param":null,"code":null}}`

func newFakeLM(t *testing.T, configure func(f *fakeLM)) *fakeLM {
	t.Helper()
	f := &fakeLM{calls: map[string]int{}}
	if configure != nil {
		configure(f)
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeLM) endpoint() *endpoints.Endpoint {
	return &endpoints.Endpoint{BaseURL: f.srv.URL + "/v1", Model: "fake"}
}

func (f *fakeLM) client() *endpoints.Client {
	return endpoints.NewClient(f.endpoint(), endpoints.NewTransport(endpoints.TransportOptions{Conns: 4}))
}

func (f *fakeLM) runner(cfg Config) *Runner {
	cfg.Endpoint = f.endpoint()
	return NewRunner(cfg)
}

// run runs the eval named name over data (TriviaQA with its shots from
// data) on a runner for the fake with cfg.
func (f *fakeLM) run(name string, cfg Config, data Data) schema.EvalResult {
	cfg.Endpoint = f.endpoint()
	return runEval(name, cfg, data)
}

// runEval runs the eval named name over data on a runner with cfg, closed
// after.
func runEval(name string, cfg Config, data Data) schema.EvalResult {
	res, _ := runEvalItems(name, cfg, data)
	return res
}

// runEvalItems is runEval with the eval's items.
func runEvalItems(name string, cfg Config, data Data) (schema.EvalResult, []schema.EvalItem) {
	e, ok := Lookup(name)
	if !ok {
		panic("no eval " + name)
	}
	r := NewRunner(cfg)
	defer r.Close()
	return e.Run(context.Background(), r, Input{Data: data})
}

func (f *fakeLM) count(k string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[k]
}

// byteLP is the fake model's logprob of a byte.
func byteLP(b byte) float64 { return -(0.5 + float64(b%10)/10) }

func (f *fakeLM) serve(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	if f.tokenize && r.URL.Path == "/tokenize" && json.NewDecoder(r.Body).Decode(&req) == nil {
		toks, _ := f.promptTokens(req["prompt"])
		ids := make([]int, len(toks))
		for i, b := range toks {
			ids[i] = int(b)
		}
		f.mu.Lock()
		f.calls["tokenize"]++
		f.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"tokens": ids, "count": len(ids), "max_model_len": 4096})
		return
	}
	if f.chat && r.URL.Path == "/v1/chat/completions" && json.NewDecoder(r.Body).Decode(&req) == nil {
		f.mu.Lock()
		f.calls["chat"]++
		f.mu.Unlock()
		if _, ok := req["ignore_eos"]; ok && f.refuseIgnoreEOS {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, openAIIgnoreEOS400)
			return
		}
		if f.chatStatus != 0 {
			w.WriteHeader(f.chatStatus)
			io.WriteString(w, `{"error":{"message":"chat says no"}}`)
			return
		}
		f.chatAnswer(w, req)
		return
	}
	if r.URL.Path == "/v1/completions" && f.completionsStatus != 0 {
		f.mu.Lock()
		f.calls["completions_refused"]++
		f.mu.Unlock()
		w.WriteHeader(f.completionsStatus)
		io.WriteString(w, f.completionsBody)
		return
	}
	if r.URL.Path != "/v1/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, `{"error":{"message":"Route not found."}}`, http.StatusNotFound)
		return
	}
	if _, ok := req["ignore_eos"]; ok && f.completionsRefuseIgnoreEOS {
		f.mu.Lock()
		f.calls["completions_refused"]++
		f.mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, openAIIgnoreEOS400)
		return
	}
	echo, _ := req["echo"].(bool)
	kind := "plain"
	if echo {
		kind = "echo"
	}
	f.mu.Lock()
	f.calls[kind]++
	f.mu.Unlock()
	switch {
	case echo && f.reset:
		if hj, ok := w.(http.Hijacker); ok {
			c, _, _ := hj.Hijack()
			c.Close()
		}
		return
	case echo && f.llamaCpp:
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, llamaCppEcho500)
		return
	case echo && f.echoStatus != 0:
		w.WriteHeader(f.echoStatus)
		io.WriteString(w, f.echoBody)
		return
	case !echo && f.plainStatus != 0:
		w.WriteHeader(f.plainStatus)
		io.WriteString(w, `{"error":{"message":"plain generation failed"}}`)
		return
	}
	toks, text := f.promptTokens(req["prompt"])
	if echo {
		f.writeEcho(w, req, toks, text)
		return
	}
	f.writeGeneration(w, req, text, len(toks))
}

// promptTokens reads a prompt as the fake tokenizes it: a string byte by
// byte (after a BOS, with bos), or a list of token ids (bytes), verbatim.
func (f *fakeLM) promptTokens(p any) ([]byte, string) {
	switch v := p.(type) {
	case string:
		if f.bos {
			return append([]byte{1}, v...), v
		}
		return []byte(v), v
	case []any:
		b := make([]byte, len(v))
		for i, x := range v {
			b[i] = byte(x.(float64))
		}
		return b, string(b)
	}
	return nil, ""
}

func (f *fakeLM) writeEcho(w http.ResponseWriter, req map[string]any, toks []byte, text string) {
	asIDs, _ := req["return_tokens_as_token_ids"].(bool)
	asIDs = asIDs && !f.noTokenIDs
	name := func(b byte) string {
		if asIDs {
			return "token_id:" + strconv.Itoa(int(b))
		}
		return string(rune(b))
	}
	all := append(append([]byte(nil), toks...), 'x') // the one generated token
	var names, lps, tops, offs []any
	for i, b := range all {
		names = append(names, name(b))
		offs = append(offs, i)
		if i == 0 {
			lps, tops = append(lps, nil), append(tops, nil)
			continue
		}
		lp := byteLP(b)
		if f.letter != nil && i == len(toks)-1 && i >= 2 && toks[i-1] == ' ' {
			// The answer letter of an MMLU prompt: likely if preferred.
			lp = -2
			if f.letter(string(toks[:i-1])) == string(b) {
				lp = -0.1
			}
		}
		lps = append(lps, lp)
		tops = append(tops, map[string]any{name(b): lp})
	}
	ans := map[string]any{
		"id": "cmpl-fake", "object": "text_completion",
		"choices": []any{map[string]any{"index": 0, "text": text + "x", "finish_reason": "length",
			"logprobs": map[string]any{"tokens": names, "token_logprobs": lps, "top_logprobs": tops, "text_offset": offs}}},
		"usage": map[string]any{"prompt_tokens": len(toks), "completion_tokens": 1, "total_tokens": len(toks) + 1},
	}
	if f.mutate != nil {
		f.mutate(ans, names)
	}
	json.NewEncoder(w).Encode(ans)
}

func (f *fakeLM) writeGeneration(w http.ResponseWriter, req map[string]any, prompt string, n int) {
	out := "x"
	if f.generate != nil {
		out = f.generate(prompt)
	}
	if mt, ok := req["max_tokens"].(float64); ok && f.generate == nil {
		out = strings.Repeat("y", int(mt))
	}
	choice := map[string]any{"index": 0, "text": out, "finish_reason": "length", "logprobs": nil}
	if _, ok := req["logprobs"].(float64); ok && !f.noLogprobs && !f.llamaCpp {
		var lps, tops []any
		for i := range len(out) {
			lps = append(lps, byteLP(out[i]))
			top := map[string]any{string(out[i]): byteLP(out[i])}
			if f.top != nil {
				top = map[string]any{}
				for key, v := range f.top(prompt) {
					top[key] = v
				}
			}
			tops = append(tops, top)
		}
		choice["logprobs"] = map[string]any{"tokens": strings.Split(out, ""), "token_logprobs": lps, "top_logprobs": tops}
	}
	json.NewEncoder(w).Encode(map[string]any{"id": "cmpl-fake", "object": "text_completion", "choices": []any{choice},
		"usage": map[string]any{"prompt_tokens": n, "completion_tokens": len(out), "total_tokens": n + len(out)}})
}

// chatAnswer answers a non-streamed chat request in llama.cpp's shape
// (server-task.cpp to_json_oaicompat_chat and probs_vector_to_json), which
// is OpenAI's plus each token's "id": the same byte-level model generates
// generate(prompt) (default: "y" × max_tokens) after the one user message,
// each byte a token of logprob byteLP(b); with logprobs true every token
// gets {id, token, bytes, logprob, top_logprobs}, top_logprobs being top(prompt)
// when set (keys as the token texts), else the token itself, cut to
// top_logprobs entries (llama.cpp's default 20).
func (f *fakeLM) chatAnswer(w http.ResponseWriter, req map[string]any) {
	prompt := ""
	if msgs, ok := req["messages"].([]any); ok && len(msgs) > 0 {
		prompt, _ = msgs[len(msgs)-1].(map[string]any)["content"].(string)
	}
	out := "y"
	switch mt, _ := req["max_tokens"].(float64); {
	case f.generate != nil:
		out = f.generate(prompt)
	case mt > 0:
		out = strings.Repeat("y", int(mt))
	}
	// toks are the generated tokens: bytes, but for the think tags, one
	// token each as in the tokenizers of the models that use them.
	var toks []string
	bytesOf := func(s string) {
		for i := range len(s) {
			toks = append(toks, s[i:i+1])
		}
	}
	if f.reasoning != nil {
		if f.thinkInContent {
			toks = append(toks, "<think>")
		}
		bytesOf(f.reasoning(prompt))
		if f.thinkInContent {
			toks = append(toks, "</think>")
		}
	}
	thinkToks := len(toks)
	bytesOf(out)
	finish := "stop"
	if mt, ok := req["max_tokens"].(float64); ok && len(toks) >= int(mt) {
		toks, finish = toks[:int(mt)], "length"
	}
	// A stop string ends the generation where it first appears, reasoning
	// included (vLLM and llama.cpp match stop strings on the whole output,
	// before the reasoning parser splits it).
	if stops, ok := req["stop"].([]any); ok {
		for _, st := range stops {
			if k := strings.Index(strings.Join(toks, ""), st.(string)); k >= 0 {
				n, at := 0, 0
				for n < len(toks) && at+len(toks[n]) <= k {
					at += len(toks[n])
					n++
				}
				toks, finish = toks[:n], "stop"
			}
		}
	}
	msg := map[string]any{"role": "assistant", "content": strings.Join(toks, "")}
	if f.reasoning != nil && !f.thinkInContent {
		n := min(thinkToks, len(toks))
		msg["reasoning_content"], msg["content"] = strings.Join(toks[:n], ""), nil
		if n < len(toks) {
			msg["content"] = strings.Join(toks[n:], "")
		}
	}
	choice := map[string]any{"index": 0, "finish_reason": finish, "message": msg}
	if lp, _ := req["logprobs"].(bool); lp && !f.chatNoLogprobs {
		n := 20
		if k, ok := req["top_logprobs"].(float64); ok {
			n = int(k)
		}
		entry := func(tok string, lp float64) map[string]any {
			var bs []any
			for _, c := range []byte(tok) {
				bs = append(bs, int(c))
			}
			id := 0
			if len(tok) == 1 {
				id = int(tok[0])
			}
			return map[string]any{"id": id, "token": tok, "bytes": bs, "logprob": lp}
		}
		content := []any{}
		for i, tok := range toks {
			e := entry(tok, byteLP(tok[0]))
			top := map[string]float64{tok: byteLP(tok[0])}
			if f.top != nil && i >= thinkToks {
				top = f.top(prompt)
			}
			keys := make([]string, 0, len(top))
			for k := range top {
				keys = append(keys, k)
			}
			sort.Slice(keys, func(a, b int) bool { return top[keys[a]] > top[keys[b]] })
			var tops []any
			for _, k := range keys[:min(n, len(keys))] {
				tops = append(tops, entry(k, top[k]))
			}
			e["top_logprobs"] = tops
			content = append(content, e)
		}
		choice["logprobs"] = map[string]any{"content": content}
	} else if f.chatNoLogprobs {
		choice["logprobs"] = nil
	}
	json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion", "created": 1, "model": "fake",
		"choices": []any{choice},
		"usage":   map[string]any{"prompt_tokens": len(prompt), "completion_tokens": len(toks), "total_tokens": len(prompt) + len(toks)}})
}
