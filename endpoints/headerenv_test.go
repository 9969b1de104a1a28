package endpoints_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
)

// An Azure OpenAI key goes in an api-key header, a Cloudflare Access pair in
// two more: --header-env NAME=VAR reads each value from the environment, so
// that none is in the command line. The truth: the request carries each
// variable's value under its header's name, a flag replaces the file's
// header of that name (in any letter case), the values are secrets
// (redacted, never in String), and HeaderEnv names the variables, for
// agents, while LiteralHeaderNames names only the headers given as they
// are.
func TestHeaderEnvReadsEachValueFromTheEnvironment(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "endpoints.yaml")
	os.WriteFile(file, []byte(`endpoints:
  - name: azure
    base_url: https://res.openai.azure.com/openai/v1
    headers:
      X-Org: org-123
      Api-Key: from-the-file
    header_env:
      CF-Access-Client-Id: CF_ID
`), 0o644)
	vars := env(map[string]string{"AZURE_OPENAI_API_KEY": "azure-secret-0123456789", "CF_ID": "cf-id-0123456789", "CF_SECRET": "cf-secret-0123456789"})
	ep, err := endpoints.Resolve(endpoints.Flags{File: file, Name: "azure",
		HeaderEnv: []string{"api-key=AZURE_OPENAI_API_KEY", "CF-Access-Client-Secret = CF_SECRET"}}, vars)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	ep.Apply(h)
	want := map[string]string{"Api-Key": "azure-secret-0123456789", "X-Org": "org-123", "Cf-Access-Client-Id": "cf-id-0123456789", "Cf-Access-Client-Secret": "cf-secret-0123456789"}
	for k, v := range want {
		if h.Get(k) != v {
			t.Errorf("%s: %q, want %q", k, h.Get(k), v)
		}
	}
	if got := strings.Join(ep.LiteralHeaderNames(), ","); got != "X-Org" {
		t.Errorf("literal headers %q, want X-Org", got)
	}
	if got := ep.HeaderEnv(); len(got) != 3 || got["Api-Key"] != "AZURE_OPENAI_API_KEY" || got["Cf-Access-Client-Id"] != "CF_ID" || got["Cf-Access-Client-Secret"] != "CF_SECRET" {
		t.Errorf("header variables %v", got)
	}
	msg := ep.Redact("echo: azure-secret-0123456789 cf-secret-0123456789 cf-id-0123456789")
	if strings.Contains(msg, "secret-0123456789") || strings.Contains(msg, "cf-id-0123456789") {
		t.Errorf("not redacted: %s", msg)
	}
}

// A variable that is unset or empty, a name that is no variable's, and a
// flag without "=" are bad input in one line naming the variable and the
// header, never a value.
func TestHeaderEnvRefusesWhatItCannotRead(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "endpoints.yaml")
	os.WriteFile(file, []byte("endpoints:\n  - name: a\n    base_url: http://x/v1\n    header_env: {X-Key: UNSET_VAR}\n"), 0o644)
	vars := env(map[string]string{"EMPTY": "  ", "SET": "value-never-said"})
	for _, tc := range []struct {
		f    endpoints.Flags
		want string
	}{
		{endpoints.Flags{Endpoint: "http://h/v1", HeaderEnv: []string{"api-key=NOPE"}}, "environment variable NOPE (the value of header api-key, --header-env) is empty or unset"},
		{endpoints.Flags{Endpoint: "http://h/v1", HeaderEnv: []string{"api-key=EMPTY"}}, "environment variable EMPTY"},
		{endpoints.Flags{Endpoint: "http://h/v1", HeaderEnv: []string{"api-key=sk-live-0123"}}, `"sk-l…" is not an environment variable's name`},
		{endpoints.Flags{Endpoint: "http://h/v1", HeaderEnv: []string{"api-key"}}, "want NAME=VAR"},
		{endpoints.Flags{Endpoint: "http://h/v1", HeaderEnv: []string{"bad name=SET"}}, "not a valid HTTP header name"},
		{endpoints.Flags{Endpoint: "http://h/v1", Prefix: "reference-", HeaderEnv: []string{"x"}}, "--reference-header-env"},
		{endpoints.Flags{File: file, Name: "a"}, "UNSET_VAR (the value of header X-Key, header_env in " + file + ")"},
	} {
		_, err := endpoints.Resolve(tc.f, vars)
		if badInputLine(t, tc.f.HeaderEnv, err, tc.want) && strings.Contains(err.Error(), "value-never-said") {
			t.Errorf("%v: %q says the variable's value", tc.f.HeaderEnv, err)
		}
	}
}
