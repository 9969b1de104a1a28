package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/internal/text"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

// Calibration is the filler length that brings a request's prompt to a
// target usage.prompt_tokens on one endpoint.
type Calibration struct {
	Target int
	// Chars is the filler length in bytes (the filler is ASCII).
	Chars int
	// PromptTokens is what the endpoint counted for that filler, -1 when it
	// reports no usage.
	PromptTokens int
	Probes       int
	// Warning says why the calibration is not within tolerance, if it is not.
	Warning string
}

// Tolerance is how far a calibrated prompt may be from its target:
// max(4 tokens, 1%).
func Tolerance(target int) int { return max(4, target/100) }

// maxProbes bounds the calibration search.
const maxProbes = 16

// charsPerTokenGuess starts the search; the search measures the real ratio.
const charsPerTokenGuess = 4

// ProbeError is an endpoint's refusal of a probe: bad input (Prepare
// returns it wrapped in a badinput.Error), said before any load is sent.
type ProbeError struct {
	Phase  string
	What   string
	Status int
	Class  schema.Class
	Msg    string
	// Limit is the probe's time limit, for a probe that ran past it.
	Limit time.Duration
	// Runaway is set for a probe that streamed past its max_tokens until
	// the limit: not a slow server, one that ignores max_tokens.
	Runaway bool
}

func (e *ProbeError) Error() string {
	where := "the endpoint"
	if e.Phase != "" {
		where = "phase " + e.Phase + ": the endpoint"
	}
	switch {
	case e.Status != 0 && e.Status != 200:
		return fmt.Sprintf("%s rejected the %s (HTTP %d: %s)", where, e.What, e.Status, e.Msg)
	case e.Class == schema.Connect:
		return fmt.Sprintf("%s is unreachable during the %s: %s", where, e.What, e.Msg)
	case e.Limit > 0 && e.Class == schema.Stalled:
		return fmt.Sprintf("%s went silent during the %s for its limit of %s (%s: %s; --stall-timeout sets it)", where, e.What, e.Limit, e.Class, e.Msg)
	case e.Limit > 0 && (e.Class == schema.TTFTTimeout || e.Class == schema.TotalTimeout):
		hint := "; --probe-timeout sets the limit, for a server that is only slow or, on a first request, loading its model (Ollama loads it then)"
		if e.Runaway {
			hint = ": it does not honour max_tokens"
		}
		return fmt.Sprintf("%s did not finish the %s within its limit of %s (%s: %s%s)", where, e.What, e.Limit, e.Class, e.Msg, hint)
	default:
		return fmt.Sprintf("%s failed the %s (%s: %s)", where, e.What, e.Class, e.Msg)
	}
}

// ProbeIndex is the request index every probe's prefix carries, under a
// nonce of its own: same length as the load's prefixes, so the same token
// count, and no prefix the load could find cached.
const ProbeIndex = 999999

// prober sends calibration probes: requests of the load's exact shape,
// except max_tokens 1.
type prober struct {
	client *endpoints.Client
	shape  Shape
	nonce  string
	fill   *filler
	// lim bounds each probe: its time limit is lim.Total, and its
	// MaxTokens is 1, so content past it is the endpoint's fault.
	lim    endpoints.StreamLimits
	phase  string
	probes int
	// noUsage is set once the endpoint has shown it reports no usage.
	noUsage bool
}

var errNoUsage = errors.New("no usage reported")

// tokens returns usage.prompt_tokens for a prompt with chars of filler.
func (p *prober) tokens(ctx context.Context, chars int) (int, error) {
	return p.count(ctx, p.userMessage(p.fill.Text(chars)))
}

// userMessage is a probe's user message: the probe's prefix, then filler.
func (p *prober) userMessage(filler string) []endpoints.Message {
	return []endpoints.Message{{Role: "user", Content: Prefix(p.nonce, ProbeIndex) + filler}}
}

