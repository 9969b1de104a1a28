// Package compare sends the same prompts to an endpoint and to a reference
// at temperature 0 and collects, pair by pair, what eval compare's measures
// (evals/equiv) need: each side's greedy continuation with its logprobs and
// top_logprobs, and each side's prompt logprobs of the same text by echo.
package compare

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/evals"
	"github.com/glmbench/glmbench/evals/equiv"
	"github.com/glmbench/glmbench/reports/schema"
)

// Item is one prompt of a comparison: a chat prompt continued greedily on
// both sides, and a text whose prompt logprobs both sides give by echo
// ("" for none).
type Item struct {
	ID     string
	Prompt string
	Text   string
}

// SampleItems are the embedded samples as comparison items: every
// TriviaQA-style question (continued as the triviaqa eval asks it), then
// every paragraph of the wiki-style documents (continued from its first
// half, and echoed whole).
func SampleItems() []Item {
	var items []Item
	for i, q := range evals.SampleTriviaQA().Items {
		items = append(items, Item{ID: "triviaqa/" + strconv.Itoa(i), Prompt: "Question: " + q.Question + "?\nAnswer:"})
	}
	return append(items, docItems("wiki", evals.SampleDocs())...)
}

// DocItems are a data set's documents as comparison items, paragraph by
// paragraph (at most limit of them; 0: all).
func DocItems(path string, limit int) ([]Item, error) {
	docs, err := evals.LoadDocs(path)
	if err != nil {
		return nil, err
	}
	items := docItems("doc", docs)
	if limit > 0 && len(items) > limit {
		items = items[:limit]
	}
	return items, nil
}

// minParagraph is the shortest paragraph worth an item, in bytes.
const minParagraph = 80

func docItems(prefix string, docs *evals.Docs) []Item {
	var items []Item
	for d, doc := range docs.Docs {
		for p, para := range strings.Split(doc.Text, "\n\n") {
			para = strings.TrimSpace(para)
			if len(para) < minParagraph {
				continue
			}
			half := strings.LastIndexByte(para[:len(para)/2], ' ')
			if half <= 0 {
				// No space (Chinese, Japanese): the middle, at a character's
				// start, not inside its UTF-8 bytes.
				half = len(para) / 2
				for half > 0 && !utf8.RuneStart(para[half]) {
					half--
				}
			}
			items = append(items, Item{ID: fmt.Sprintf("%s/%d/%d", prefix, d, p), Prompt: para[:half], Text: para})
		}
	}
	return items
}

// Side is one endpoint of a comparison.
type Side struct {
	Client *endpoints.Client
	Model  string
}

// Options shape the requests.
type Options struct {
	// Tokens is the greedy continuation's length (max_tokens), TopLogprobs
	// the top_logprobs asked per position.
	Tokens, TopLogprobs int
	// Concurrency bounds items in flight (both sides of an item go at once).
	Concurrency int
	// RequestTimeout bounds each request (0: none but ctx's).
	RequestTimeout time.Duration
	// Extra is --extra-body: fields every request carries, to both sides
	// alike (the comparison holds only between answers to the same
	// request), from endpoints.ParseExtraBody with ExtraOwned (and
	// CheckExtra); nil for none. Its chat_template_kwargs are merged into
	// the continuation's own.
	Extra json.RawMessage
	// kwargs is Extra's chat_template_kwargs, which Run takes out of Extra
	// (splitKwargs).
	kwargs map[string]json.RawMessage
}

// RequestFields are the body fields the comparison writes itself, each
// with what sets it instead; --extra-body may not set them, but for
// chat_template_kwargs, whose object it may add kwargs to (ExtraOwned,
// CheckExtra).
var RequestFields = map[string]string{
	"model":                 "each side's model is its own --model",
	"messages":              "the comparison makes the prompts",
	"prompt":                "the comparison makes the prompts",
	"max_tokens":            "--tokens is each continuation's length",
	"max_completion_tokens": "--tokens is each continuation's length, sent as max_tokens",
	"n_predict":             "llama.cpp reads it before max_tokens, so it would replace --tokens as each continuation's length",
	"temperature":           "both sides continue greedily at temperature 0",
	"stream":                "the comparison reads whole answers, never streamed",
	"stream_options":        "the comparison reads whole answers, never streamed",
	"n":                     "each side gives one continuation per prompt",
	"logprobs":              "--top-logprobs asks for the logprobs compared",
	"top_logprobs":          "--top-logprobs asks for the logprobs compared",
	"echo":                  "the prompt logprobs are asked by echo where a side gives them",
	"chat_template_kwargs":  `the comparison sends {"enable_thinking": false}, and none where a side refuses it; other template kwargs are merged into it`,
}

