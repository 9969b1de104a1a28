package target

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints"
)

// geminiBadKey is Google's answer to a key it does not know: 400, not 401,
// in the array shape of Gemini's OpenAI-compatible route
// (continuedev/continue#8516).
const geminiBadKey = `[{
  "error": {
    "code": 400,
    "message": "API key not valid. Please pass a valid API key.",
    "status": "INVALID_ARGUMENT",
    "details": [
      {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "API_KEY_INVALID",
        "domain": "googleapis.com",
        "metadata": {
          "service": "generativelanguage.googleapis.com"
        }
      }
    ]
  }
}
]`

// geminiLike serves /v1beta/openai/models as Gemini's OpenAI-compatible
// route does: its ids carry the "models/" prefix, and a wrong key is a 400.
func geminiLike(t *testing.T, key string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1beta/openai/models" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		if r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(geminiBadKey))
			return
		}
		w.Write([]byte(`{"object":"list","data":[{"id":"models/gemini-2.5-flash","object":"model","owned_by":"google"},{"id":"models/gemini-2.5-pro","object":"model","owned_by":"google"}]}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1beta/openai/"
}

// Gemini's base has no /v1 and its ids are "models/…": the first is the
// model, as listed (its chat route takes the prefixed name). A key it
// refuses is a 400 whose message says so: the one line quotes it, with or
// without --model, so the user fixes the key, not the model.
func TestGeminisModelListAndItsRefusedKey(t *testing.T) {
	t.Parallel()
	const key = "AIzaSyD-right-key-0123456789"
	base := geminiLike(t, key)
	ep, note, err := resolveGiven(t, base, key)
	if err != nil || ep.Model != "models/gemini-2.5-flash" || note != "" {
		t.Errorf("model %q, note %q, %v: want the first listed id, no note", ep.Model, note, err)
	}
	const said = "API key not valid. Please pass a valid API key."
	_, _, err = resolveGiven(t, base, "AIzaSyD-wrong-key-9876543210")
	if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.HasSuffix(err.Error(), "HTTP 400; pass --model; the endpoint says: "+said) {
		t.Errorf("%v: want bad input quoting %q", err, said)
	}
	ep, err = endpoints.Resolve(endpoints.Flags{Endpoint: base, Model: "gemini-2.5-flash"}, func(string) string { return "AIzaSyD-wrong-key-9876543210" })
	if err != nil {
		t.Fatal(err)
	}
	var warn bytes.Buffer
	if err := resolveModel(context.Background(), ep, time.Second, &warn); err != nil || !strings.Contains(warn.String(), "GET /models answered HTTP 400; using --model gemini-2.5-flash; the endpoint says: "+said+"\n") {
		t.Errorf("%v, warning %q: want the 400's message in the warning", err, warn.String())
	}
}

// The quoted message is the endpoint's words with every secret taken out:
// a server that echoes the key it refused (here in an array-shaped body
// go-openai cannot read) gets *** in its place.
func TestAQuotedModelsAnswerHidesTheKeyItEchoes(t *testing.T) {
	t.Parallel()
	const wrong = "AIzaSyD-wrong-key-9876543210"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`[{"error":{"code":400,"message":"API key not valid: ` + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + `","status":"INVALID_ARGUMENT"}}]`))
	}))
	defer srv.Close()
	_, _, err := resolveGiven(t, srv.URL+"/v1beta/openai", wrong)
	if err == nil || strings.Contains(err.Error(), wrong) || !strings.Contains(err.Error(), "the endpoint says: API key not valid: ***") {
		t.Errorf("%v: want the message quoted with the key as ***", err)
	}
}
