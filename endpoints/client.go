package endpoints

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/glmbench/glmbench/endpoints/sse"
	"github.com/glmbench/glmbench/internal/rxstamp"
	"github.com/glmbench/glmbench/internal/text"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

// BodyLimit is how many bytes of a failed response's body a record keeps.
const BodyLimit = 200

// Client talks to one endpoint.
type Client struct {
	ep   *Endpoint
	http *http.Client
	// chat and completions are the two streaming routes' URLs, made once.
	chat, completions string
	// window is how many bytes of a failed body are read before redaction
	// (Endpoint.BodyWindow).
	window int
}

// NewClient returns a client for ep over rt (a transport from NewTransport, or
// any RoundTripper in tests). The http.Client has no overall timeout: streams
// are bounded by StreamLimits instead. It never follows a redirect: a 3xx
// would carry the key and every header to wherever its Location points
// (and 301/302 would turn the POST into a bodiless GET), so a 3xx is an
// answer, classed Redirect. A Transport rt must have been made with ep's
// TLS trust (TransportOptions.Trust): NewClient panics otherwise, so that
// no client of an endpoint verifies its certificate another way.
func NewClient(ep *Endpoint, rt http.RoundTripper) *Client {
	if t, ok := rt.(*Transport); ok && !t.trust.same(ep.Trust) {
		panic("endpoints: NewClient over a Transport made without its endpoint's Trust")
	}
	return &Client{ep: ep, http: NewHTTPClient(rt), chat: ep.BaseURL + APIChat.Path(), completions: ep.BaseURL + APICompletions.Path(), window: ep.BodyWindow()}
}

// NewHTTPClient returns an http.Client over rt that never follows a
// redirect: the 3xx comes back as the answer. Every request glmbench makes
// to an endpoint goes through one (conformance checks included), so no key
// or header is ever carried to another origin.
func NewHTTPClient(rt http.RoundTripper) *http.Client {
	return &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Endpoint returns the client's endpoint.
func (c *Client) Endpoint() *Endpoint { return c.ep }

// ListModels returns the ids of GET /models, through go-openai.
func (c *Client) ListModels(ctx context.Context) ([]string, error) {
	cfg := openai.DefaultConfig(c.ep.apiKey)
	cfg.BaseURL = c.ep.BaseURL
	cfg.HTTPClient = NewHTTPClient(headerTransport{c.ep, c.http.Transport, c})
	list, err := openai.NewClientWithConfig(cfg).ListModels(ctx)
	if err != nil {
		return nil, c.redactError(err)
	}
	ids := make([]string, 0, len(list.Models))
	for _, m := range list.Models {
		ids = append(ids, m.ID)
	}
	return ids, nil
}

// headerTransport adds the endpoint's extra headers (go-openai sets only
// the key); c words an HTML page answered with a 2xx (pageAnswer).
type headerTransport struct {
	ep *Endpoint
	rt http.RoundTripper
	c  *Client
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	h.ep.applyHeaders(r.Header)
	r.Header.Set("Accept-Encoding", "identity")
	resp, err := h.rt.RoundTrip(r)
	if err == nil {
		if msg := compressed(resp); msg != "" {
			resp.Body.Close()
			return nil, errors.New(msg)
		}
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			resp.Body.Close()
			return nil, &RedirectError{Status: resp.StatusCode, Origin: locationOrigin(resp)}
		}
		if perr := h.c.pageAnswer(resp); perr != nil {
			return nil, perr
		}
	}
	return resp, err
}

// redactError removes the endpoint's secrets from an error of go-openai,
// in place (its APIError and RequestError carry the server's words), and
// from its message.
func (c *Client) redactError(err error) error {
	var ae *openai.APIError
	if errors.As(err, &ae) {
		ae.Message = c.ep.Redact(ae.Message)
		if s, ok := ae.Code.(string); ok {
			ae.Code = c.ep.Redact(s)
		}
		if ae.Param != nil {
			p := c.ep.Redact(*ae.Param)
			ae.Param = &p
		}
	}
	var re *openai.RequestError
	if errors.As(err, &re) {
		re.Body = c.ep.RedactBytes(re.Body)
	}
	msg := err.Error()
	if red := c.ep.Redact(msg); red != msg {
		return &redactedError{msg: red, err: err}
	}
	return err
}

// redactedError is an error whose message had a secret in it.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// RedirectError is a 3xx answer to a request that is not a stream (Post,
// ListModels): the client never follows it.
type RedirectError struct {
	Status int
	// Origin is the Location's scheme://host, "" when it gave none.
	Origin string
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.Status, redirectText(e.Origin))
}

// UnreadableError is an answer that came but cannot be read (a compressed
// body the request did not ask for, an HTML page where the API's JSON was
// due): asking again gets the same answer.
type UnreadableError struct {
	Status int
	Msg    string
}

func (e *UnreadableError) Error() string { return e.Msg }

// Answered reports whether err is an answer the endpoint gave that the
// client will not use (a redirect, an unreadable body, a profiler route's
// status), as against no answer at all: sending the request again would
// get the same.
func Answered(err error) (status int, ok bool) {
	var re *RedirectError
	if errors.As(err, &re) {
		return re.Status, true
	}
	var pe *ProfileError
	if errors.As(err, &pe) {
		return pe.Status, true
	}
	var ue *UnreadableError
	if errors.As(err, &ue) {
		return ue.Status, true
	}
	return 0, false
}

// redirectText says what a 3xx was, naming only its Location's origin: a
// path or query may hold a token.
func redirectText(origin string) string {
	if origin == "" {
		return "a redirect without a Location, not followed (glmbench never follows redirects)"
	}
	return "a redirect to " + origin + ", not followed (glmbench never follows redirects; if that is the endpoint, give its URL)"
}

