package conform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// toolOnly runs the two forced-tool checks (and what they need) against
// baseURL.
func toolOnly(t *testing.T, baseURL, model string) map[string]string {
	t.Helper()
	cfg := testConfig(baseURL, model)
	cfg.Only = []string{"tool-choice", "tool-choice-stream"}
	res := run(t, cfg)
	out := map[string]string{}
	for _, id := range cfg.Only {
		out[id] = res[id].Status + ": " + res[id].Detail
	}
	return out
}

// cityArguments makes the fakes' calls fit the tool's schema: each fake
// calls with arguments {"text": "..."} whatever the schema, and this
// rewrites the opening of those arguments, as it comes inside a JSON
// string, to {"city": "Paris", "text": "...", whole or streamed.
func cityArguments(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		b := bytes.ReplaceAll(rec.Body.Bytes(), []byte(`{\"text\": \"`), []byte(`{\"city\": \"Paris\", \"text\": \"`))
		maps.Copy(w.Header(), rec.Header())
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		w.Write(b)
	})
}

// Each server's fake answers a forced call in its documented shape
// (endpointstest's toolDelta and wholeAnswer), its arguments made to fit
// the schema: both checks pass. vLLM gives the engine's finish_reason,
// "stop", for a named choice, and OpenAI "stop" (as vLLM's serving_chat.py
// says OpenAI does): a pass that says so. SGLang and llama.cpp say
// "tool_calls" for both choices. The model stops after 6 tokens, so its
// arguments close before max_tokens.
func TestForcedToolCallsPassInEachServersShape(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{endpointstest.VLLM, endpointstest.SGLang, endpointstest.LlamaCpp, endpointstest.OpenAI} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			p := endpointstest.Start(t, kind, endpointstest.Options{EOSAfter: 6})
			srv := httptest.NewServer(cityArguments(p.Config.Handler))
			defer srv.Close()
			res := toolOnly(t, srv.URL+"/v1", p.Opts.Model)
			namedStop := kind == endpointstest.VLLM || kind == endpointstest.OpenAI
			for id, got := range res {
				named := `named tool_choice: get_weather({"city": "Paris", "text": `
				if !strings.HasPrefix(got, "pass: "+named) || !strings.Contains(got, `tool_choice "required": get_weather(`) {
					t.Errorf("%s: %s, want a pass of both choices", id, got)
				}
				if said := strings.Contains(got, `finish_reason stop (OpenAI's and vLLM's answer to a named tool_choice`); said != namedStop {
					t.Errorf("%s: %s; saying the named call's finish_reason stop: %v, want %v", id, got, said, namedStop)
				}
				if n := strings.Count(got, "finish_reason tool_calls"); n != map[bool]int{true: 1, false: 2}[namedStop] {
					t.Errorf("%s: %s: %d choices finished with tool_calls", id, got, n)
				}
			}
			if !strings.Contains(res["tool-choice-stream"], "usage 6 completion tokens") {
				t.Errorf("stream: %s, want the usage of 6 tokens", res["tool-choice-stream"])
			}
		})
	}
}

// The fakes as they are call with arguments {"text": "..."}, which lack
// the schema's required city: the checks fail, saying so (the fakes do not
// follow a tool's schema, as vLLM's constrained decoding does).
func TestTheFakesArgumentsLackTheRequiredCity(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{EOSAfter: 6})
	res := toolOnly(t, p.BaseURL(), p.Opts.Model)
	for id, got := range res {
		if !strings.HasPrefix(got, "fail: named tool_choice") || !strings.Contains(got, `lack "city", which the tool's schema requires`) {
			t.Errorf("%s: %s, want a failure naming the missing city", id, got)
		}
	}
}

// A model that never stops runs its call to max_tokens: vLLM's fake ends
// the named call with finish_reason "length" and arguments unclosed, which
// says nothing of the server, so both checks are skips saying so.
func TestACallCutAtMaxTokensIsASkip(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	srv := httptest.NewServer(cityArguments(p.Config.Handler))
	defer srv.Close()
	for id, got := range toolOnly(t, srv.URL+"/v1", p.Opts.Model) {
		if !strings.HasPrefix(got, "skip: named tool_choice") || !strings.Contains(got, "the call was cut at max_tokens 256 (finish_reason length), its arguments unfinished") {
			t.Errorf("%s: %s, want a skip: the call was cut", id, got)
		}
	}
}