// count returns usage.prompt_tokens for a chat of msgs, with the load's
// shape but max_tokens 1.
func (p *prober) count(ctx context.Context, msgs []endpoints.Message) (int, error) {
	p.probes++
	body := p.shape.messagesBody(msgs, 1, true)
	var res endpoints.StreamResult
	for attempt := 0; ; attempt++ {
		res.Reset()
		p.client.StreamAPI(ctx, p.shape.API, body, p.lim, nil, &res)
		if res.Cancelled != nil {
			return 0, res.Cancelled
		}
		// A probe is not load: a busy endpoint gets two more chances
		// (queue_full includes a 529, Anthropic's and Dynamo's overload).
		if (res.Class == schema.RateLimited || res.Class == schema.QueueFull) && attempt < 2 {
			sleepCtx(ctx, retryWait(res.RetryAfter))
			continue
		}
		break
	}
	// A request cut off by max_tokens 1 may end with no content event; only
	// a real failure counts here. A stream cut before any content event
	// says nothing of why (trtllm-serve drops the connection when its
	// worker refuses a request after the 200): the whole request below
	// asks, and its refusal says.
	cutEarly := res.Class == schema.Truncated && len(res.Events) == 0
	if res.Class != "" && res.Class != schema.Empty && !cutEarly {
		return 0, p.fail("calibration probe (max_tokens 1)", &res)
	}
	if res.Usage && res.PromptTokens > 0 {
		return res.PromptTokens, nil
	}
	// No usage in the stream: ask the same thing without streaming, under
	// the same time limit.
	pctx, cancel := context.WithTimeoutCause(ctx, p.lim.Total, errProbeLimit)
	defer cancel()
	resp, err := p.client.Post(pctx, p.shape.API.Path(), p.shape.messagesBody(msgs, 1, false))
	switch {
	case err != nil && ctx.Err() != nil:
		return 0, context.Cause(ctx)
	case err != nil && errors.Is(context.Cause(pctx), errProbeLimit):
		return 0, &ProbeError{Phase: p.phase, What: "calibration probe (non-streamed)", Class: schema.TotalTimeout, Msg: "no whole answer", Limit: p.lim.Total}
	case err != nil:
		if status, ok := endpoints.Answered(err); ok {
			// A redirect (never followed) or an unreadable body: an answer.
			class := schema.StreamError
			if status >= 300 && status < 400 {
				class = schema.Redirect
			}
			return 0, &ProbeError{Phase: p.phase, What: "calibration probe (non-streamed)", Status: status, Class: class, Msg: short(err.Error())}
		}
		return 0, &ProbeError{Phase: p.phase, What: "calibration probe", Class: schema.Connect, Msg: err.Error()}
	}
	if resp.Status != 200 {
		// A 2xx body comes with only its long secrets redacted (it was for
		// parsing): redact all of them before the cut.
		msg := summary.ErrorMessage(p.client.Endpoint().RedactBytes(resp.Body))
		return 0, &ProbeError{Phase: p.phase, What: "calibration probe (non-streamed)", Status: resp.Status, Msg: short(msg) + p.shape.refusedField(false, resp.Status, msg)}
	}
	if cutEarly {
		// Answered whole but cut streamed: the load streams.
		return 0, p.fail("calibration probe (max_tokens 1)", &res)
	}
	var v struct {
		Usage *endpoints.Usage `json:"usage"`
	}
	if json.Unmarshal(resp.Body, &v) != nil || v.Usage == nil || v.Usage.PromptTokens <= 0 {
		return 0, errNoUsage
	}
	return v.Usage.PromptTokens, nil
}

var errProbeLimit = errors.New("calibration probe ran past its time limit")

