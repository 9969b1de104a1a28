package conform

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
)

// Secrets of the tests below: long enough that a cut can fall inside them,
// with prefixes no detail would hold by chance.
const (
	straddleKey    = "sk-STRADDLE-secret-key-0123456789"
	straddleHeader = "hdr-STRADDLE-value-0123456789"
)

// leaks reports whether s holds the first characters of either secret: a
// secret cut before it was redacted leaves exactly that behind.
func leaks(s string) bool {
	return strings.Contains(s, straddleKey[:7]) || strings.Contains(s, straddleHeader[:7])
}

func straddleEndpoint(t *testing.T, baseURL string) *endpoints.Endpoint {
	t.Helper()
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: baseURL, Model: "m", Headers: []string{"X-Secret=" + straddleHeader}},
		func(string) string { return straddleKey })
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// pad is n bytes of filler, so that what follows it starts at byte n.
func pad(n int) string { return strings.Repeat("x", n) }

// Each place conform quotes a server cuts the text; the endpoint's secrets
// are taken out before the cut, so a secret straddling it leaves not even
// its prefix. Each case puts the key across its own cut.
func TestSecretsAreRedactedBeforeTheCut(t *testing.T) {
	t.Parallel()
	ep := straddleEndpoint(t, "http://127.0.0.1:1/v1")
	r := redactor(ep.Redact)
	jsonError := func(msg string) []byte {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg}})
		return b
	}
	for name, got := range map[string]string{
		// statusLine keeps 160 bytes of the message.
		"an error status's message": statusLine(r, 500, "", jsonError(pad(150)+straddleKey)),
		// openAIError keeps 80 bytes of a body that is not JSON, and 120
		// of a message.
		"an error body that is not JSON": func() string { _, p := openAIError(r, []byte(pad(70)+straddleHeader)); return p }(),
		"an error message":               func() string { m, _ := openAIError(r, jsonError(pad(110)+straddleKey)); return m }(),
		// decode keeps 80 bytes of a 200 body it cannot read.
		"a 200 body that is not the JSON expected": (&answer{Response: endpoints.Response{Status: 200, Body: []byte(pad(70) + straddleKey)}, r: r}).
			decode(&chatCompletion{}).Error(),
		// problem keeps 160 bytes of an error event's message.
		"an error event inside a stream": (&streamed{status: 200, errorEvent: true, body: jsonError(pad(150) + straddleHeader), r: r}).problem(),
		// the model list keeps 120 bytes of the ids.
		"the listed model ids": r.clip(pad(110)+", "+straddleKey, 120),
	} {
		if leaks(got) || !strings.Contains(got, "x") {
			t.Errorf("%s: %q holds a secret's prefix (or is not the quoted text)", name, got)
		}
	}
	// The cut is still where it was: a redacted secret is "***".
	if got := statusLine(r, 500, "", jsonError("denied: "+straddleKey)); got != "HTTP 500: denied: ***" {
		t.Errorf("statusLine = %q", got)
	}
}

// A server that quotes the credentials in every error, with the secret at
// the byte where conform's cut falls, leaks nothing into any detail of a
// whole run: error statuses (160 bytes kept), error bodies that are not
// JSON (80), and error events inside 200 streams (160).
func TestNoSecretPrefixReachesADetailOfARun(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		creds := r.Header.Get("Authorization") + " " + r.Header.Get("X-Secret")
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		json.Unmarshal(raw, &body)
		switch {
		case r.Method == http.MethodGet:
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, pad(70)+creds) // a proxy's plain-text page
		case isStream(body):
			// "Bearer " is 7 bytes: the key itself starts at byte 150.
			w.Header().Set("Content-Type", "text/event-stream")
			ev, _ := json.Marshal(map[string]any{"error": map[string]any{"message": pad(143) + creds, "code": 500}})
			fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", ev)
		default:
			jsonError(w, http.StatusInternalServerError, pad(143)+creds)
		}
	}))
	defer srv.Close()
	cfg := testConfig(srv.URL+"/v1", "m")
	cfg.Endpoint = straddleEndpoint(t, srv.URL+"/v1")
	res, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	quoted := map[string]bool{}
	for _, r := range res {
		if leaks(r.Detail) {
			t.Errorf("%s leaks a secret's prefix: %q", r.ID, r.Detail)
		}
		quoted[r.ID] = strings.Contains(r.Detail, pad(60))
	}
	// The quoting paths were taken: /models (not JSON), a chat (an error
	// status), a stream (an error event).
	for _, id := range []string{"models", "chat", "stream", "bad-request"} {
		if !quoted[id] {
			t.Errorf("%s does not quote the server's text: %+v", id, res)
		}
	}
}

// redirector answers every request with status and a Location of to plus
// the request's path.
func redirector(status int, to func() string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		http.Redirect(w, r, to()+r.URL.Path, status)
	})
}

