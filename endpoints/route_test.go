package endpoints_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
)

// A URL pasted with a route on it (from a curl line or a server's log) is
// refused before anything is sent, naming the base to give instead; the
// user name in it (a token, often) is not repeated. A base that merely
// contains such a word is kept.
func TestAURLEndingInARouteNamesTheBaseToGive(t *testing.T) {
	t.Parallel()
	for given, base := range map[string]string{
		"http://h:8000/v1/chat/completions":       "http://h:8000/v1",
		"http://h:8000/v1/completions/":           "http://h:8000/v1",
		"https://tok@h/openai/v1/completions":     "https://***@h/openai/v1",
		"https://r.services.ai.azure.com/models":  "",
		"http://h:8080/chat/completions":          "http://h:8080",
		"https://api.example.com/v1/models/glm-5": "",
		"https://h/completions-proxy/v1":          "",
	} {
		ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: given}, func(string) string { return "" })
		if base == "" {
			if err != nil || ep.BaseURL != strings.TrimRight(given, "/") {
				t.Errorf("%s: %v, want it kept as the base", given, err)
			}
			continue
		}
		if badInputLine(t, given, err, "give the API base, "+base) && strings.Contains(err.Error(), "tok@") {
			t.Errorf("%s: %q quotes the URL's user info", given, err)
		}
	}
}

// Every shape of a failed GET /models body gives its HTTP status: an
// OpenAI error object, vLLM's {"error": "Unauthorized"}, FastAPI's
// {"detail": ...}, a proxy's HTML page, an empty body.
func TestHTTPStatusOfEveryErrorBody(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status      int
		ctype, body string
	}{
		{500, "application/json", `{"error":{"message":"boom","type":"server_error"}}`},
		{401, "application/json", `{"error":"Unauthorized"}`},
		{404, "application/json", `{"detail":"Not Found"}`},
		{422, "application/json", `{"error":{"message":42}}`},
		{502, "text/html", "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"},
		{503, "", ""},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if tc.ctype != "" {
				w.Header().Set("Content-Type", tc.ctype)
			}
			w.WriteHeader(tc.status)
			w.Write([]byte(tc.body))
		}))
		_, err := modelClient(t, srv.URL+"/v1", "").ListModels(context.Background())
		srv.Close()
		if got := endpoints.HTTPStatus(err); got != tc.status {
			t.Errorf("HTTP %d %q: HTTPStatus(%v) = %d", tc.status, tc.body, err, got)
		}
	}
}
