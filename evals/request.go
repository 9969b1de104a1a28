package evals

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/internal/text"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

// Retries is how many times a request that got no answer at all (refused or
// reset connection) is sent again. An HTTP error status is never retried:
// a 4xx or 5xx to the same body is deterministic, and lm-eval's blind
// retries of them only triple the time to the same failure.
const Retries = 3

// retryBackoff is the wait before the first retry; it doubles each time.
const retryBackoff = 250 * time.Millisecond

// EvalFields are the body fields the evals write themselves, each with
// what sets it instead; --extra-body may not set them
// (endpoints.ParseExtraBody), since a body would carry the field twice, or
// change what an eval measures under its name.
var EvalFields = map[string]string{
	"model":                      "--model names the model",
	"messages":                   "the eval makes the prompt",
	"prompt":                     "the eval makes the prompt",
	"max_tokens":                 "each eval sets its cap (1 token for an echo or an MMLU letter, --gen-tokens for long-ppl, more for a thinking model's answer)",
	"max_completion_tokens":      "each eval sets its cap as max_tokens, which this would replace (vLLM reads it first)",
	"n_predict":                  "llama.cpp reads it before max_tokens, so it would replace each eval's cap",
	"temperature":                "the evals decode greedily at temperature 0; long-ppl samples the model's own distribution at 1",
	"top_p":                      "long-ppl samples the model's own distribution at top_p 1",
	"seed":                       "long-ppl seeds each prompt's generation, so that reruns draw alike",
	"logprobs":                   "each eval asks for the logprobs it scores",
	"top_logprobs":               "each eval asks for the logprobs it scores",
	"echo":                       "ppl and mmlu echo the prompts they score; no other request echoes",
	"return_tokens_as_token_ids": "ppl asks for it where it takes token ids from the echo",
	"add_special_tokens":         "ppl's token ids are a text prompt's, special tokens added",
	"ignore_eos":                 "long-ppl sends it, and goes without it where the route refuses it",
	"stop":                       "triviaqa stops its answer at a newline",
	"stream":                     "the evals read whole answers, never streamed",
	"stream_options":             "the evals read whole answers, never streamed",
	"n":                          "an eval scores one choice per request",
}

// sender posts JSON bodies to one endpoint.
type sender struct {
	c *endpoints.Client
	// timeout bounds one request (0: none).
	timeout time.Duration
	// backoff replaces retryBackoff (tests).
	backoff time.Duration
	// extra is Config.Extra's fields, added to every generation request.
	extra map[string]json.RawMessage
}

// generation reports whether path is a route that generates, whose
// requests carry the extra body: not /tokenize, which reads no sampling or
// template field.
func generation(path string) bool { return path == "/completions" || path == "/chat/completions" }

// post sends body to path and returns the answer, whatever its status. A
// failure is only a request that got no answer (Transport, after Retries)
// or the caller's own cancellation (Interrupted). To a generation route,
// body gets the extra body's fields first, in place, so that a failure's
// shape of it shows what was sent (EvalFields keeps them from replacing an
// eval's own).
func (s sender) post(ctx context.Context, path string, body map[string]any) (*endpoints.Response, *schema.EvalFailure) {
	if generation(path) {
		for k, v := range s.extra {
			body[k] = v
		}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, newFailure(BadResponse, 0, nil, shape(body), "encoding the request: "+err.Error())
	}
	for attempt := 0; ; attempt++ {
		rctx, cancel := ctx, context.CancelFunc(func() {})
		if s.timeout > 0 {
			rctx, cancel = context.WithTimeout(ctx, s.timeout)
		}
		resp, err := s.c.Post(rctx, path, b)
		timedOut := rctx.Err() != nil
		cancel()
		status, answered := endpoints.Answered(err)
		switch {
		case err == nil:
			return resp, nil
		case ctx.Err() != nil:
			return nil, newFailure(Interrupted, 0, nil, shape(body), context.Cause(ctx).Error())
		case answered:
			// A redirect (never followed) or an unreadable body is an
			// answer: asking again gets the same one.
			return nil, newFailure(HTTPError, status, nil, shape(body), err.Error())
		case timedOut:
			// A server that never answers is not helped by asking again.
			return nil, newFailure(Transport, 0, nil, shape(body), fmt.Sprintf("no answer within the request timeout (%s)", s.timeout))
		case attempt >= Retries:
			return nil, newFailure(Transport, 0, nil, shape(body), fmt.Sprintf("no answer after %d tries: %v", attempt+1, err))
		}
		select {
		case <-ctx.Done():
			return nil, newFailure(Interrupted, 0, nil, shape(body), context.Cause(ctx).Error())
		case <-time.After(cmp.Or(s.backoff, retryBackoff) << attempt):
		}
	}
}

