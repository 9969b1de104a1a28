// Package conform is glmbench's API conformance suite: named checks that
// each send a few requests to an OpenAI-compatible endpoint and say pass,
// fail or skip, and why.
//
// The checks are one table (Checks), run in its order, one at a time, so
// that a run is repeatable and loads the endpoint only where a check says
// so. A check that needs another (Needs) needs what that one Provides: the
// endpoint doing something at all (a stream that yields content and ends,
// usage on some chunk), never that check's strict verdict. So a stream that
// never ends fails "stream" and the checks built on streams are skips
// naming it, while a stream that ends but deviates in shape (no role chunk,
// no [DONE]) fails "stream" alone, and the checks built on streams still run
// and are judged on their own assertions. Every request has a time limit,
// so no check can hang the suite.
//
// Checks judge the API, not the model: a random-weight model's gibberish
// passes every check whose assertion is about shape, counts, determinism or
// errors, and where a check needs a competent model (a tool call actually
// made) it is a skip with that reason, never a pass.
package conform

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/internal/nonce"
	"github.com/glmbench/glmbench/internal/text"
	"github.com/glmbench/glmbench/reports/schema"
)

// Status is a check's verdict, as reports record it.
type Status string

const (
	Pass Status = "pass"
	Fail Status = "fail"
	// Skip is a check whose precondition could not be met; its detail says which.
	Skip Status = "skip"
)

// Check is one registered conformance check.
type Check struct {
	// ID names the check in reports, --only and the README.
	ID    string
	Title string
	// Asserts is what a pass proves.
	Asserts string
	// Request is what the check sends, in one line.
	Request string
	// Needs are the checks whose Provides this one needs in order to run
	// at all; each runs first.
	Needs []string
	// Uses are checks whose findings this one reads when they ran (before
	// it): max-tokens says whether the endpoint accepts ignore_eos, which
	// the checks that use it send only then. Select runs them too, but
	// their verdict never keeps this check from running.
	Uses []string
	// Provides is what a check establishes about the endpoint as it runs,
	// whatever its own verdict: the capability the checks that need it rely
	// on. A pass always establishes it; a failure or skip does only where
	// the check says so (outcome.provided). Empty for a check nothing needs.
	Provides string
	// Probe marks the checks that load the endpoint with a burst of
	// Config.ProbeLimits requests; they run only when that is set.
	Probe bool
	run   func(ctx context.Context, s *suite) outcome
}