// locationOrigin is the scheme://host of resp's Location (resolved against
// the request's URL), "" when it has none or it does not parse.
func locationOrigin(resp *http.Response) string {
	u, err := resp.Location()
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// compressed says, in a sentence, that resp's body is compressed though
// the client asked for none ("" when it is not): glmbench times a stream's
// bytes as they arrive, so it never asks for compression, and its
// transport does not undo one.
func compressed(resp *http.Response) string {
	ce := strings.TrimSpace(resp.Header.Get("Content-Encoding"))
	if ce == "" || strings.EqualFold(ce, "identity") {
		return ""
	}
	return fmt.Sprintf("the endpoint answered with a %s-compressed body (Content-Encoding: %s) though the request asked for none (Accept-Encoding: identity)", text.OneLine(ce), text.OneLine(ce))
}

// HTTPStatus returns the HTTP status carried by an error from go-openai, or 0.
func HTTPStatus(err error) int {
	// A body go-openai cannot read as an OpenAI error (vLLM's and SGLang's
	// 401 {"error": "Unauthorized"}, a proxy's HTML) is a RequestError
	// wrapping an APIError whose own status is 0: the first non-zero wins.
	var ae *openai.APIError
	if errors.As(err, &ae) && ae.HTTPStatusCode != 0 {
		return ae.HTTPStatusCode
	}
	var re *openai.RequestError
	if errors.As(err, &re) {
		return re.HTTPStatusCode
	}
	return 0
}

// AnswerMessage returns the server's own message in an error from go-openai
// that carries an answer (HTTPStatus non-zero), on one line, clipped and
// with every control character shown as "?" (text.Shown: the message goes
// to a terminal, where a server's ESC would start an escape sequence):
// an OpenAI error's message, or summary.ErrorMessage of a body go-openai
// could not read (Google's array-shaped errors, vLLM's {"error": "…"});
// "" for none. ListModels has redacted both.
func AnswerMessage(err error) string {
	var re *openai.RequestError
	if errors.As(err, &re) && len(re.Body) > 0 {
		return text.Shown(summary.ErrorMessage(re.Body), 160)
	}
	var ae *openai.APIError
	if errors.As(err, &ae) {
		return text.Shown(ae.Message, 160)
	}
	return ""
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// StreamOptions is the OpenAI stream_options object.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// ChatRequest is the body of POST /chat/completions as glmbench sends it. It
// is its own struct because go-openai cannot express ignore_eos, and its
// omitempty would drop temperature 0.
type ChatRequest struct {
	Model     string    `json:"model"`
	Messages  []Message `json:"messages"`
	MaxTokens int       `json:"max_tokens,omitempty"`
	// MaxCompletionTokens is the same cap under OpenAI's newer name, sent
	// instead of MaxTokens: its reasoning models (o-series, gpt-5) refuse
	// max_tokens; vLLM and SGLang read either. llama.cpp before PR 19831
	// (February 2026), Ollama and llamafile read only max_tokens: a
	// request capped by this alone is uncapped there.
	MaxCompletionTokens int            `json:"max_completion_tokens,omitempty"`
	Stream              bool           `json:"stream"`
	StreamOptions       *StreamOptions `json:"stream_options,omitempty"`
	Temperature         *float64       `json:"temperature,omitempty"`
	// IgnoreEOS asks SGLang and vLLM to generate exactly max_tokens.
	IgnoreEOS *bool `json:"ignore_eos,omitempty"`
}

// StreamLimits bound one streamed request. Zero disables a limit.
type StreamLimits struct {
	// TTFT is the longest wait for the first content event, from the
	// start of Stream.Run (just before t0).
	TTFT time.Duration
	// Stall is the longest silence (no bytes at all) after the first content event.
	Stall time.Duration
	// Total is the longest a request may take.
	Total time.Duration
	// MaxTokens is the request's max_tokens, 0 when unknown. A stream whose
	// content events run far past it (an endpoint that ignores max_tokens,
	// or streams without end) is ended as the endpoint's fault: more than
	// AnswerBound(MaxTokens) answer events, EventBound(MaxTokens) content
	// events (reasoning included) or BodyBound(MaxTokens) bytes is a
	// StreamError.
	MaxTokens int
}

// MaxEvents is the most content events one stream may carry whatever its
// max_tokens: the client keeps a timestamp per event (8 bytes), and no real
// generation is a million events long.
const MaxEvents = 1 << 20

// EventBound is the most content events a stream asking for maxTokens may
// carry before it is ended as the endpoint's fault: 16×maxTokens + 65,536,
// at most MaxEvents (and MaxEvents when maxTokens is 0, unknown). The margin
// is wide on purpose: content events include reasoning, which some hosted
// reasoning models do not count in max_tokens (DeepSeek's reasoner: up to
// 32K tokens of thinking before a max_tokens-bounded answer), and a gateway
// may split one token over several events. A stream past it ignores
// max_tokens or has no end; the floor keeps even a max_tokens 1 probe's
// runaway at half a MiB of timestamps.
func EventBound(maxTokens int) int {
	if maxTokens <= 0 || maxTokens > (MaxEvents-eventFloor)/16 {
		return MaxEvents
	}
	return 16*maxTokens + eventFloor
}

// eventFloor is EventBound's margin for any max_tokens.
const eventFloor = 1 << 16

// AnswerBound is the most content events carrying the answer (delta.content,
// a tool call or text, not reasoning alone: Chunk.Answer) a stream asking
// for maxTokens may carry: 4×maxTokens+32, since max_tokens bounds the
// answer on every server and room is left for a token split over a few
// events (llama.cpp sends one chunk per diff of its parsed message: its
// reasoning, content and each tool call apart). A server that ignores
// max_tokens is caught here, whatever it does with reasoning; MaxEvents when
// maxTokens is 0 (unknown).
func AnswerBound(maxTokens int) int {
	if maxTokens <= 0 || maxTokens > (MaxEvents-32)/4 {
		return MaxEvents
	}
	return 4*maxTokens + 32
}

// BodyBound is the most bytes a stream asking for maxTokens may carry: 8 KiB
// per 16 events of EventBound's slope (an event with 20 top_logprobs is about
// 3 KiB) per requested token, plus 64 MiB; no bound (0) when maxTokens is 0.
// It ends a stream that sends bytes forever but no content events:
// comments, empty deltas.
func BodyBound(maxTokens int) int64 {
	if maxTokens <= 0 {
		return 0
	}
	return int64(min(maxTokens, MaxEvents))*16*(8<<10) + 64<<20
}

// MaxLine is the longest SSE line (or event) the client reads, in bytes.
const MaxLine = sse.DefaultMaxEvent

// StreamResult is the raw account of one streamed request. Times are
// durations from T0, the moment just before the request is written to its
// connection.
type StreamResult struct {
	T0 time.Time
	// Status is the HTTP status, 0 when no response came.
	Status     int
	RetryAfter string
	// ProxyRetries and ProxyFallbacks are how many times a proxy in front
	// of the server says it retried the backend, and fell back to another
	// model, before this answer (ProxyAttempts); 0 when it says nothing.
	ProxyRetries, ProxyFallbacks int
	// Body holds up to BodyLimit bytes: of the response on failure, or of the
	// error event inside a stream.
	Body []byte
	// Events are the arrival times of content events. The caller may preset
	// its capacity to avoid growth.
	Events []time.Duration
	// End is when the stream ended: [DONE], EOF, the error event, or the failure.
	End time.Duration
	// Usage reports whether usage was given and sound, with its counts. The
	// last usage object of the stream decides.
	Usage            bool
	PromptTokens     int
	CompletionTokens int
	// ReasoningTokens is how many of CompletionTokens the same usage says
	// were reasoning (Chunk.ReasoningTokens), 0 when it says nothing or
	// Usage is false.
	ReasoningTokens int
	// ReasoningEvents counts the content events that carried reasoning
	// text (Chunk.Reasoning): 0 for a server that hides its reasoning.
	ReasoningEvents int
	// ToolCallEvents counts the content events that carried a tool call's
	// function name or arguments (Chunk.ToolCall): a model answering with
	// a tool call streams its output there, not as content.
	ToolCallEvents int
	// BadUsage, when not empty, says why the usage given was not used: a
	// count that is not one (see Chunk.BadUsage), completion_tokens 0
	// beside content events, past EventBound of max_tokens, or fewer than
	// its reasoning_tokens. Usage is then
	// false; PromptTokens keeps its count when that one was sound.
	BadUsage string
	// CachedTokens is how many prompt tokens the server says it served from
	// its prefix cache (see Chunk.Cached), valid only when CachedReported.
	// The last usage that carried a sound count decides; a usage without
	// one (absent, null, or not a sound count) leaves it as it was. A server
	// that never reports one leaves CachedReported false, never a 0.
	CachedTokens   int
	CachedReported bool
	// Malformed counts data lines that were not one JSON object in valid
	// UTF-8. They are skipped (not content events) but counted.
	Malformed int
	Finish    string
	Done      bool
	// Model is the model the stream's chunks name (the first "model" that
	// is a non-empty string): the one asked for, a dated snapshot of it
	// (OpenAI's gpt-4o-2024-08-06 for gpt-4o), the name the server serves
	// it under, or a proxy's fallback (OpenRouter names one only there).
	// "" when no chunk named one. OtherModel is Model where it is not the
	// endpoint's model (SameModel), "" otherwise.
	Model, OtherModel string
	// Class is the error class of a failed request; empty when it completed
	// or was cancelled from outside.
	Class schema.Class
	// Detail is a one-line account of a failure.
	Detail string
	// Cancelled is the cause when the caller's context was cancelled, nil otherwise.
	Cancelled error
	// Bytes is the response body size read.
	Bytes int64
}

// Reset clears r for reuse, keeping the Events capacity.
func (r *StreamResult) Reset() {
	ev := r.Events[:0]
	*r = StreamResult{Events: ev}
}

// Causes a request's own context is cancelled with when a limit expires.
var (
	errTTFT  = errors.New("no content event within the TTFT timeout")
	errStall = errors.New("no bytes within the stall timeout after the first content event")
	errTotal = errors.New("request exceeded the request timeout")
)

// liveness is shared between the reading goroutine and the watchdog timers.
type liveness struct {
	first atomic.Bool  // a content event has arrived
	last  atomic.Int64 // monotonic nanos (since epoch) of the last read
	done  atomic.Bool  // the stream is over; limits no longer apply
}

var epoch = time.Now()

func mono(t time.Time) int64 { return int64(t.Sub(epoch)) }

// watchdog enforces the TTFT and stall limits of one request by cancelling
// its context with the limit as the cause. The stall timer is not reset on
// every read: it fires once per stall period and re-arms for the time left
// since the last read, so a fast stream costs nothing per event.
type watchdog struct {
	lv     *liveness
	lim    StreamLimits
	cancel context.CancelCauseFunc
	ttft   *time.Timer
	total  *time.Timer
	stall  atomic.Pointer[time.Timer]
	drain  *time.Timer
}

var errDrained = errors.New("stream over; stopped draining")

func startWatchdog(lv *liveness, lim StreamLimits, cancel context.CancelCauseFunc) *watchdog {
	w := &watchdog{lv: lv, lim: lim, cancel: cancel}
	if lim.Total > 0 {
		w.total = time.AfterFunc(lim.Total, func() {
			if !lv.done.Load() {
				cancel(errTotal)
			}
		})
	}
	if lim.TTFT > 0 {
		w.ttft = time.AfterFunc(lim.TTFT, func() {
			if !lv.first.Load() && !lv.done.Load() {
				cancel(errTTFT)
			}
		})
	}
	return w
}

// firstContent switches from the TTFT limit to the stall limit. It runs on
// the reading goroutine, after lv.first is set.
func (w *watchdog) firstContent() {
	if w.ttft != nil {
		w.ttft.Stop()
	}
	if w.lim.Stall <= 0 {
		return
	}
	t := time.AfterFunc(time.Hour, w.checkStall)
	t.Stop()
	w.stall.Store(t)
	t.Reset(w.lim.Stall)
}

func (w *watchdog) checkStall() {
	if w.lv.done.Load() {
		return
	}
	idle := time.Duration(mono(time.Now()) - w.lv.last.Load())
	if idle >= w.lim.Stall {
		w.cancel(errStall)
		return
	}
	w.stall.Load().Reset(w.lim.Stall - idle)
}

// drainDeadline cancels the request d from now: reading past the end of a
// finished stream must not hang.
func (w *watchdog) drainDeadline(d time.Duration) {
	w.drain = time.AfterFunc(d, func() { w.cancel(errDrained) })
}

func (w *watchdog) stop() {
	for _, t := range []*time.Timer{w.ttft, w.total, w.drain} {
		if t != nil {
			t.Stop()
		}
	}
	if t := w.stall.Load(); t != nil {
		t.Stop()
	}
}

// StreamAPI posts body (with stream true: a JSON ChatRequest for chat, a
// CompletionRequest for completions) on api's route and reads the stream
// to its end, filling res; both streams are read alike, a completions
// chunk's choices[].text being its content. It never retries and never
// returns an error: failures are classified into res.Class. live, when not
// nil, is incremented once per content event (for progress displays).
func (c *Client) StreamAPI(ctx context.Context, api API, body []byte, lim StreamLimits, live *atomic.Int64, res *StreamResult) {
	c.Prepare(ctx, api, body, lim).Run(live, res)
}

// StreamUntilFirst is StreamAPI that hangs up after the first content
// event (or the end): it checks that a request of this exact shape is
// accepted without paying for the whole generation.
func (c *Client) StreamUntilFirst(ctx context.Context, api API, body []byte, lim StreamLimits, res *StreamResult) {
	st := c.Prepare(ctx, api, body, lim)
	st.untilFirst = true
	st.Run(nil, res)
}

// Stream is one streaming request made ready to send. Its context and HTTP
// request are built beforehand because deriving hundreds of contexts from
// one phase context at the same instant contends on that context's lock:
// measured here, it delayed the last sends of a 512-request burst by up to
// 160 ms. Run sends it, once.
type Stream struct {
	c          *Client
	parent     context.Context
	ctx        context.Context
	cancel     context.CancelCauseFunc
	req        *http.Request
	lim        StreamLimits
	untilFirst bool
	err        error
	// wrote is t0 in monotonic nanos (0 until stamped), stamped by the
	// transport's writer goroutine, hence atomic.
	wrote atomic.Int64
	// rx is the kernel receive stamp of the request's connection (rxstamp.Last),
	// nil when it keeps none.
	rx atomic.Pointer[atomic.Int64]
}

// PrepareChat makes a streaming chat request ready to Run. parent's end
// cancels it; res.Cancelled then holds parent's cause.
func (c *Client) PrepareChat(parent context.Context, body []byte, lim StreamLimits) *Stream {
	return c.Prepare(parent, APIChat, body, lim)
}

// Prepare is PrepareChat on api's route (chat or completions).
func (c *Client) Prepare(parent context.Context, api API, body []byte, lim StreamLimits) *Stream {
	url := c.chat
	if api == APICompletions {
		url = c.completions
	}
	s := &Stream{c: c, parent: parent, lim: lim}
	s.ctx, s.cancel = context.WithCancelCause(parent)
	// t0 is the moment the request's first header line (always Host, on
	// every attempt, including the transport's own retry on a connection it
	// found dead) goes into the connection's buffer, microseconds before the
	// socket write that sends it: the wait for a connection (the pool, a
	// dial) and for the transport's writer goroutine to run are the client's
	// own delays, which show as send lag, not as time to first token. (With
	// the connection hand-over as t0, a 64-stream burst on 2 cores added up
	// to 30 ms of the client's goroutine scheduling to TTFT, measured by
	// glmbench selftest.)
	trace := httptrace.WithClientTrace(s.ctx, &httptrace.ClientTrace{
		WroteHeaderField: func(key string, _ []string) {
			if key == "Host" {
				s.wrote.Store(mono(time.Now()))
			}
		},
		GotConn: func(info httptrace.GotConnInfo) { s.rx.Store(rxstamp.Last(info.Conn)) },
	})
	s.req, s.err = http.NewRequestWithContext(trace, http.MethodPost, url, bytes.NewReader(body))
	if s.err == nil {
		s.req.Header.Set("Content-Type", "application/json")
		s.req.Header.Set("Accept", "text/event-stream")
		s.req.Header.Set("Accept-Encoding", "identity")
		c.ep.Apply(s.req.Header)
	}
	return s
}

// Run sends the request and reads its stream to the end, filling res. Its
// limits count from Run's start; res.T0, from which its times count, is the
// request's first header write (see PrepareChat), or Run's start when no
// header was written.
func (s *Stream) Run(live *atomic.Int64, res *StreamResult) {
	defer s.cancel(nil)
	// Every detail is redacted here, once, whichever path set it: many
	// quote the endpoint's words (an error event, a transport error).
	defer func() {
		if res.Detail != "" {
			res.Detail = s.c.ep.Redact(res.Detail)
		}
	}()
	if s.err != nil {
		res.Class, res.Detail = schema.Connect, s.err.Error()
		return
	}
	res.T0 = time.Now()
	var lv liveness
	lv.last.Store(mono(res.T0))
	wd := startWatchdog(&lv, s.lim, s.cancel)
	defer wd.stop()

	resp := s.send(res)
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	if s.settleNonStream(resp, res) {
		return
	}
	s.readStream(resp, res, live, &lv, wd)
}

// send posts the request and stamps res.T0 with its first header write. It
// returns nil, with res classified, when no response came.
func (s *Stream) send(res *StreamResult) *http.Response {
	resp, err := s.c.http.Do(s.req)
	if v := s.wrote.Load(); v != 0 {
		res.T0 = epoch.Add(time.Duration(v))
	}
	if err != nil {
		res.End = time.Since(res.T0)
		s.c.failBeforeResponse(s.ctx, s.parent, err, res)
		return nil
	}
	return resp
}

// MaxProxyAttempts is the largest retry or fallback count ProxyAttempts
// believes of one header; a larger one is no count a proxy made, and is
// ignored.
const MaxProxyAttempts = 1000

// ProxyAttempts reads how many times the proxies in front of the server
// retried the backend, and fell back to another model or provider, before
// answering; each proxy's count adds, as each layer's attempts do.
//   - LiteLLM's proxy says both: x-litellm-attempted-retries and
//     x-litellm-attempted-fallbacks, integers (BerriAI/litellm docs,
//     proxy/response_headers.md).
//   - Portkey says its retries: x-portkey-retry-attempt-count, the first
//     call not counted (Portkey's API reference, response schema).
//   - Envoy says its upstream attempts when the virtual host sets
//     include_attempt_count_in_response: x-envoy-attempt-count, "1" for
//     the original request alone, one more per retry (Envoy's router
//     filter docs), so its retries are the count less one.
//   - Cloudflare's AI Gateway says which step of its fallback list served
//     the answer: cf-aig-step, "0" the primary (Cloudflare's AI Gateway
//     docs, configuration/fallbacks; 0-based as its users read it), so the
//     step is the fallbacks taken.
//
// Every value of a header counts, each line and each element of a
// comma-joined list (one per layer: a backend's passed through, the
// proxy's), so a "0" before the proxy's own count hides nothing. An element
// that is not a whole number from 0 to MaxProxyAttempts (from 1, Envoy's)
// is ignored, as if absent, and each header's total is held to
// MaxProxyAttempts.
func ProxyAttempts(h http.Header) (retries, fallbacks int) {
	// count sums name's elements, less from each (Envoy's original attempt).
	count := func(name string, less int) int {
		total := 0
		for _, line := range h.Values(name) {
			for el := range strings.SplitSeq(line, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(el))
				if err != nil || n < less || n > MaxProxyAttempts {
					continue
				}
				total = min(total+n-less, MaxProxyAttempts)
			}
		}
		return total
	}
	retries = count("x-litellm-attempted-retries", 0) + count("x-portkey-retry-attempt-count", 0) + count("x-envoy-attempt-count", 1)
	return retries, count("x-litellm-attempted-fallbacks", 0) + count("cf-aig-step", 0)
}

// settleNonStream records resp's status and reports whether resp is no
// event stream to read (a redirect, a status other than 200, a compressed
// body), in which case it has settled res.
func (s *Stream) settleNonStream(resp *http.Response, res *StreamResult) bool {
	c := s.c
	res.Status = resp.StatusCode
	res.RetryAfter = resp.Header.Get("Retry-After")
	res.ProxyRetries, res.ProxyFallbacks = ProxyAttempts(resp.Header)
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		// Its body is boilerplate that quotes the whole Location; only the
		// origin is kept, in the detail.
		res.End = time.Since(res.T0)
		res.Class, res.Detail = schema.Redirect, redirectText(locationOrigin(resp))
		return true
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, refusalWindow(resp, c.window)+1))
		res.End = time.Since(res.T0)
		res.Body = c.ep.ClipBody(b, false)
		res.Class, res.Detail = classifyRefusal(resp.StatusCode, b)
		res.Detail += ZAIPlanHint(c.ep.BaseURL, resp.StatusCode, b) + pageDetail(b)
		c.overrideByCause(s.ctx, s.parent, res)
		return true
	}
	if msg := compressed(resp); msg != "" {
		res.End = time.Since(res.T0)
		res.Class, res.Detail = schema.StreamError, msg
		return true
	}
	return s.notEventStream(resp, res)
}