// postOK sends body to path and returns a 200 answer; any other status is
// an HTTPError failure (httpFailure). Use it for requests that are not
// echo requests: those class their error statuses by classifyEchoStatus.
//
// A request that asks for more top logprobs than the server allows, refused
// with the maximum stated (topLogprobsCap), is sent once more asking that
// maximum, set in body in place: the caller reads what was asked from it.
func (s sender) postOK(ctx context.Context, path string, body map[string]any) (*endpoints.Response, *schema.EvalFailure) {
	resp, f := s.post(ctx, path, body)
	if f != nil {
		return nil, f
	}
	again := ""
	if field, n := topLogprobsCap(path, body, resp); n > 0 {
		again = fmt.Sprintf("asked again with %s %d after %s", field, n, s.statusLine(resp))
		body[field] = n
		if resp, f = s.post(ctx, path, body); f != nil {
			f.Detail = joinDetail(f.Detail, again)
			return nil, f
		}
	}
	if resp.Status != http.StatusOK {
		f = s.httpFailure(resp, body)
		f.Detail = joinDetail(f.Detail, again)
		return nil, f
	}
	return resp, nil
}

// topLogprobsField is the body field that asks a count of top logprobs, by
// route: /completions' logprobs, chat's top_logprobs.
var topLogprobsField = map[string]string{"/completions": "logprobs", "/chat/completions": "top_logprobs"}

// minTopLogprobs is the fewest top logprobs worth asking for under a
// server's cap: MMLU's four letters must fit among them.
const minTopLogprobs = 4

// topLogprobsRefusal matches an error message refusing a count of top
// logprobs and stating the most allowed: Hugging Face TGI's 422
// "`top_n_tokens` must be >= 0 and <= 5. Given: 20" (router/src/validation.rs),
// vLLM's 400 "Requested sample logprobs of 20, which is greater than max
// allowed: 5" (--max-logprobs; sampling_params.py, newer builds add
// " (parameter=logprobs, value=20)"), OpenAI's 400 "Invalid 'top_logprobs':
// integer above maximum value. Expected a value <= 20, but got 25 instead.",
// trtllm-serve's 400 "... top_logprobs must be less than or equal to N"
// inside pydantic's error list (sampling_params.py check_logprobs_limit).
var topLogprobsRefusal = regexp.MustCompile(`(?is)\b(?:top_logprobs|top_n_tokens|logprobs)\b.*?(?:<=|max(?:imum)? allowed:?|less than or equal to)\s*(\d+)`)