// refusedField names the switch that leaves out, or renames, a field of
// this shape's bodies that a 4xx answer names (stream: the body streamed,
// so it carried stream_options unless NoStreamUsage): OpenAI refuses
// ignore_eos ("Unrecognized request argument supplied: ignore_eos"),
// Mistral's API refuses it, stream_options and max_completion_tokens (422
// extra_forbidden, "loc": ["body", "stream_options", ...]), and OpenAI's
// reasoning models refuse max_tokens ("Unsupported parameter: 'max_tokens'
// ... Use 'max_completion_tokens' instead"). A field the body did not carry
// names no switch, nor does a cap past the context, whichever name carried
// it: vLLM's "'max_tokens' or 'max_completion_tokens' is too large" (to
// 2025) and "max_completion_tokens=M cannot be greater than
// max_model_len=L" (2026, vllm/renderers/params.py), SGLang's
// "max_completion_tokens is too large: M." (with --context-length). A
// field --extra-body added is named as such where the answer names it.
// Only a 400 (OpenAI, vLLM, SGLang, llama.cpp) or a 422
// (Mistral, FastAPI) refuses a field: a 401, 403 or 429 says who may ask
// or how often, and its "user ci" names no field. "" for any other answer.
func (s Shape) refusedField(stream bool, status int, msg string) string {
	if status != http.StatusBadRequest && status != http.StatusUnprocessableEntity {
		return ""
	}
	msg = withoutPydanticInputs(msg)
	var hints []string
	if s.IgnoreEOS && strings.Contains(msg, "ignore_eos") {
		hints = append(hints, "--ignore-eos=false leaves ignore_eos out")
	}
	if stream && !s.NoStreamUsage && (strings.Contains(msg, "stream_options") || strings.Contains(msg, "include_usage")) {
		hints = append(hints, "--stream-usage=false leaves stream_options out")
	}
	lower := strings.ToLower(msg)
	switch {
	case s.API == endpoints.APICompletions || !strings.Contains(msg, "max_completion_tokens") || strings.Contains(lower, "too large") || strings.Contains(lower, "cannot be greater than"):
	case s.MaxCompletionTokens:
		hints = append(hints, "without --max-completion-tokens the cap goes as max_tokens")
	case strings.Contains(msg, "max_tokens") && strings.Contains(lower, "support"):
		hints = append(hints, "--max-completion-tokens sends the cap as max_completion_tokens")
	}
	for _, k := range endpoints.FieldsNamed(msg, endpoints.ExtraFields(s.Extra)) {
		hints = append(hints, "--extra-body adds "+k)
	}
	if len(hints) == 0 {
		return ""
	}
	return "; the endpoint refuses a field: " + strings.Join(hints, ", ")
}

// withoutPydanticInputs is msg without the input of each error where msg
// holds pydantic's errors as Python reprs (trtllm-serve's 400s: the list
// "[{'type': ..., 'loc': ('body', ...), 'msg': ..., 'input': ...}, ...]",
// or FastAPI's "N validation errors:" with one error a line): a
// before-validator's value_error quotes the whole body as its input,
// naming every field sent, and only its loc and msg say what was refused.
// An input ends where the next error starts (pydanticError), not at a
// "{'type': " of its own: a quoted body's tools are {'type': 'function'}.
func withoutPydanticInputs(msg string) string {
	if !strings.Contains(msg, "'loc': (") {
		return msg
	}
	var b strings.Builder
	for {
		i := strings.Index(msg, ", 'input': ")
		if i < 0 {
			b.WriteString(msg)
			return b.String()
		}
		b.WriteString(msg[:i])
		next := pydanticError.FindStringIndex(msg[i:])
		if next == nil {
			return b.String()
		}
		msg = msg[i+next[0]:]
	}
}

// pydanticError is the start of one error of pydantic's in its repr: its
// type, then its loc, a tuple.
var pydanticError = regexp.MustCompile(`\{'type': '[a-z_]+', 'loc': \(`)