// Checks are the conformance checks in the order they run. The first check
// that streams is "stream", which sends several streams, so that a server
// stalling a share of its streams fails there and not in whichever check
// happened to draw the stalled one.
var Checks = []Check{
	{ID: "models", Title: "GET /models lists the model",
		Asserts: `200 with {"object": "list", "data": [{"id": ...}]}, and the model under test among the ids`,
		Request: "GET /models", run: checkModels},
	{ID: "chat", Title: "chat completion has the OpenAI shape",
		Provides: "a chat answered with a 200 and a choice",
		Asserts:  `id, object "chat.completion", created, model, one choice with index 0, role "assistant", text, finish_reason stop or length`,
		Request:  "POST /chat/completions, max_tokens 16, temperature 0", run: checkChat},
	{ID: "usage", Title: "non-streamed usage adds up", Needs: []string{"chat"},
		Provides: "usage with prompt_tokens in non-streamed answers",
		Asserts:  "usage with prompt_tokens > 0, 0 < completion_tokens <= max_tokens, total = prompt + completion; a longer prompt counts more tokens",
		Request:  "two chats, max_tokens 8, the second prompt eight sentences longer", run: checkUsage},
	{ID: "stream", Title: "chat stream: role chunk, content, finish_reason, [DONE]",
		Provides: "streams that yield content and end with a finish_reason",
		Asserts:  `four streams in a row, each: 200 text/event-stream, chunks of object "chat.completion.chunk" with one id, a first delta with role "assistant", content, exactly one finish_reason after the last content, data: [DONE] and nothing after; no stall`,
		Request:  "4 × POST /chat/completions stream, max_tokens 8, temperature 0", run: checkStream},
	{ID: "stream-usage", Title: "include_usage: a last chunk with choices [] and matching counts", Needs: []string{"stream"},
		Provides: "usage on some chunk of a stream with include_usage",
		Asserts:  "exactly one chunk carries usage, the last before [DONE], with choices []; prompt_tokens as the same messages non-streamed; content events <= completion_tokens <= max_tokens, equal to it when finish_reason is length",
		Request:  "stream with stream_options.include_usage, max_tokens 12, temperature 0; the same messages non-streamed", run: checkStreamUsage},
	{ID: "max-tokens", Title: "max_tokens is honoured exactly with ignore_eos", Needs: []string{"stream"},
		Provides: "streams with ignore_eos accepted that end: the checks that use this one send ignore_eos only then",
		Asserts:  `usage.completion_tokens = max_tokens and finish_reason "length": the shape glmbench run sends (usage read from any chunk, as run reads it; a skip when no chunk carries usage)`,
		Request:  "stream with include_usage, max_tokens 24, ignore_eos true", run: checkMaxTokens},
	{ID: "stream-incremental", Title: "a stream arrives event by event, not in a proxy's blocks", Needs: []string{"stream"}, Uses: []string{"max-tokens"},
		Asserts: "the first 64 content events of a stream, read by the client glmbench run measures with, arrive in many reads: more than half of the reads carry fewer than 8 content events each, or all came within 100 ms of the request (run's buffered rule); a failure gives the arrival pattern and the fix for a proxy that buffers (nginx: proxy_buffering off, or X-Accel-Buffering: no from upstream); fewer than 16 content events (a server packing many tokens into each) pass only when at least 4 came each in a read of its own, else a skip",
		Request: "stream, max_tokens 1024, temperature 0, ignore_eos where max-tokens established it, hung up after 64 content events", run: checkStreamIncremental},
	{ID: "temperature-0", Title: "temperature 0 gives the same text twice", Needs: []string{"chat"},
		Provides: "the same answer twice at temperature 0",
		Asserts:  "two identical requests at temperature 0 give the same reasoning, content and finish_reason",
		Request:  "2 × chat, max_tokens 32, temperature 0", run: checkTemperature0},
	{ID: "stop", Title: "a stop string ends the output before it", Needs: []string{"temperature-0"},
		Asserts: `with a stop string taken from the middle of a temperature-0 answer, the answer ends just before its first occurrence, finish_reason "stop"`,
		Request: "chat at temperature 0, max_tokens 48; again with stop [S, a string that never occurs]", run: checkStop},
	{ID: "seed", Title: "the same seed gives the same text at temperature 1", Needs: []string{"chat"},
		Asserts: "two requests at temperature 1 with seed 1234 give the same text (the detail says whether seed 4321 gave another)",
		Request: "3 × chat, max_tokens 32, temperature 1, seeds 1234, 1234, 4321", run: checkSeed},
	{ID: "logprobs", Title: "chat logprobs and top_logprobs, one entry per token", Needs: []string{"chat"},
		Asserts: "choices[0].logprobs.content: one entry per completion token, logprob <= 0, exactly 3 top_logprobs in descending order, the greedy token the most likely",
		Request: "chat, logprobs true, top_logprobs 3, max_tokens 8, temperature 0", run: checkLogprobs},
	{ID: "determinism", Title: "the same temperature-0 request gives the same tokens and logprobs 8 times", Needs: []string{"chat"},
		Asserts: "8 identical requests at temperature 0, 3 in a row then 5 at once, give identical tokens, logprobs and top_logprobs (the text where the endpoint gives no logprobs); the detail counts the distinct outputs and gives the first divergence and the largest |Δ logprob|; a request refused with 429/503 is not compared, and said",
		Request: "8 × chat, logprobs true, top_logprobs 5, max_tokens 32, temperature 0: 3 in a row, then 5 at once", run: checkDeterminism},
	{ID: "batch-invariance", Title: "a prompt inside a batch of 64 is answered as alone", Needs: []string{"chat"},
		Asserts: "a temperature-0 answer is the same, tokens, logprobs and top_logprobs (the text without logprobs), alone and inside a burst of 63 other prompts at once; the detail gives the first divergence and the largest |Δ logprob|; a skip when the endpoint refuses the prompt in the burst with 429/503",
		Request: "2 × chat alone, then 64 chats at once (the prompt and 63 short others), logprobs true, top_logprobs 5, max_tokens 32, temperature 0", run: checkBatchInvariance},
	{ID: "completions-echo", Title: "/completions echo gives prompt logprobs", Needs: []string{"usage"},
		Provides: "echo answers the echo probe accepts",
		Asserts:  "the echo probe of glmbench eval passes; a failure is named by its kind (echo_rejected, echo_server_error, echo_ignored, logprobs_missing, echo_misaligned, echo_implausible; completions_missing where /completions is absent and chat answers)",
		Request:  "POST /completions, echo true, logprobs 1, max_tokens 1, temperature 0 (evals.ProbeEcho)", run: checkEcho},
	{ID: "echo-max-tokens-0", Title: "max_tokens 0 with echo scores the prompt alone, or is refused cleanly", Needs: []string{"completions-echo"},
		Asserts: "200 with the prompt's text and logprobs and no generated token, or a 4xx with OpenAI error JSON (SGLang and OpenAI refuse 0)",
		Request: "POST /completions, echo true, logprobs 1, max_tokens 0", run: checkEchoMaxTokens0},
	{ID: "prompt-token-ids", Title: "a prompt of token ids is read as tokens", Needs: []string{"usage"},
		Asserts: "prompts of 32 and 16 token ids are answered with usage.prompt_tokens 32 and 16",
		Request: "2 × POST /completions with prompt [100, 101, ...], max_tokens 4, temperature 0", run: checkPromptTokenIDs},
	{ID: "bad-request", Title: "a malformed request gets 400 with OpenAI error JSON",
		Provides: "a 400 with an error object for a malformed request",
		Asserts:  `HTTP 400 (not 500, not 422) with {"error": {"message": ...}} for malformed JSON and for messages of the wrong type`,
		Request:  `POST /chat/completions with a cut-off JSON body; with "messages": "hello"`, run: checkBadRequest},
	{ID: "error-type", Title: "a bad request's error names its type", Needs: []string{"bad-request"},
		Asserts: `the 400s of bad-request carry {"error": {"message": ..., "type": "<a non-empty string>"}}, OpenAI's error object (an absent param or code is said, not failed)`,
		Request: "the two bad-request requests again", run: checkErrorType},
	{ID: "context-overflow", Title: "a request past the context length gets a 4xx",
		Asserts: "a 4xx with OpenAI error JSON for max_tokens 10000000 and, when /models gives max_model_len, for a prompt longer than it",
		Request: "chat with max_tokens 10000000; chat with a prompt of max_model_len + 64 words, max_tokens 1", run: checkContextOverflow},
	{ID: "unknown-model", Title: "an unknown model is refused with OpenAI error JSON",
		Asserts: "HTTP 404 (or 400) with OpenAI error JSON, not an answer from some other model",
		Request: "chat naming a model that does not exist", run: checkUnknownModel},
	{ID: "reasoning", Title: "reasoning_content is split from content, thinking on and off", Needs: []string{"chat"},
		Asserts: "thinking on: reasoning_content (or reasoning) holds text, no <think> tags anywhere; thinking off: no reasoning, content holds text",
		Request: "2 × chat with the thinking switch on and off (chat_template_kwargs.enable_thinking; at a Z.ai base, thinking.type enabled and disabled), max_tokens 32, temperature 0", run: checkReasoning},
	{ID: "tool-calls", Title: "a tool call is parsed into message.tool_calls", Needs: []string{"chat"},
		Asserts: `a call the model makes comes as tool_calls (id, type "function", a declared name, JSON object arguments), finish_reason "tool_calls", no markup left in content; a skip when the model makes no call`,
		Request: "chat with one function tool and a question it answers, tool_choice auto, max_tokens 128, temperature 0", run: checkToolCalls},
	{ID: "tool-choice", Title: "a forced tool_choice is answered with the call in message.tool_calls", Needs: []string{"chat"},
		Provides: "a request with tools and a forced tool_choice answered with a 200",
		Asserts:  `for a named tool_choice and for "required": choices[0].message.tool_calls with an id, type "function", name get_weather and arguments a string of one JSON object valid for the schema ("city" one of its enum), content null or empty, finish_reason "tool_calls" ("stop" passes for the named choice, said: OpenAI's and vLLM's answer); a call left as text in content fails, text without a call is a skip (the server did not force it, and a random-weight model cannot call), a 4xx refusing tools fails with the server's message`,
		Request:  `2 × chat with the get_weather(city) tool, tool_choice {"type": "function", "function": {"name": "get_weather"}}, then "required", max_tokens 256, temperature 0`, run: checkToolChoice},
	{ID: "tool-choice-stream", Title: "a forced tool call streams as delta.tool_calls", Needs: []string{"stream", "tool-choice"}, Uses: []string{"stream-usage"},
		Asserts: `for both choices: delta.tool_calls entries each with an index; a call's first entry with id, type "function" and name get_weather, none later naming another id or function; the arguments fragments of an index join into one JSON object valid for the schema; no content; one finish_reason, as tool-choice judges it, and nothing after it; usage that adds up where stream-usage established usage on streams`,
		Request: "the tool-choice requests streamed, with stream_options.include_usage where stream-usage established it", run: checkToolChoiceStream},
	{ID: "n", Title: "n = 2 is served with two choices or refused cleanly", Needs: []string{"chat"},
		Asserts: "200 with choices of index 0 and 1, or a 4xx with OpenAI error JSON; never one choice or a 5xx",
		Request: "chat, n 2, max_tokens 8", run: checkN},
	{ID: "concurrent-streams", Title: "32 concurrent streams each get their own answer", Needs: []string{"usage", "stream-usage"}, Uses: []string{"max-tokens"},
		Asserts: "stream i (its own prompt and max_tokens 4+i, ignore_eos where max-tokens established it) completes with one id of its own, the prompt_tokens its prompt has alone and completion_tokens = 4+i (with ignore_eos; without, at most 4+i and exactly 4+i at finish_reason length)",
		Request: "32 × chat max_tokens 1 one at a time (the prompts' counts), then 32 streams at once", run: checkConcurrentStreams},
	{ID: "disconnect", Title: "a client hanging up does not break later requests", Needs: []string{"stream"}, Uses: []string{"max-tokens"},
		Asserts: "after hanging up on one stream before its first token and on another after it, a stream and a plain chat are answered in full",
		Request: "2 streams of max_tokens 1024 (ignore_eos where max-tokens established it) abandoned; a second later a stream and a chat of max_tokens 8", run: checkDisconnect},
	{ID: "go-openai", Title: "the go-openai client streams a chat and reads usage", Needs: []string{"stream-usage"},
		Asserts: "github.com/sashabaranov/go-openai reads content, a finish_reason and usage that adds up, and ends at io.EOF",
		Request: "CreateChatCompletionStream with StreamOptions.IncludeUsage, max_tokens 16, seed 1234", run: checkGoOpenAI},
	{ID: "rate-limit", Title: "a 429 carries Retry-After", Needs: []string{"stream"}, Uses: []string{"max-tokens"}, Probe: true,
		Asserts: "in a burst of N streams at once, every HTTP 429 has a Retry-After of seconds or an HTTP date; a skip when none is rate-limited",
		Request: "N streams at once, max_tokens 128, ignore_eos where max-tokens established it (with --probe-limits N)", run: checkRateLimit},
	{ID: "queue-overflow", Title: "a burst past capacity is answered with a status, not a hang", Needs: []string{"stream"}, Uses: []string{"max-tokens"}, Probe: true,
		Asserts: "in the same burst, every request completes or is refused with 429 or 503 (a status or a 503 error event) within the time limits: none hangs, is reset or gets another error; a skip when all are served",
		Request: "the rate-limit burst", run: checkQueueOverflow},
}