// topLogprobsCap returns the field and the cap to ask again with when resp,
// the answer to body on path, is a 400 or 422 refusing body's count of top
// logprobs with a stated maximum below it and at least minTopLogprobs; n
// is 0 otherwise (no retry: the refusal stands, as any other).
func topLogprobsCap(path string, body map[string]any, resp *endpoints.Response) (field string, n int) {
	field = topLogprobsField[path]
	asked, ok := body[field].(int)
	if !ok || (resp.Status != http.StatusBadRequest && resp.Status != http.StatusUnprocessableEntity) {
		return field, 0
	}
	m := topLogprobsRefusal.FindStringSubmatch(summary.ErrorMessage(resp.Body))
	if m == nil {
		return field, 0
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n < minTopLogprobs || n >= asked {
		return field, 0
	}
	return field, n
}

// complete sends a non-echo /completions request and returns its 200
// answer, raw (for failures that quote it) and parsed (parseCompletion).
func (s sender) complete(ctx context.Context, req map[string]any) (*endpoints.Response, *completion, *schema.EvalFailure) {
	resp, f := s.postOK(ctx, "/completions", req)
	if f != nil {
		return nil, nil, f
	}
	c, f := parseCompletion(resp, req)
	if f != nil {
		return nil, nil, f
	}
	return resp, c, nil
}

// shape is a request body as a failure records it: every field, with the
// prompt summarised so a 2,000-token window does not fill the report.
func shape(body map[string]any) map[string]any {
	out := make(map[string]any, len(body))
	for k, v := range body {
		out[k] = v
	}
	switch p := body["prompt"].(type) {
	case string:
		if len(p) > 120 {
			out["prompt"] = fmt.Sprintf("%s… (%d bytes)", strings.ToValidUTF8(p[:100], ""), len(p))
		}
	case []int32:
		out["prompt"] = fmt.Sprintf("[%d token ids]", len(p))
	}
	return out
}

// completion is the body of a non-streamed /v1/completions answer.
type completion struct {
	Choices []struct {
		Index        int           `json:"index"`
		Text         string        `json:"text"`
		Logprobs     *wireLogprobs `json:"logprobs"`
		FinishReason *string       `json:"finish_reason"`
	} `json:"choices"`
	Usage *endpoints.Usage `json:"usage"`
}

// wireLogprobs is choices[].logprobs of a legacy completion.
type wireLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*float64           `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// UnmarshalJSON reads the legacy lists, or, where a completion's logprobs
// come in the chat shape, {"content": [{"token", "logprob",
// "top_logprobs": [{"token", "logprob"}]}]}, as current llama.cpp builds
// answer /v1/completions (tools/server/server-task.cpp to_json_oaicompat),
// those entries as the lists: a token, its logprob and its top logprobs
// by token (the larger of two that spell the same text). Such a shape has
// no text offsets and never echoes the prompt.
func (w *wireLogprobs) UnmarshalJSON(b []byte) error {
	type legacy wireLogprobs
	var v struct {
		legacy
		Content []struct {
			Token       string   `json:"token"`
			Logprob     *float64 `json:"logprob"`
			TopLogprobs []struct {
				Token   string  `json:"token"`
				Logprob float64 `json:"logprob"`
			} `json:"top_logprobs"`
		} `json:"content"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*w = wireLogprobs(v.legacy)
	if len(w.TokenLogprobs) > 0 || len(w.Tokens) > 0 || len(v.Content) == 0 {
		return nil
	}
	for _, c := range v.Content {
		var top map[string]float64 // none given: nil, as a legacy null
		for _, t := range c.TopLogprobs {
			if top == nil {
				top = map[string]float64{}
			}
			if old, dup := top[t.Token]; !dup || t.Logprob > old {
				top[t.Token] = t.Logprob
			}
		}
		w.Tokens, w.TokenLogprobs, w.TopLogprobs = append(w.Tokens, c.Token), append(w.TokenLogprobs, c.Logprob), append(w.TopLogprobs, top)
	}
	return nil
}

// parseCompletion reads a 200 answer; the choice returned is index 0 (or
// the lowest index), as lm-eval matches choices to prompts.
func parseCompletion(resp *endpoints.Response, req map[string]any) (*completion, *schema.EvalFailure) {
	var c completion
	if err := json.Unmarshal(resp.Body, &c); err != nil {
		return nil, newFailure(BadResponse, resp.Status, resp.Body, shape(req), "the answer is not a completion: "+err.Error())
	}
	if len(c.Choices) == 0 {
		return nil, newFailure(BadResponse, resp.Status, resp.Body, shape(req), "the answer has no choices")
	}
	sort.SliceStable(c.Choices, func(i, j int) bool { return c.Choices[i].Index < c.Choices[j].Index })
	if f := gaveUp(resp, req, c.Choices[0].FinishReason, c.Choices[0].Text); f != nil {
		return nil, f
	}
	return &c, nil
}