// readStream reads a 200 event stream to its end (or, with untilFirst, its
// first content event), then settles how it ended.
func (s *Stream) readStream(resp *http.Response, res *StreamResult, live *atomic.Int64, lv *liveness, wd *watchdog) {
	cap := &prefix{r: resp.Body, max: s.c.window}
	rd := sse.NewReader(cap)
	rd.SetMaxBytes(BodyBound(s.lim.MaxTokens))
	// An event's time is when its bytes reached this host (the kernel's
	// receive stamp, see rxstamp), not when this goroutine got a core to
	// read them: with thousands of streams on a few cores the two differ
	// by milliseconds, and that wait is the client's, not the server's.
	rx, t0 := s.rx.Load(), res.T0
	rd.SetClock(func() time.Time {
		t := eventTime(rx, t0)
		lv.last.Store(mono(t))
		return t
	})
	readErr, over := readEvents(rd, res, live, s.untilFirst, s.lim.MaxTokens, s.c.ep, func() {
		lv.first.Store(true)
		wd.firstContent()
	})
	lv.done.Store(true)
	res.Bytes = rd.Bytes
	if over {
		return
	}
	if res.Done {
		// Read what little follows [DONE] (the chunked terminator) so the
		// connection can be reused, but never wait long for it.
		wd.drainDeadline(time.Second)
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
	}
	if !SameModel(s.c.ep.Model, res.Model) {
		res.OtherModel = res.Model
	}
	checkUsage(res, s.lim.MaxTokens)
	s.classifyEnd(readErr, cap, res)
}

