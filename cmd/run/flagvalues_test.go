package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// The truth: pflag parses "NaN" and "Inf" as floats, and either rate used
// to run the whole load and then fail the report's write (JSON has no
// NaN), exit 1. Each is now bad input, exit 2, before the endpoint sees a
// single request.
func TestARequestRateThatIsNoNumberIsRefusedBeforeAnyLoad(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	for _, rate := range []string{"NaN", "Inf", "-Inf", "+Inf", "nan"} {
		code, stderr := execute(t, context.Background(), "--endpoint", p.BaseURL(), "--phase", "p=2/32/2", "--request-rate", rate, "--out", t.TempDir())
		if code != 2 || !strings.Contains(stderr, "--request-rate must be a number") {
			t.Errorf("--request-rate %s: exit %d, stderr %q; want 2 saying what a rate must be", rate, code, stderr)
		}
	}
	if n := p.TotalRequests(); n != 0 {
		t.Errorf("the endpoint got %d requests; want none", n)
	}
}

// The truth: the built-in engine asks for no key and reads no header, so
// a --header, --header-env or --api-key-env given without --endpoint (one
// that went missing from a script) is bad input, exit 2, before the
// engine starts, as --ca-cert is; it used to be dropped without a word.
func TestEndpointOnlyFlagsWithoutAnEndpointAreRefused(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--header", "X-Team=a"},
		{"--header-env", "Api-Key=AZURE_KEY"},
		{"--api-key-env", "OPENAI_API_KEY"},
	} {
		code, stderr := execute(t, context.Background(), append([]string{"--phase", "p=1/64/2", "--out", t.TempDir()}, args...)...)
		if code != 2 || !strings.Contains(stderr, "the built-in engine takes no key or header") || strings.Contains(stderr, "using the built-in engine") {
			t.Errorf("%v: exit %d, stderr %q; want 2 before the engine starts", args, code, stderr)
		}
	}
}

// The truth: a --out that is a file is refused, exit 2, before the
// endpoint sees any request.
func TestAnOutThatIsAFileIsRefusedBeforeAnyLoad(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	file := filepath.Join(t.TempDir(), "out")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stderr := execute(t, context.Background(), "--endpoint", p.BaseURL(), "--phase", "p=2/32/2", "--out", file)
	if code != 2 || !strings.Contains(stderr, "is a file, not a folder") {
		t.Errorf("exit %d, stderr %q; want 2 saying --out is a file", code, stderr)
	}
	if n := p.Requests("POST /v1/chat/completions"); n != 0 {
		t.Errorf("the endpoint got %d generation requests; want none", n)
	}
}
