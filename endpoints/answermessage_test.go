package endpoints_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"

	"github.com/glmbench/glmbench/endpoints"
)

// modelsAnswering serves GET /v1/models with status and body.
func modelsAnswering(t *testing.T, status int, body string) *endpoints.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: srv.URL + "/v1", Model: "m"}, env(map[string]string{"OPENAI_API_KEY": "sk-reviewsecret-0123456789"}))
	if err != nil {
		t.Fatal(err)
	}
	return endpoints.NewClient(ep, http.DefaultTransport)
}

// AnswerMessage's text goes to the terminal (target's "the endpoint says"):
// a control character the server put in its message (an ESC that starts a
// terminal escape sequence, JSON-escaped as \u001b) must not reach it, in
// either of the shapes go-openai hands back.
func TestAnswerMessageShowsNoControlCharacter(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"OpenAI-shaped": `{"error":{"message":"bad \u001b[2J\u001b]0;pwned\u0007 model","type":"invalid_request_error"}}`,
		"Google array":  `[{"error":{"code":400,"message":"bad \u001b[2J\u001b]0;pwned\u0007 model","status":"INVALID_ARGUMENT"}}]`,
	} {
		_, err := modelsAnswering(t, http.StatusBadRequest, body).ListModels(context.Background())
		msg := endpoints.AnswerMessage(err)
		if !strings.Contains(msg, "bad") || !strings.Contains(msg, "model") {
			t.Errorf("%s: AnswerMessage = %q, want the server's message", name, msg)
		}
		if i := strings.IndexFunc(msg, unicode.IsControl); i >= 0 {
			t.Errorf("%s: AnswerMessage = %q: control character %q at %d", name, msg, msg[i], i)
		}
	}
}

// The key echoed in an array-shaped body is redacted before AnswerMessage
// reads the message out of it.
func TestAnswerMessageOfAnArrayBodyHasNoKey(t *testing.T) {
	t.Parallel()
	body := `[{"error":{"code":400,"message":"API key sk-reviewsecret-0123456789 not valid","status":"INVALID_ARGUMENT"}}]`
	_, err := modelsAnswering(t, http.StatusBadRequest, body).ListModels(context.Background())
	msg := endpoints.AnswerMessage(err)
	if strings.Contains(msg, "reviewsecret") || !strings.Contains(msg, "API key *** not valid") {
		t.Errorf("AnswerMessage = %q, want the message with the key as ***", msg)
	}
}
