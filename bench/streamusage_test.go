package bench

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/schema"
)

// mistralRefusal is Mistral's API answering a body with stream_options
// (openai/openai-agents-python#442): pydantic's extra_forbidden, 422.
const mistralRefusal = `{"object":"error","message":{"detail":[{"type":"extra_forbidden","loc":["body","stream_options","include_usage"],"msg":"Extra inputs are not permitted","input":true}]},"type":"invalid_request_error","param":null,"code":null}`

// A server that refuses stream_options, and sends usage on its last chunk
// anyway, as Mistral's API does: the default run stops at its first probe
// naming --stream-usage=false, and with it no body carries stream_options,
// the calibration and the load complete, and n comes from that usage.
func TestAServerThatRefusesStreamOptionsIsRunWithoutThem(t *testing.T) {
	t.Parallel()
	var withOptions atomic.Int64
	srv := endpointstest.New(func(r endpointstest.Request) endpointstest.Behavior {
		if r.Usage {
			withOptions.Add(1)
			return endpointstest.Behavior{Fail: endpointstest.Status, Status: 422, Body: mistralRefusal}
		}
		return endpointstest.Behavior{Usage: endpointstest.UsageInFinish}
	})
	defer srv.Close()
	o := testOptions(t, srv, "5e0e0a11")
	spec := []Spec{{Name: "x", N: 4, In: 120, Out: 7}}
	_, _, err := Prepare(context.Background(), o, spec)
	if err == nil || !strings.Contains(err.Error(), "HTTP 422") || !strings.Contains(err.Error(), "--stream-usage=false leaves stream_options out") || strings.Contains(err.Error(), "ignore-eos") {
		t.Fatalf("%v: want the 422 naming --stream-usage=false only", err)
	}
	if n := withOptions.Load(); n != 1 {
		t.Fatalf("%d requests with stream_options, want the one probe", n)
	}
	o.Shape.NoStreamUsage = true
	plans, warns, err := Prepare(context.Background(), o, spec)
	if err != nil || len(warns) > 0 {
		t.Fatal(err, warns)
	}
	run := RunPhase(context.Background(), o, plans[0])
	for _, r := range run.Records {
		if !r.Completed() || r.N != 7 || r.NSource != schema.NFromUsage {
			t.Errorf("request %d: %+v, want completed with n 7 from usage", r.I, r)
		}
	}
	if n := withOptions.Load(); n != 1 {
		t.Errorf("%d requests with stream_options, want none after the first probe", n)
	}
}

