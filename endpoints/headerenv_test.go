package endpoints_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/internal/badinput"
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

// The flag meant for a variable's name is where a secret gets pasted by
// mistake (--header-env api-key=<the key>, as --header would take it; or
// --api-key-env <the key>). The truth: the error is one bad-input line
// that never holds the pasted value whole, whether the value is no
// variable's name (sk-live-…, a key starting with a digit), looks like one
// but is unset (an Azure key is 32 hex digits, a GitHub token ghp_ and 36
// letters and digits), or the flag lacks its "="; and a curl-style
// --header "Authorization: Bearer TOKEN==" (base64 ends in "=") does not
// quote the token as a header name. A conventional name (AZURE_OPENAI_KEY)
// is still named whole.
func TestAPastedSecretIsNotQuotedBack(t *testing.T) {
	t.Parallel()
	const (
		live   = "sk-live-9f8e7d6c5b4a39281706"
		digit  = "3f8a9c0d1e2b4a5f6c7d8e9f0a1b2c3d"
		letter = "af8a9c0d1e2b4a5f6c7d8e9f0a1b2c3d"
		ghp    = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
		b64    = "dGhpc2lzYXRva2VuMTIzNDU2"
	)
	vars := env(map[string]string{})
	for _, tc := range []struct {
		f      endpoints.Flags
		secret string
	}{
		{endpoints.Flags{Endpoint: "http://h/v1", HeaderEnv: []string{"api-key=" + live}}, live},
		{endpoints.Flags{Endpoint: "http://h/v1", HeaderEnv: []string{"api-key=" + digit}}, digit},
		{endpoints.Flags{Endpoint: "http://h/v1", HeaderEnv: []string{"api-key=" + letter}}, letter},
		{endpoints.Flags{Endpoint: "http://h/v1", HeaderEnv: []string{"Authorization=" + ghp}}, ghp},
		{endpoints.Flags{Endpoint: "http://h/v1", HeaderEnv: []string{live}}, live},
		{endpoints.Flags{Endpoint: "http://h/v1", APIKeyEnv: letter, APIKeyEnvSet: true}, letter},
		{endpoints.Flags{Endpoint: "http://h/v1", Headers: []string{"Authorization: Bearer " + b64 + "=="}}, b64},
	} {
		_, err := endpoints.Resolve(tc.f, vars)
		if !badInputLine(t, tc.f, err) {
			continue
		}
		if strings.Contains(err.Error(), tc.secret) || strings.Contains(err.Error(), tc.secret[len(tc.secret)-12:]) {
			t.Errorf("the error quotes the pasted secret: %v", err)
		}
	}
	_, err := endpoints.Resolve(endpoints.Flags{Endpoint: "http://h/v1", HeaderEnv: []string{"api-key=AZURE_OPENAI_KEY"}}, vars)
	if err == nil || !strings.Contains(err.Error(), "environment variable AZURE_OPENAI_KEY ") {
		t.Errorf("an unset conventional name: %v, want it named", err)
	}
}

// pflag keeps --header and --header-env apart, so their order on the
// command line is lost: `--header-env api-key=V --header api-key=x` sent
// V, not the last one given. The truth: one header given by both flags
// (in any letter case), or twice in one file entry (headers and
// header_env, or two spellings in one map), is bad input naming the header
// and both places; a flag still replaces a file's header of that name (the
// flags override the file, as --model does), and HeaderEnv and
// LiteralHeaderNames describe what is sent.
func TestOneHeaderGivenTwiceInOnePlaceIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := 0
	write := func(body string) string {
		files++
		file := filepath.Join(dir, strconv.Itoa(files)+".yaml")
		os.WriteFile(file, []byte("endpoints:\n  - name: a\n    base_url: http://x/v1\n"+body), 0o644)
		return file
	}
	vars := env(map[string]string{"V": "value-from-env-0123", "W": "other-value-0123"})
	for _, tc := range []struct {
		f    endpoints.Flags
		want string
	}{
		{endpoints.Flags{Endpoint: "http://h/v1", Headers: []string{"api-key=x"}, HeaderEnv: []string{"Api-Key=V"}}, "header Api-Key is given by both --header and --header-env"},
		{endpoints.Flags{Endpoint: "http://h/v1", Prefix: "reference-", Headers: []string{"X-A=x"}, HeaderEnv: []string{"x-a=V"}}, "--reference-header and --reference-header-env"},
		{endpoints.Flags{File: write("    headers: {Api-Key: x}\n    header_env: {api-key: V}\n"), Name: "a"}, "header Api-Key is given by both headers and header_env"},
		{endpoints.Flags{File: write("    header_env: {Api-Key: V, api-key: W}\n"), Name: "a"}, "header Api-Key is given twice in header_env"},
		{endpoints.Flags{File: write("    headers: {X-Org: a, x-org: b}\n"), Name: "a"}, "header X-Org is given twice in headers"},
	} {
		_, err := endpoints.Resolve(tc.f, vars)
		if !badinput.Is(err) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "value-from-env") {
			t.Errorf("%+v: %v, want a bad-input line with %q", tc.f, err, tc.want)
		}
	}
	// The flags replace the file's header, whichever form either takes.
	file := write("    headers: {Api-Key: from-the-file}\n    header_env: {X-Tenant: W}\n")
	ep, err := endpoints.Resolve(endpoints.Flags{File: file, Name: "a", HeaderEnv: []string{"api-key=V"}, Headers: []string{"x-tenant=lit"}}, vars)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	ep.Apply(h)
	if h.Get("Api-Key") != "value-from-env-0123" || h.Get("X-Tenant") != "lit" {
		t.Errorf("sent %v, want the flags' values", h)
	}
	if lit, ev := ep.LiteralHeaderNames(), ep.HeaderEnv(); len(lit) != 1 || lit[0] != "X-Tenant" || len(ev) != 1 || ev["Api-Key"] != "V" {
		t.Errorf("literal %v, from the environment %v: want [X-Tenant], {Api-Key: V}", lit, ev)
	}
}