// chunkModel is c's model decoded, at most maxModelName bytes of it (a
// model's name, not a body; a longer one is cut on a rune's start). The
// model asked for, what nearly every stream names, is ep's own string: a
// stream costs no allocation for it.
func chunkModel(c *Chunk, ep *Endpoint) string {
	if ep != nil && !c.ModelEscaped && string(c.Model) == ep.Model {
		return ep.Model
	}
	m := string(c.Model)
	if c.ModelEscaped {
		var v string
		if json.Unmarshal(append(append([]byte{'"'}, c.Model...), '"'), &v) != nil {
			return ""
		}
		m = v
	}
	return text.Shown(m, maxModelName)
}

// maxModelName bounds the model name a record keeps.
const maxModelName = 256

// classifyEnd classifies a 200 stream read to its end by how it ended:
// readErr is the read error that ended it (nil at [DONE] or EOF), cap holds
// the start of its body for res.Body. A stream that ended well is left
// unclassified.
func (s *Stream) classifyEnd(readErr error, cap *prefix, res *StreamResult) {
	c := s.c
	switch {
	case readErr != nil && s.ctx.Err() != nil:
		c.overrideByCause(s.ctx, s.parent, res)
		if res.Class == "" && res.Cancelled == nil {
			res.Class, res.Detail = schema.Truncated, "stream cut: "+readErr.Error()
		}
		if res.Class == schema.TTFTTimeout && res.Bytes > 0 {
			// Bytes came, just no content event: say so, it is not a
			// silent server. (The counts come last: error_kinds keys on
			// the first 60 characters.)
			res.Detail += fmt.Sprintf(" though bytes arrived, none of them a content event (%d bytes, %d malformed data lines)", res.Bytes, res.Malformed)
		}
		if res.Class != "" || res.Cancelled != nil {
			res.Body = c.ep.ClipBody(cap.b, cap.more)
		}
	case errors.Is(readErr, sse.ErrTooLarge):
		res.Class = schema.StreamError
		res.Detail = fmt.Sprintf("the endpoint sent an SSE line longer than %d bytes (the client's bound), after %d content events", MaxLine, len(res.Events))
		res.Body = c.ep.ClipBody(cap.b, cap.more)
	case errors.Is(readErr, sse.ErrBodyTooLarge):
		res.Class = schema.StreamError
		res.Detail = fmt.Sprintf("the endpoint sent more than %d bytes for max_tokens %d: a stream without end (%d content events)", BodyBound(s.lim.MaxTokens), s.lim.MaxTokens, len(res.Events))
		res.Body = c.ep.ClipBody(cap.b, cap.more)
	case len(res.Events) == 0 && readErr != nil:
		// The body broke off before any content event: a server that
		// failed after its 200 and dropped the connection (trtllm-serve's
		// generator raising at its first result), not an empty answer.
		res.Class, res.Detail = schema.Truncated, "stream cut before any content event: "+readErr.Error()
		res.Body = c.ep.ClipBody(cap.b, cap.more)
	case len(res.Events) == 0:
		res.Class, res.Detail = schema.Empty, "200 with no content event"
		if res.Malformed > 0 {
			res.Detail += fmt.Sprintf("; some data lines were malformed and skipped (%d)", res.Malformed)
		}
		res.Body = c.ep.ClipBody(cap.b, cap.more)
	case !res.Done && res.Finish == "":
		res.Class = schema.Truncated
		res.Detail = "stream ended with neither [DONE] nor a finish reason"
		if readErr != nil {
			res.Detail = "stream cut: " + readErr.Error()
		}
		res.Body = c.ep.ClipBody(cap.b, cap.more)
	}
}