// A refusal names the switch for a field the body carried, and only that
// one: vLLM's cap past the context names both max_tokens and
// max_completion_tokens and is no refused field, Mistral's refusal of
// max_completion_tokens (sent by --max-completion-tokens) says to leave the
// switch out, and a field the body did not carry names no switch.
func TestARefusalNamesTheSwitchOfAFieldTheBodyCarried(t *testing.T) {
	t.Parallel()
	const (
		ignoreHint = "; the endpoint refuses a field: --ignore-eos=false leaves ignore_eos out"
		usageHint  = "; the endpoint refuses a field: --stream-usage=false leaves stream_options out"
		// OpenAI's reasoning models (400 unsupported_parameter).
		openAIMaxTokens = "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
		// vLLM since v0.10 (serving_engine.py), for a cap past the context.
		vllmTooLarge = "'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum context length is 4096 tokens and your request has 2778 input tokens (8000 > 4096 - 2778)."
		// vLLM in 2026 (vllm/renderers/params.py TokenizeParams), the cap
		// named by the field that carried it; and SGLang with
		// --context-length (serving_chat.py _validate_request).
		vllm2026  = "max_completion_tokens=8000 cannot be greater than max_model_len=4096. Please request fewer output tokens."
		sglangCap = "max_completion_tokens is too large: 8000.This model supports at most 4096 completion tokens."
		// Mistral's API, 422 (editor-code-assistant/eca#231).
		mistralMaxCompletion = `{"object":"error","message":{"detail":[{"type":"extra_forbidden","loc":["body","max_completion_tokens"],"msg":"Extra inputs are not permitted","input":32000}]},"type":"invalid_request_error","param":null,"code":null}`
	)
	def := Shape{IgnoreEOS: true}
	mct := Shape{IgnoreEOS: true, MaxCompletionTokens: true}
	extra := Shape{Extra: json.RawMessage(`{"top_k":40,"user":"ci"}`)}
	for _, c := range []struct {
		name   string
		s      Shape
		stream bool
		status int
		msg    string
		want   string
	}{
		{"ignore_eos refused", def, true, 400, "Unrecognized request argument supplied: ignore_eos", ignoreHint},
		{"a 5xx", def, true, 500, "ignore_eos stream_options", ""},
		{"ignore_eos not sent", Shape{}, true, 400, "Unrecognized request argument supplied: ignore_eos", ""},
		{"stream_options refused", def, true, 422, mistralRefusal, usageHint},
		{"stream_options not sent", Shape{IgnoreEOS: true, NoStreamUsage: true}, true, 422, mistralRefusal, ""},
		{"stream_options not in a non-streamed body", def, false, 422, mistralRefusal, ""},
		{"max_tokens refused", def, true, 400, openAIMaxTokens, "; the endpoint refuses a field: --max-completion-tokens sends the cap as max_completion_tokens"},
		{"max_tokens refused on completions", Shape{API: endpoints.APICompletions}, true, 400, openAIMaxTokens, ""},
		{"vLLM's cap past the context", def, true, 400, vllmTooLarge, ""},
		{"vLLM's cap past the context, max_completion_tokens", mct, true, 400, vllmTooLarge, ""},
		{"vLLM 2026's cap past the context, max_completion_tokens", mct, true, 400, vllm2026, ""},
		{"SGLang's cap past --context-length, max_completion_tokens", mct, true, 400, sglangCap, ""},
		{"max_completion_tokens refused", mct, true, 422, mistralMaxCompletion, "; the endpoint refuses a field: without --max-completion-tokens the cap goes as max_tokens"},
		{"an extra body's field refused", extra, true, 400, "Unrecognized request argument supplied: top_k", "; the endpoint refuses a field: --extra-body adds top_k"},
		{"Mistral refusing an extra body's field", extra, true, 422, `{"detail":[{"type":"extra_forbidden","loc":["body","top_k"]}]}`, "; the endpoint refuses a field: --extra-body adds top_k"},
		{"a longer name holding an extra field's", extra, true, 400, "Unrecognized request argument supplied: top_k_max", ""},
		{"an extra field's name in a word", extra, true, 400, "Unrecognized request argument supplied: top_kx, username", ""},
		// A refused field is answered 400 (OpenAI, vLLM, SGLang, llama.cpp)
		// or 422 (Mistral, FastAPI); an answer about who may ask, or how
		// often, names no field even where it says "user".
		{"a 403 about the user", extra, true, 403, "user ci may not use model m", ""},
		{"a 429 about the user", extra, true, 429, "Rate limit reached for user ci: 10 requests per minute", ""},
		{"a 401 naming an extra field", extra, true, 401, "Incorrect API key provided for user ci", ""},
		{"both refused", def, true, 400, "Unrecognized request arguments supplied: ignore_eos, stream_options", "; the endpoint refuses a field: --ignore-eos=false leaves ignore_eos out, --stream-usage=false leaves stream_options out"},
	} {
		if h := c.s.refusedField(c.stream, c.status, c.msg); h != c.want {
			t.Errorf("%s: hint %q, want %q", c.name, h, c.want)
		}
	}
}

// An OpenAI reasoning model spends max_completion_tokens on hidden
// reasoning first: an OUT it uses up streams no content at all, and the
// shape probe's failure says why; a larger OUT leaves room for an answer.
func TestAReasoningModelsCapSpentOnHiddenReasoningIsSaidSo(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.OpenAI, endpointstest.Options{ReasoningModel: true, HiddenReasoning: 16})
	ep := resolve(t, p.BaseURL(), p.Opts.Model)
	o := &Options{Endpoint: ep, Shape: Shape{Model: p.Opts.Model, MaxCompletionTokens: true},
		Limits: endpoints.StreamLimits{TTFT: 10 * time.Second, Stall: 10 * time.Second}, ConnectTimeout: 2 * time.Second}
	_, _, err := Prepare(context.Background(), o, []Spec{{Name: "x", N: 1, In: 64, Out: 8}})
	if err == nil || !strings.Contains(err.Error(), "empty") || !strings.Contains(err.Error(), "hidden reasoning") {
		t.Fatalf("%v: want the shape probe's empty stream said as a cap spent on hidden reasoning", err)
	}
	if _, _, err := Prepare(context.Background(), o, []Spec{{Name: "x", N: 1, In: 64, Out: 40}}); err != nil {
		t.Fatal(err)
	}
}