// Run asks both sides for every item and returns the pairs, in the items'
// order. A side's failure on an item is the pair's Failure; its missing
// logprobs or echo leave those parts empty, for the measures to skip.
func Run(ctx context.Context, a, b Side, items []Item, o Options) []equiv.Pair {
	o.Extra, o.kwargs = splitKwargs(o.Extra)
	pairs := make([]equiv.Pair, len(items))
	sem := make(chan struct{}, max(o.Concurrency, 1))
	var wg sync.WaitGroup
	for i, it := range items {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			p := equiv.Pair{ID: it.ID}
			var fa, fb, ta, tb string
			var inner sync.WaitGroup
			inner.Add(2)
			go func() { defer inner.Done(); p.A, ta, p.PA, fa = ask(ctx, a, it, o) }()
			go func() { defer inner.Done(); p.B, tb, p.PB, fb = ask(ctx, b, it, o) }()
			inner.Wait()
			if (p.A.Logprobs == nil) != (p.B.Logprobs == nil) || idTokens(p.A) != idTokens(p.B) {
				// One side gave no logprobs, so its tokens are its text's
				// characters (or gave its tokens as ids, vLLM's
				// --return-tokens-as-token-ids): the other side's are made
				// so too, or every pair would diverge at its first token.
				p.A, p.B = asText(p.A, ta), asText(p.B, tb)
			}
			switch {
			case fa != "":
				p.Failure = "endpoint: " + fa
			case fb != "":
				p.Failure = "reference: " + fb
			}
			pairs[i] = p
		}()
	}
	wg.Wait()
	return pairs
}

// ask gets one side's continuation of the item (and the text generated)
// and, when it has a text, its prompt logprobs; failure says why the
// continuation failed.
func ask(ctx context.Context, s Side, it Item, o Options) (c equiv.Continuation, text string, pl *equiv.PromptLogprobs, failure string) {
	c, text, failure = continuation(ctx, s, it.Prompt, o)
	if failure != "" || it.Text == "" {
		return c, text, nil, failure
	}
	return c, text, echo(ctx, s, it.Text, o), ""
}

// idTokens says whether c's tokens are token ids ("token_id:N", vLLM's
// --return-tokens-as-token-ids), not text.
func idTokens(c equiv.Continuation) bool {
	return len(c.Tokens) > 0 && c.Logprobs != nil && strings.HasPrefix(c.Tokens[0], "token_id:")
}

// asText is c as the characters of text, the whole text generated, without
// logprobs (c itself when it has none already).
func asText(c equiv.Continuation, text string) equiv.Continuation {
	if c.Logprobs == nil && !idTokens(c) {
		return c
	}
	var out equiv.Continuation
	for _, r := range text {
		out.Tokens = append(out.Tokens, string(r))
	}
	return out
}

// Retries429 is how many times a request answered 429 (rate limited) is
// sent again, after the answer's Retry-After (endpoints.RetryAfter; at most
// maxRetryAfter; 1 s without one); the last 429 is the request's failure.
const (
	Retries429    = 3
	maxRetryAfter = 30 * time.Second
)

// post sends one request, with o.Extra's fields, each try bounded by
// o.RequestTimeout, again after a 429 (Retries429).
func post(ctx context.Context, s Side, path string, body []byte, o Options) (*endpoints.Response, error) {
	body = endpoints.WithExtra(body, o.Extra)
	for try := 0; ; try++ {
		resp, err := post1(ctx, s, path, body, o)
		if err != nil || resp.Status != http.StatusTooManyRequests || try == Retries429 ||
			endpoints.RefusalClass(resp.Status, resp.Body) == schema.HTTP4xx {
			// A 429 that is no rate limit (a Z.ai account or quota code)
			// is not asked again.
			return resp, err
		}
		wait := time.Second
		if d, ok := endpoints.RetryAfter(resp.RetryAfter, time.Now()); ok {
			wait = min(d, maxRetryAfter)
		}
		select {
		case <-ctx.Done():
			return resp, nil
		case <-time.After(wait):
		}
	}
}

func post1(ctx context.Context, s Side, path string, body []byte, o Options) (*endpoints.Response, error) {
	if o.RequestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.RequestTimeout)
		defer cancel()
	}
	return s.Client.Post(ctx, path, body)
}

// thinkingField is the body field of a thinking switch beside the chat
// template's: "thinking": {"type": "enabled" | "disabled"} (Z.ai,
// docs.z.ai/guides/capabilities/thinking-mode).
const thinkingField = "thinking"

// reasoningOf is a choice's reasoning: reasoning_content, or reasoning
// where it has none (the same under another name where both are).
func reasoningOf(ch chatChoice) string {
	if r := deref(ch.Message.ReasoningContent); r != "" {
		return r
	}
	return deref(ch.Message.Reasoning)
}

// chatAnswer is the part of a chat completion the comparison reads.
type chatAnswer struct {
	Choices []chatChoice `json:"choices"`
}

// chatChoice is one choice of a chat completion.
type chatChoice struct {
	Message struct {
		Content *string `json:"content"`
		// A reasoning parser's share of what was generated (vLLM and
		// SGLang: reasoning_content; some: reasoning).
		ReasoningContent *string `json:"reasoning_content"`
		Reasoning        *string `json:"reasoning"`
		// OpenAI's refusal, in place of content.
		Refusal *string `json:"refusal"`
	} `json:"message"`
	Logprobs *struct {
		Content []evals.ChatTokenLogprob `json:"content"`
	} `json:"logprobs"`
}

