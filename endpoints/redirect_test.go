package endpoints

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// headerLog records the secret headers each request to a server carried.
type headerLog struct {
	mu   sync.Mutex
	seen []string // "path Authorization=… X-Team=…" per request
}

func (l *headerLog) handler(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	l.seen = append(l.seen, r.URL.Path+" Authorization="+r.Header.Get("Authorization")+" X-Team="+r.Header.Get("X-Team"))
	l.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{}`)
}

func (l *headerLog) requests() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

// A redirect to another origin reaches it with no request of the
// client's: so neither the key nor a --header value goes there. The
// control shows why never following matters: Go's client, following,
// drops Authorization for another host name (golang/go#65065) but carries
// every other header, a custom key header included, and carries
// Authorization too to another port of the same host (it compares names,
// not ports).
func TestNoRequestCarriesTheSecretsToARedirectsHost(t *testing.T) {
	var other headerLog
	elsewhere := httptest.NewServer(http.HandlerFunc(other.handler))
	defer elsewhere.Close()
	redirectTo := func(base string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, base+r.URL.Path, http.StatusTemporaryRedirect)
		}))
	}
	otherPort := redirectTo(elsewhere.URL)
	defer otherPort.Close()
	otherName := redirectTo(strings.Replace(elsewhere.URL, "127.0.0.1", "localhost", 1))
	defer otherName.Close()

	// The control: the recorder sees what a following client carries.
	for _, front := range []string{otherPort.URL, otherName.URL} {
		req, _ := http.NewRequest(http.MethodGet, front+"/v1/models", nil)
		hostileEndpoint(front).Apply(req.Header)
		if resp, err := (&http.Client{}).Do(req); err == nil {
			resp.Body.Close()
		}
	}
	got := other.requests()
	if len(got) != 2 || !strings.Contains(got[0], hostileKey) || !strings.Contains(got[0], "X-Team="+hostileHeader) ||
		strings.Contains(got[1], hostileKey) || !strings.Contains(got[1], "X-Team="+hostileHeader) {
		t.Fatalf("Go's following client carried %q: want both secrets to the other port, X-Team alone to the other name", got)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := NewClient(hostileEndpoint(otherPort.URL), NewTransport(TransportOptions{}))
	var res StreamResult
	c.StreamAPI(ctx, APIChat, []byte(`{"model":"m","stream":true}`), StreamLimits{TTFT: 5 * time.Second}, nil, &res)
	res = StreamResult{}
	c.StreamUntilFirst(ctx, APICompletions, []byte(`{"model":"m","stream":true}`), StreamLimits{TTFT: 5 * time.Second}, &res)
	c.Post(ctx, "/chat/completions", []byte(`{}`))
	c.ListModels(ctx)
	c.ServerInfo(ctx)
	c.ContextLength(ctx)
	c.PromptLimit(ctx)
	c.Health(ctx)
	c.StartProfile(ctx)
	c.StopProfile(ctx)
	if got := other.requests(); len(got) != 2 {
		t.Fatalf("the redirect's host got %d requests from the client: %q", len(got)-2, got[2:])
	}
}