// A forced call the engine cannot make: the reference engine takes any
// tool_choice but "none" for "auto" (engine/server parseTools) and its
// random-weight model thinks and answers no call, so both checks are
// skips saying so, though its thinking is full of <tool_call> tokens.
func TestTheEngineGivesTextForAForcedCall(t *testing.T) {
	t.Parallel()
	e := startEngine(t, nil)
	for id, got := range toolOnly(t, e.BaseURL(), e.ModelName()) {
		if !strings.HasPrefix(got, "skip: named tool_choice") || !strings.Contains(got, "did not force the call") || !strings.Contains(got, "random-weight") {
			t.Errorf("%s: %s, want a skip saying the call was not forced", id, got)
		}
	}
}

// toolServer answers a chat with tools by whole or stream, and anything
// else from a healthy vLLM fake (so that chat, stream and stream-usage
// pass). whole gets the tool_choice and returns the status and body;
// stream returns the data of each event before [DONE].
type toolServer struct {
	whole  func(named bool) (int, string)
	stream func(named bool) []string
}

func (ts toolServer) start(t *testing.T) (baseURL, model string) {
	t.Helper()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{EOSAfter: 6})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			Tools      []any           `json:"tools"`
			ToolChoice json.RawMessage `json:"tool_choice"`
			Stream     bool            `json:"stream"`
		}
		json.Unmarshal(raw, &body)
		if len(body.Tools) == 0 || string(body.ToolChoice) == `"auto"` {
			r.Body = io.NopCloser(bytes.NewReader(raw))
			p.Config.Handler.ServeHTTP(w, r)
			return
		}
		named := string(body.ToolChoice) != `"required"`
		if !body.Stream || ts.stream == nil {
			status, b := ts.whole(named)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			io.WriteString(w, b)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range ts.stream(named) {
			fmt.Fprintf(w, "data: %s\n\n", d)
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", p.Opts.Model
}

// answer is a whole chat answer of one choice: message and finish_reason.
func answerOf(msg map[string]any, finish string) string {
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 20, "completion_tokens": 6, "total_tokens": 26}})
	return string(b)
}

// goodCall is a well-formed call message, edited by edit.
func goodCall(edit func(msg, call, fn map[string]any)) map[string]any {
	fn := map[string]any{"name": "get_weather", "arguments": `{"city": "Paris"}`}
	c := map[string]any{"id": "call_1", "type": "function", "function": fn}
	msg := map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{c}}
	if edit != nil {
		edit(msg, c, fn)
	}
	return msg
}

// wholeCall answers every forced choice with the message of edit and
// finish_reason "tool_calls" ("stop" for the named choice with namedStop).
func wholeCall(edit func(msg, call, fn map[string]any)) func(bool) (int, string) {
	return func(bool) (int, string) { return 200, answerOf(goodCall(edit), "tool_calls") }
}