func (p *prober) fail(what string, res *endpoints.StreamResult) error {
	msg := res.Detail
	if len(res.Body) > 0 && (res.Status != 200 || summary.FromErrorEvent(res.Detail)) {
		// The endpoint's own message: an error answer, or an error event.
		msg = summary.ErrorMessage(res.Body)
	}
	pe := &ProbeError{Phase: p.phase, What: what, Status: res.Status, Class: res.Class, Msg: short(msg) + p.shape.refusedField(true, res.Status, msg)}
	if res.Status == http.StatusTooManyRequests && res.Class == schema.HTTP4xx {
		// A 429 that is no rate limit (a Z.ai account or quota code, not
		// retried): its detail says what it is.
		pe.Msg += "; " + strings.TrimPrefix(res.Detail, "HTTP 429, ")
	}
	switch {
	case p.shape.API != endpoints.APICompletions:
	case res.Status == http.StatusNotFound:
		// OpenAI answers a chat model's completions with 404; a chat-only
		// gateway has no such route at all. vLLM and OpenAI answer a model
		// name they do not serve with 404 on both routes, so the hint
		// leaves that cause open.
		pe.Msg += "; --api completions posts /completions: if the model name is right, this endpoint or model serves only /chat/completions (--api chat)"
	case res.Class == schema.Empty:
		// llama.cpp before PR 10974 (merged at the end of December 2024) answered /v1/completions
		// in its native shape, {"content", "stop"}, with no choices.
		pe.Msg += "; a completions stream's content is its choices[].text, and this one carried none (llama.cpp builds before January 2025 answer /v1/completions in their native format: --api chat)"
	}
	// The cap went as max_completion_tokens (validate refuses the switch
	// on completions).
	mct := p.shape.MaxCompletionTokens && p.shape.API != endpoints.APICompletions
	if mct && res.Class == schema.Empty {
		// OpenAI's reasoning models think first, streaming nothing, within
		// max_completion_tokens: one that uses it up ends with no content.
		pe.Msg += "; a reasoning model's hidden reasoning counts in max_completion_tokens and can spend it all before any content: a larger OUT leaves room for an answer"
	} else if res.Class == schema.Empty && res.ReasoningTokens > 0 {
		// Gemini 2.5 thinks within its output cap, max_tokens, streaming
		// none of it; the usage says how much it spent.
		pe.Msg += fmt.Sprintf("; the usage counts %d reasoning tokens of %d and no content: the model's hidden reasoning counts in max_tokens and spent it before any answer: a larger OUT leaves room for one (or an --extra-body field that turns its thinking down, such as reasoning_effort)", res.ReasoningTokens, res.CompletionTokens)
	}
	if res.Class == schema.Empty && slices.ContainsFunc(endpoints.ExtraFields(p.shape.Extra), func(k string) bool { return k == "tools" || k == "functions" }) {
		// A tool call's name and arguments are content events (see
		// endpoints.Chunk.ToolCall), so none came either. vLLM's
		// tool_choice "required" (serving_chat.py) and SGLang's and
		// llama.cpp's parsers send a call's first chunk only once the
		// partial output holds the function's name, several tokens in.
		pe.Msg += toolHint
	}
	switch {
	case res.Class == schema.StreamError && sessionLenText(msg):
		pe.Msg += sessionLenHint
	case res.Class == schema.Empty && res.Finish == "length" && res.Usage && res.CompletionTokens == 0:
		// LMDeploy before 2026 answers a prompt plus max_tokens past its
		// --session-len so (InternLM/lmdeploy#1589), as does any build a
		// prompt that leaves nothing when max_tokens is absent.
		pe.Msg += "; finish_reason \"length\" with no token generated: the prompt plus max_tokens leave no room (LMDeploy answers so past its --session-len)"
	}
	p.timedOut(pe, res)
	if mct && (pe.Runaway || res.Class == schema.StreamError && p.lim.MaxTokens > 0 && len(res.Events) > p.lim.MaxTokens) {
		// llama.cpp before PR 19831 (February 2026) and Ollama read no
		// max_completion_tokens: the request had no cap.
		pe.Msg += "; the cap went as max_completion_tokens, which some servers do not read (llama.cpp before February 2026, Ollama): without --max-completion-tokens it goes as max_tokens"
	}
	return pe
}

