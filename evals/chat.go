package evals

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"
	"unicode"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/reports/schema"
)

// The chat route: /v1/chat/completions, for endpoints whose /v1/completions
// lacks what an eval needs. llama.cpp's server answers echo with a 500
// ("Only no echo is supported"; older builds "Unsupported param: echo") and
// gives no legacy logprobs on /v1/completions, but fills
// choices[0].logprobs.content on chat (tools/server/server-task.cpp,
// to_json_oaicompat_chat); many hosted providers serve chat alone (their
// /v1/completions is a 404). Chat gives logprobs of generated tokens only,
// never of the prompt: what scores a prompt (ppl, MMLU by echo) cannot move
// there.

// chatTopLogprobs is how many top logprobs a chat request asks for: 20 is
// OpenAI's chat limit, vLLM's default max_logprobs and llama.cpp's default
// when logprobs is true and top_logprobs absent. A server that caps it lower
// and says so (TGI's --max-top-n-tokens, 5 by default; vLLM's
// --max-logprobs) is asked its cap instead (sender.postOK, mmluTop).
const chatTopLogprobs = 20

// chatCompletion is the body of a non-streamed /v1/chat/completions answer.
type chatCompletion struct {
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Content *string `json:"content"`
			// ReasoningContent (vLLM, SGLang, llama.cpp, the built-in
			// engine) or Reasoning (some gateways) holds a thinking model's
			// reasoning, which its logprobs cover too.
			ReasoningContent string `json:"reasoning_content"`
			Reasoning        string `json:"reasoning"`
		} `json:"message"`
		Logprobs     *chatLogprobs `json:"logprobs"`
		FinishReason *string       `json:"finish_reason"`
	} `json:"choices"`
	Usage *endpoints.Usage `json:"usage"`
}

// chatLogprobs is choices[].logprobs of a chat answer, OpenAI's shape:
// one entry per generated token, in order.
type chatLogprobs struct {
	Content []ChatTokenLogprob `json:"content"`
}

// ChatTokenLogprob is one generated token: its text, its logprob (natural
// log) and the most likely tokens at its position. llama.cpp adds the
// token's "id"; nothing here needs it.
type ChatTokenLogprob struct {
	Token       string   `json:"token"`
	Logprob     *float64 `json:"logprob"`
	TopLogprobs []struct {
		Token   string   `json:"token"`
		Logprob *float64 `json:"logprob"`
	} `json:"top_logprobs"`
}

// Top returns the entry's top_logprobs as a map from token text to logprob
// (the likelier value where a text repeats), nil when there are none. The
// sampled token is in it even where the server's list leaves it out:
// LMDeploy puts it in the entry's own token and logprob only, its
// top_logprobs the other candidates (api_server.py
// _create_chat_completion_logprobs), where OpenAI's list holds it.
func (t ChatTokenLogprob) Top() map[string]float64 {
	if len(t.TopLogprobs) == 0 {
		return nil
	}
	m := make(map[string]float64, len(t.TopLogprobs)+1)
	for _, e := range t.TopLogprobs {
		if e.Logprob == nil {
			continue
		}
		if old, ok := m[e.Token]; !ok || *e.Logprob > old {
			m[e.Token] = *e.Logprob
		}
	}
	if _, ok := m[t.Token]; !ok && t.Logprob != nil {
		m[t.Token] = *t.Logprob
	}
	return m
}

// content is the answer's content alone, without a thinking model's
// reasoning: what an answer is read from. A leading thinking block that the
// server left in content (splitThink) is reasoning, not content.
func (c *chatCompletion) content() string {
	if m := c.Choices[0].Message; m.Content != nil {
		_, content := splitThink(*m.Content)
		return content
	}
	return ""
}

// reasoning is a thinking model's reasoning (reasoning_content or
// reasoning, then a thinking block left in content: splitThink), "" when
// the answer has none.
func (c *chatCompletion) reasoning() string {
	m := c.Choices[0].Message
	r := m.ReasoningContent + m.Reasoning
	if m.Content != nil {
		think, _ := splitThink(*m.Content)
		r += think
	}
	return r
}