// A 307 to another server is not followed by any request of the suite:
// the other server hears nothing (no key, no header goes there), and the
// checks that met the redirect name it and its origin.
func TestARedirectToAnotherOriginIsNamedAndNotFollowed(t *testing.T) {
	t.Parallel()
	var heard atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		heard.Add(1)
		jsonError(w, 404, "the other origin")
	}))
	defer other.Close()
	srv := httptest.NewServer(redirector(http.StatusTemporaryRedirect, func() string { return other.URL }))
	defer srv.Close()
	cfg := testConfig(srv.URL+"/v1", "m")
	cfg.Endpoint = straddleEndpoint(t, srv.URL+"/v1")
	res := run(t, cfg)
	want := "HTTP 307 redirect to another origin, " + other.URL + ", not followed"
	for _, id := range []string{"models", "chat", "stream", "bad-request", "context-overflow", "unknown-model"} {
		wantResult(t, res, id, Fail, want)
	}
	// The echo probe goes through endpoints.Client over the suite's
	// transport: the client follows no redirect, and the transport's guard
	// would refuse the other origin if it did. Either way the error names
	// the other origin and nothing reaches it.
	s, done := newSuite(cfg)
	defer done()
	if _, err := s.client.Post(t.Context(), "/completions", []byte(`{"prompt": "hi"}`)); err == nil || !strings.Contains(err.Error(), other.URL) {
		t.Errorf("endpoints.Client over the suite's transport: %v, want a refusal naming %s", err, other.URL)
	}
	if n := heard.Load(); n != 0 {
		t.Errorf("the other origin heard %d requests", n)
	}
	if t.Failed() {
		t.Log(describe(res))
	}
}

// A redirect within the endpoint's origin is not followed either (a 301 or
// 302 would turn a POST into a GET without its body): the check names the
// path it points to.
func TestARedirectOnTheSameOriginIsNamedAndNotFollowed(t *testing.T) {
	t.Parallel()
	var base atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v2/") {
			t.Errorf("the redirect to %s was followed", r.URL.Path)
		}
		redirector(http.StatusMovedPermanently, func() string { return base.Load().(string) + "/v2" }).ServeHTTP(w, r)
	}))
	defer srv.Close()
	base.Store(srv.URL)
	cfg := testConfig(srv.URL+"/v1", "m")
	cfg.Only = []string{"models", "chat", "stream"}
	res := run(t, cfg)
	for id, want := range map[string]string{
		"models": "HTTP 301 redirect to /v2/v1/models on the same origin, not followed",
		"chat":   "HTTP 301 redirect to /v2/v1/chat/completions on the same origin, not followed",
		"stream": "HTTP 301 redirect to /v2/v1/chat/completions on the same origin, not followed",
	} {
		wantResult(t, res, id, Fail, want)
	}
}

// A refused stream's body is read to readLimit bytes, cut there before any
// redaction. A server whose long error body ends in a message quoting the
// key, the key across that cut, leaves only the key's first bytes in what
// was read: statusLine, which reads the message out of a cut body, must not
// show them (no later redaction knows them for a secret).
func TestAMessageCutInsideTheKeyAtTheReadLimitShowsNoPrefix(t *testing.T) {
	t.Parallel()
	ep := straddleEndpoint(t, "http://127.0.0.1:1/v1")
	head := `{"detail":"` + pad(readLimit-60) + `","error":{"message":"the key `
	// The key starts 10 bytes before the cut.
	body := head + pad(readLimit-10-len(head)) + straddleKey + `"}}`
	cut := []byte(body[:readLimit])
	if !strings.Contains(string(cut), straddleKey[:7]) || strings.Contains(string(cut), straddleKey) {
		t.Fatalf("the cut does not fall inside the key: %q", cut[len(cut)-40:])
	}
	got := statusLine(redactor(ep.Redact), 401, "", cut)
	if leaks(got) {
		t.Errorf("statusLine = %q: holds the key's prefix", got)
	}
	// What is quoted is the server's text, from its start.
	if !strings.HasPrefix(got, `HTTP 401: {"detail":"xxx`) {
		t.Errorf("statusLine = %q: not the server's text", got)
	}
}

// The truth: a refused stream's body is redacted as it is read, before the
// readLimit cut, so the body kept holds no start of the key even where the
// key straddles the cut (it used to be read raw and cut, leaving the key's
// first bytes for every later use to guard against).
func TestARefusedStreamsBodyIsRedactedBeforeItsCut(t *testing.T) {
	t.Parallel()
	// "Bearer " is 7 bytes: the key itself starts 10 bytes before the cut.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, pad(readLimit-17)+r.Header.Get("Authorization")+" and more")
	}))
	defer srv.Close()
	cfg := testConfig(srv.URL+"/v1", "m")
	cfg.Endpoint = straddleEndpoint(t, srv.URL+"/v1")
	s, done := newSuite(cfg)
	defer done()
	st := s.stream(t.Context(), map[string]any{"model": "m", "stream": true, "max_tokens": 1}, nil)
	if len(st.body) == 0 || strings.Contains(string(st.body), straddleKey[:7]) {
		t.Fatalf("kept body (%d bytes) ends %q: want it read, with no start of the key", len(st.body), st.body[max(0, len(st.body)-40):])
	}
}