// checkUsage drops usage that is sound as JSON but not as an account of the
// stream: completion_tokens 0 beside content events, past the runaway
// bound of max_tokens, or fewer than the reasoning tokens it counts.
func checkUsage(res *StreamResult, maxTokens int) {
	if !res.Usage {
		return
	}
	switch {
	case res.CompletionTokens == 0 && len(res.Events) > 0:
		res.BadUsage = fmt.Sprintf("usage.completion_tokens is 0 beside %d content events", len(res.Events))
	case maxTokens > 0 && res.CompletionTokens > EventBound(maxTokens):
		res.BadUsage = fmt.Sprintf("usage.completion_tokens %d is past %d, the runaway bound for max_tokens %d", res.CompletionTokens, EventBound(maxTokens), maxTokens)
	case res.ReasoningTokens > res.CompletionTokens:
		res.BadUsage = fmt.Sprintf("usage.completion_tokens_details.reasoning_tokens %d is more than completion_tokens %d", res.ReasoningTokens, res.CompletionTokens)
	default:
		return
	}
	res.Usage, res.CompletionTokens, res.ReasoningTokens = false, 0, 0
}

// eventTime is when the bytes a read just returned reached this host, by
// the connection's receive stamp rx (now when it keeps none), never before
// the request's t0: only a wall-clock step could put a stamp there.
func eventTime(rx *atomic.Int64, t0 time.Time) time.Time {
	t, ok := rxstamp.Received(rx)
	switch {
	case !ok:
		return time.Now()
	case t.Before(t0):
		return t0
	}
	return t
}