// sessionLenText reports whether a server's words for an answer it gave up
// on say the prompt is past its session length: LMDeploy's engine error
// for an input too long (ResponseType.INPUT_LENGTH_ERROR, in the content of
// a finish_reason "error" chunk) or a text naming session_len.
func sessionLenText(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "input_length_error") || strings.Contains(m, "session_len") || strings.Contains(m, "session-len") || strings.Contains(m, "session len")
}

// sessionLenHint follows a probe LMDeploy gave up on as too long.
const sessionLenHint = "; LMDeploy gives up on a prompt past its --session-len (prompt plus output) inside its 200, finish_reason \"error\": restart it with a larger --session-len, or lower this phase's IN+OUT"

// toolHint follows a probe that got no content event while --extra-body
// adds tools.
const toolHint = `; --extra-body adds tools, and no tool call came either: a server sends a call's first chunk (delta.tool_calls or function_call) only once it has parsed the function's name, several tokens in, so a small OUT may carry none, and one that streams calls in another shape shows none (tool_choice "none" keeps the tools in the prompt and the answer in content)`

// timedOut says, for a probe that outlived its limit, what it got
// meanwhile.
func (p *prober) timedOut(pe *ProbeError, res *endpoints.StreamResult) {
	switch res.Class {
	case schema.TTFTTimeout, schema.TotalTimeout, schema.Stalled:
		pe.Limit = p.lim.Total
		if res.Class == schema.Stalled {
			pe.Limit = p.lim.Stall
		}
		switch n := len(res.Events); {
		case n == 0:
			pe.Msg = "no content event"
		case p.lim.MaxTokens > 0 && n > p.lim.MaxTokens:
			pe.Msg = fmt.Sprintf("%s content events for max_tokens %d, and no end", count(n), p.lim.MaxTokens)
			pe.Runaway = true
		case res.Class == schema.Stalled:
			pe.Msg = fmt.Sprintf("silent after %s content events", count(n))
		default:
			pe.Msg = fmt.Sprintf("%s content events, and no end", count(n))
		}
	}
}

// short cuts a message for a one-line error, never inside a character.
func short(s string) string { return text.Clip(s, 160, "…") }

// retryWait reads Retry-After (seconds), bounded to [1s, 10s].
func retryWait(h string) time.Duration {
	if n, err := strconv.Atoi(h); err == nil {
		return min(max(time.Duration(n)*time.Second, time.Second), 10*time.Second)
	}
	return time.Second
}

// maxCharsPerToken bounds how many bytes of the filler one token holds:
// ordinary English words take 3 to 6 under any tokenizer, so a count that
// grows by less than one token per 16 bytes of filler is not counting it.
const maxCharsPerToken = 16

// calibrate finds the filler length whose prompt counts target tokens within
// Tolerance. The endpoint's count is close to a + b·chars, so a secant step
// inside a bracket that always holds the target converges in a few probes.
//
// It knows it is probing a real server. No probe is longer than the filler
// that the ratio measured so far calls for (the first assumes one byte per
// token, which cannot overshoot), so no prompt is more than about twice what
// the target needs. A server that truncates an over-long prompt and counts
// what it kept (llama.cpp with context shift, answering 200) shows as a count
// that stops growing with the filler: the search then stays below that
// length and, unless the target lies below the cut, ends in a few probes as
// bad input naming about where the count stops. A 400 for a prompt that the
// ratio puts below the target ends it at once.
func (p *prober) calibrate(ctx context.Context, target int) (Calibration, error) {
	s := &search{p: p, target: target, tol: Tolerance(target), cal: Calibration{Target: target, PromptTokens: -1}}
	base, err := p.tokens(ctx, 0)
	if errors.Is(err, errNoUsage) {
		p.noUsage = true
		s.cal.Chars, s.cal.Probes = target*charsPerTokenGuess, p.probes
		s.cal.Warning = fmt.Sprintf("the endpoint reports no usage, so prompts are not calibrated (%d characters of filler, about %d per token, assumed)", s.cal.Chars, charsPerTokenGuess)
		return s.cal, nil
	}
	if err != nil {
		return s.cal, err
	}
	if base > target+s.tol {
		return s.cal, badinput.Errorf("phase %s: an input of %d tokens is below the endpoint's smallest prompt of %d tokens (%s)", p.phase, target, base, p.shape.overhead())
	}
	if base >= target-s.tol {
		s.done(0, base)
		return s.cal, nil
	}
	s.base, s.tlo, s.hi, s.tbest, s.limit = base, base, -1, base, maxProbes
	// First guess: one character per token. The filler is ASCII and no
	// tokenizer makes more than one token of a byte, so this cannot
	// overshoot (and so cannot ask for more than the context holds); the
	// probe then measures the real ratio.
	s.c = target - base
	return s.run(ctx)
}

