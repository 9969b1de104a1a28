package endpoints

import (
	"strings"
	"testing"
)

// A token given as the URL's user name (https://sk-…@host/v1, as some
// gateways take it) is as secret as a password: url.URL.Redacted hides only
// the password, so the user name went into report.json's base_url and every
// line naming the endpoint.
func TestATokenInTheURLsUserNameReachesNoOutput(t *testing.T) {
	t.Parallel()
	const token = "sk-user-token-0123456789"
	for _, raw := range []string{
		"https://" + token + "@gw.example.com/v1",
	} {
		ep, err := Resolve(Flags{Endpoint: raw, Model: "m"}, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		secrets := []string{token}
		if strings.Contains(raw, "pw-secret-42") {
			secrets = append(secrets, "pw-secret-42")
		}
		for what, s := range map[string]string{
			"String":    ep.String(),
			"RedactURL": RedactURL(raw),
			"Redact":    ep.Redact("upstream said: bad credentials " + strings.Join(secrets, " / ")),
		} {
			if strings.Contains(s, token) || strings.Contains(s, "pw-secret-42") {
				t.Errorf("%s keeps a secret: %s", what, s)
			}
		}
		if got := RedactURL(raw); got != "https://***@gw.example.com/v1" {
			t.Errorf("RedactURL(%q) = %q", raw, got)
		}
	}
	// Beside a password the user name is a name, not a secret: a quoted
	// body keeps the word, while the URL still hides both.
	ep, err := Resolve(Flags{Endpoint: "https://user:pw-secret-42@gw.example.com/v1", Model: "m"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if got := ep.Redact(`{"role":"user","key":"pw-secret-42"}`); got != `{"role":"user","key":"***"}` {
		t.Errorf("Redact = %s", got)
	}
	if s := ep.String(); strings.Contains(s, "user") || strings.Contains(s, "pw-secret") {
		t.Errorf("String() = %s", s)
	}
}
