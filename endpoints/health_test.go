package endpoints

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// healthAt is a client of an endpoint at srv's /v1 with the key and the
// extra header X-Gateway-Token given.
func healthAt(t *testing.T, srv *httptest.Server, key, token string) *Client {
	t.Helper()
	ep, err := Resolve(Flags{Endpoint: srv.URL + "/v1", Model: "m", Headers: []string{"X-Gateway-Token=" + token}}, func(string) string { return key })
	if err != nil {
		t.Fatal(err)
	}
	return NewClient(ep, NewTransport(TransportOptions{}))
}

// A 503 whose message holds a secret where the message is cut: the cut
// must not keep the secret's start. The truth: the message quoted is cut at
// 120 bytes and the header value begins at byte 101, so an unredacted cut
// would end in its first 19 characters.
func TestAHealthMessageCutInASecretKeepsNoPart(t *testing.T) {
	t.Parallel()
	const token = "gw-token-0123456789abcdef"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error": {"message": "` + strings.Repeat("x", 100) + " " + r.Header.Get("X-Gateway-Token") + ` is not ready"}}`))
	}))
	defer srv.Close()
	status, msg, err := healthAt(t, srv, "", token).Health(t.Context())
	if err != nil || status != http.StatusServiceUnavailable {
		t.Fatalf("status %d, err %v", status, err)
	}
	if strings.Contains(msg, token[:8]) || !strings.HasPrefix(msg, strings.Repeat("x", 100)+" ***") {
		t.Errorf("message %q: want the filler, then *** and no part of the token", msg)
	}
}