// search is calibrate's state past the empty filler's probe: a bracket of
// filler lengths around the target, narrowed by each probe.
type search struct {
	p                 *prober
	target, tol, base int
	// cal is the calibration, once found.
	cal Calibration
	// c is the filler length the next probe sends.
	c       int
	lo, tlo int // tlo < target
	hi, thi int // thi > target, or math.MaxInt for a refusal, once found (hi -1 until then)
	// best is the filler whose count tbest came nearest the target so far.
	best, tbest int
	// cut is set once a probe's count fell short of the filler (firstC
	// characters counted firstT): the endpoint truncates. The search goes
	// on below that length, to reach the target if the cut was only an
	// overshoot, or else to narrow down where the count stops following.
	cut            bool
	firstC, firstT int
	// limit bounds the probes: maxProbes, or narrowProbes past a cut.
	limit int
}

// run probes until the search ends, in a calibration (s.cal) or an error.
func (s *search) run(ctx context.Context) (Calibration, error) {
	for s.p.probes < s.limit {
		t, err := s.p.tokens(ctx, s.c)
		var end bool
		switch {
		case err != nil:
			end, err = s.refused(err)
		case s.fellShort(t):
			end, err = s.truncated(t)
		default:
			end, err = s.counted(t)
		}
		if end {
			return s.cal, err
		}
	}
	// end fills s.cal: call it before s.cal is read (Go leaves the order
	// of a return list's operands to the compiler).
	err := s.end()
	return s.cal, err
}

// done ends the search at chars of filler, counted toks tokens, with a
// warning when that is outside the tolerance.
func (s *search) done(chars, toks int) {
	s.cal.Chars, s.cal.PromptTokens, s.cal.Probes = chars, toks, s.p.probes
	if d := toks - s.target; d > s.tol || d < -s.tol {
		s.cal.Warning = fmt.Sprintf("calibrated prompt has %d tokens, %d from the target %d (tolerance %d)", toks, d, s.target, s.tol)
	}
}

// end ends a search that ran out of probes or narrowed down a cut: bad
// input when the endpoint truncates below the target, else the best filler
// found.
func (s *search) end() error {
	if s.cut && s.thi == math.MaxInt {
		return badinput.Errorf("phase %s: the endpoint truncates prompts at about %s tokens, below this phase's %s (%s characters of filler counted %s tokens; %s counted %s)",
			s.p.phase, count(s.tlo), count(s.target), count(s.lo), count(s.tlo), count(s.firstC), count(s.firstT))
	}
	s.done(s.best, s.tbest)
	return nil
}

// slope is tokens per filler byte, measured from the empty filler to lo.
func (s *search) slope() float64 {
	if s.lo == 0 {
		return 0
	}
	return float64(s.tlo-s.base) / float64(s.lo)
}

// toward is the filler the measured ratio calls for; below a refused
// length, halfway to it when the ratio points at or past it.
func (s *search) toward() int {
	next := s.lo * 2
	if sl := s.slope(); sl > 0 {
		next = s.lo + int(float64(s.target-s.tlo)/sl) + 1
	} else if s.hi >= 0 {
		next = s.hi
	}
	if s.hi >= 0 && next >= s.hi-1 {
		next = s.lo + (s.hi-s.lo)/2
	}
	return max(next, s.lo+1)
}