// gaveUp is a BadResponse failure for an answer the server gave up on,
// nil for any other: finish_reason "error" or "abort" (LMDeploy's, for a
// prompt past --session-len or a stopped session: its GenOut in
// lmdeploy/serve/core/async_engine.py), whose text is the server's reason,
// not an answer to score.
func gaveUp(resp *endpoints.Response, req map[string]any, finish *string, said string) *schema.EvalFailure {
	if finish == nil || *finish != "error" && *finish != "abort" {
		return nil
	}
	return newFailure(BadResponse, resp.Status, resp.Body, shape(req), fmt.Sprintf("the server gave up on the answer (finish_reason %q): %s", *finish, clipLine(said)))
}

// httpFailure classes an error status of a request that is not an echo
// request: always HTTPError.
func (s sender) httpFailure(resp *endpoints.Response, req map[string]any) *schema.EvalFailure {
	return newFailure(HTTPError, resp.Status, resp.Body, shape(req), s.statusLine(resp))
}

// statusLine is "HTTP <status>: <the error message>", the message redacted
// of the endpoint's secrets before it is clipped (a 2xx other than 200 comes
// from Post redacted only of secrets of 8 bytes or more), so a secret across
// the clip leaks no prefix.
// A refusal of a field the extra body added is said after the line
// (extraRefusal), and LMDeploy's of chat logprobs with how to start it so
// it gives them (lmdeployLogprobsHint).
func (s sender) statusLine(resp *endpoints.Response) string {
	var ep *endpoints.Endpoint
	if s.c != nil {
		ep = s.c.Endpoint()
	}
	msg := summary.ErrorMessage(resp.Body)
	line := "HTTP " + strconv.Itoa(resp.Status) + ": " + clipLine(ep.Redact(msg))
	if ep != nil {
		line += endpoints.ZAIPlanHint(ep.BaseURL, resp.Status, resp.Body)
	}
	return line + lmdeployLogprobsHint(resp.Status, msg) + s.extraRefusal(resp.Status, msg)
}

// extraRefused says, in a failure's detail, that the endpoint refused a
// field of the extra body (extraRefusal), as run's probes say it.
const extraRefused = "; the endpoint refuses a field: --extra-body adds "

// extraRefusal is what a failure's detail adds for an answer whose error
// message msg names fields of the extra body (refusedExtra): "; the
// endpoint refuses a field: --extra-body adds top_k"; "" for none.
func (s sender) extraRefusal(status int, msg string) string {
	names := s.refusedExtra(status, msg)
	if len(names) == 0 {
		return ""
	}
	return extraRefused + strings.Join(names, ", --extra-body adds ")
}

// refusedExtra names the extra body's fields, in order, that msg, the
// error message of a 4xx answer about the request (endpoints.RefusesRequest), names
// as a word: OpenAI's 400 "Unrecognized request argument supplied: top_k".
// Every route gets the same fields, so such a failure is no route's lack
// (routeLacks) nor an echo's refusal (classifyEchoStatus).
func (s sender) refusedExtra(status int, msg string) []string {
	if !endpoints.RefusesRequest(status) {
		return nil
	}
	return endpoints.FieldsNamed(msg, slices.Sorted(maps.Keys(s.extra)))
}

// refusesExtra reports whether f is a refusal of a field of the extra
// body (its detail says so: statusLine).
func refusesExtra(f *schema.EvalFailure) bool {
	return f != nil && strings.Contains(f.Detail, extraRefused)
}

func clipLine(s string) string { return text.Clip(strings.ToValidUTF8(s, ""), 160, "…") }

// nan is a null logprob: the first prompt token's.
var nan = math.NaN()