// Lookup returns the check named id.
func Lookup(id string) (*Check, bool) {
	i := slices.IndexFunc(Checks, func(c Check) bool { return c.ID == id })
	if i < 0 {
		return nil, false
	}
	return &Checks[i], true
}

// IDs lists the check ids in run order.
func IDs() []string {
	ids := make([]string, len(Checks))
	for i, c := range Checks {
		ids[i] = c.ID
	}
	return ids
}

// Select returns the checks to run, in run order: all of them, or with only
// those ids and every check they need or use. It refuses an unknown id, and a
// probe check asked for by name without a burst size (probeLimits 0).
func Select(only []string, probeLimits int) ([]*Check, error) {
	if len(only) == 0 {
		out := make([]*Check, len(Checks))
		for i := range Checks {
			out[i] = &Checks[i]
		}
		return out, nil
	}
	want := map[string]bool{}
	var add func(id string) error
	add = func(id string) error {
		if want[id] {
			return nil
		}
		c, ok := Lookup(id)
		if !ok {
			return fmt.Errorf("no check %q (have %s)", id, strings.Join(IDs(), ", "))
		}
		want[id] = true
		for _, n := range slices.Concat(c.Needs, c.Uses) {
			if err := add(n); err != nil {
				return err
			}
		}
		return nil
	}
	for _, id := range only {
		id = strings.TrimSpace(id)
		if c, ok := Lookup(id); ok && c.Probe && probeLimits == 0 {
			return nil, fmt.Errorf("check %s sends a burst of requests and needs --probe-limits N", id)
		}
		if err := add(id); err != nil {
			return nil, err
		}
	}
	var out []*Check
	for i := range Checks {
		if want[Checks[i].ID] {
			out = append(out, &Checks[i])
		}
	}
	return out, nil
}

