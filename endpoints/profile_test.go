package endpoints_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// profileEndpoint is base with key and the header X-Token=token.
func profileEndpoint(t *testing.T, base, key, token string) *endpoints.Endpoint {
	t.Helper()
	flags := endpoints.Flags{Endpoint: base, Model: "m"}
	if token != "" {
		flags.Headers = []string{"X-Token=" + token}
	}
	return endpointOf(t, flags, map[string]string{endpoints.DefaultAPIKeyEnv: key})
}

// profileClient is a client of base with key and the header X-Token=token.
func profileClient(t *testing.T, base, key, token string) *endpoints.Client {
	t.Helper()
	return clientOf(t, profileEndpoint(t, base, key, token))
}

// The profiler routes of each fake: SGLang always, vLLM with its profiler
// configured; vLLM without it and llama.cpp answer 404, whose error says
// what turns the routes on. Each call goes to the server's root, not /v1.
func TestProfileRoutesByServer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind    string
		opts    endpointstest.Options
		ok      bool
		message string
	}{
		{endpointstest.SGLang, endpointstest.Options{}, true, "Start profiling."},
		{endpointstest.VLLM, endpointstest.Options{VLLMProfiler: true}, true, ""},
		{endpointstest.VLLM, endpointstest.Options{}, false, ""},
		{endpointstest.LlamaCpp, endpointstest.Options{}, false, ""},
		{endpointstest.OpenAI, endpointstest.Options{}, false, ""},
	} {
		p := endpointstest.Start(t, tc.kind, tc.opts)
		c := profileClient(t, p.BaseURL(), "", "")
		ans, err := c.StartProfile(context.Background())
		switch {
		case tc.ok && (err != nil || ans.Message != tc.message):
			t.Errorf("%s %+v: start %+v, %v; want %q", tc.kind, tc.opts, ans, err, tc.message)
		case !tc.ok && !endpoints.IsProfileNotFound(err):
			t.Errorf("%s: start err %v, want a 404", tc.kind, err)
		case !tc.ok && (!strings.HasPrefix(err.Error(), "POST "+p.URL+"/start_profile: HTTP 404") || !strings.Contains(err.Error(), "--profiler-config")):
			t.Errorf("%s: %q does not name the route, the 404 and --profiler-config", tc.kind, err)
		}
		if _, err := c.StopProfile(context.Background()); (err == nil) != tc.ok {
			t.Errorf("%s: stop err %v", tc.kind, err)
		}
		if n := len(p.ProfileCalls()); tc.ok && n != 2 || !tc.ok && n != 0 {
			t.Errorf("%s: %d profile calls recorded", tc.kind, n)
		}
	}
}

// A 4xx that echoes the key and a header value says its status and the
// server's message with both redacted; a redirect is not followed.
func TestProfileErrorsAreRedactedAndRedirectsNotFollowed(t *testing.T) {
	t.Parallel()
	const key, token = "sk-profile-0123456789abcdef", "header-token-0123456789"
	followed := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/start_profile":
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"detail": "no profiling for `+r.Header.Get("Authorization")+` / `+r.Header.Get("X-Token")+`"}`)
		case "/stop_profile":
			http.Redirect(w, r, "http://elsewhere.example/steal?k="+key, http.StatusTemporaryRedirect)
		default:
			followed = true
		}
	}))
	defer srv.Close()
	c := profileClient(t, srv.URL+"/v1", key, token)
	_, err := c.StartProfile(context.Background())
	if err == nil || !strings.Contains(err.Error(), "HTTP 403 (no profiling for Bearer *** / ***)") {
		t.Fatalf("start: %v", err)
	}
	_, err = c.StopProfile(context.Background())
	if err == nil || !strings.Contains(err.Error(), "HTTP 307") || strings.Contains(err.Error(), key) || followed {
		t.Fatalf("stop: %v (followed %v)", err, followed)
	}
}

// SGLang started with --admin-api-key takes only that key on its
// profiler routes (ADMIN_OPTIONAL in srt/utils/auth.py): the API key is
// answered 401 {"error": "Unauthorized"}. Where no admin key was sent the
// error says so and names the flag, with the key itself redacted; where
// the admin key itself was sent and refused (a wrong one, or a proxy in
// front that takes another), it says the admin key was refused, not to
// give one with --admin-api-key-env. The truth: the refusal's text names
// what was sent.
func TestProfileUnauthorizedSaysWhichKeyWasRefused(t *testing.T) {
	t.Parallel()
	const key = "sk-api-key-0123456789abcdef"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":"Unauthorized"}`)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name, admin string
		says, not   []string
	}{
		{"the API key alone: SGLang's --admin-api-key named", "", []string{"HTTP 401 (Unauthorized)", "--admin-api-key"}, []string{key}},
		{"the admin key sent: said refused, not asked for", "sk-admin-key-fedcba9876543210", []string{"refused the admin key sent"}, []string{"give it with --admin-api-key-env"}},
	} {
		ep := profileEndpoint(t, srv.URL+"/v1", key, "")
		if tc.admin != "" {
			ep.SetAdminKey(tc.admin)
		}
		_, err := clientOf(t, ep).StartProfile(context.Background())
		if err == nil {
			t.Fatalf("%s: start succeeded", tc.name)
		}
		for _, s := range tc.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: start: %v; want %q in it", tc.name, err, s)
			}
		}
		for _, s := range tc.not {
			if strings.Contains(err.Error(), s) {
				t.Errorf("%s: start: %v; want no %q in it", tc.name, err, s)
			}
		}
	}
}

// An admin key (SetAdminKey) goes on the profiler routes in the API key's
// place, and is a secret like it: a server that echoes it back has it
// redacted, and the API key is not sent there. The truth is the
// Authorization the route received.
func TestProfileSendsTheAdminKeyAndRedactsIt(t *testing.T) {
	t.Parallel()
	const key, admin = "sk-api-key-0123456789abcdef", "sk-admin-key-fedcba9876543210"
	sent := make(chan string, 1) // the handler's goroutine to the test's
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		sent <- auth
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `{"detail": "refused `+auth+`"}`)
	}))
	defer srv.Close()
	ep := profileEndpoint(t, srv.URL+"/v1", key, "")
	ep.SetAdminKey(admin)
	_, err := clientOf(t, ep).StartProfile(context.Background())
	got := <-sent
	if got != "Bearer "+admin {
		t.Errorf("the route received the %d-byte Authorization %q…, want the admin key's", len(got), got[:min(len(got), 10)])
	}
	if err == nil || !strings.Contains(err.Error(), "HTTP 403 (refused Bearer ***)") || strings.Contains(err.Error(), admin[:12]) {
		t.Errorf("start: %v; want the echoed admin key redacted", err)
	}
}
