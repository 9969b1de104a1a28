package conform

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// The model list, and the checks of how requests are refused.

// modelList is GET /models. Context lengths are not in OpenAI's shape:
// max_model_len is vLLM's and SGLang's name, context_length OpenRouter's.
type modelList struct {
	Object *string `json:"object"`
	Data   *[]struct {
		ID            string `json:"id"`
		MaxModelLen   int    `json:"max_model_len"`
		ContextLength int    `json:"context_length"`
	} `json:"data"`
}

func (s *suite) models(ctx context.Context) (*modelList, string) {
	a := s.get(ctx, "/models")
	if !a.ok() {
		return nil, a.describe()
	}
	var l modelList
	if err := a.decode(&l); err != nil {
		return nil, err.Error()
	}
	return &l, ""
}

func checkModels(ctx context.Context, s *suite) outcome {
	l, p := s.models(ctx)
	switch {
	case p != "":
		return fail("%s", p)
	case l.Object == nil || *l.Object != "list":
		return fail(`object is not "list"`)
	case l.Data == nil || len(*l.Data) == 0:
		return fail("data lists no model")
	}
	var ids []string
	for i, m := range *l.Data {
		if m.ID == "" {
			return fail("data[%d] has no id", i)
		}
		ids = append(ids, m.ID)
	}
	for _, id := range ids {
		if id == s.cfg.Endpoint.Model {
			return pass("%d model(s) listed, %s among them", len(ids), s.cfg.Endpoint.Model)
		}
	}
	return fail("%s is not among the %d listed: %s", s.cfg.Endpoint.Model, len(ids), s.redact().clip(strings.Join(ids, ", "), 120))
}

// contextLength is the model's context length and where it was read:
// /models' max_model_len or context_length, else where the server states
// it beside the API (endpoints.Client.ContextLength: SGLang's
// /server_info, llama.cpp's /props, TGI's /info, LM Studio's
// /api/v1/models), else the longest prompt it states
// (endpoints.Client.PromptLimit: Ollama's /api/ps); 0 when none does.
func (s *suite) contextLength(ctx context.Context) (int, string) {
	if l, p := s.models(ctx); p == "" && l.Data != nil {
		for _, m := range *l.Data {
			if m.ID != s.cfg.Endpoint.Model {
				continue
			}
			switch {
			case m.MaxModelLen > 0 && m.MaxModelLen >= m.ContextLength:
				return m.MaxModelLen, "max_model_len in GET /models"
			case m.ContextLength > 0:
				return m.ContextLength, "context_length in GET /models"
			}
		}
	}
	n, source, _ := s.client.ContextLength(ctx)
	if n == 0 && ctx.Err() == nil {
		// A bound on the prompt alone (Ollama's num_ctx) still makes an
		// overlong prompt: one past it must be refused, not cut.
		n, source = s.client.PromptLimit(ctx)
	}
	return n, source
}

func checkBadRequest(ctx context.Context, s *suite) outcome {
	for _, c := range s.badRequests() {
		a := s.postRaw(ctx, "/chat/completions", c.body)
		if a.err != nil || a.Status != http.StatusBadRequest {
			return fail("%s: %s, want HTTP 400", c.what, a.describe())
		}
		if _, p := openAIError(a.r, a.Body); p != "" {
			return fail("%s: HTTP 400, but %s", c.what, p)
		}
	}
	return pass("HTTP 400 with OpenAI error JSON for malformed JSON and for messages of the wrong type")
}

// badRequests are the requests bad-request and error-type send: a cut-off
// JSON body, and messages of the wrong type.
func (s *suite) badRequests() []struct {
	what string
	body []byte
} {
	cut := fmt.Sprintf(`{"model": %q, "messages": [{"role": "user", "content": "hel`, s.cfg.Endpoint.Model)
	wrongType, _ := json.Marshal(map[string]any{"model": s.cfg.Endpoint.Model, "messages": "hello", "max_tokens": 4})
	return []struct {
		what string
		body []byte
	}{{"malformed JSON", []byte(cut)}, {"messages of the wrong type", wrongType}}
}