// Config is one run of the suite.
type Config struct {
	Endpoint *endpoints.Endpoint
	// Only, when set, runs these checks and the ones they need.
	Only []string
	// ProbeLimits is the size of the burst the probe checks send; 0 skips them.
	ProbeLimits int
	// Timeout bounds every request (default DefaultTimeout).
	Timeout time.Duration
	// StallTimeout is the longest silence after a stream's first content
	// event before the stream counts as stalled (default DefaultStallTimeout).
	StallTimeout time.Duration
	// ConnectTimeout bounds a dial plus TLS handshake (default 10 s).
	ConnectTimeout time.Duration
	// OnResult, when set, hears each result as it is decided: its index in
	// the run and the number of checks that run.
	OnResult func(i, n int, r schema.CheckResult)
}

// Default limits. A request of the suite asks for at most a few hundred
// tokens, so a minute is generous for a healthy endpoint, and ten seconds of
// silence in the middle of a stream is a hang, not a slow token.
const (
	DefaultTimeout      = time.Minute
	DefaultStallTimeout = 10 * time.Second
)

// suite is the state of one run: the endpoint's clients, the verdicts so
// far, and what more than one check needs.
type suite struct {
	// cfg is the run's Config, its limits defaulted; cfg.Endpoint is the
	// endpoint under test, cfg.Endpoint.Model the model.
	cfg    Config
	nonce  string
	client *endpoints.Client
	// http carries the suite's own streams and GETs over the client's
	// transport, with the endpoint's headers set on each request.
	http   *http.Client
	status map[string]Status
	// provided holds the checks that established what they Provide.
	provided map[string]bool
	// eosRefused is the endpoint's refusal of ignore_eos, when max-tokens
	// got one.
	eosRefused string
	// eosDropped is set when max-tokens found a stream with ignore_eos
	// stopping at its EOS before max_tokens: the field was dropped.
	eosDropped bool

	// The probe burst is sent once, for the two checks that read it.
	burstOnce sync.Once
	burstRes  *burst
}

