package summary

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/glmbench/glmbench/endpoints/endpointstest/hosted"
	"github.com/glmbench/glmbench/internal/text"
	"github.com/glmbench/glmbench/reports/schema"
)

// Google's APIs answer the OpenAI-compatible route's errors as a JSON array
// of one error object (bytedance/deer-flow#1515, n4ze3m/page-assist#406,
// google-gemini/gemini-cli#6678); Anthropic's as {"type": "error", "error":
// {"type", "message"}} (its 529 overloaded_error). The message extracted
// is the server's own sentence, as for an OpenAI-shaped body.
func TestErrorMessageReadsHostedProvidersShapes(t *testing.T) {
	t.Parallel()
	const (
		anthropic429  = `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`
		geminiContext = `[{"error":{"code":400,"message":"The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}]`
	)
	for _, c := range []struct{ name, body, want string }{
		{"Gemini's unknown field, an array", hosted.GeminiUnknownIgnoreEOS, `Invalid JSON payload received. Unknown name "ignore_eos": Cannot find field.`},
		{"Gemini's quota, an array", hosted.GeminiQuota, "Resource has been exhausted (e.g. check quota)."},
		{"Gemini's context, an array", geminiContext, "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576)."},
		{"Anthropic's 529", hosted.AnthropicOverloaded, "Overloaded"},
		{"Anthropic's 429", anthropic429, "Number of request tokens has exceeded your per-minute rate limit"},
		{"Groq's unknown field", hosted.GroqUnknownIgnoreEOS, "property 'ignore_eos' is unsupported, did you mean 'stop'?"},
		{"an empty array", `[]`, `[]`},
		{"an array of text", `["x"]`, `["x"]`},
	} {
		if got := ErrorMessage([]byte(c.body)); got != c.want {
			t.Errorf("%s: ErrorMessage = %q, want %q", c.name, got, c.want)
		}
	}
}

// A record keeps the first 200 bytes of an error body, so a longer body
// (Gemini's with its fieldViolations, Anthropic's with a request_id) is
// no longer whole JSON: its error_kinds key still quotes the message the
// cut kept, to where the cut fell, not the raw JSON around it.
func TestErrorKindQuotesTheMessageOfACutBody(t *testing.T) {
	t.Parallel()
	long := `[{"error":{"code":400,"message":"Invalid JSON payload received. Unknown name \"ignore_eos\": Cannot find field.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"description":"Invalid JSON payload received."}]}]}}]`
	cut := long[:200]
	rec := &schema.Record{Class: schema.HTTP4xx, Status: 400, Body: cut}
	if got, want := ErrorKind(rec), `HTTP 400: Invalid JSON payload received. Unknown name "ignore_eos": Ca`; got != want {
		t.Errorf("ErrorKind = %q, want %q", got, want)
	}
	// A message the cut fell inside: what it kept, its escapes decoded.
	inside := `{"type":"error","error":{"type":"overloaded_error","message":"Over \"loaded`
	if got, want := ErrorMessage([]byte(inside)), `Over "loaded`; got != want {
		t.Errorf("ErrorMessage(%s) = %q, want %q", inside, got, want)
	}
	// trtllm-serve's pydantic refusal is one "error" string, the errors'
	// repr, which quotes the whole request: cut, it is that string to the
	// cut, not the raw JSON.
	trt := `{"error": "[{'type': 'value_error', 'loc': ('body',), 'msg': 'Value error, stream_options can only be set if stream is true', 'input': {'model': 'm', 'messages': [{'role': 'user', 'content': 'hello there, how are you today`
	trt = trt[:200] // a record's cut
	if got, want := ErrorMessage([]byte(trt)), trt[11:]; got != want {
		t.Errorf("ErrorMessage(trtllm's cut refusal) = %q, want %q", got, want)
	}
	// Not JSON at all, or JSON with no message: the text, as before (an
	// HTML page is worded by HTMLPage: html_test.go).
	for _, s := range []string{`429 Too Many Requests`, `{"code": 503, "status": "UNAVAIL`} {
		if got := ErrorMessage([]byte(s)); got != s {
			t.Errorf("ErrorMessage(%s) = %q, want the text", s, got)
		}
	}
}

// Whatever the body, the message is valid UTF-8 on one line; and an
// OpenAI-shaped error body gives its message whole, and any prefix of it
// (a record keeps the first 200 bytes) either its text or a prefix of that
// message.
func FuzzErrorMessageIsOneLineOfText(f *testing.F) {
	f.Add("Resource has been exhausted (e.g. check quota).", 40)
	f.Add("Over\u00e9 \"loaded\"\n\\", 30)
	f.Add("a\\", 3)
	f.Fuzz(func(t *testing.T, message string, cut int) {
		quoted, _ := json.Marshal(message)
		var sent string // as the server's JSON carries it (invalid UTF-8 replaced)
		json.Unmarshal(quoted, &sent)
		body := []byte(`{"type":"error","error":{"type":"x","message":` + string(quoted) + `}}`)
		if got, want := ErrorMessage(body), text.OneLine(sent); want != "" && got != want {
			t.Fatalf("ErrorMessage(%s) = %q, want %q", body, got, want)
		}
		kept := body[:min(max(cut, 0), len(body))]
		for _, b := range [][]byte{body, kept, []byte(message)} {
			msg := ErrorMessage(b)
			if !utf8.ValidString(msg) || strings.ContainsAny(msg, "\n\r\t") || msg != strings.TrimSpace(msg) {
				t.Fatalf("ErrorMessage(%q) = %q: not one trimmed line of valid UTF-8", b, msg)
			}
		}
		if msg := ErrorMessage(kept); msg != text.OneLine(strings.ToValidUTF8(string(kept), "?")) && !strings.HasPrefix(text.OneLine(sent), msg) {
			t.Fatalf("ErrorMessage(%q) = %q: neither the text nor a prefix of %q", kept, msg, sent)
		}
	})
}
