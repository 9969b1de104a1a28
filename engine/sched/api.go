// Package sched is the reference engine's scheduler, after SGLang's:
// continuous batching with prefill first, chunked prefill, admission against
// free KV pages (with a reserve for the tokens running requests will still
// generate), retraction when decoding runs out of pages, fcfs or lpm order,
// a radix prefix cache, and a bounded waiting queue answered as SGLang
// answers it. The model runs on the scheduler's own goroutine; requests and
// their events cross by channel and Stream, so no HTTP handler ever blocks
// it and it never blocks on one.
package sched

import (
	"errors"

	"github.com/glmbench/glmbench/engine/sampler"
)

// Params are one request's generation settings.
type Params struct {
	// MaxNewTokens is the most tokens to generate (0: only prefill, for echo).
	MaxNewTokens int
	// MinNewTokens keeps stop tokens from ending generation before this many.
	MinNewTokens int
	// IgnoreEOS generates MaxNewTokens whatever the model says.
	IgnoreEOS bool
	// StopTokens end generation (the tokenizer's EOS set is added unless IgnoreEOS).
	StopTokens []int32
	Sampling   sampler.Params
	// Seed seeds the sampler; a request without one gets a fresh seed.
	Seed    uint64
	HasSeed bool
	// Logprobs asks for each generated token's logprob, with TopLogprobs alternatives.
	Logprobs    bool
	TopLogprobs int
	// PromptLogprobs asks for the prompt tokens' logprobs (echo), the first one null.
	PromptLogprobs    bool
	PromptTopLogprobs int
}

// Request is one generation request.
type Request struct {
	ID     string
	Prompt []int32
	Params Params
}

// TokenLogprob is a token with its log probability and alternatives.
type TokenLogprob struct {
	ID      int32
	Logprob float32
	Top     []TopLogprob
}

// TopLogprob is one alternative token.
type TopLogprob struct {
	ID      int32
	Logprob float32
}

// Finish ends a request's stream.
type Finish struct {
	// Reason is "stop" (a stop token), "length" (MaxNewTokens) or "abort".
	Reason string
	// Matched is the stop token that ended it, -1 when none.
	Matched int32
	// Err, on an abort the scheduler decided, says why: ErrQueueFull or
	// ErrShuttingDown (both HTTP 503); nil on an abort the client asked for.
	Err error
}

// Event is what a request's stream carries: new tokens (several when the
// stream interval is above one), their logprobs when asked, the prompt's
// logprobs once with the first event, and Finish on the last.
type Event struct {
	Tokens         []int32
	Logprobs       []TokenLogprob
	PromptLogprobs []*TokenLogprob // first entry nil: the first prompt token has no logprob
	Finish         *Finish
	// Usage, filled on every event: prompt tokens, generated so far, and
	// prompt tokens served from the prefix cache.
	PromptTokens, CompletionTokens, CachedTokens int
}

// Errors that end a request, in Finish.Err; Submit also returns
// ErrShuttingDown (and a *RequestError for a request that can never fit).
var (
	// ErrQueueFull is SGLang's answer to --max-queued-requests overflow
	// (HTTP 503); it comes as the request's Finish, never from Submit.
	ErrQueueFull = errors.New("The request queue is full.")
	// ErrShuttingDown refuses new requests once shutdown began, and ends
	// those still queued or running (HTTP 503).
	ErrShuttingDown = errors.New("the server is shutting down")
	errStreamDone   = errors.New("stream finished")
)