// llama.cpp before February 2026 reads no max_completion_tokens: a probe
// capped by it alone runs on to the slot's end, and the failure says that
// the cap went as max_completion_tokens, not only that the server ignores
// max_tokens.
func TestACapThatWentAsMaxCompletionTokensAndWasIgnoredIsSaidSo(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.LlamaCpp, endpointstest.Options{LlamaNoMaxCompletionTokens: true})
	ep := resolve(t, p.BaseURL(), p.Opts.Model)
	o := &Options{Endpoint: ep, Shape: Shape{Model: p.Opts.Model, IgnoreEOS: true, MaxCompletionTokens: true},
		Limits: endpoints.StreamLimits{TTFT: 10 * time.Second, Stall: 10 * time.Second}, ConnectTimeout: 2 * time.Second}
	_, _, err := Prepare(context.Background(), o, []Spec{{Name: "x", N: 1, In: 64, Out: 8}})
	if err == nil || !strings.Contains(err.Error(), "ignores max_tokens") || !strings.Contains(err.Error(), "without --max-completion-tokens") {
		t.Fatalf("%v: want the runaway probe said as a cap sent as max_completion_tokens", err)
	}
	o.Shape.MaxCompletionTokens = false
	if _, _, err := Prepare(context.Background(), o, []Spec{{Name: "x", N: 1, In: 64, Out: 8}}); err != nil {
		t.Fatal(err)
	}
}

// An extra body rides at the end of every body the one builder makes, chat
// and completions, streamed or not, and a template's bodies still carry
// request i's prefix digits, patched in place, before it.
func TestTheExtraBodyIsInEveryBodyAndTemplatesStillPatch(t *testing.T) {
	t.Parallel()
	extra := json.RawMessage(`{"chat_template_kwargs":{"enable_thinking":false},"top_p":0.9}`)
	for _, api := range []endpoints.API{endpoints.APIChat, endpoints.APICompletions} {
		s := Shape{Model: "m", IgnoreEOS: true, API: api, Extra: extra}
		for _, stream := range []bool{true, false} {
			var got map[string]json.RawMessage
			if err := json.Unmarshal(s.chatBody("p ", "text", 4, stream), &got); err != nil {
				t.Fatal(err)
			}
			if string(got["top_p"]) != "0.9" || string(got["chat_template_kwargs"]) != `{"enable_thinking":false}` || string(got["max_tokens"]) != "4" {
				t.Errorf("%s, stream %t: %v", api, stream, got)
			}
		}
		tpl := newTemplate(s, "nonce", "text", 4)
		for _, i := range []int{0, 7, 123456} {
			b := tpl.body(i)
			if !json.Valid(b) || !strings.Contains(string(b), Prefix("nonce", i)+"text") || !strings.HasSuffix(string(b), `"top_p":0.9}`) {
				t.Errorf("%s, request %d: %s", api, i, b)
			}
		}
	}
}

// LMDeploy refuses a prompt past --session-len with a 200 whose one chunk
// has finish_reason "error" and the engine's ResponseType.INPUT_LENGTH_ERROR
// as content (lmdeploy/serve/core/async_engine.py). Calibration toward a
// target past the session length ends as bad input (exit 2) naming
// --session-len, before any load; a target that fits calibrates.
func TestCalibrationPastLMDeploysSessionLenSaysSessionLen(t *testing.T) {
	t.Parallel()
	o := lmdeployOptions(t, endpointstest.LMDeployOptions{})
	_, _, err := Prepare(context.Background(), o, []Spec{{Name: "long", N: 1, In: 2000, Out: 16}})
	wantBadInput(t, err, "phase long", "stream_error", "INPUT_LENGTH_ERROR", "--session-len")
	if _, _, err := Prepare(context.Background(), o, []Spec{{Name: "short", N: 1, In: 200, Out: 16}}); err != nil {
		t.Fatal(err)
	}
}

// LMDeploy before 2026 answers a prompt plus max_tokens past --session-len
// with an empty answer, finish_reason "length" and completion_tokens 0
// (InternLM/lmdeploy#1589): the prompt calibrates (its probes ask one
// token), and the probe of the load's shape fails saying there is no room.
func TestAShapeProbeLMDeployAnswersEmptyAtLengthSaysThereIsNoRoom(t *testing.T) {
	t.Parallel()
	o := lmdeployOptions(t, endpointstest.LMDeployOptions{Before2026: true})
	_, _, err := Prepare(context.Background(), o, []Spec{{Name: "x", N: 1, In: 480, Out: 64}})
	wantBadInput(t, err, "probe of the load's request shape", "empty", "no token generated", "--session-len")
}

// lmdeployOptions are a run's options against an lmdeploy personality of
// --session-len 512 and lo.
func lmdeployOptions(t *testing.T, lo endpointstest.LMDeployOptions) *Options {
	t.Helper()
	p := endpointstest.Start(t, endpointstest.LMDeploy, endpointstest.Options{Context: 512, LMDeploy: lo})
	return &Options{Endpoint: resolve(t, p.BaseURL(), p.Opts.Model), Shape: Shape{Model: p.Opts.Model, IgnoreEOS: true},
		Limits: endpoints.StreamLimits{TTFT: 10 * time.Second, Stall: 10 * time.Second}, ConnectTimeout: 2 * time.Second}
}