// Each way a server gets a whole forced call wrong fails tool-choice with
// what went wrong, or is a skip where it cannot be judged; a well-formed
// call passes, "stop" beside the named call included.
func TestAForcedCallAnsweredWrongFailsSayingHow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		whole func(named bool) (int, string)
		want  string
	}{
		{"a well-formed call", wholeCall(nil), `pass: named tool_choice: get_weather({"city": "Paris"}), finish_reason tool_calls; tool_choice "required": get_weather(`},
		{"stop for the named choice", func(named bool) (int, string) {
			return 200, answerOf(goodCall(nil), map[bool]string{true: "stop", false: "tool_calls"}[named])
		}, `pass: named tool_choice: get_weather({"city": "Paris"}), finish_reason stop (OpenAI's and vLLM's answer to a named tool_choice`},
		{"stop for required", func(bool) (int, string) { return 200, answerOf(goodCall(nil), "stop") },
			`fail: tool_choice "required": finish_reason "stop" beside a complete call, want "tool_calls"`},
		{"the call as text in content (no tool parser)", func(bool) (int, string) {
			return 200, answerOf(map[string]any{"role": "assistant", "content": `<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>`}, "stop")
		}, "fail: named tool_choice: no message.tool_calls, but the content holds the call as text: <tool_call>"},
		{"text and no call", func(bool) (int, string) {
			return 200, answerOf(map[string]any{"role": "assistant", "content": "It is sunny."}, "stop")
		}, "skip: named tool_choice: no message.tool_calls: 12 characters of text"},
		{"arguments not JSON", wholeCall(func(_, _, fn map[string]any) { fn["arguments"] = `{"city": "Par` }),
			`fail: named tool_choice: call 0: function.arguments is not one JSON object: {"city": "Par`},
		{"two calls merged into one arguments", wholeCall(func(_, _, fn map[string]any) { fn["arguments"] = `{"city": "Paris"}{"city": "Tokyo"}` }),
			"function.arguments is not one JSON object"},
		{"arguments as an object, not a string", wholeCall(func(_, _, fn map[string]any) { fn["arguments"] = map[string]any{"city": "Paris"} }),
			"fail: named tool_choice: call 0: function.arguments is a JSON object, not a string"},
		{"a city outside the enum", wholeCall(func(_, _, fn map[string]any) { fn["arguments"] = `{"city": "Rome"}` }),
			`"city" is "Rome", not one of the schema's enum (Paris, London, Tokyo)`},
		{"no id", wholeCall(func(_, c, _ map[string]any) { delete(c, "id") }), "fail: named tool_choice: call 0 has no id"},
		{"another function", wholeCall(func(_, _, fn map[string]any) { fn["name"] = "get_time" }), `call 0 calls "get_time", not get_weather`},
		{"content beside the call", wholeCall(func(msg, _, _ map[string]any) { msg["content"] = "Let me check." }),
			`fail: named tool_choice: content "Let me check." beside the call`},
		{"llama.cpp without --jinja", func(bool) (int, string) {
			return 400, `{"error":{"code":400,"message":"tools param requires --jinja flag","type":"invalid_request_error"}}`
		}, "fail: named tool_choice: HTTP 400: tools param requires --jinja flag (the endpoint refuses a request with tools"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base, model := toolServer{whole: tc.whole}.start(t)
			cfg := testConfig(base, model)
			cfg.Only = []string{"tool-choice"}
			r := run(t, cfg)["tool-choice"]
			if got := r.Status + ": " + r.Detail; !strings.Contains(got, tc.want) {
				t.Errorf("%s, want %q", got, tc.want)
			}
		})
	}
}

// chunkOf is a stream chunk of one choice with delta and finish_reason
// (nil: none).
func chunkOf(delta map[string]any, finish any) string {
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk",
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
	return string(b)
}

// entry is a delta of one tool_calls entry.
func entry(e map[string]any) map[string]any { return map[string]any{"tool_calls": []any{e}} }

// streamedCall streams a call as vLLM does, the name entry then the
// fragments of args, each entry edited by edit (i its place), then the
// finish chunk and a usage chunk of completion tokens.
func streamedCall(args []string, completion int, edit func(i int, e map[string]any)) func(bool) []string {
	return func(bool) []string {
		out := []string{chunkOf(map[string]any{"role": "assistant", "content": ""}, nil)}
		es := []map[string]any{{"index": 0, "id": "call_1", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": ""}}}
		for _, a := range args {
			es = append(es, map[string]any{"index": 0, "function": map[string]any{"arguments": a}})
		}
		for i, e := range es {
			if edit != nil {
				edit(i, e)
			}
			out = append(out, chunkOf(entry(e), nil))
		}
		out = append(out, chunkOf(map[string]any{}, "tool_calls"))
		u, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": []any{},
			"usage": map[string]any{"prompt_tokens": 20, "completion_tokens": completion, "total_tokens": 20 + completion}})
		return append(out, string(u))
	}
}