// checkErrorType asks more of a bad request's error than bad-request
// does: OpenAI's error object, {"error": {"message", "type", "param",
// "code"}}, names its kind in a non-empty string "type"
// ("invalid_request_error"; vLLM's "BadRequestError"; llama.cpp's
// "invalid_request_error"), the field OpenAI's clients class an error by
// beside its status. An absent param or code (llama.cpp writes neither
// param) is said, not failed.
func checkErrorType(ctx context.Context, s *suite) outcome {
	var types, absent []string
	for _, c := range s.badRequests() {
		a := s.postRaw(ctx, "/chat/completions", c.body)
		if a.err != nil || a.Status != http.StatusBadRequest {
			return fail("%s: %s, want HTTP 400", c.what, a.describe())
		}
		var v struct {
			Error map[string]json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(a.Body, &v); err != nil || v.Error == nil {
			return fail(`%s: the error body has no "error" object: %s`, c.what, a.r.clip(string(a.Body), 80))
		}
		var typ string
		raw, ok := v.Error["type"]
		switch {
		case !ok:
			return fail(`%s: the "error" object has no "type": %s`, c.what, a.r.clip(string(a.Body), 80))
		case json.Unmarshal(raw, &typ) != nil || strings.TrimSpace(typ) == "":
			return fail(`%s: the "error" object's "type" is %s, not a non-empty string`, c.what, a.r.clip(string(raw), 40))
		}
		types = append(types, fmt.Sprintf("%s %q", c.what, a.r.clip(typ, 40)))
		for _, k := range []string{"param", "code"} {
			if _, ok := v.Error[k]; !ok && !slices.Contains(absent, k) {
				absent = append(absent, k)
			}
		}
	}
	if len(absent) > 0 {
		return pass("error types: %s; without %s, which OpenAI's error object also has", strings.Join(types, ", "), strings.Join(absent, " and "))
	}
	return pass("error types: %s", strings.Join(types, ", "))
}

// overflowTokens is the max_tokens no model's context holds.
const overflowTokens = 10_000_000

func checkContextOverflow(ctx context.Context, s *suite) outcome {
	type probe struct {
		what string
		body map[string]any
	}
	probes := []probe{{fmt.Sprintf("max_tokens %d", overflowTokens), s.chatBody(storyPrompt, overflowTokens, nil)}}
	n, source := s.contextLength(ctx)
	if n > 0 {
		// " x" is at least one token in every tokenizer, so this prompt
		// is longer than the context whatever the vocabulary.
		words := n + 64
		probes = append(probes, probe{fmt.Sprintf("a prompt of %d words (context %d, %s)", words, n, source),
			s.chatBody(strings.Repeat(" x", words), 1, nil)})
	}
	// Every probe is sent, so that a failure says how each was answered
	// (llama.cpp accepts max_tokens past the context but may refuse the
	// overlong prompt).
	var msg string
	var faults []string
	for _, p := range probes {
		a := s.post(ctx, "/chat/completions", p.body)
		if a.ok() {
			faults = append(faults, p.what+": answered 200: the request was accepted past the context")
			continue
		}
		m, problem := refusal(a)
		if problem != "" {
			faults = append(faults, p.what+": "+problem)
			continue
		}
		msg = m
	}
	if len(faults) > 0 {
		return fail("%s", strings.Join(faults, "; "))
	}
	if n == 0 {
		return pass("a 4xx for max_tokens %d: %s (no route states the context length, so no overlong prompt was sent)", overflowTokens, msg)
	}
	return pass("a 4xx for max_tokens %d and for a prompt past the context of %d (%s): %s", overflowTokens, n, source, msg)
}

func checkUnknownModel(ctx context.Context, s *suite) outcome {
	name := "glmbench-no-such-model-" + s.nonce
	body := s.chatBody(storyPrompt, 4, nil)
	body["model"] = name
	a := s.post(ctx, "/chat/completions", body)
	if a.ok() {
		return fail("answered 200 for model %s: the model field is ignored", name)
	}
	msg, p := refusal(a)
	switch {
	case p != "":
		return fail("%s", p)
	case a.Status != http.StatusNotFound && a.Status != http.StatusBadRequest:
		return fail("HTTP %d, want 404 (or 400): %s", a.Status, msg)
	}
	return pass("HTTP %d: %s", a.Status, msg)
}