// An Authorization header (--header, --header-env, headers:, header_env:)
// replaces the "Authorization: Bearer KEY" the API key would send. The
// truth: with a key variable asked for (--api-key-env, api_key_env:) that
// is a contradiction, refused naming both; with only the default variable
// read (OPENAI_API_KEY happens to be set), the header is sent and the key
// is not (HasKey false: no report or hint claims a key was sent).
func TestAnAuthorizationHeaderAndAnAPIKey(t *testing.T) {
	t.Parallel()
	vars := env(map[string]string{"OPENAI_API_KEY": "sk-default-0123456789", "MY_KEY": "sk-mine-0123456789", "TOKEN": "Bearer gw-token-0123456789"})
	_, err := endpoints.Resolve(endpoints.Flags{Endpoint: "http://h/v1", APIKeyEnv: "MY_KEY", APIKeyEnvSet: true, HeaderEnv: []string{"authorization=TOKEN"}}, vars)
	if !badinput.Is(err) || !strings.Contains(err.Error(), "Authorization") || !strings.Contains(err.Error(), "--api-key-env") || strings.Contains(err.Error(), "0123456789") {
		t.Errorf("--api-key-env with an Authorization header: %v, want a bad-input line naming both", err)
	}
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: "http://h/v1", APIKeyEnv: endpoints.DefaultAPIKeyEnv, HeaderEnv: []string{"authorization=TOKEN"}}, vars)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	ep.Apply(h)
	if h.Get("Authorization") != "Bearer gw-token-0123456789" || ep.HasKey() {
		t.Errorf("Authorization %q, HasKey %v: want the header's value, no key", h.Get("Authorization"), ep.HasKey())
	}
}

// A header value net/http would refuse on every request (a control
// character: an environment variable read from a file with a NUL or an
// escape) is bad input before any load, naming the header, not the value;
// so is a header name that is no HTTP token.
func TestAHeaderNetHTTPWouldRefuseIsBadInput(t *testing.T) {
	t.Parallel()
	vars := env(map[string]string{"NUL": "secret\x00value-0123", "ESC": "secret\x1bvalue-0123"})
	for _, f := range []endpoints.Flags{
		{Endpoint: "http://h/v1", HeaderEnv: []string{"api-key=NUL"}},
		{Endpoint: "http://h/v1", HeaderEnv: []string{"api-key=ESC"}},
		{Endpoint: "http://h/v1", Headers: []string{"X-Bad(name)=v"}},
		{Endpoint: "http://h/v1", Headers: []string{"X-Bél=v"}},
	} {
		_, err := endpoints.Resolve(f, vars)
		if !badinput.Is(err) || strings.Contains(err.Error(), "value-0123") {
			t.Errorf("%+v: %v, want bad input without the value", f, err)
		}
	}
}

// An endpoints file is read strictly. The truth: a misspelt key
// (header_envs) is refused, as is a header_env value that is no
// variable's name (a number, null, a list), each as one bad-input line; a
// value YAML reads as a boolean (true) is a name like any other, and unset.
func TestAnEndpointsFilesHeaderEnvIsReadStrictly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for k, tc := range []struct{ body, want string }{
		{"    header_envs: {X-Key: V}\n", "header_envs"},
		{"    header_env: {X-Key: 123}\n", `"123" is not an environment variable's name`},
		{"    header_env: {X-Key: null}\n", `"" is not an environment variable's name`},
		{"    header_env: {X-Key: [V]}\n", "endpoints file"},
		{"    header_env: {X-Key: true}\n", "environment variable true (the value of header X-Key"},
	} {
		file := filepath.Join(dir, strconv.Itoa(k)+".yaml")
		os.WriteFile(file, []byte("endpoints:\n  - name: a\n    base_url: http://x/v1\n"+tc.body), 0o644)
		_, err := endpoints.Resolve(endpoints.Flags{File: file, Name: "a"}, env(map[string]string{"V": "v-0123456789"}))
		badInputLine(t, tc.body, err, tc.want)
	}
}