// thinkTags are the tags a thinking model wraps its reasoning in, as the
// servers' reasoning parsers split them out: <think>…</think> (DeepSeek-R1
// and V3, Qwen3, GLM-4.5: vLLM's deepseek_r1, qwen3 and glm45 parsers,
// SGLang's deepseek-r1 and qwen3, llama.cpp's deepseek format), Mistral's
// [THINK]…[/THINK] (vLLM's mistral parser) and Kimi's ◁think▷…◁/think▷
// (SGLang's kimi parser). A server that does not split reasoning out
// (llama.cpp with --reasoning-format none, a pass-through gateway) returns
// them in content: "<think>\n…</think>\n\nB" (llama.cpp issue 11325).
var thinkTags = [][2]string{{"<think>", "</think>"}, {"[THINK]", "[/THINK]"}, {"\u25c1think\u25b7", "\u25c1/think\u25b7"}}

// splitThink splits a thinking block off the start of a chat answer's
// content and returns it, tags included (so that a block of its opening
// tag alone, the first token of a thinking model, is reasoning too), and
// the content after it. Content opening (after whitespace) with a think tag
// is reasoning up to and through its closing tag; with no closing tag (the
// model was still thinking at max_tokens), reasoning only. Content holding
// "</think>" with no opening tag is DeepSeek-R1's and Qwen3-Thinking's
// shape, whose chat template opens the block in the prompt (SGLang's
// reasoning parser docs: "No <think> start tag"): reasoning through it.
// Content with neither is content.
func splitThink(s string) (reasoning, content string) {
	rest := strings.TrimLeftFunc(s, unicode.IsSpace)
	for _, t := range thinkTags {
		if !strings.HasPrefix(rest, t[0]) {
			continue
		}
		if k := strings.Index(rest[len(t[0]):], t[1]); k >= 0 {
			end := len(t[0]) + k + len(t[1])
			return rest[:end], rest[end:]
		}
		return rest, ""
	}
	if k := strings.Index(s, thinkTags[0][1]); k >= 0 {
		end := k + len(thinkTags[0][1])
		return s[:end], s[end:]
	}
	return "", s
}

// finish is the answer's finish_reason, "" when absent.
func (c *chatCompletion) finish() string {
	if f := c.Choices[0].FinishReason; f != nil {
		return *f
	}
	return ""
}

// chatRequest is a non-streamed chat request of prompt as the one user
// message, with the fields in extra.
func chatRequest(model, prompt string, extra map[string]any) map[string]any {
	req := map[string]any{"model": model, "messages": []map[string]any{{"role": "user", "content": prompt}}}
	for k, v := range extra {
		req[k] = v
	}
	return req
}

// chat sends a chat request and returns its 200 answer, raw and parsed;
// any other status is an HTTPError failure.
func (s sender) chat(ctx context.Context, req map[string]any) (*endpoints.Response, *chatCompletion, *schema.EvalFailure) {
	resp, f := s.postOK(ctx, "/chat/completions", req)
	if f != nil {
		return nil, nil, f
	}
	var c chatCompletion
	if err := json.Unmarshal(resp.Body, &c); err != nil {
		return nil, nil, newFailure(BadResponse, resp.Status, resp.Body, shape(req), "the answer is not a chat completion: "+err.Error())
	}
	if len(c.Choices) == 0 {
		return nil, nil, newFailure(BadResponse, resp.Status, resp.Body, shape(req), "the answer has no choices")
	}
	sort.SliceStable(c.Choices, func(i, j int) bool { return c.Choices[i].Index < c.Choices[j].Index })
	if f := gaveUp(resp, req, c.Choices[0].FinishReason, c.content()); f != nil {
		return nil, nil, f
	}
	return resp, &c, nil
}

