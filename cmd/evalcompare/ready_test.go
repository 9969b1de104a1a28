package evalcompare

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glmbench/glmbench/cmd/cmdutil"
)

// inFlight counts the GET /v1/models requests two fake servers hold at
// once. Each holds its own until both are held, or until hold has passed:
// endpoints asked one after the other never overlap (at most 1, each held
// the whole hold), endpoints asked at once meet at 2 and are both let go.
type inFlight struct {
	mu        sync.Mutex
	now, most int
	met       chan struct{}
}

func (f *inFlight) server(t *testing.T, hold time.Duration) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			f.mu.Lock()
			f.now++
			if f.now > f.most {
				f.most = f.now
			}
			if f.now == 2 {
				close(f.met)
			}
			f.mu.Unlock()
			select {
			case <-f.met:
			case <-time.After(hold):
			}
			f.mu.Lock()
			f.now--
			f.mu.Unlock()
			io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
		case "/health":
		default:
			http.NotFound(w, r) // the comparison's requests: no verdict, exit 1
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// eval compare asks the endpoint and the reference whether they are ready
// at once, not one after the other: both of their first requests are in
// flight together. Asked in turn, each would be held the whole 3 s and the
// two would never overlap.
func TestCompareWaitsForBothEndpointsAtOnce(t *testing.T) {
	t.Parallel()
	f := &inFlight{met: make(chan struct{})}
	const hold = 3 * time.Second
	ep, ref := f.server(t, hold), f.server(t, hold)
	start := time.Now()
	code, _, stderr := execute(t, "--endpoint", ep, "--reference-endpoint", ref, "--limit", "1", "--tokens", "2", "--top-logprobs", "0",
		"--wait-ready", "30s", "--out", t.TempDir())
	f.mu.Lock()
	most := f.most
	f.mu.Unlock()
	if most != 2 {
		t.Errorf("at most %d readiness requests in flight at once (in %s); want 2, the endpoint's and the reference's together", most, time.Since(start).Round(time.Millisecond))
	}
	if code != cmdutil.ExitFailed || !strings.Contains(stderr, "against the reference") {
		t.Errorf("exit %d; want both opened and no verdict from servers that answer no completion (1):\n%s", code, stderr)
	}
}

// When one side cannot be opened the other's wait ends with it: a
// reference refused at once (bad input, exit 2) does not leave the command
// waiting out the endpoint's --wait-ready on a server that is never ready.
func TestAReferenceThatFailsEndsTheEndpointsWait(t *testing.T) {
	t.Parallel()
	never := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable) // a server still starting, for ever
	}))
	t.Cleanup(never.Close)
	refused := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(refused.Close)
	start := time.Now()
	code, _, stderr := execute(t, "--endpoint", never.URL+"/v1", "--model", "m", "--reference-endpoint", refused.URL+"/v1",
		"--wait-ready", "1m", "--out", t.TempDir())
	if code != cmdutil.ExitBadInput || !strings.Contains(stderr, "the endpoint refused the credentials (HTTP 401)") {
		t.Errorf("exit %d; want 2 saying the reference refused the credentials:\n%s", code, stderr)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("took %s: the endpoint's 1m wait was not ended by the reference's failure", took)
	}
}
