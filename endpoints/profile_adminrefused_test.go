package endpoints_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
)

// Where the admin key itself was sent and refused (a wrong one, or a
// proxy in front that takes another), the error says the admin key was refused, not to give one with
// --admin-api-key-env as where none was sent. The truth: the refusal's
// text names what was sent.
func TestProfileRefusingTheAdminKeySaysItWasGiven(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":"Unauthorized"}`)
	}))
	defer srv.Close()
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: srv.URL + "/v1", Model: "m"}, env(map[string]string{endpoints.DefaultAPIKeyEnv: "sk-api-key-0123456789abcdef"}))
	if err != nil {
		t.Fatal(err)
	}
	ep.SetAdminKey("sk-admin-key-fedcba9876543210")
	tr := endpoints.NewTransport(endpoints.TransportOptions{Conns: 1})
	defer tr.Close()
	_, err = endpoints.NewClient(ep, tr).StartProfile(context.Background())
	if err == nil || strings.Contains(err.Error(), "give it with --admin-api-key-env") || !strings.Contains(err.Error(), "refused the admin key sent") {
		t.Errorf("start: %v; want the admin key said refused, not asked for", err)
	}
}
