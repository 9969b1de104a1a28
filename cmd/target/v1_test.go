package target

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// A server's address given for its API base (http://host:8000 for
// http://host:8000/v1) is the common first slip against vLLM and SGLang:
// /models is 404 there and /v1/models lists the model, so the base becomes
// /v1, with a note saying so. (llama.cpp serves its routes at the root too,
// so there the address works as given.)
func TestAnAddressWithoutAPathFindsTheV1Base(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{endpointstest.VLLM, endpointstest.SGLang} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			p := endpointstest.Start(t, kind, endpointstest.Options{Model: "org/base-7b"})
			for _, given := range []string{p.URL, p.URL + "/"} {
				ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: given}, func(string) string { return "" })
				if err != nil {
					t.Fatal(err)
				}
				var note bytes.Buffer
				if err := resolveModel(context.Background(), ep, time.Second, &note); err != nil {
					t.Fatalf("%s: %v", given, err)
				}
				if ep.BaseURL != p.URL+"/v1" || ep.Model != "org/base-7b" {
					t.Errorf("%s: base %q model %q, want %q and the listed model", given, ep.BaseURL, ep.Model, p.URL+"/v1")
				}
				if !strings.Contains(note.String(), "using "+p.URL+"/v1") || strings.Count(note.String(), "\n") != 1 {
					t.Errorf("%s: note %q, want one line naming the /v1 base", given, note.String())
				}
			}
		})
	}
}

// Only a base with no path is completed: a path the user gave (a gateway's
// /openai, say) is never second-guessed, and where /v1/models is 404 too
// the first answer's error stands.
func TestAPathOrAMissingV1IsNotGuessed(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	for _, given := range []string{p.URL + "/openai", p.URL + "/v1/v1"} {
		ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: given}, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		var note bytes.Buffer
		err = resolveModel(context.Background(), ep, time.Second, &note)
		if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), "HTTP 404") {
			t.Errorf("%s: %v, want bad input naming the 404", given, err)
		}
		if ep.BaseURL != given || note.Len() != 0 {
			t.Errorf("%s: base became %q, note %q: want both untouched", given, ep.BaseURL, note.String())
		}
	}
}