// chatAnswer asks prompt by a chat request with the fields in short and
// returns the answer's content, never a thinking model's reasoning. When
// the answer has reasoning and its content is not done, it is asked again
// with Config.ReasoningTokens as max_tokens and no stop (a stop string such
// as TriviaQA's "\n" would end the reasoning), and so is every later
// question (Runner.thinks). An answer still reasoning only, with no content,
// is no answer: the model gave none within the budget, and no score is
// better than one made of its reasoning. Its unanswered is then a
// BadResponse failure saying so, which the question that chooses the route
// returns as the eval's failure and any later question counts as no answer
// (wrong, and in metric no_answer); f is a failure of the request itself.
func (r *Runner) chatAnswer(ctx context.Context, i int, prompt string, short map[string]any, done func(content string) bool) (content string, unanswered, f *schema.EvalFailure) {
	room := r.thinks.Load()
	for {
		extra := short
		if room {
			extra = maps.Clone(short)
			extra["max_tokens"] = r.cfg.ReasoningTokens
			delete(extra, "stop")
		}
		req := chatRequest(r.model, prompt, extra)
		resp, c, f := r.sender(i).chat(ctx, req)
		if f != nil {
			return "", nil, f
		}
		content := c.content()
		if done(content) || c.reasoning() == "" {
			return content, nil, nil
		}
		r.thinks.Store(true)
		if !room {
			room = true
			continue
		}
		if strings.TrimSpace(content) != "" {
			return content, nil, nil
		}
		return "", newFailure(BadResponse, resp.Status, resp.Body, shape(req), fmt.Sprintf(
			"the greedy chat answer is reasoning only (%d bytes, finish_reason %q), no content within max_tokens %d: a thinking model that gives no answer has no score",
			len(c.reasoning()), c.finish(), r.cfg.ReasoningTokens)), nil
	}
}

// chatNLL sends a chat generation with logprobs and returns the nll of
// each generated token, checked as generatedNLL checks the completions
// route's: present (LogprobsMissing), one per usage.completion_tokens
// (EchoMisaligned), finite and ≤ 0 (EchoImplausible; llama.cpp writes a
// probability of zero as float's lowest, −3.4e38, which this catches).
// With emptyOK (a generation without ignore_eos), an answer that stopped at
// once (finish_reason stop, no content, no logprobs, no completion token)
// is an empty generation with nothing to score, not missing logprobs.
func chatNLL(ctx context.Context, s sender, req map[string]any, emptyOK bool) ([]float64, *schema.EvalFailure) {
	resp, c, f := s.chat(ctx, req)
	if f != nil {
		return nil, f
	}
	var lps []*float64
	if lp := c.Choices[0].Logprobs; lp != nil {
		lps = make([]*float64, len(lp.Content))
		for k, e := range lp.Content {
			lps[k] = e.Logprob
		}
	}
	m := c.Choices[0].Message
	stopped := (m.Content == nil || *m.Content == "") && c.reasoning() == "" && c.finish() == "stop"
	return tokenNLL(resp, req, "chat generated tokens", "choices[0].logprobs.content", lps, c.Usage, emptyOK && stopped)
}

// routeLacks reports whether f says a route cannot give what an eval needs,
// so that the next route is worth a try: a 200 without logprobs, or an
// error status about the request itself (a 404 for a route a chat-only
// provider does not serve, a 400 or 500 refusing a field). A status about
// the moment or the credentials (429, 408, 401, 403, 503), no answer at
// all, an interruption, logprobs that are there but wrong, or a refusal of
// a field --extra-body adds (refusesExtra: every route carries it) are
// not: the chat route would meet the same fault, and the failure is the
// answer.
func routeLacks(f *schema.EvalFailure) bool {
	if refusesExtra(f) {
		return false
	}
	switch KindOf(f) {
	case LogprobsMissing, EchoRejected, EchoServerError, CompletionsMissing:
		return true
	case HTTPError:
		st := f.HTTPStatus
		// A busy server (503, 529: queue_full) lacks no route.
		return st >= 400 && !endpoints.NotThisRequest(st) && endpoints.ClassifyStatus(st) != schema.QueueFull
	}
	return false
}

