package compare

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/evals"
	"github.com/glmbench/glmbench/evals/equiv"
)

const key = "sk-compare-secret-9c1d"

// fake is a chat endpoint answering every chat completion with answer(req)
// (status, body; a 429 with Retry-After: 0); /completions is 404, as on
// hosted APIs.
func fake(t *testing.T, answer func(req map[string]any) (int, string)) Side {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			http.NotFound(w, r)
			return
		}
		var req map[string]any
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &req)
		code, body := answer(req)
		w.Header().Set("Content-Type", "application/json")
		if code == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "0")
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: srv.URL + "/v1", Model: "m"}, func(string) string { return key })
	if err != nil {
		t.Fatal(err)
	}
	return Side{Client: endpoints.NewClient(ep, endpoints.NewTransport(endpoints.TransportOptions{Conns: 2, ConnectTimeout: time.Second})), Model: "m"}
}

// withLogprobs is a chat answer of tokens, each with logprob -0.1 and
// itself as its top-1.
func withLogprobs(tokens ...string) string {
	var content []map[string]any
	for _, tok := range tokens {
		content = append(content, map[string]any{"token": tok, "logprob": -0.1, "bytes": []byte(tok),
			"top_logprobs": []map[string]any{{"token": tok, "logprob": -0.1}}})
	}
	b, _ := json.Marshal(map[string]any{"choices": []map[string]any{{
		"message": map[string]any{"role": "assistant", "content": strings.Join(tokens, "")}, "logprobs": map[string]any{"content": content}}}})
	return string(b)
}

// message is a chat answer without logprobs (logprobs: null).
func message(msg map[string]any) string {
	b, _ := json.Marshal(map[string]any{"choices": []map[string]any{{"message": msg, "logprobs": nil}}})
	return string(b)
}

var opts = Options{Tokens: 8, TopLogprobs: 5, Concurrency: 2}

// The truth: a reference that refuses logprobs with a 400 (as OpenAI's
// reasoning models do) is asked again without them, and the two sides,
// one with tokens and one without, are compared on the same footing (the
// generated text's characters): the same text is an exact match, not a
// divergence at the first token.
func TestASideWithoutLogprobsIsComparedOnText(t *testing.T) {
	a := fake(t, func(map[string]any) (int, string) { return 200, withLogprobs("Par", "is", ".") })
	b := fake(t, func(req map[string]any) (int, string) {
		if _, ok := req["logprobs"]; ok {
			return 400, `{"error":{"message":"logprobs is not supported with this model"}}`
		}
		return 200, message(map[string]any{"role": "assistant", "content": "Paris."})
	})
	p := Run(context.Background(), a, b, []Item{{ID: "x", Prompt: "Capital of France?"}}, opts)[0]
	if p.Failure != "" {
		t.Fatalf("failure %q, want the reference asked again without logprobs", p.Failure)
	}
	eq := equiv.Compare([]equiv.Pair{p}, opts.Tokens)
	if *eq.ExactMatch != 1 {
		t.Fatalf("the same text compared as %q against %q: exact match %v, want 1", p.A.Tokens, p.B.Tokens, *eq.ExactMatch)
	}
}

// The truth: a reasoning model's answer in reasoning_content (content
// null) is what it generated: two different reasonings diverge, they are
// not two empty, "identical" continuations.
func TestReasoningContentIsCompared(t *testing.T) {
	a := fake(t, func(map[string]any) (int, string) {
		return 200, message(map[string]any{"role": "assistant", "content": nil, "reasoning_content": "Let me think"})
	})
	b := fake(t, func(map[string]any) (int, string) {
		return 200, message(map[string]any{"role": "assistant", "content": nil, "reasoning": "Hmm, France"})
	})
	p := Run(context.Background(), a, b, []Item{{ID: "x", Prompt: "Capital of France?"}}, opts)[0]
	if p.Failure != "" || strings.Join(p.A.Tokens, "") != "Let me think" || strings.Join(p.B.Tokens, "") != "Hmm, France" {
		t.Fatalf("failure %q, tokens %q and %q: want the reasonings", p.Failure, p.A.Tokens, p.B.Tokens)
	}
	if eq := equiv.Compare([]equiv.Pair{p}, opts.Tokens); *eq.ExactMatch != 0 {
		t.Fatalf("two different reasonings: exact match %v", *eq.ExactMatch)
	}
}