// readEvents reads a 200 stream's events into res until [DONE], an error
// event, the end of the stream or, with untilFirst, the first content event.
// onFirst runs at the first content event. It returns the read error that
// ended the stream, if any, and over = true when the stream was settled
// before its end (an error event, classified here, or untilFirst).
//
// This is the client's hot path: per event it takes no lock and allocates
// nothing beyond the growth of res.Events; its bounds are worked out once.
// A stream past EventBound or AnswerBound of maxTokens (the request's
// max_tokens, 0 when unknown) is ended here as a StreamError naming it; a
// data line that is not one JSON object in valid UTF-8 is counted in
// res.Malformed and skipped. ep redacts an error event's body.
func readEvents(rd *sse.Reader, res *StreamResult, live *atomic.Int64, untilFirst bool, maxTokens int, ep *Endpoint, onFirst func()) (readErr error, over bool) {
	var ch Chunk
	answers := 0 // content events carrying the answer, not reasoning alone
	maxEvents, maxAnswers := EventBound(maxTokens), AnswerBound(maxTokens)
	for {
		ev, err := rd.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				readErr = err
			}
			res.End = time.Since(res.T0)
			return readErr, false
		}
		at := ev.Time.Sub(res.T0)
		switch d := bytes.TrimSpace(ev.Data); {
		case string(d) == "[DONE]":
			res.Done = true
			res.End = at
			return nil, false
		case len(d) == 0 && !ev.Error:
			continue // an empty data line: no event, as the SSE rules say
		}
		if ParseChunk(ev.Data, &ch) != nil && !ev.Error { // not one JSON object in valid UTF-8
			// Skipped, as OpenAI's clients skip what they cannot decode, but counted.
			res.Malformed++
			continue
		}
		if ch.Error || ev.Error {
			// An error event of the SSE framing (event: error, llama.cpp's
			// error line) is one whatever its data; a code or type in data
			// that is JSON classes it.
			res.End = at
			res.Body = ep.ClipBody(ev.Data, false)
			res.Class, res.Detail = classifyErrorEvent(&ch)
			return nil, true
		}
		if gaveUp(ch.Finish) {
			// The server gave up on the answer inside its 200 (LMDeploy:
			// finish_reason "error" with its reason as the content, or
			// "abort"): a failure, not the answer's end, and not the first
			// content event a shape probe waits for.
			res.End, res.Finish = at, string(ch.Finish)
			res.Body = ep.ClipBody(ev.Data, false)
			res.Class, res.Detail = schema.StreamError, gaveUpDetail(ev.Data, res.Finish)
			return nil, true
		}
		if ch.Content {
			if ch.Answer {
				answers++
			}
			switch {
			case len(res.Events) >= maxEvents:
				res.End = at
				res.Class = schema.StreamError
				if maxTokens > 0 {
					res.Detail = fmt.Sprintf("the endpoint streamed %d content events for max_tokens %d (the bound is %d, reasoning included): it streams without end", len(res.Events)+1, maxTokens, maxEvents)
				} else {
					res.Detail = fmt.Sprintf("the endpoint streamed more than %d content events (the client's bound)", maxEvents)
				}
				return nil, true
			case answers > maxAnswers:
				res.End = at
				res.Class = schema.StreamError
				res.Detail = fmt.Sprintf("the endpoint streamed %d answer events for max_tokens %d (the bound is %d, 4×max_tokens+32): it ignores max_tokens", answers, maxTokens, maxAnswers)
				return nil, true
			}
			res.Events = append(res.Events, at)
			if ch.Reasoning {
				res.ReasoningEvents++
			}
			if ch.ToolCall {
				res.ToolCallEvents++
			}
			if len(res.Events) == 1 && onFirst != nil {
				onFirst()
			}
			if live != nil {
				live.Add(1)
			}
			if untilFirst {
				res.End = at
				return nil, true
			}
		}
		if len(ch.Finish) > 0 && res.Finish != string(ch.Finish) {
			res.Finish = string(ch.Finish)
		}
		if res.Model == "" && len(ch.Model) > 0 {
			res.Model = chunkModel(&ch, ep)
		}
		if ch.Usage {
			res.takeUsage(&ch)
		}
	}
}

// takeUsage keeps the usage of ch, a chunk that carries one: the last
// usage of a stream decides, a bad one noted in BadUsage.
func (res *StreamResult) takeUsage(ch *Chunk) {
	res.Usage, res.BadUsage = ch.BadUsage == nil, ""
	res.PromptTokens, res.CompletionTokens, res.ReasoningTokens = ch.PromptTokens, ch.CompletionTokens, ch.ReasoningTokens
	if ch.BadUsage != nil {
		res.BadUsage, res.CompletionTokens, res.ReasoningTokens = badUsage(ch), 0, 0
	}
	if ch.CachedReported {
		res.CachedTokens, res.CachedReported = ch.Cached, true
	}
}

// gaveUp reports whether a finish_reason says the server gave up on the
// answer: "error" or "abort", LMDeploy's (lmdeploy/serve/core/async_engine.py
// GenOut.finish_reason; "error" for a prompt past --session-len, "abort"
// for a session stopped by the server).
func gaveUp(finish []byte) bool {
	return string(finish) == "error" || string(finish) == "abort"
}

// gaveUpDetail words a stream that ended with finish_reason finish: the
// server's own words, the text its last chunk carried (off the hot path:
// it allocates).
func gaveUpDetail(data []byte, finish string) string {
	var v struct {
		Choices []struct {
			Text  string `json:"text"`
			Delta struct {
				Content string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
	}
	msg := ""
	if json.Unmarshal(data, &v) == nil {
		for _, c := range v.Choices {
			msg += c.Delta.Content + c.Text
		}
	}
	d := fmt.Sprintf("the server gave up on the answer (finish_reason %q inside a 200 stream)", finish)
	if msg = text.Clip(text.OneLine(strings.ToValidUTF8(msg, "?")), 200, "…"); msg != "" {
		d += ": " + msg
	}
	return d
}

// badUsage words a chunk's unsound usage count (off the hot path: it allocates).
func badUsage(ch *Chunk) string {
	if ch.BadValue == nil {
		return "usage without " + string(ch.BadUsage)
	}
	v := text.Clip(text.OneLine(strings.ToValidUTF8(string(ch.BadValue), "?")), 40, "…")
	return fmt.Sprintf("usage.%s %s is not a token count", ch.BadUsage, v)
}

// failBeforeResponse classifies a request that got no response at all.
func (c *Client) failBeforeResponse(ctx, parent context.Context, err error, res *StreamResult) {
	c.overrideByCause(ctx, parent, res)
	if res.Class != "" || res.Cancelled != nil {
		return
	}
	res.Class = schema.Connect
	res.Detail = transportError(err) // redacted by Run
}

// transportError words an error of a request that got no response. Go's
// transport gives an oversized header block only as text, so it is
// recognised by its words.
func transportError(err error) string {
	msg := text.OneLine(unwrapURLError(err).Error())
	if strings.Contains(msg, "server response headers exceeded") {
		return "the endpoint's response headers are larger than the client accepts (" + msg + ")"
	}
	return msg
}

// overrideByCause sets the class (or the outside cancellation) from why the
// request's context ended, if it did.
func (c *Client) overrideByCause(ctx, parent context.Context, res *StreamResult) {
	if ctx.Err() == nil {
		return
	}
	if parent.Err() != nil {
		res.Class, res.Detail = "", ""
		res.Cancelled = context.Cause(parent)
		return
	}
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errTTFT):
		res.Class, res.Detail = schema.TTFTTimeout, cause.Error()
	case errors.Is(cause, errStall):
		res.Class, res.Detail = schema.Stalled, cause.Error()
	case errors.Is(cause, errTotal):
		res.Class, res.Detail = schema.TotalTimeout, cause.Error()
	}
}