// Run runs the checks Config selects and returns their results in run
// order. When ctx ends, the check in flight and those after it are skips
// saying so. Every detail has the endpoint's secrets redacted.
func Run(ctx context.Context, cfg Config) ([]schema.CheckResult, error) {
	checks, err := Select(cfg.Only, cfg.ProbeLimits)
	if err != nil {
		return nil, err
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.StallTimeout <= 0 {
		cfg.StallTimeout = DefaultStallTimeout
	}
	s, done := newSuite(cfg)
	defer done()
	results := make([]schema.CheckResult, 0, len(checks))
	for i, c := range checks {
		out := s.runOne(ctx, c)
		s.status[c.ID] = out.status
		s.provided[c.ID] = out.status == Pass || out.provided
		r := schema.CheckResult{ID: c.ID, Title: c.Title, Status: string(out.status), Detail: s.cfg.Endpoint.Redact(text.OneLine(out.detail))}
		results = append(results, r)
		if cfg.OnResult != nil {
			cfg.OnResult(i, len(checks), r)
		}
	}
	return results, nil
}

// newSuite makes the state of one run of cfg (its limits defaulted) and
// returns it with the function that releases its connections.
func newSuite(cfg Config) (*suite, func()) {
	// Conns: the widest checks are the 32 concurrent streams and the
	// batch-invariance burst; a probe burst brings a pool of its own.
	tr := endpoints.NewTransport(endpoints.TransportOptions{Conns: max(concurrentStreams, batchBurst), ConnectTimeout: cfg.ConnectTimeout, Trust: cfg.Endpoint.Trust})
	// Both clients follow no redirect (endpoints.NewHTTPClient): a 3xx is
	// answered as it came and the check names it, so the key and headers
	// never go to another origin.
	s := &suite{
		cfg: cfg, nonce: nonce.New(),
		client:   endpoints.NewClient(cfg.Endpoint, tr),
		http:     endpoints.NewHTTPClient(withHeaders{cfg.Endpoint, tr}),
		status:   map[string]Status{},
		provided: map[string]bool{},
	}
	return s, func() { tr.Close() }
}

func (s *suite) runOne(ctx context.Context, c *Check) outcome {
	if ctx.Err() != nil {
		return skip("not run: interrupted")
	}
	if c.Probe && s.cfg.ProbeLimits <= 0 {
		return skip("off: it sends a burst of requests at once, so it runs only when asked (--probe-limits N)")
	}
	// A need is met when its check established what it Provides, whatever
	// that check's verdict. One that failed is named before one that was
	// skipped: it is the cause to look at.
	unmet := ""
	for _, n := range c.Needs {
		if s.provided[n] {
			continue
		}
		what := n
		if need, ok := Lookup(n); ok && need.Provides != "" {
			what += " (" + need.Provides + ")"
		}
		switch s.status[n] {
		case Fail:
			return skip("needs %s, which failed", what)
		case Skip:
			unmet = cmp.Or(unmet, what+", which was skipped")
		default:
			unmet = cmp.Or(unmet, what+", which did not run")
		}
	}
	if unmet != "" {
		return skip("needs %s", unmet)
	}
	out := c.run(ctx, s)
	if ctx.Err() != nil {
		// A check cut off from outside proves nothing either way.
		return skip("interrupted while it ran")
	}
	return out
}

// outcome is what a check decided.
type outcome struct {
	status Status
	detail string
	// provided is set on a failure or skip that still established what
	// the check Provides (a pass always does).
	provided bool
}

// butProvided marks a failure or skip that came after the check had
// established what it Provides: the checks that need it can run.
func (o outcome) butProvided() outcome {
	o.provided = true
	return o
}

func pass(format string, args ...any) outcome {
	return outcome{status: Pass, detail: fmt.Sprintf(format, args...)}
}
func fail(format string, args ...any) outcome {
	return outcome{status: Fail, detail: fmt.Sprintf(format, args...)}
}
func skip(format string, args ...any) outcome {
	return outcome{status: Skip, detail: fmt.Sprintf(format, args...)}
}

// ignoreEOS reports whether the checks that use max-tokens send
// ignore_eos: only where it established that streams with it end. Without
// it a stream may end early with finish_reason "stop", which the checks
// that use it allow; note says why it is left out, for their details.
func (s *suite) ignoreEOS() (ok bool, note string) {
	switch {
	case s.provided["max-tokens"] && s.eosDropped:
		// Its streams end, but at the model's EOS before max_tokens (Ollama
		// drops ignore_eos): max-tokens said so, and holding every stream
		// to it again would fail the checks built on it for the same field.
		// Only that finding: a count off by one, a finish_reason other than
		// "length" or no usage at all say nothing against ignore_eos.
		return false, "without ignore_eos, which max-tokens found not honoured"
	case s.provided["max-tokens"]:
		return true, ""
	case s.eosRefused != "":
		return false, "without ignore_eos, which the endpoint refuses"
	case s.status["max-tokens"] == "":
		return false, "without ignore_eos (max-tokens did not run)"
	}
	return false, "without ignore_eos (max-tokens did not establish that streams with it end)"
}
