package target

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints"
)

// A /models that redirects elsewhere (a gateway moved, a proxy's login
// page) is bad input naming the Location's origin, and nothing is sent
// there: following it would carry the key and the headers to that host.
func TestAModelsRedirectIsBadInputNamingItsOriginAndNotFollowed(t *testing.T) {
	t.Parallel()
	var heard atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		heard.Add(1)
		w.Write([]byte(`{"object":"list","data":[{"id":"m"}]}`))
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/v1/models?token=in-the-path", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: srv.URL + "/v1"}, func(string) string { return "sk-never-leaves-0123" })
	if err != nil {
		t.Fatal(err)
	}
	var warn bytes.Buffer
	err = resolveModel(context.Background(), ep, time.Second, &warn)
	if cmdutil.ExitCode(err) != cmdutil.ExitBadInput {
		t.Fatalf("exit %d (%v), want bad input", cmdutil.ExitCode(err), err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "HTTP 307") || !strings.Contains(msg, other.URL) || strings.Contains(msg, "token=") || strings.Contains(msg, "\n") {
		t.Errorf("message %q: want one line with the status and the origin only", msg)
	}
	if n := heard.Load(); n != 0 {
		t.Errorf("the other origin heard %d requests", n)
	}
}