// NotThisRequest reports whether a 4xx status is about the client or the
// moment rather than the request's content: 429 (rate limit), 408 (request
// timeout), 401 and 403 (credentials). Such a status refuses nothing about
// the request itself, so it is never read as "this feature is unsupported".
func NotThisRequest(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusRequestTimeout ||
		status == http.StatusUnauthorized || status == http.StatusForbidden
}

// RefusesRequest reports whether status is a 4xx about the request itself
// (not NotThisRequest's 429, 408, 401 or 403): the answer that may say
// which part of the request (a field, tools, a route) the server refuses.
func RefusesRequest(status int) bool {
	return status >= 400 && status < 500 && !NotThisRequest(status)
}

// ClassifyStatus maps a non-200 HTTP status to its error class: 429
// rate_limited, 503 and 529 queue_full, any other 5xx http_5xx, 4xx
// http_4xx, 3xx redirect.
func ClassifyStatus(status int) schema.Class {
	switch {
	case status == http.StatusTooManyRequests:
		return schema.RateLimited
	case status == http.StatusServiceUnavailable, status == statusOverloaded:
		// 529 is 503's meaning under another number: the server sheds load
		// (Anthropic's overloaded_error, Dynamo's "Service temporarily
		// overloaded"), not a fault of its own.
		return schema.QueueFull
	case status >= 500:
		return schema.HTTP5xx
	case status >= 400:
		return schema.HTTP4xx
	case status >= 300:
		return schema.Redirect
	}
	// 1xx/other 2xx: not a stream the client can read.
	return schema.HTTP4xx
}

// classifyRefusal is ClassifyStatus of a non-200 answer and its detail,
// read with its body where the status alone is ambiguous: a 408 whose
// error code is admission_queue_timeout is the SGLang Model Gateway
// shedding a request that waited in its admission queue past
// --queue-timeout-secs (model_gateway/src/middleware.rs shed_response), so
// queue_full as a 503; any other 408 (nginx's client_body_timeout, the
// older router's bare one) stays http_4xx. A 429 with a Z.ai business
// code is classed by its code (zaiRefusal).
func classifyRefusal(status int, body []byte) (schema.Class, string) {
	detail := fmt.Sprintf("HTTP %d", status)
	if status == http.StatusRequestTimeout && errorCode(body) == admissionQueueTimeout {
		return schema.QueueFull, detail + " " + admissionQueueTimeout
	}
	if class, detail, ok := zaiRefusal(status, body); ok {
		return class, detail
	}
	return ClassifyStatus(status), detail
}

// admissionQueueTimeout is the SGLang Model Gateway's error code for a
// request its admission queue held past its timeout.
const admissionQueueTimeout = "admission_queue_timeout"

// errorCode is the string code of an OpenAI-shaped error body
// ({"error": {"code": "..."}}), or "" where it has none.
func errorCode(body []byte) string {
	var v struct {
		Error struct {
			Code json.RawMessage `json:"code"`
		} `json:"error"`
	}
	var code string
	if json.Unmarshal(body, &v) != nil || json.Unmarshal(v.Error.Code, &code) != nil {
		return ""
	}
	return code
}

// statusOverloaded is the 529 of a server that sheds load: Anthropic's
// API (overloaded_error) and NVIDIA Dynamo's frontend past its busy
// threshold (lib/llm/src/http/service/error.rs).
const statusOverloaded = 529

// classifyErrorEvent classes an error event inside a 200 stream. SGLang sends
// queue overflow this way once streaming has begun: code 503, type
// SERVICE_UNAVAILABLE; TGI its overload, error_type "overloaded".
func classifyErrorEvent(c *Chunk) (schema.Class, string) {
	if c.ErrorCode == http.StatusServiceUnavailable || string(c.ErrorType) == "SERVICE_UNAVAILABLE" {
		return schema.QueueFull, "error event with code 503 inside a 200 stream"
	}
	if c.ErrorCode == statusOverloaded {
		return schema.QueueFull, "error event with code 529 inside a 200 stream"
	}
	if class, detail, ok := zaiErrorEvent(c.ErrorCode); ok {
		return class, detail
	}
	if string(c.ErrorType) == "overloaded" {
		// TGI past --max-concurrent-requests: its 429 "Model is overloaded".
		return schema.RateLimited, "error event of type overloaded inside a 200 stream"
	}
	if c.ErrorCode != 0 {
		return schema.StreamError, fmt.Sprintf("error event with code %d inside a 200 stream", c.ErrorCode)
	}
	return schema.StreamError, "error event inside a 200 stream"
}

// prefix keeps the first max bytes that pass through it; more is set once
// a byte past them did.
type prefix struct {
	r    io.Reader
	max  int
	b    []byte
	more bool
}

func (p *prefix) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 && !p.more {
		room := p.max - len(p.b)
		p.b = append(p.b, b[:min(n, room)]...)
		p.more = n > room
	}
	return n, err
}

// Response is a whole (non-streamed) answer.
type Response struct {
	Status     int
	RetryAfter string
	Body       []byte
}

// maxResponse bounds a non-streamed answer read into memory.
const maxResponse = 64 << 20

// Post sends a JSON body to path (relative to the base URL, e.g.
// "/chat/completions") and reads the whole answer, with the endpoint's
// secrets redacted from it: all of them from an error answer, those of 8
// bytes or more from a 2xx one (an eval or a probe may quote it; shorter
// values could be JSON's own words). err is for a request that got no answer, an
// answer it could not read (a compressed body, or a 2xx HTML page where
// JSON was due: an *UnreadableError), or a redirect, which is never
// followed (a *RedirectError); an HTTP error status is a Response.
func (c *Client) Post(ctx context.Context, path string, body []byte) (*Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.ep.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := c.sendJSON(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, fmt.Errorf("reading answer: %s", c.ep.Redact(err.Error()))
	}
	if resp.StatusCode/100 == 2 {
		if err := c.pageError(resp.StatusCode, b); err != nil {
			return nil, err
		}
	}
	ss := c.ep.secretsToFind().all
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		// An answer the caller parses: only secrets of minWord bytes or
		// more, which no JSON syntax or common word spells (a header value
		// "true" would otherwise break every boolean). Whoever quotes a part
		// of it redacts that part again with Redact.
		ss = c.ep.secretsToFind().words
	}
	if len(ss.secrets) > 0 {
		b, _ = ss.redact(b, len(b) == maxResponse)
	}
	return &Response{Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After"), Body: b}, nil
}