// withFallback is the failure of an eval that found a route lacking
// (first) and then failed on the route it fell back to (then). When first
// says the endpoint cannot give what the eval needs (an echo kind) and the
// fallback route is lacking too (routeLacks: no logprobs, a 404 where the
// server has no chat route, a refused field), first is kept, the root of
// it, with then in its detail: unsupported. Otherwise then is what stopped
// the eval and is kept, with first in its detail: a 404 from
// /v1/completions and then a chat answer without logprobs is
// logprobs_missing; a chat route answering 429 is that failure (failed).
func withFallback(first, then *schema.EvalFailure, route string) *schema.EvalFailure {
	if KindOf(first).Unsupported() && routeLacks(then) {
		f := *first
		f.Detail = joinDetail(f.Detail, fmt.Sprintf("the %s fallback failed too: %s: %s", route, then.Kind, then.Detail))
		return &f
	}
	f := *then
	f.Detail = joinDetail(f.Detail, fmt.Sprintf("on the %s fallback, taken because of %s: %s", route, first.Kind, first.Detail))
	return &f
}

// asker asks an eval's i-th item (i picks its connection) by its prompt:
// the answer, or unanswered where the route gave the item no usable answer
// (a chat answer that is reasoning only, a first token that is reasoning),
// or f where the request itself failed.
type asker[T any] func(ctx context.Context, i int, prompt string) (ans T, unanswered, f *schema.EvalFailure)

// route is one way to ask an eval's items: the method its result names, how
// it asks, and what its fallback is called in a failure's detail ("": the
// method).
type route[T any] struct {
	method string
	ask    asker[T]
	name   string
}

// chooseRoute asks the first item (prompt) by each of routes in turn and
// returns the first route on which it is answered, with the answer: the
// item that chooses the route must be answered. A route that lacks what the
// eval needs (routeLacks) is left for the next; its failure becomes lacked,
// or is said in lacked's detail where there is one already (lacked: the
// failure that put the eval on these routes, a copy chooseRoute may add to,
// or nil). Any other failure, or the last route's, is returned with its
// route, joined to lacked by withFallback.
func chooseRoute[T any](ctx context.Context, prompt string, lacked *schema.EvalFailure, routes ...route[T]) (route[T], T, *schema.EvalFailure) {
	for k, rt := range routes {
		ans, unanswered, f := rt.ask(ctx, 0, prompt)
		if f == nil {
			f = unanswered
		}
		switch {
		case f == nil:
			return rt, ans, nil
		case !routeLacks(f) || k == len(routes)-1:
			if lacked != nil {
				f = withFallback(lacked, f, rt.label())
			}
			return rt, ans, f
		case lacked == nil:
			lacked = f
		default:
			lacked.Detail = joinDetail(lacked.Detail, fmt.Sprintf("%s: %s: %s", rt.method, f.Kind, f.Detail))
		}
	}
	panic("unreachable: the last route always returns")
}

// label is what rt is called in a failure's detail: its name, else its
// method.
func (rt route[T]) label() string {
	if rt.name != "" {
		return rt.name
	}
	return rt.method
}

// askEach asks an eval's n items, item i by prompt(i): the first chooses
// the route (chooseRoute, with lacked as there), and the rest are asked by
// that route, at most Concurrency at once. Each answer goes to got, with
// the chosen route's method (the first's before the rest are asked, the
// rest concurrently); got may ask again and fail. A failure after the
// route is chosen, unless an interruption, is joined to lacked as one
// while choosing it is (withFallback). It returns the route and the
// failure that stopped the eval, nil when none did.
func askEach[T any](ctx context.Context, r *Runner, n int, prompt func(i int) string, lacked *schema.EvalFailure,
	got func(ctx context.Context, method string, i int, ans T, unanswered *schema.EvalFailure) *schema.EvalFailure,
	routes ...route[T]) (route[T], *schema.EvalFailure) {
	rt, ans, f := chooseRoute(ctx, prompt(0), lacked, routes...)
	r.cfg.Progress.add(1)
	if f != nil {
		return rt, f
	}
	if f = got(ctx, rt.method, 0, ans, nil); f == nil {
		f = r.forEach(ctx, n-1, func(ctx context.Context, i int) *schema.EvalFailure {
			ans, unanswered, f := rt.ask(ctx, i+1, prompt(i+1))
			if f != nil {
				return f
			}
			return got(ctx, rt.method, i+1, ans, unanswered)
		})
	}
	if f != nil && lacked != nil && KindOf(f) != Interrupted {
		f = withFallback(lacked, f, rt.label())
	}
	return rt, f
}

func joinDetail(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
