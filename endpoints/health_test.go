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

// /health is public on every server that has one (llama.cpp, vLLM, SGLang,
// TGI), while a LiteLLM proxy's /health, given a key it accepts, calls
// every model behind it for real. The truth: the request carries the extra
// headers (a gateway's routing or its own credential) but no API key.
func TestHealthSendsNoAPIKey(t *testing.T) {
	t.Parallel()
	seen := make(chan [2]string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			seen <- [2]string{r.Header.Get("Authorization"), r.Header.Get("X-Gateway-Token")}
		}
	}))
	defer srv.Close()
	status, _, err := healthAt(t, srv, "sk-user-key-0123456789", "gw-token-0123456789").Health(t.Context())
	if err != nil || status != http.StatusOK {
		t.Fatalf("status %d, err %v", status, err)
	}
	h := <-seen
	if auth, token := h[0], h[1]; auth != "" || token != "gw-token-0123456789" {
		t.Errorf("Authorization %q, X-Gateway-Token %q: want none, and the header", auth, token)
	}
}

// A 503 body longer than what Health reads (4 KiB), a secret across that
// cut: the part read must not spell its start. The truth: blanks fill the
// body up to 14 bytes before the cut, so what is read ends in the token's
// first 14 characters, and the message (blanks collapsed) would be just them.
func TestAHealthBodyCutInASecretKeepsNoPart(t *testing.T) {
	t.Parallel()
	const token = "gw-token-0123456789abcdef"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(strings.Repeat(" ", 4<<10-14) + r.Header.Get("X-Gateway-Token") + " and more"))
	}))
	defer srv.Close()
	status, msg, err := healthAt(t, srv, "", token).Health(t.Context())
	if err != nil || status != http.StatusServiceUnavailable {
		t.Fatalf("status %d, err %v", status, err)
	}
	if strings.Contains(msg, token[:8]) {
		t.Errorf("message %q: want no part of the token", msg)
	}
}
