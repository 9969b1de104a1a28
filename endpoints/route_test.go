package endpoints_test

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/internal/badinput"
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
		if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "give the API base, "+base) ||
			strings.Contains(err.Error(), "tok@") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one bad-input line naming %s", given, err, base)
		}
	}
}