// The truth: a reference that never answers fails each request after the
// request timeout, not after the whole comparison's bound; and a server
// that echoes the key in its error body leaves no trace of it in the
// failure.
func TestAHungReferenceTimesOutPerRequestAndAnEchoedKeyStaysOut(t *testing.T) {
	a := fake(t, func(map[string]any) (int, string) { return 200, withLogprobs("a") })
	stop := make(chan struct{})
	hung := fake(t, func(map[string]any) (int, string) { <-stop; return 200, "" })
	t.Cleanup(func() { close(stop) }) // before the server's Close, which waits on the handler
	o := opts
	o.RequestTimeout = 300 * time.Millisecond
	done := make(chan []equiv.Pair, 1)
	go func() {
		done <- Run(context.Background(), a, hung, []Item{{ID: "x", Prompt: "p"}, {ID: "y", Prompt: "q"}}, o)
	}()
	select {
	case pairs := <-done:
		for _, p := range pairs {
			if !strings.HasPrefix(p.Failure, "reference: ") {
				t.Errorf("pair %s: failure %q, want the reference's timeout", p.ID, p.Failure)
			}
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no answer 20 s after a 300 ms request timeout")
	}
	echo := fake(t, func(map[string]any) (int, string) {
		return 401, `{"error":{"message":"invalid key Bearer ` + key + `"}}`
	})
	p := Run(context.Background(), a, echo, []Item{{ID: "x", Prompt: "p"}}, opts)[0]
	if p.Failure == "" || strings.Contains(p.Failure, key) {
		t.Fatalf("failure %q: want one, without the key", p.Failure)
	}
}

// The truth: a 429 is sent again after its Retry-After, so a rate-limited
// hosted reference still answers; one that stays at 429 fails the pair
// after Retries429 more tries, named by its status.
func TestA429IsRetriedAfterItsRetryAfter(t *testing.T) {
	a := fake(t, func(map[string]any) (int, string) { return 200, withLogprobs("a") })
	var tries atomic.Int32
	limited := fake(t, func(map[string]any) (int, string) {
		if tries.Add(1) <= 2 {
			return 429, `{"error":{"message":"rate limited"}}`
		}
		return 200, withLogprobs("a")
	})
	if p := Run(context.Background(), a, limited, []Item{{ID: "x", Prompt: "p"}}, opts)[0]; p.Failure != "" || tries.Load() != 3 {
		t.Fatalf("failure %q after %d tries, want an answer on the third", p.Failure, tries.Load())
	}
	tries.Store(-100)
	if p := Run(context.Background(), a, limited, []Item{{ID: "x", Prompt: "p"}}, opts)[0]; p.Failure != "reference: HTTP 429" || tries.Load() != -100+Retries429+1 {
		t.Fatalf("always 429: failure %q after %d tries, want HTTP 429 after %d", p.Failure, tries.Load()+100, Retries429+1)
	}
}

// The truth: a paragraph without spaces (Chinese) is cut at a character,
// so the prompt is valid UTF-8 (before, its middle byte could fall inside
// a character, and each side got U+FFFD in its prompt).
func TestAParagraphWithoutSpacesIsCutAtACharacter(t *testing.T) {
	para := "a" + strings.Repeat("北京是中国的首都", 8)
	items := docItems("doc", &evals.Docs{Docs: []evals.Doc{{Text: para}}})
	if len(items) != 1 || !utf8.ValidString(items[0].Prompt) || !strings.HasPrefix(para, items[0].Prompt) || items[0].Prompt == "" {
		t.Fatalf("items %q, want one whose prompt is a valid prefix", items)
	}
}

// The truth: a side that gives its tokens as ids (vLLM with
// --return-tokens-as-token-ids) against one that gives them as text is
// compared on the text generated; and an OpenAI refusal (content null,
// logprobs null) is the text it generated.
func TestTokenIDsAndRefusalsAreComparedOnText(t *testing.T) {
	a := fake(t, func(map[string]any) (int, string) {
		b := strings.Replace(strings.Replace(withLogprobs("Par", "is"), `"token":"Par"`, `"token":"token_id:3681"`, -1), `"token":"is"`, `"token":"token_id:285"`, -1)
		return 200, b
	})
	b := fake(t, func(map[string]any) (int, string) { return 200, withLogprobs("Par", "is") })
	p := Run(context.Background(), a, b, []Item{{ID: "x", Prompt: "p"}}, opts)[0]
	if eq := equiv.Compare([]equiv.Pair{p}, opts.Tokens); p.Failure != "" || *eq.ExactMatch != 1 {
		t.Fatalf("ids %q against text %q (failure %q): want the same text, an exact match", p.A.Tokens, p.B.Tokens, p.Failure)
	}
	r := fake(t, func(map[string]any) (int, string) {
		return 200, message(map[string]any{"role": "assistant", "content": nil, "refusal": "I can't help with that."})
	})
	if p := Run(context.Background(), r, b, []Item{{ID: "x", Prompt: "p"}}, opts)[0]; strings.Join(p.A.Tokens, "") != "I can't help with that." {
		t.Fatalf("a refusal compared as %q", p.A.Tokens)
	}
}

// The truth: OpenAI's 400 to an argument it does not know
// (chat_template_kwargs) is asked again without it, logprobs kept: the
// pair is compared on tokens and top logprobs, not failed, nor reduced to
// text.
func TestAnEndpointRefusingChatTemplateKwargsKeepsItsLogprobs(t *testing.T) {
	a := fake(t, func(map[string]any) (int, string) { return 200, withLogprobs("Par", "is") })
	openai := fake(t, func(req map[string]any) (int, string) {
		if _, ok := req["chat_template_kwargs"]; ok {
			return 400, `{"error":{"message":"Unrecognized request argument supplied: chat_template_kwargs","type":"invalid_request_error"}}`
		}
		return 200, withLogprobs("Par", "is")
	})
	p := Run(context.Background(), a, openai, []Item{{ID: "x", Prompt: "p"}}, opts)[0]
	eq := equiv.Compare([]equiv.Pair{p}, opts.Tokens)
	if p.Failure != "" || p.B.Logprobs == nil || eq.Top1Agreement == nil || *eq.ExactMatch != 1 {
		t.Fatalf("failure %q, logprobs %v, top-1 agreement %v: want the tokens and logprobs compared", p.Failure, p.B.Logprobs, eq.Top1Agreement)
	}
}

// A 400 naming a field of the extra body is the extra body's refusal:
// asking again without chat_template_kwargs or without logprobs cannot
// help, as every request carries the field, and "HTTP 400" alone did not
// say which field. The truth: a reference that refuses top_k (OpenAI's
// 400) is asked once per item, its pair failing "reference: HTTP 400: it
// refuses a field --extra-body adds (top_k)"; one that refuses
// chat_template_kwargs, given in the extra body, is asked once too, the
// field named; without an extra body, the same refusal of
// chat_template_kwargs is still asked again without it (the test above).
func TestAnExtraFieldARefusesIsNamedWithNoRetry(t *testing.T) {
	a := fake(t, func(map[string]any) (int, string) { return 200, withLogprobs("Par", "is") })
	for _, tc := range []struct{ field, extra string }{
		{"top_k", `{"top_k": 1}`},
		{"chat_template_kwargs", `{"chat_template_kwargs": {"thinking": false}}`},
	} {
		var asked atomic.Int32
		ref := fake(t, func(req map[string]any) (int, string) {
			asked.Add(1)
			if _, ok := req[tc.field]; ok {
				return 400, `{"error":{"message":"Unrecognized request argument supplied: ` + tc.field + `","type":"invalid_request_error"}}`
			}
			return 200, withLogprobs("Par", "is")
		})
		o := opts
		o.Extra = json.RawMessage(tc.extra)
		p := Run(context.Background(), a, ref, []Item{{ID: "x", Prompt: "p"}}, o)[0]
		want := "reference: HTTP 400: it refuses a field --extra-body adds (" + tc.field + ")"
		if p.Failure != want || asked.Load() != 1 {
			t.Errorf("%s: failure %q after %d requests, want %q after 1", tc.field, p.Failure, asked.Load(), want)
		}
	}
}
