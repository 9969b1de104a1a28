package conform

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/sse"
	"github.com/glmbench/glmbench/internal/text"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

// withHeaders sets the endpoint's key and extra headers on every request,
// replacing whatever a client library put there (go-openai always sends an
// Authorization header, empty without a key).
type withHeaders struct {
	ep *endpoints.Endpoint
	rt http.RoundTripper
}

func (w withHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Del("Authorization")
	w.ep.Apply(r.Header)
	return w.rt.RoundTrip(r)
}

func sameHost(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}

// origin is u's scheme and host, without user info, path or query.
func origin(u *url.URL) string { return u.Scheme + "://" + u.Host }

// redirectLine names a 3xx: where its Location points, and that it was not
// followed. Another origin is named by its origin alone; the same origin by
// the path (both without the endpoint's secrets).
func redirectLine(status int, base, location string, r redactor) string {
	s := fmt.Sprintf("HTTP %d redirect", status)
	if location == "" {
		return s + " without a Location"
	}
	loc, err := url.Parse(location)
	b, berr := url.Parse(base)
	switch {
	case err != nil || berr != nil:
		return s + " to an unreadable Location, not followed"
	case loc.IsAbs() && !sameHost(b, loc):
		return fmt.Sprintf("%s to another origin, %s, not followed: a client that follows it sends the API key and headers there", s, r(origin(loc)))
	}
	return fmt.Sprintf("%s to %s on the same origin, not followed", s, r.clip(b.ResolveReference(loc).Path, 80))
}

// redactor takes the endpoint's secrets out of text a server sent. It runs
// before any cut (redactor.clip): cut first, a key straddling the cut
// would leave its prefix behind, where no later redaction finds it.
type redactor func(string) string

// clip redacts s, then shortens it to n bytes (see clip).
func (r redactor) clip(s string, n int) string { return clip(r(s), n) }

// redact is the suite's redactor.
func (s *suite) redact() redactor { return s.cfg.Endpoint.Redact }

// Causes a request's context ends with, so a check can say why.
var (
	errTimeout = errors.New("request time limit")
	errStalled = errors.New("stream stalled")
	errHungUp  = errors.New("the check hung up on purpose")
	errDrained = errors.New("stream over")
)

// answer is one whole (non-streamed) exchange: the endpoint's response, or
// err when no answer came at all (and the response is zero).
type answer struct {
	endpoints.Response
	err error
	// location is a 3xx's Location; base the endpoint's base URL.
	location, base string
	r              redactor
	// cut is the read limit the body was cut at, 0 when it was read whole.
	cut int
}

// post sends body as JSON to path (relative to the API base) and reads the
// whole answer within the suite's time limit.
func (s *suite) post(ctx context.Context, path string, body any) *answer {
	b, err := json.Marshal(body)
	if err != nil {
		return &answer{err: err}
	}
	return s.postRaw(ctx, path, b)
}

// postRaw is post with the body's bytes as given, malformed or not.
func (s *suite) postRaw(ctx context.Context, path string, b []byte) *answer {
	return s.do(ctx, http.MethodPost, path, b)
}

// get fetches path (relative to the API base) within the time limit.
func (s *suite) get(ctx context.Context, path string) *answer {
	return s.do(ctx, http.MethodGet, path, nil)
}

// answerLimit bounds a whole answer read into memory.
const answerLimit = 16 << 20

// do sends one request over the suite's own client (no redirect followed)
// and reads the whole answer within the time limit.
func (s *suite) do(ctx context.Context, method, path string, body []byte) *answer {
	return s.doLimit(ctx, method, path, body, answerLimit)
}