// Each way a server streams a forced call wrong fails tool-choice-stream
// with what went wrong; a call streamed in fragments passes.
func TestAForcedCallStreamedWrongFailsSayingHow(t *testing.T) {
	t.Parallel()
	paris := []string{`{"city": `, `"Par`, `is"}`}
	for _, tc := range []struct {
		name   string
		stream func(named bool) []string
		want   string
	}{
		{"fragments that join into the arguments", streamedCall(paris, 6, nil),
			`pass: named tool_choice: get_weather({"city": "Paris"}), finish_reason tool_calls, usage 6 completion tokens; tool_choice "required"`},
		{"an entry without index", streamedCall(paris, 6, func(i int, e map[string]any) {
			if i == 2 {
				delete(e, "index")
			}
		}), "fail: named tool_choice, streamed: chunk 3: a tool_calls entry without index"},
		{"no id on the first entry", streamedCall(paris, 6, func(i int, e map[string]any) { delete(e, "id") }),
			"fail: named tool_choice, streamed: chunk 1: the first entry of call 0 has no id"},
		{"two calls merged under one index", streamedCall(paris, 6, func(i int, e map[string]any) {
			if i == 2 {
				e["id"] = "call_2"
			}
		}), `chunk 3: call 0's entries carry two ids, "call_1" and "call_2": two calls merged under one index`},
		{"fragments that join into no JSON object", streamedCall([]string{`{"city": `, `"Paris"`}, 6, nil),
			`fail: named tool_choice, streamed: call 0: function.arguments is not one JSON object: {"city": "Paris"`},
		{"usage that counts no completion token", streamedCall(paris, 0, nil),
			"fail: named tool_choice, streamed with include_usage: usage.completion_tokens is 0 for max_tokens 256"},
		{"the call as text in content", func(bool) []string {
			return []string{chunkOf(map[string]any{"role": "assistant", "content": `[TOOL_CALLS][{"name": "get_weather"`}, nil),
				chunkOf(map[string]any{"content": `, "arguments": {"city": "Paris"}}]`}, nil), chunkOf(map[string]any{}, "stop")}
		}, "fail: named tool_choice, streamed: no delta.tool_calls, but the content holds the call as text: [TOOL_CALLS]"},
		{"an entry after the finish_reason", func(n bool) []string {
			s := streamedCall(paris, 6, nil)(n)
			return append(s[:len(s)-1], chunkOf(entry(map[string]any{"index": 0, "function": map[string]any{"arguments": " "}}), nil))
		}, "a tool_calls entry of call 0 after the finish_reason"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base, model := toolServer{whole: wholeCall(nil), stream: tc.stream}.start(t)
			cfg := testConfig(base, model)
			cfg.Only = []string{"tool-choice-stream"}
			res := run(t, cfg)
			if r := res["tool-choice"]; r.Status != string(Pass) {
				t.Fatalf("tool-choice: %s %s", r.Status, r.Detail)
			}
			r := res["tool-choice-stream"]
			if got := r.Status + ": " + r.Detail; !strings.Contains(got, tc.want) {
				t.Errorf("%s, want %q", got, tc.want)
			}
		})
	}
}

// A server that refuses tools fails tool-choice with its message, and the
// stream check, which needs a request with tools answered, is a skip
// naming that need rather than a second failure of the same refusal.
func TestARefusalOfToolsSkipsTheStreamCheck(t *testing.T) {
	t.Parallel()
	base, model := toolServer{whole: func(bool) (int, string) {
		return 400, `{"error":{"code":400,"message":"tools param requires --jinja flag","type":"invalid_request_error"}}`
	}}.start(t)
	got := toolOnly(t, base, model)
	if !strings.HasPrefix(got["tool-choice"], "fail: named tool_choice: HTTP 400: tools param requires --jinja flag") {
		t.Errorf("tool-choice: %s", got["tool-choice"])
	}
	if want := "skip: needs tool-choice (a request with tools and a forced tool_choice answered with a 200), which failed"; got["tool-choice-stream"] != want {
		t.Errorf("tool-choice-stream: %s, want %s", got["tool-choice-stream"], want)
	}
}

// An entry of any JSON decodes without error, so that no entry costs its
// chunk; an entry of OpenAI's types is read back field for field, with no
// shape problem, and one whose arguments are not a string says so.
func FuzzToolCallEntries(f *testing.F) {
	f.Add(0, "call_1", "function", "get_weather", `{"city": "Paris"}`, []byte(`{"index": 0.5, "function": {"arguments": {}}}`))
	f.Add(3, "", "", "", "", []byte(`[1, null]`))
	f.Fuzz(func(t *testing.T, index int, id, typ, name, args string, raw []byte) {
		for _, s := range []string{id, typ, name, args} {
			if !utf8.ValidString(s) {
				return // JSON would carry U+FFFD for it: not the string sent
			}
		}
		var whatever toolCall
		if json.Valid(raw) {
			if err := json.Unmarshal(raw, &whatever); err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
		}
		b, _ := json.Marshal(map[string]any{"index": index, "id": id, "type": typ, "function": map[string]any{"name": name, "arguments": args}})
		var tc toolCall
		if err := json.Unmarshal(b, &tc); err != nil || tc.shape != "" || tc.Index == nil || *tc.Index != index ||
			tc.ID != id || tc.Type != typ || tc.Function.Name != name || tc.Function.Arguments != args {
			t.Fatalf("%s read as %+v (%v)", b, tc, err)
		}
		b, _ = json.Marshal(map[string]any{"index": index, "function": map[string]any{"name": name, "arguments": map[string]any{"city": args}}})
		if json.Unmarshal(b, &tc) != nil || tc.shape != "function.arguments is a JSON object, not a string" {
			t.Fatalf("%s: shape %q", b, tc.shape)
		}
	})
}