// refused takes a probe of s.c bytes that failed with err. A 400 bounds
// the bracket from above; any other failure ends the search with err.
func (s *search) refused(err error) (end bool, _ error) {
	var pe *ProbeError
	if !errors.As(err, &pe) || pe.Status != 400 {
		return true, err
	}
	// Refused, as too long for the context, most likely. If the ratio puts
	// that prompt below the target, no prompt of the target's length will do.
	if sl := s.slope(); sl > 0 {
		if at := s.tlo + int(sl*float64(s.c-s.lo)); at < s.target-s.tol {
			return true, badinput.Errorf("phase %s: the endpoint refuses a prompt of about %s tokens, below this phase's %s (HTTP 400: %s)", s.p.phase, count(at), count(s.target), pe.Msg)
		}
	}
	s.hi, s.thi = s.c, math.MaxInt
	if s.hi-s.lo <= 1 {
		return true, err
	}
	s.c = s.toward()
	return false, nil
}

// fellShort says whether a count of t tokens for s.c bytes of filler did
// not follow it. The count must grow with the filler: by one token per
// maxCharsPerToken bytes at the least, and by half what the measured ratio
// predicts. Two tokens of slack cover a word cut in two at the filler's end.
func (s *search) fellShort(t int) bool {
	grew, want := float64(t-s.tlo), float64(s.c-s.lo)/maxCharsPerToken
	if sl := s.slope(); sl > 0 {
		want = max(want, sl*float64(s.c-s.lo)/2)
	}
	return grew < want-2
}

// truncated takes a count of t tokens that fell short of s.c bytes: the
// bracket is bounded from above there, and the search narrows down where
// the count stops following, within narrowProbes more probes.
func (s *search) truncated(t int) (end bool, _ error) {
	if !s.cut {
		s.cut, s.firstC, s.firstT = true, s.c, t
		s.limit = s.p.probes + narrowProbes
	}
	if s.lo == 0 {
		// Cut already at the first probe: no ratio to judge by.
		return true, badinput.Errorf("phase %s: the endpoint's prompt count does not follow the prompt: %s characters of filler counted only %s tokens (a truncated prompt?), far below this phase's %s",
			s.p.phase, count(s.firstC), count(s.firstT), count(s.target))
	}
	s.hi, s.thi = s.c, math.MaxInt
	if s.hi-s.lo <= max(s.lo/100, 1) {
		return true, s.end()
	}
	s.c = s.toward()
	return false, nil
}

// counted takes a sound count of t tokens for s.c bytes: it ends the
// search within the tolerance, or narrows the bracket and picks the next
// length (a secant step once both ends are counts).
func (s *search) counted(t int) (end bool, _ error) {
	c := s.c
	if abs(t-s.target) < abs(s.tbest-s.target) {
		s.best, s.tbest = c, t
	}
	if abs(t-s.target) <= s.tol {
		s.done(c, t)
		return true, nil
	}
	if t < s.target {
		s.lo, s.tlo = c, t
	} else {
		s.hi, s.thi = c, t
	}
	switch {
	case s.cut && s.thi == math.MaxInt && s.hi-s.lo <= max(s.lo/100, 1):
		return true, s.end() // narrowed down to about 1%: lo is about where it cuts
	case s.hi >= 0 && s.hi-s.lo <= 1:
		s.done(s.best, s.tbest)
		return true, nil
	case s.hi < 0 || s.thi == math.MaxInt:
		s.c = s.toward()
	default:
		next := s.lo + int(float64(s.target-s.tlo)*float64(s.hi-s.lo)/float64(s.thi-s.tlo))
		s.c = min(max(next, s.lo+1), s.hi-1)
	}
	return false, nil
}

// narrowProbes bounds the probes that narrow down where a truncating
// endpoint's count stops following the filler: each halves the gap, to
// about 1%.
const narrowProbes = 8

// count writes n with thousands separators: 8192 is "8,192".
func count(n int) string { return text.Thousands(n) }

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// DefaultProbeTimeout is the least time limit of a calibration probe when
// none is given; ProbeLimit adds time for long prompts.
const DefaultProbeTimeout = time.Minute