// sendJSON sends req, a JSON body, with the endpoint's key and headers
// and an uncompressed answer asked for. Its error is a request that got no
// answer (redacted), a redirect, never followed (a *RedirectError), or an
// answer it cannot read (a compressed body: an *UnreadableError); else the
// caller closes the answer's body.
func (c *Client) sendJSON(req *http.Request) (*http.Response, error) {
	return c.sendJSONWith(req, c.ep.Apply)
}

// sendJSONWith is sendJSON with apply setting the credentials: the
// endpoint's Apply, or its ApplyAdmin on an admin route.
func (c *Client) sendJSONWith(req *http.Request, apply func(http.Header)) (*http.Response, error) {
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept-Encoding", "identity")
	apply(req.Header)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, errors.New(c.ep.Redact(transportError(err)))
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		resp.Body.Close()
		return nil, &RedirectError{Status: resp.StatusCode, Origin: locationOrigin(resp)}
	}
	if msg := compressed(resp); msg != "" {
		resp.Body.Close()
		return nil, &UnreadableError{Status: resp.StatusCode, Msg: msg}
	}
	return resp, nil
}

// Usage is the OpenAI usage object.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// PromptTokensDetails is OpenAI's breakdown of prompt_tokens, nil when
	// absent or null (SGLang sends null when no token was cached).
	PromptTokensDetails *PromptTokensDetails `json:"prompt_tokens_details,omitempty"`
	// PromptCacheHitTokens is DeepSeek's count of cached prompt tokens, nil
	// when absent or null.
	PromptCacheHitTokens *TokenCount `json:"prompt_cache_hit_tokens,omitempty"`
}

// PromptTokensDetails is usage.prompt_tokens_details as far as glmbench
// reads it.
type PromptTokensDetails struct {
	// CachedTokens is the prompt's tokens served from the prefix cache, nil
	// when absent or null.
	CachedTokens *TokenCount `json:"cached_tokens,omitempty"`
}

// Cached returns the prompt tokens u says were served from the prefix
// cache, by the same rule as Chunk.Cached: prompt_tokens_details
// .cached_tokens, else DeepSeek's prompt_cache_hit_tokens; the first given
// decides, and ok is false when neither is given or that one is not a
// sound count no larger than PromptTokens. (llama.cpp's timings.cache_n
// sits outside usage; its versions that send only that are not read here.)
func (u *Usage) Cached() (n int, ok bool) {
	var tc *TokenCount
	switch {
	case u == nil:
		return 0, false
	case u.PromptTokensDetails != nil && u.PromptTokensDetails.CachedTokens != nil:
		tc = u.PromptTokensDetails.CachedTokens
	case u.PromptCacheHitTokens != nil:
		tc = u.PromptCacheHitTokens
	default:
		return 0, false
	}
	if !tc.Sound || tc.N > u.PromptTokens || u.PromptTokens < 0 {
		return 0, false
	}
	return tc.N, true
}

// TokenCount is a usage count decoded without failing: any JSON value is
// taken, and Sound says whether it was a plain integer from 0 to
// MaxUsageCount, so a server's odd count ("12", -1, 1e3) spoils only
// itself, never the decoding of the answer around it.
type TokenCount struct {
	// N is the count, 0 unless Sound.
	N     int
	Sound bool
}

// UnmarshalJSON reads any value; only a sound count sets N and Sound.
func (t *TokenCount) UnmarshalJSON(b []byte) error {
	*t = TokenCount{}
	if v, ok := atoi(bytes.TrimSpace(b)); ok && v >= 0 && v <= MaxUsageCount {
		*t = TokenCount{N: v, Sound: true}
	}
	return nil
}

// MarshalJSON writes the count, or null when it was not sound.
func (t TokenCount) MarshalJSON() ([]byte, error) {
	if !t.Sound {
		return []byte("null"), nil
	}
	return strconv.AppendInt(nil, int64(t.N), 10), nil
}

// ServerInfo fetches SGLang's GET /server_info (or /get_server_info, its
// old name: sglangServerInfo), which sits beside the /v1 API base, and
// returns it when the endpoint has one (nil otherwise).
func (c *Client) ServerInfo(ctx context.Context) (map[string]any, error) {
	var info map[string]any
	if _, err := c.sglangServerInfo(ctx, &info); err != nil {
		return nil, err
	}
	// SGLang's server info holds its own --api-key and --admin-api-key in
	// clear: often the user's, or a key glmbench never sent and so cannot
	// find by value. Such fields are dropped by name, then the endpoint's
	// own secrets are redacted from what is left.
	dropSecretFields(info)
	redactValues(c.ep, info)
	return info, nil
}

// secretField reports whether a server-args name holds a credential:
// one whose last word is key, secret or password, or token after a word
// that names a credential (SGLang's api_key, admin_api_key,
// ssl_keyfile_password; hf_token, auth_token), or that has secret,
// password or credential(s) among its words. Names that only mention tokens
// (max_total_tokens, speculative_token_map, bucket_time_to_first_token) or
// a key file's path (ssl_keyfile) are kept.
func secretField(name string) bool {
	words := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '_' || r == '-' || r == '.' })
	if len(words) == 0 {
		return false
	}
	switch last := words[len(words)-1]; last {
	case "key", "apikey", "secret", "password", "passwd":
		return true
	case "token":
		// hf_token, auth_token, access_token; not per_token or first_token.
		if len(words) == 1 {
			return true
		}
		switch words[len(words)-2] {
		case "hf", "auth", "access", "api", "bearer", "refresh", "session", "github", "wandb":
			return true
		}
	}
	for _, w := range words {
		switch w {
		case "secret", "password", "passwd", "credential", "credentials":
			return true
		}
	}
	return false
}

// dropSecretFields removes credential fields from v at every depth, in place.
func dropSecretFields(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if secretField(k) {
				delete(x, k)
				continue
			}
			dropSecretFields(e)
		}
	case []any:
		for _, e := range x {
			dropSecretFields(e)
		}
	}
}

// redactValues redacts the endpoint's secrets from every string in v, in place.
func redactValues(ep *Endpoint, v any) any {
	switch x := v.(type) {
	case string:
		return ep.Redact(x)
	case map[string]any:
		for k, e := range x {
			x[k] = redactValues(ep, e)
		}
	case []any:
		for i, e := range x {
			x[i] = redactValues(ep, e)
		}
	}
	return v
}
