package endpointstest

import (
	"encoding/json"
	"strings"
	"testing"
)

// toolsBody is chatBody streaming with one tool and tool_choice choice.
func toolsBody(model string, maxTokens int, choice any) map[string]any {
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}}}}
	return chatBody(model, "hello", maxTokens, "stream", true, "stream_options", map[string]any{"include_usage": true},
		"tools", tools, "tool_choice", choice)
}

// unstreamed is b asking for a whole answer: stream false, no
// stream_options.
func unstreamed(b map[string]any) map[string]any {
	b["stream"] = false
	delete(b, "stream_options")
	return b
}

// toolCallOf is the delta's only tool_calls entry, nil when it has none.
func toolCallOf(t *testing.T, delta map[string]any) map[string]any {
	t.Helper()
	calls, _ := delta["tool_calls"].([]any)
	if len(calls) == 0 {
		return nil
	}
	if len(calls) != 1 {
		t.Fatalf("%d tool_calls entries in %v", len(calls), delta)
	}
	e, _ := calls[0].(map[string]any)
	return e
}

// With tool_choice "required" each personality streams its generation of
// OUT tokens as one tool call: OUT chunks, the first with id, type
// "function", the tool's name and arguments "", then OUT-1 fragments of
// arguments with no name and no content, which join into the arguments
// {"text": "..."} (closed only when the call ended before max_tokens);
// usage counts OUT, and finish_reason is as the server says it.
func TestEachPersonalityStreamsARequiredToolCallInItsShape(t *testing.T) {
	t.Parallel()
	const out = 6
	for _, name := range []string{VLLM, SGLang, LlamaCpp, OpenAI} {
		p := Start(t, name, Options{})
		r := post(t, p.BaseURL()+"/chat/completions", toolsBody(p.Opts.Model, out, "required"))
		if r.status != 200 {
			t.Fatalf("%s: %d %s", name, r.status, r.body)
		}
		s := readStream(t, r.body)
		var calls []map[string]any
		var finish string
		usage := -1.0
		for _, ev := range s.events {
			if u, ok := ev["usage"].(map[string]any); ok {
				usage = num(u["completion_tokens"])
			}
			c := choice0(ev)
			if c == nil {
				continue
			}
			if f, ok := c["finish_reason"].(string); ok {
				finish = f
			}
			d, _ := c["delta"].(map[string]any)
			if content, _ := d["content"].(string); content != "" {
				t.Errorf("%s: content %q beside a tool call", name, content)
			}
			if e := toolCallOf(t, d); e != nil {
				calls = append(calls, e)
			}
		}
		if len(calls) != out || usage != out || !s.done {
			t.Fatalf("%s: %d tool-call chunks, usage %v, done %v; want %d", name, len(calls), usage, s.done, out)
		}
		first, _ := calls[0]["function"].(map[string]any)
		if calls[0]["type"] != "function" || calls[0]["id"] == nil || first["name"] != "get_weather" || first["arguments"] != "" {
			t.Errorf("%s: first chunk %v", name, calls[0])
		}
		var args strings.Builder
		for _, e := range calls[1:] {
			fn, _ := e["function"].(map[string]any)
			if fname, _ := fn["name"].(string); fname != "" || e["index"] != 0.0 {
				t.Errorf("%s: fragment %v names the function", name, e)
			}
			frag, _ := fn["arguments"].(string)
			if frag == "" {
				t.Errorf("%s: empty fragment %v", name, e)
			}
			args.WriteString(frag)
		}
		if !strings.HasPrefix(args.String(), `{"text": "`) || strings.HasSuffix(args.String(), `"}`) {
			t.Errorf("%s: arguments %q", name, args.String())
		}
		// Cut at max_tokens: vLLM, SGLang and llama.cpp give the engine's
		// "length" (SGLang says tool_calls only for a call the engine stopped).
		want := map[string]string{VLLM: "length", SGLang: "length", LlamaCpp: "length", OpenAI: "tool_calls"}[name]
		if finish != want {
			t.Errorf("%s: finish_reason %q, want %q", name, finish, want)
		}
	}
}

// A model that stops before max_tokens closes its arguments into valid
// JSON; tool_choice "none", or "auto" without Options.ToolCalls, streams
// content; "auto" with it, or a named function, calls.
func TestToolChoiceDecidesWhetherTheModelCalls(t *testing.T) {
	t.Parallel()
	named := map[string]any{"type": "function", "function": map[string]any{"name": "lookup"}}
	for _, c := range []struct {
		name   string
		o      Options
		choice any
		tool   string // "" when the answer is content
	}{
		{"none", Options{ToolCalls: true}, "none", ""},
		{"auto, a model that answers", Options{}, "auto", ""},
		{"auto, a model that calls", Options{ToolCalls: true}, "auto", "get_weather"},
		{"named", Options{}, named, "lookup"},
	} {
		c.o.EOSAfter = 4
		p := Start(t, VLLM, c.o)
		s := readStream(t, post(t, p.BaseURL()+"/chat/completions", toolsBody(p.Opts.Model, 16, c.choice)).body)
		var content, args, tool string
		for _, ev := range s.events {
			ch := choice0(ev)
			d, _ := ch["delta"].(map[string]any)
			text, _ := d["content"].(string)
			content += text
			if e := toolCallOf(t, d); e != nil {
				fn, _ := e["function"].(map[string]any)
				if n, ok := fn["name"].(string); ok {
					tool = n
				}
				a, _ := fn["arguments"].(string)
				args += a
			}
		}
		if tool != c.tool || (c.tool == "") != (content != "") {
			t.Errorf("%s: tool %q content %q, want tool %q", c.name, tool, content, c.tool)
		}
		var v map[string]string
		if c.tool != "" && json.Unmarshal([]byte(args), &v) != nil {
			t.Errorf("%s: arguments %q are not a JSON object", c.name, args)
		}
	}
}