// probePrefillAllowance is the time ProbeLimit allows a prompt token by
// default: 50 tokens/s, a CPU llama.cpp's prefill of a mid-size model, so
// an 8,192-token probe on a slow but working server gets 164 s of prefill
// and a minute beside.
const probePrefillAllowance = 20 * time.Millisecond

// ProbeLimit is a calibration probe's time limit for a phase of in prompt
// tokens: given, when given (> 0); else DefaultProbeTimeout plus in × 20 ms,
// a minute of headroom beyond the prefill itself. The whole calibration
// gets five times the sum over the phases' distinct prompt lengths.
func ProbeLimit(given time.Duration, in int) time.Duration {
	if given > 0 {
		return given
	}
	return DefaultProbeTimeout + time.Duration(in)*probePrefillAllowance
}

// errCalibrationBudget ends a calibration that outlived its budget.
var errCalibrationBudget = errors.New("calibration budget spent")

// preflight checks each phase's IN+OUT against the context the server
// states, if it states one, then each IN against the longest prompt it
// states apart from that; a server that answers none of the questions in
// time has stated nothing.
func preflight(ctx context.Context, o *Options, client *endpoints.Client, specs []Spec) error {
	qctx, cancel := context.WithTimeout(ctx, o.ConnectTimeout+10*time.Second)
	defer cancel()
	n, source, _ := client.ContextLength(qctx)
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if n <= 0 {
		// No bound on prompt plus output; maybe one on the prompt alone
		// (Ollama's num_ctx, which its runner shifts past for output).
		return promptFit(qctx, client, specs)
	}
	var over, fit []string
	var first *Spec
	for i, s := range specs {
		if s.In+s.Out <= n {
			fit = append(fit, s.Name)
			continue
		}
		if first == nil {
			first = &specs[i]
		}
		over = append(over, s.Name)
	}
	if first == nil {
		return promptFit(qctx, client, specs)
	}
	s := *first
	return badinput.Errorf("phase %s: IN+OUT is %s+%s = %s tokens, more than the endpoint's context of %s tokens (%s)%s",
		s.Name, count(s.In), count(s.Out), count(s.In+s.Out), count(n), source, fitHint(specs, over, fit, n))
}

// promptFit checks each phase's IN against the longest prompt the server
// states apart from its context (endpoints.Client.PromptLimit): TGI's
// max_input_tokens, which may be well below max_total_tokens (every
// request of a longer prompt is refused), or a loaded Ollama model's
// num_ctx (a longer prompt is cut, and answered 200).
func promptFit(ctx context.Context, client *endpoints.Client, specs []Spec) error {
	n, source := client.PromptLimit(ctx)
	if n <= 0 {
		return nil
	}
	for _, s := range specs {
		if s.In > n {
			return badinput.Errorf("phase %s: IN is %s tokens, more than the endpoint's longest prompt of %s tokens (%s); keep each phase's IN within %s",
				s.Name, count(s.In), count(n), source, count(n))
		}
	}
	return nil
}

// fitHint ends preflight's refusal with what to run instead: the fixed
// phases that fit (a first run's --phases all on a model served with a
// short context: llama.cpp's 4,096 per slot, vLLM's --max-model-len 8192),
// or, for a custom phase, the bound its IN+OUT must keep. over and fit name
// the phases that do not fit and those that do, in order.
func fitHint(specs []Spec, over, fit []string, n int) string {
	hint := ""
	if len(over) > 1 {
		hint = "; so is " + strings.Join(over[1:], ", ")
	}
	for _, s := range specs {
		if b, ok := builtin(s.Name); !ok || b != s {
			return hint + "; keep each phase's IN+OUT within " + count(n)
		}
	}
	if len(fit) == 0 {
		return hint + "; no fixed phase fits: a custom --phase NAME=N/IN/OUT with IN+OUT within " + count(n) + " does"
	}
	return hint + "; --phases " + strings.Join(fit, ",") + " runs the fixed phases that fit"
}