// continuation asks for prompt's greedy continuation of o.Tokens tokens
// with logprobs, and returns it with the text generated (reasoning, then
// content). Without logprobs in the answer, its tokens are that text's
// characters (the measures then compare text, not tokens). A 400 is asked
// again without chat_template_kwargs (but the extra body's), then without
// logprobs.
func continuation(ctx context.Context, s Side, prompt string, o Options) (equiv.Continuation, string, string) {
	req := map[string]any{
		"model": s.Model, "messages": []map[string]string{{"role": "user", "content": prompt}},
		"max_tokens": o.Tokens, "temperature": 0, "stream": false,
		"logprobs": true, "top_logprobs": o.TopLogprobs,
		// A thinking model would spend the tokens on its reasoning.
		"chat_template_kwargs": ownKwargs(o.kwargs),
	}
	body, _ := json.Marshal(req)
	resp, err := post(ctx, s, "/chat/completions", body, o)
	// A 400 is asked again without chat_template_kwargs (OpenAI refuses
	// an argument it does not know), then also without logprobs (a model
	// that refuses them).
	for _, drop := range [][]string{{"chat_template_kwargs"}, {"logprobs", "top_logprobs"}} {
		if err != nil || resp.Status != http.StatusBadRequest || len(refusedExtra(resp, o)) > 0 {
			break // a refused extra field is in every request
		}
		for _, k := range drop {
			delete(req, k)
			if k == templateKwargs && len(o.kwargs) > 0 {
				req[k] = o.kwargs // the extra body's, as every request carries them
			}
		}
		body, _ = json.Marshal(req)
		resp, err = post(ctx, s, "/chat/completions", body, o)
	}
	if err != nil {
		return equiv.Continuation{}, "", err.Error()
	}
	if resp.Status != 200 {
		failure := fmt.Sprintf("HTTP %d", resp.Status)
		if names := refusedExtra(resp, o); len(names) > 0 {
			failure += ": it refuses a field --extra-body adds (" + strings.Join(names, ", ") + ")"
		}
		return equiv.Continuation{}, "", failure
	}
	var ans chatAnswer
	if err := json.Unmarshal(resp.Body, &ans); err != nil || len(ans.Choices) == 0 {
		return equiv.Continuation{}, "", "not a chat completion"
	}
	ch := ans.Choices[0]
	if reasoningOf(ch) != "" && !slices.Contains(endpoints.ExtraFields(o.Extra), thinkingField) {
		// A reasoning model that thought with enable_thinking false (Z.ai
		// reads no chat_template_kwargs): asked again with thinking
		// {"type": "disabled"}, Z.ai's switch, its
		// answer kept where it gives one. The extra body's thinking, when
		// it sets one, is the user's choice and stands.
		req[thinkingField] = map[string]string{"type": "disabled"}
		body, _ = json.Marshal(req)
		var again chatAnswer
		if r, err := post(ctx, s, "/chat/completions", body, o); err == nil && r.Status == 200 && json.Unmarshal(r.Body, &again) == nil && len(again.Choices) > 0 {
			ch = again.Choices[0]
		}
	}
	text := reasoningOf(ch) + deref(ch.Message.Content) + deref(ch.Message.Refusal)
	var c equiv.Continuation
	if ch.Logprobs == nil || len(ch.Logprobs.Content) == 0 {
		for _, r := range text {
			c.Tokens = append(c.Tokens, string(r))
		}
		return c, text, ""
	}
	for _, e := range ch.Logprobs.Content {
		c.Tokens = append(c.Tokens, e.Token)
		lp := math.NaN()
		if e.Logprob != nil {
			lp = *e.Logprob
		}
		c.Logprobs = append(c.Logprobs, lp)
		c.Top = append(c.Top, e.Top())
	}
	return c, text, ""
}

// ownKwargs is the continuation's chat_template_kwargs: enable_thinking
// false, with the extra body's kwargs merged in.
func ownKwargs(extra map[string]json.RawMessage) map[string]any {
	kw := map[string]any{"enable_thinking": false}
	for k, v := range extra {
		kw[k] = v
	}
	return kw
}

// echo gets text's prompt logprobs by echo on /completions, nil when the
// side gives none (many hosted APIs do not).
func echo(ctx context.Context, s Side, text string, o Options) *equiv.PromptLogprobs {
	req := evals.EchoRequest(s.Model, text)
	if len(o.kwargs) > 0 {
		req[templateKwargs] = o.kwargs
	}
	body, _ := json.Marshal(req)
	resp, err := post(ctx, s, "/completions", body, o)
	if err != nil || resp.Status != 200 {
		return nil
	}
	e, f := evals.CheckEcho(resp, req)
	if f != nil {
		return nil
	}
	return &equiv.PromptLogprobs{Tokens: e.Tokens, Logprobs: e.Logprobs}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
