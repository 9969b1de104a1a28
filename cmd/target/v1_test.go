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
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// resolveGiven resolves the endpoint given as url with the key key,
// returning it, the note written and resolveModel's error.
func resolveGiven(t *testing.T, url, key string) (*endpoints.Endpoint, string, error) {
	t.Helper()
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: url}, func(string) string { return key })
	if err != nil {
		t.Fatal(err)
	}
	var note bytes.Buffer
	err = resolveModel(context.Background(), ep, time.Second, &note)
	return ep, note.String(), err
}

// A server's address given for its API base (http://host:8000 for
// http://host:8000/v1) is the common first slip. vLLM and SGLang answer
// /models with 404 there; llama.cpp answers it, but its root /completions
// is its native route, not the OpenAI one the evals need. Each has
// /v1/models, so the base becomes /v1, with a one-line note saying so.
func TestAnAddressWithoutAPathFindsTheV1Base(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{endpointstest.VLLM, endpointstest.SGLang, endpointstest.LlamaCpp} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			p := endpointstest.Start(t, kind, endpointstest.Options{Model: "org/base-7b"})
			for _, given := range []string{p.URL, p.URL + "/"} {
				ep, note, err := resolveGiven(t, given, "")
				if err != nil {
					t.Fatalf("%s: %v", given, err)
				}
				if ep.BaseURL != p.URL+"/v1" || ep.Model != "org/base-7b" {
					t.Errorf("%s: base %q model %q, want %q and the listed model", given, ep.BaseURL, ep.Model, p.URL+"/v1")
				}
				if !strings.Contains(note, "using "+p.URL+"/v1 as the API base") || strings.Count(note, "\n") != 1 {
					t.Errorf("%s: note %q, want one line naming the /v1 base", given, note)
				}
			}
		})
	}
}

// A /v1/models that asks for credentials is there: the base becomes /v1 and
// the credentials error is the one said (not the root's 404).
func TestAV1BaseThatWantsAKeyIsStillTheBase(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{APIKey: "sk-right-0123456789"})
	ep, _, err := resolveGiven(t, p.URL, "")
	if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), "HTTP 401") || ep.BaseURL != p.URL+"/v1" {
		t.Errorf("base %q, %v: want the /v1 base and its 401 as bad input", ep.BaseURL, err)
	}
}

// Only a base with no path is completed: a path the user gave (a gateway's
// /openai, say) is never second-guessed; nor is an address whose server has
// no /v1 (an API served at the root).
func TestAPathOrAMissingV1IsNotGuessed(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	for _, given := range []string{p.URL + "/openai", p.URL + "/v1/v1"} {
		ep, note, err := resolveGiven(t, given, "")
		if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), "HTTP 404") {
			t.Errorf("%s: %v, want bad input naming the 404", given, err)
		}
		if ep.BaseURL != given || note != "" {
			t.Errorf("%s: base became %q, note %q: want both untouched", given, ep.BaseURL, note)
		}
	}
	wantRootKept(t, http.NotFound)
}

// wantRootKept serves an API at the root, its /models listing at-the-root
// and every other path answered by other, and checks that the address is
// kept as the base, with no note.
func wantRootKept(t *testing.T, other http.HandlerFunc) {
	t.Helper()
	root := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/models" {
			other(w, r)
			return
		}
		w.Write([]byte(`{"object":"list","data":[{"id":"at-the-root"}]}`))
	}))
	defer root.Close()
	ep, note, err := resolveGiven(t, root.URL, "")
	if err != nil || ep.BaseURL != root.URL || ep.Model != "at-the-root" || note != "" {
		t.Errorf("root API: base %q model %q note %q, %v: want the address as given", ep.BaseURL, ep.Model, note, err)
	}
}

// vLLM's and SGLang's 401 is {"error": "Unauthorized"}, not an OpenAI error
// object: it is still the credentials' fault, said as such (before, its
// status read as 0 and the endpoint was called unreachable).
func TestARefusedKeyIsSaidAsSuchOnEveryServer(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{endpointstest.VLLM, endpointstest.SGLang, endpointstest.OpenAI, endpointstest.Gateway} {
		p := endpointstest.Start(t, kind, endpointstest.Options{APIKey: "sk-right-0123456789"})
		for key, want := range map[string]string{"": "no API key was sent", "sk-wrong-9876543210": "check the key"} {
			_, _, err := resolveGiven(t, p.BaseURL(), key)
			if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), "refused the credentials (HTTP 401): "+want) {
				t.Errorf("%s, key %q: %v; want the credentials refused: %s", kind, key, err, want)
			}
		}
	}
}

// A proxy in front of an API served at the root refuses every other path
// with 403, /v1/models too: that is not a /v1 base asking for a key, and
// the address, whose /models answers, stays the base.
func TestA403AtV1BeforeAnAPIAtTheRootKeepsTheRoot(t *testing.T) {
	t.Parallel()
	wantRootKept(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte("<html><body><h1>403 Forbidden</h1></body></html>"))
	})
}

// A models URL pasted for the base (…/v1/models) gets a 404 for
// …/v1/models/models: the error names the base it probably meant; a base
// that does not end in /models gets no such hint.
func TestAModelsURLGivenForTheBaseIsNamed(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	_, _, err := resolveGiven(t, p.BaseURL()+"/models", "")
	if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), "HTTP 404 (the URL given ends in /models: is the API base "+p.BaseURL()+"?)") {
		t.Errorf("%v: want the 404 naming the base", err)
	}
	_, _, err = resolveGiven(t, p.URL+"/openai", "")
	if err == nil || strings.Contains(err.Error(), "ends in /models") {
		t.Errorf("%v: want a 404 without the hint", err)
	}
}