// Unstreamed, the tool call is the message's tool_calls with content null,
// its arguments what the stream's fragments join into, usage the same; the
// model stops (EOSAfter, no ignore_eos), so SGLang says tool_calls.
func TestAWholeAnswerCarriesTheToolCall(t *testing.T) {
	t.Parallel()
	p := Start(t, SGLang, Options{EOSAfter: 5})
	v := post(t, p.BaseURL()+"/chat/completions", unstreamed(toolsBody(p.Opts.Model, 8, "required"))).json(t)
	msg, _ := choice0(v)["message"].(map[string]any)
	calls, _ := msg["tool_calls"].([]any)
	u, _ := v["usage"].(map[string]any)
	if msg["content"] != nil || len(calls) != 1 || num(u["completion_tokens"]) != 5 || choice0(v)["finish_reason"] != "tool_calls" {
		t.Fatalf("%v", v)
	}
	fn, _ := calls[0].(map[string]any)["function"].(map[string]any)
	if args, _ := fn["arguments"].(string); fn["name"] != "get_weather" || !strings.HasPrefix(args, `{"text": "`) {
		t.Fatalf("%v", fn)
	}
}

// vLLM's finish_reason for a tool call (serving_chat.py, 2025), alike
// streamed and not: "tool_calls" for "auto" (auto_tools_called) and for
// "required" that the engine stopped, the engine's own reason for a named
// function. EOSAfter 3 of max_tokens 8 makes that "stop"; with max_tokens 2
// the call is cut, "length" for each choice but "auto".
func TestVLLMSaysToolCallsAsItsSourceDoes(t *testing.T) {
	t.Parallel()
	named := map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}
	for _, c := range []struct {
		choice any
		stream bool
		opts   Options
		want   string
		max    int
	}{
		{named, true, Options{}, "stop", 8},
		{"required", true, Options{}, "tool_calls", 8},
		{"auto", true, Options{ToolCalls: true}, "tool_calls", 8},
		{named, false, Options{}, "stop", 8},
		{"required", false, Options{}, "tool_calls", 8},
		{"auto", false, Options{ToolCalls: true}, "tool_calls", 8},
		{named, true, Options{}, "length", 2},
		{"required", true, Options{}, "length", 2},
		{"required", false, Options{}, "length", 2},
		{"auto", true, Options{ToolCalls: true}, "tool_calls", 2},
	} {
		c.opts.EOSAfter = 3
		p := Start(t, VLLM, c.opts)
		b := toolsBody(p.Opts.Model, c.max, c.choice)
		var finish string
		if c.stream {
			for _, ev := range readStream(t, post(t, p.BaseURL()+"/chat/completions", b).body).events {
				if f, ok := choice0(ev)["finish_reason"].(string); ok {
					finish = f
				}
			}
		} else {
			finish, _ = choice0(post(t, p.BaseURL()+"/chat/completions", unstreamed(b)).json(t))["finish_reason"].(string)
		}
		if finish != c.want {
			t.Errorf("tool_choice %v, stream %v: finish_reason %q, want %q", c.choice, c.stream, finish, c.want)
		}
	}
}

// A stop string that ends the call mid-generation (the tokens from the one
// it starts in are cut) ends it before max_tokens: the streamed fragments
// still close the arguments into a JSON object, the very arguments the
// unstreamed answer gives, and no fragment is empty.
func TestAToolCallCutByAStopClosesItsArguments(t *testing.T) {
	t.Parallel()
	for _, name := range []string{VLLM, SGLang, LlamaCpp, OpenAI} {
		p := Start(t, name, Options{})
		args := func(b map[string]any) (streamed, whole string) {
			for _, ev := range readStream(t, post(t, p.BaseURL()+"/chat/completions", b).body).events {
				d, _ := choice0(ev)["delta"].(map[string]any)
				if e := toolCallOf(t, d); e != nil {
					fn, _ := e["function"].(map[string]any)
					frag, _ := fn["arguments"].(string)
					if _, named := fn["name"].(string); !named && frag == "" {
						t.Errorf("%s: empty fragment %v", name, e)
					}
					streamed += frag
				}
			}
			msg, _ := choice0(post(t, p.BaseURL()+"/chat/completions", unstreamed(b)).json(t))["message"].(map[string]any)
			calls, _ := msg["tool_calls"].([]any)
			if len(calls) == 1 {
				fn, _ := calls[0].(map[string]any)["function"].(map[string]any)
				whole, _ = fn["arguments"].(string)
			}
			return streamed, whole
		}
		greedy := func() map[string]any {
			b := toolsBody(p.Opts.Model, 8, "required")
			b["temperature"] = 0
			return b
		}
		full, _ := args(greedy())
		// The fourth token's text, the stop: what the third fragment
		// after the object's opening adds.
		var v map[string]string
		if json.Unmarshal([]byte(full+`"}`), &v) != nil || len(strings.Fields(v["text"])) < 4 {
			t.Fatalf("%s: arguments %q", name, full)
		}
		stop := " " + strings.Fields(v["text"])[3]
		b := greedy()
		b["stop"] = []string{stop}
		streamed, whole := args(b)
		if json.Unmarshal([]byte(streamed), &v) != nil || streamed != whole || strings.Contains(v["text"], stop) {
			t.Errorf("%s: stop %q: streamed arguments %q, unstreamed %q; want one JSON object without the stop", name, stop, streamed, whole)
		}
	}
}
