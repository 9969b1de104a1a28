package target

import (
	"encoding/json"

	"github.com/spf13/pflag"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports/schema"
)

// Body is the flags that shape every load request's body, shared by run
// and sweep: the route, ignore_eos, stream_options, the cap's name and
// the fields --extra-body adds.
type Body struct {
	IgnoreEOS   bool
	StreamUsage bool
	// MaxCompletionTokens: chat requests carry max_completion_tokens.
	MaxCompletionTokens bool
	// API is --api: chat or completions, parsed by Check.
	API string
	api endpoints.API
	// ExtraBody is --extra-body, parsed by Check into extra.
	ExtraBody string
	extra     json.RawMessage
}

// AddFlags binds the body's flags.
func (b *Body) AddFlags(fl *pflag.FlagSet) {
	fl.BoolVar(&b.IgnoreEOS, "ignore-eos", true, "send ignore_eos so every request generates its full output")
	fl.BoolVar(&b.MaxCompletionTokens, "max-completion-tokens", false, "send a chat's output cap as max_completion_tokens instead of max_tokens (OpenAI's reasoning models refuse max_tokens; llama.cpp before February 2026 and Ollama do not read it, so their requests go uncapped)")
	fl.BoolVar(&b.StreamUsage, "stream-usage", true, "send stream_options.include_usage (false for a server that refuses the field, as Mistral's API does: n then comes from usage sent anyway, else from counted events)")
	fl.StringVar(&b.API, "api", string(endpoints.APIChat), "the route every request goes to: chat (/chat/completions) or completions (/completions, the prompt with no chat template)")
	fl.StringVar(&b.ExtraBody, "extra-body", "", `a JSON object of fields added to every request's body, the probes' too, and recorded in the report (a credential field's value, such as api_key's, as ***), e.g. '{"chat_template_kwargs": {"enable_thinking": false}}' or '{"temperature": 0.6}' (not the fields glmbench writes: model, messages, prompt, stream, stream_options, max_tokens, max_completion_tokens, n_predict, ignore_eos, n, echo)`)
}

// Check parses --api and refuses what the legacy route cannot carry; its
// errors are bad input.
func (b *Body) Check() error {
	var err error
	if b.api, err = endpoints.ParseAPI(b.API); err != nil {
		return err
	}
	if b.MaxCompletionTokens && b.api == endpoints.APICompletions {
		return badinput.Errorf("--max-completion-tokens is a chat field: --api completions sends max_tokens")
	}
	b.extra, err = endpoints.ParseExtraBody("--extra-body", b.ExtraBody, bench.LoadFields)
	return err
}

// APIName is the checked route in a word: chat or completions.
func (b *Body) APIName() string { return b.api.Name() }

// Extra is the checked --extra-body object as the report records it, its
// credentials and ep's secrets hidden (endpoints.RecordedExtra): what run
// --baseline compares with a baseline's record (nil: none). ep may be nil
// (names only) or an endpoint only resolved, not yet opened.
func (b *Body) Extra(ep *endpoints.Endpoint) json.RawMessage {
	return endpoints.RecordedExtra(b.extra, ep)
}

// HideSecrets makes ep's redaction hide the values the extra body sends
// under a credential's name (endpoints.Endpoint.HideExtraSecrets): a key
// sent in the body, quoted back in an error.
func (b *Body) HideSecrets(ep *endpoints.Endpoint) { ep.HideExtraSecrets(b.extra) }

// Shape is the body every request to model has in common.
func (b *Body) Shape(model string) bench.Shape {
	return bench.Shape{Model: model, IgnoreEOS: b.IgnoreEOS, API: b.api, NoStreamUsage: !b.StreamUsage, MaxCompletionTokens: b.MaxCompletionTokens, Extra: b.extra}
}

// Record writes the body's options into the report's, the extra body
// with ep's secrets hidden (Extra).
func (b *Body) Record(o *schema.Options, ep *endpoints.Endpoint) {
	o.API, o.IgnoreEOS, o.NoStreamUsage, o.MaxCompletionTokens = b.api.Name(), b.IgnoreEOS, !b.StreamUsage, b.MaxCompletionTokens
	o.ExtraBody = b.Extra(ep) // the requests carry b.extra, a key in it too
}