// doLimit is do reading at most limit bytes of the answer: a body past it
// is kept cut, and decoding it says so.
func (s *suite) doLimit(ctx context.Context, method, path string, body []byte, limit int) *answer {
	a := &answer{base: s.cfg.Endpoint.BaseURL, r: s.redact()}
	ctx, cancel := context.WithTimeoutCause(ctx, s.cfg.Timeout, errTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.cfg.Endpoint.BaseURL+path, rd)
	if err != nil {
		a.err = err
		return a
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.http.Do(req)
	if err != nil {
		a.err = s.noAnswer(ctx, err)
		return a
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		a.err = s.noAnswer(ctx, err)
		return a
	}
	if len(b) > limit {
		b, a.cut = b[:limit], limit
	}
	a.Response = endpoints.Response{Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After"), Body: b}
	a.location = resp.Header.Get("Location")
	return a
}

// noAnswer words a request that got no answer, for after "no answer: ":
// the time limit, or the transport's error without the endpoint's secrets.
func (s *suite) noAnswer(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errTimeout) {
		return fmt.Errorf("nothing within %s", s.cfg.Timeout)
	}
	return errors.New(s.cfg.Endpoint.Redact(err.Error()))
}

// ok reports whether a is a 200.
func (a *answer) ok() bool { return a.err == nil && a.Status == http.StatusOK }

// describe is a one-line account of an answer: the transport's error, or the
// status and the server's message.
func (a *answer) describe() string {
	if a.err != nil {
		return "no answer: " + a.err.Error()
	}
	if isRedirect(a.Status) {
		return redirectLine(a.Status, a.base, a.location, a.r)
	}
	return statusLine(a.r, a.Status, a.RetryAfter, a.Body)
}

func isRedirect(status int) bool { return status >= 300 && status < 400 }

// statusLine names an HTTP status and what the body said, its secrets
// redacted; a 429 names its Retry-After, which is what a client needs from
// it.
func statusLine(r redactor, status int, retryAfter string, body []byte) string {
	s := fmt.Sprintf("HTTP %d", status)
	if class := endpoints.RefusalClass(status, body); status == http.StatusTooManyRequests && class != schema.RateLimited {
		// A Z.ai 429 whose business code is an account, quota or
		// overload refusal, not a rate limit.
		s += " (" + string(class) + ", not a rate limit)"
	} else if status == http.StatusTooManyRequests {
		s += " rate limited"
		if retryAfter != "" {
			s += " (Retry-After " + retryAfter + ")"
		} else {
			s += " (no Retry-After)"
		}
	}
	if msg := r.clip(summary.ErrorMessage(body), 160); msg != "" {
		s += ": " + msg
	}
	return s
}

// decode reads a 200's JSON body into v.
func (a *answer) decode(v any) error {
	if a.cut > 0 {
		return fmt.Errorf("the 200 body is larger than %d KiB, more than this request's answer needs; not read further", a.cut>>10)
	}
	if err := json.Unmarshal(a.Body, v); err != nil {
		return fmt.Errorf("the 200 body is not the JSON expected: %v (%s)", err, a.r.clip(string(a.Body), 80))
	}
	return nil
}

// openAIError checks an error body against OpenAI's shape,
// {"error": {"message": "...", "type": ..., "param": ..., "code": ...}},
// and returns its message, or what is wrong with it, without the
// endpoint's secrets.
func openAIError(r redactor, body []byte) (msg string, problem string) {
	var v struct {
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return "", fmt.Sprintf("the error body is not JSON: %s", r.clip(string(body), 80))
	}
	var e struct {
		Message *string `json:"message"`
	}
	if len(v.Error) == 0 || string(v.Error) == "null" || json.Unmarshal(v.Error, &e) != nil {
		return "", fmt.Sprintf(`the error body has no "error" object: %s`, r.clip(string(body), 80))
	}
	if e.Message == nil || strings.TrimSpace(*e.Message) == "" {
		return "", `the "error" object has no message`
	}
	return r.clip(*e.Message, 120), ""
}

// refusal judges a 4xx meant as a clean refusal: OpenAI error JSON, and not
// a status that means "not now" rather than "not this request".
func refusal(a *answer) (msg string, problem string) {
	switch {
	case a.err != nil:
		return "", a.describe()
	case !endpoints.RefusesRequest(a.Status):
		return "", a.describe()
	}
	msg, p := openAIError(a.r, a.Body)
	if p != "" {
		return "", fmt.Sprintf("HTTP %d, but %s", a.Status, p)
	}
	return msg, ""
}

// clip shortens s to n bytes on a character boundary, marking the cut.
// Text from a server goes through redactor.clip instead.
func clip(s string, n int) string {
	return text.Clip(text.OneLine(strings.ToValidUTF8(s, "?")), n, "…")
}

// usageProblem says what is wrong with u for an answer of at most
// maxTokens, "" when nothing is.
func usageProblem(u *endpoints.Usage, maxTokens int) string {
	switch {
	case u == nil:
		return "no usage"
	case u.PromptTokens <= 0:
		return fmt.Sprintf("usage.prompt_tokens is %d", u.PromptTokens)
	case u.CompletionTokens <= 0 || u.CompletionTokens > maxTokens:
		return fmt.Sprintf("usage.completion_tokens is %d for max_tokens %d", u.CompletionTokens, maxTokens)
	case u.TotalTokens != u.PromptTokens+u.CompletionTokens:
		return fmt.Sprintf("usage.total_tokens %d is not prompt %d + completion %d", u.TotalTokens, u.PromptTokens, u.CompletionTokens)
	}
	return ""
}

// Wire types: what the checks read of the API's JSON. Pointers tell an
// absent or null field from an empty one.

type chatCompletion struct {
	ID      string           `json:"id"`
	Object  string           `json:"object"`
	Created int64            `json:"created"`
	Model   string           `json:"model"`
	Choices []chatChoice     `json:"choices"`
	Usage   *endpoints.Usage `json:"usage"`
}

type chatChoice struct {
	Index        int           `json:"index"`
	Message      message       `json:"message"`
	FinishReason *string       `json:"finish_reason"`
	Logprobs     *chatLogprobs `json:"logprobs"`
}

// message is a chat message or a streamed delta.
type message struct {
	Role    string  `json:"role"`
	Content *string `json:"content"`
	// ReasoningContent is SGLang's and DeepSeek's name; Reasoning is vLLM's
	// (since late 2025) and ollama's.
	ReasoningContent *string    `json:"reasoning_content"`
	Reasoning        *string    `json:"reasoning"`
	ToolCalls        []toolCall `json:"tool_calls"`
}

func (m *message) content() string { return deref(m.Content) }

func (m *message) reasoning() string { return deref(m.ReasoningContent) + deref(m.Reasoning) }

// toolCall is an entry of message.tool_calls, or of a delta's tool_calls.
// It decodes whatever the entry holds (see UnmarshalJSON), so that an
// entry of the wrong types is named by the check that reads it rather
// than losing its whole chunk or answer.
type toolCall struct {
	// Index is the call a streamed entry belongs to, nil when absent (a
	// non-streamed call has none).
	Index    *int
	ID       string
	Type     string
	Function struct {
		Name      string
		Arguments string
	}
	// shape names the first field that is not of OpenAI's type, "" when
	// none is: null counts as absent, as SGLang writes absent fields.
	shape string
}

// UnmarshalJSON reads an entry's fields, null or absent as "", and never
// fails on a field of the wrong type: it records it in shape.
func (tc *toolCall) UnmarshalJSON(b []byte) error {
	var raw struct {
		Index    json.RawMessage `json:"index"`
		ID       json.RawMessage `json:"id"`
		Type     json.RawMessage `json:"type"`
		Function json.RawMessage `json:"function"`
	}
	*tc = toolCall{}
	if err := json.Unmarshal(b, &raw); err != nil {
		tc.shape = "the entry is not a JSON object"
		return nil
	}
	var fn struct {
		Name      json.RawMessage `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if absent(raw.Function) || json.Unmarshal(raw.Function, &fn) != nil {
		tc.shape = cmp.Or(tc.shape, "function is not an object")
	}
	if !absent(raw.Index) {
		var i int
		if json.Unmarshal(raw.Index, &i) != nil {
			tc.shape = "index is not an integer: " + clip(string(raw.Index), 24)
		} else {
			tc.Index = &i
		}
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		to   *string
	}{{"id", raw.ID, &tc.ID}, {"type", raw.Type, &tc.Type}, {"function.name", fn.Name, &tc.Function.Name}, {"function.arguments", fn.Arguments, &tc.Function.Arguments}} {
		if !absent(f.raw) && json.Unmarshal(f.raw, f.to) != nil {
			tc.shape = cmp.Or(tc.shape, fmt.Sprintf("%s is %s, not a string", f.name, jsonKind(f.raw)))
		}
	}
	return nil
}

// absent reports whether a raw field was missing or null.
func absent(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// jsonKind names the kind of a JSON value: "an object", "a number", ….
func jsonKind(raw json.RawMessage) string {
	switch t := bytes.TrimSpace(raw); {
	case len(t) == 0:
		return "empty"
	case t[0] == '{':
		return "a JSON object"
	case t[0] == '[':
		return "a JSON array"
	case t[0] == '"':
		return "a string"
	case t[0] == 't' || t[0] == 'f':
		return "a boolean"
	}
	return "a number"
}

type chatLogprobs struct {
	Content []tokenLogprob `json:"content"`
}

// tokenLogprob is one entry of chat logprobs, or of its top_logprobs. Token
// and Bytes name the token: a byte-level token that is not valid UTF-8 on
// its own comes as U+FFFD, and its bytes tell two such apart. Bytes is kept
// raw, so that a server that spells them otherwise (or not at all) still
// has its logprobs read; they are only compared.
type tokenLogprob struct {
	Token       string          `json:"token"`
	Bytes       json.RawMessage `json:"bytes"`
	Logprob     float64         `json:"logprob"`
	TopLogprobs []tokenLogprob  `json:"top_logprobs"`
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// chatAnswer posts a chat and decodes its 200; problem is the answer's
// account when it is not a readable 200.
func (s *suite) chatAnswer(ctx context.Context, body map[string]any) (c *chatCompletion, a *answer, problem string) {
	return s.chatAnswerLimit(ctx, body, answerLimit)
}

// chatAnswerLimit is chatAnswer reading at most limit bytes of the answer.
func (s *suite) chatAnswerLimit(ctx context.Context, body map[string]any, limit int) (c *chatCompletion, a *answer, problem string) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, &answer{err: err}, err.Error()
	}
	a = s.doLimit(ctx, http.MethodPost, "/chat/completions", b, limit)
	if !a.ok() {
		return nil, a, a.describe()
	}
	c = &chatCompletion{}
	if err := a.decode(c); err != nil {
		return nil, a, err.Error()
	}
	if len(c.Choices) == 0 {
		return nil, a, "the answer has no choices"
	}
	return c, a, ""
}

// chatBody is a chat request of one user message.
func (s *suite) chatBody(prompt string, maxTokens int, extra map[string]any) map[string]any {
	b := map[string]any{"model": s.cfg.Endpoint.Model, "max_tokens": maxTokens,
		"messages": []map[string]string{{"role": "user", "content": prompt}}}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

// The prompts the checks send: ordinary requests, so that a model that
// can follow them gives ordinary answers.
const (
	storyPrompt   = "Write two sentences about a lighthouse keeper who finds a message in a bottle."
	weatherPrompt = "What is the weather in Paris right now? Use the get_weather tool."
	longerPrompt  = " Describe the sea at night, the sound of the waves and the light sweeping over the water."
)

// chunk is one streamed event of /chat/completions.
type chunk struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	// Choices is nil when the field is absent or null; the usage chunk must
	// have it present and empty.
	Choices *[]streamChoice  `json:"choices"`
	Usage   *endpoints.Usage `json:"usage"`
	Error   json.RawMessage  `json:"error"`
	// n is the chunk's place in its stream, from 0, the chunks summarized
	// rather than kept (streamed.reasoningChunks) counted too.
	n int
}

type streamChoice struct {
	Delta        message `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

// content reports whether c carries text of the answer: what the load
// runner counts as a content event.
func (c *chunk) content() bool {
	if c.Choices == nil {
		return false
	}
	for _, ch := range *c.Choices {
		if ch.Delta.content() != "" || ch.Delta.reasoning() != "" {
			return true
		}
	}
	return false
}

// reasoningOnly reports whether c carries reasoning and nothing else: each
// choice's delta has reasoning, no content, role or tool call, and no
// finish_reason; no usage. A reasoning model streams thousands of these
// before its answer (DeepSeek's reasoner up to 32K tokens of thinking,
// not counted in max_tokens).
func (c *chunk) reasoningOnly() bool {
	if c.Choices == nil || len(*c.Choices) == 0 || c.Usage != nil {
		return false
	}
	for _, ch := range *c.Choices {
		d := ch.Delta
		if d.reasoning() == "" || d.content() != "" || d.Role != "" || len(d.ToolCalls) > 0 || deref(ch.FinishReason) != "" {
			return false
		}
	}
	return true
}

// reasoningBytes is the bytes of reasoning text c carries.
func (c *chunk) reasoningBytes() int {
	n := 0
	if c.Choices != nil {
		for _, ch := range *c.Choices {
			n += len(ch.Delta.reasoning())
		}
	}
	return n
}

func (c *chunk) isError() bool {
	return (len(c.Error) > 0 && string(c.Error) != "null") || c.Object == "error"
}

// streamed is what the suite read of one streamed chat.
type streamed struct {
	status      int
	retryAfter  string
	contentType string
	// body is a refusal's body, or the error event inside a 200 stream.
	body []byte
	// chunks holds the stream's chunks whole, but for the reasoning-only
	// ones that nothing a check reads tells from the kept ones (see
	// summarize): those are counted in reasoningChunks, not kept.
	chunks []chunk
	// total counts every chunk, kept or summarized.
	total int
	// reasoningChunks counts the chunks that carried only reasoning, kept
	// or not; reasoningBytes the bytes of their reasoning text.
	reasoningChunks int
	reasoningBytes  int64
	// opened is set once a kept chunk carried a choice, finished once one
	// carried a finish_reason.
	opened, finished bool
	// contentEvents counts the chunks that carried text (reasoning
	// included), as glmbench run counts content events.
	contentEvents int
	done          bool
	// afterDone counts events after [DONE].
	afterDone int
	// notJSON counts events that were neither JSON nor [DONE].
	notJSON    int
	errorEvent bool
	// failure says why the stream did not end by itself (stalled, timed
	// out, cut); "" when it did.
	failure string
	// hungUp is true when the check ended the stream on purpose.
	hungUp bool
	// noAnswer is set when no response came at all.
	noAnswer error
	// location is a 3xx's Location; base the endpoint's base URL.
	location, base string
	r              redactor
}

// finishes lists every non-null finish_reason, in order.
func (st *streamed) finishes() []string {
	var out []string
	for _, ch := range st.chunks {
		if ch.Choices == nil {
			continue
		}
		for _, x := range *ch.Choices {
			if x.FinishReason != nil && *x.FinishReason != "" {
				out = append(out, *x.FinishReason)
			}
		}
	}
	return out
}

// finish is the last finish_reason, "" when none came.
func (st *streamed) finish() string {
	f := st.finishes()
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// usage is the last usage any chunk carried, nil when none did.
func (st *streamed) usage() *endpoints.Usage {
	for i := len(st.chunks) - 1; i >= 0; i-- {
		if st.chunks[i].Usage != nil {
			return st.chunks[i].Usage
		}
	}
	return nil
}

// problem is the first thing that kept a stream from yielding content and
// ending, "" when nothing did: an answer, a 200, no error event, no stall,
// cut or time limit, content and a finish_reason. This is what a stream
// must do for glmbench run to count it complete, and what the checks built
// on streams need; a missing [DONE] or role chunk is for the stream check's
// stricter streamShape.
func (st *streamed) problem() string {
	if p := st.endProblem(); p != "" {
		return p
	}
	switch {
	case st.contentEvents == 0:
		return "200 with no content event"
	case st.finish() == "":
		return "no chunk carries a finish_reason"
	}
	return ""
}

// endProblem is the first thing that kept a stream from ending by itself,
// "" when nothing did: an answer, a 200, no error event, no stall, cut or
// time limit. It asks for no content event: a stream of a tool call
// carries none (chunk.content).
func (st *streamed) endProblem() string {
	switch {
	case st.noAnswer != nil:
		return "no answer: " + st.noAnswer.Error()
	case isRedirect(st.status):
		return redirectLine(st.status, st.base, st.location, st.r)
	case st.status != http.StatusOK:
		return statusLine(st.r, st.status, st.retryAfter, st.body)
	case st.errorEvent:
		return "an error event inside the 200 stream: " + st.r.clip(summary.ErrorMessage(st.body), 160)
	case st.failure != "":
		return st.failure
	}
	return ""
}

// readLimit bounds the bytes read of a refused stream's body.
const readLimit = 4 << 10

// chunkBound is the most chunks of any kind a stream asking for maxTokens
// may carry before it is ended as the endpoint's fault: 16×maxTokens +
// 16,384, room for a chunk without text (a role, an empty delta, a
// finish_reason, usage) beside each token and for thousands of reasoning
// chunks a provider does not count in max_tokens. It bounds what
// streamed.chunks holds (about 1 KiB a chunk, so some 16 MiB for conform's
// short checks), tighter than endpoints.EventBound, because conform keeps
// the chunks whole to judge the stream's shape where the client keeps 8
// bytes an event. Chunks of reasoning alone, mostly not kept (see
// streamed.summarize), are bounded by EventBound as run bounds them.
func chunkBound(maxTokens int) int {
	return min(16*max(maxTokens, 0)+16384, 2*endpoints.EventBound(maxTokens))
}

// summarize reports whether c is counted in st's reasoning summary rather
// than kept in st.chunks: it carries only reasoning, and every field a
// check reads of a chunk is the same as in one kept (the stream's first
// chunk's id, the object "chat.completion.chunk"), after the first chunk
// with a choice and before any finish_reason. The first chunk with a
// choice is kept because its delta is where the role must be (noRole
// quotes a stream that opens with reasoning); reasoning after a
// finish_reason is a fault streamShape names. A reasoning model's
// thinking then costs a count, not a kilobyte a chunk.
func (st *streamed) summarize(c *chunk) bool {
	return st.opened && !st.finished && c.reasoningOnly() &&
		c.ID == st.chunks[0].ID && c.Object == "chat.completion.chunk"
}

// stream posts a streaming chat and reads it to its end, within the
// suite's time limit and stall limit. hangUp, when not nil, is asked after
// the response headers (with no chunk read) and after each event whether
// to hang up now.
//
// A stream that does not end is cut at the bounds of the body's max_tokens,
// its failure naming the bound: more than endpoints.BodyBound bytes or
// endpoints.EventBound content events (reasoning included), as glmbench
// run cuts it, or more than chunkBound chunks kept whole (tighter than
// EventBound, which it always is). Chunks of reasoning alone are counted,
// not kept (see summarize), so a reasoning model may think as long as run
// lets it. So what one stream keeps in memory is bounded by its
// max_tokens, not by how fast an endpoint streams within the time limit,
// nor by how long a model thinks.
func (s *suite) stream(ctx context.Context, body map[string]any, hangUp func(*streamed) bool) *streamed {
	st := &streamed{base: s.cfg.Endpoint.BaseURL, r: s.redact()}
	b, err := json.Marshal(body)
	if err != nil {
		st.noAnswer = err
		return st
	}
	call := &streamCall{s: s, st: st, parent: ctx, hangUp: hangUp}
	call.maxTokens, _ = body["max_tokens"].(int)
	call.ctx, call.cancel = context.WithCancelCause(ctx)
	defer call.cancel(nil)
	call.limit = time.AfterFunc(s.cfg.Timeout, func() { call.cancel(errTimeout) })
	defer call.limit.Stop()
	resp := call.send(b)
	if resp == nil {
		return st
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// Redacted before it is cut, so no start of a key survives the cut.
		st.body = s.client.ReadRedacted(resp, readLimit)
		return st
	}
	if call.hangsUp() {
		return st
	}
	call.read(resp.Body)
	return st
}

// streamCall is one streamed chat of the suite in flight: the account it
// fills, its context and the time limit that cancels it.
type streamCall struct {
	s      *suite
	st     *streamed
	parent context.Context
	ctx    context.Context
	cancel context.CancelCauseFunc
	// limit is the suite's time limit, stopped at [DONE].
	limit     *time.Timer
	maxTokens int
	hangUp    func(*streamed) bool
}

// send posts the streaming chat b and records the response's status and
// headers. It returns nil, with st.noAnswer set, when no response came.
func (call *streamCall) send(b []byte) *http.Response {
	st := call.st
	req, err := http.NewRequestWithContext(call.ctx, http.MethodPost, call.s.cfg.Endpoint.BaseURL+"/chat/completions", bytes.NewReader(b))
	if err != nil {
		st.noAnswer = err
		return nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := call.s.http.Do(req)
	if err != nil {
		st.noAnswer = call.s.noAnswer(call.ctx, err)
		return nil
	}
	st.status, st.retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
	st.contentType = resp.Header.Get("Content-Type")
	st.location = resp.Header.Get("Location")
	return resp
}

// hangsUp asks hangUp whether to hang up now and, when so, does.
func (call *streamCall) hangsUp() bool {
	if call.hangUp == nil || !call.hangUp(call.st) {
		return false
	}
	call.st.hungUp = true
	call.cancel(errHungUp)
	return true
}

// read reads a 200 stream's events from body until its end, an error event,
// a bound of max_tokens, a hang-up or a limit. The stall limit applies from
// the first content event; at [DONE] the time limit gives way to a short
// drain of what follows.
func (call *streamCall) read(body io.Reader) {
	st, s := call.st, call.s
	// The stall clock starts at the first content event: before it a
	// request may wait in the server's queue, which only the time limit
	// bounds.
	var stall *time.Timer
	defer func() {
		if stall != nil {
			stall.Stop()
		}
	}()
	rd := sse.NewReader(body)
	rd.SetMaxBytes(endpoints.BodyBound(call.maxTokens))
	rd.SetClock(func() time.Time {
		if stall != nil {
			stall.Reset(s.cfg.StallTimeout)
		}
		return time.Now()
	})
	for {
		ev, err := rd.Next()
		if err != nil {
			call.readEnded(err)
			return
		}
		data := bytes.TrimSpace(ev.Data)
		if st.done {
			st.afterDone++
			continue
		}
		if string(data) == "[DONE]" {
			st.done = true
			// Read on to the end, to see whether anything follows [DONE],
			// but never wait long for it.
			call.limit.Stop()
			drain := time.AfterFunc(time.Second, func() { call.cancel(errDrained) })
			defer drain.Stop()
			continue
		}
		var c chunk
		if json.Unmarshal(data, &c) != nil {
			st.notJSON++
			continue
		}
		content, settled := st.take(&c, data, call.maxTokens)
		if settled {
			return
		}
		if content && stall == nil {
			stall = time.AfterFunc(s.cfg.StallTimeout, func() { call.cancel(errStalled) })
		}
		if call.hangsUp() {
			return
		}
	}
}

// readEnded records why reading stopped at err: past the body's bound
// before [DONE], cut short, or nothing (the end of the stream).
func (call *streamCall) readEnded(err error) {
	st := call.st
	switch {
	case errors.Is(err, sse.ErrBodyTooLarge) && !st.done:
		st.failure = fmt.Sprintf("the stream did not end: more than %d bytes for max_tokens %d (%d content events)",
			endpoints.BodyBound(call.maxTokens), call.maxTokens, st.contentEvents)
	case !errors.Is(err, io.EOF):
		st.failure = call.s.cutShort(call.ctx, call.parent, st, err)
	}
}

// take records c, a stream's chunk before its [DONE] decoded from the data
// line data. It reports whether c was a content event, and whether it
// settled the stream: an error event, or past a bound of maxTokens
// (st.failure names it).
func (st *streamed) take(c *chunk, data []byte, maxTokens int) (content, settled bool) {
	if c.isError() {
		st.errorEvent, st.body = true, bytes.Clone(data)
		return false, true
	}
	if c.content() && st.contentEvents == endpoints.EventBound(maxTokens) {
		st.failure = fmt.Sprintf("the stream did not end: more than %d content events for max_tokens %d, glmbench run's bound (%d of them chunks of reasoning alone, %d KiB of reasoning)",
			endpoints.EventBound(maxTokens), maxTokens, st.reasoningChunks, st.reasoningBytes>>10)
		return false, true
	}
	keep := !st.summarize(c)
	if keep && len(st.chunks) == chunkBound(maxTokens) {
		st.failure = fmt.Sprintf("the stream did not end: more than %d chunks for max_tokens %d (%d content events)",
			chunkBound(maxTokens), maxTokens, st.contentEvents)
		return false, true
	}
	c.n = st.total
	st.total++
	if c.reasoningOnly() {
		st.reasoningChunks++
		st.reasoningBytes += int64(c.reasoningBytes())
	}
	if keep {
		st.opened = st.opened || (c.Choices != nil && len(*c.Choices) > 0)
		st.finished = st.finished || finishOf(*c) != ""
		st.chunks = append(st.chunks, *c)
	}
	if !c.content() {
		return false, false
	}
	st.contentEvents++
	return true, false
}

// cutShort words why a stream's reading stopped before its end.
func (s *suite) cutShort(ctx, parent context.Context, st *streamed, err error) string {
	switch cause := context.Cause(ctx); {
	case st.done:
		return "" // [DONE] came; only the connection's close did not
	case parent.Err() != nil:
		return "interrupted"
	case errors.Is(cause, errStalled) && st.contentEvents == 1:
		return fmt.Sprintf("stream stalled after the first token: no bytes for %s", s.cfg.StallTimeout)
	case errors.Is(cause, errStalled):
		return fmt.Sprintf("stream stalled after %d content events: no bytes for %s", st.contentEvents, s.cfg.StallTimeout)
	case errors.Is(cause, errTimeout) && st.contentEvents == 0:
		return fmt.Sprintf("no content event within %s", s.cfg.Timeout)
	case errors.Is(cause, errTimeout):
		return fmt.Sprintf("the stream did not end within %s (%d content events)", s.cfg.Timeout, st.contentEvents)
	}
	return "the stream was cut: " + s.cfg.Endpoint.Redact(text.OneLine(err.Error()))
}
