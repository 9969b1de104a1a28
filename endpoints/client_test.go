package endpoints_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports/schema"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// badInputLine reports whether err is one line of bad input that says each
// of says, failing the test, with what it was given, where it is not.
func badInputLine(t testing.TB, what any, err error, says ...string) bool {
	t.Helper()
	if err == nil || !badinput.Is(err) || strings.Contains(err.Error(), "\n") {
		t.Errorf("%v: %v, want one line of bad input", what, err)
		return false
	}
	ok := true
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%v: %q, want it to say %q", what, err, s)
			ok = false
		}
	}
	return ok
}

// endpointOf is f resolved with the environment vars (nil: none), failing
// the test where Resolve refuses it.
func endpointOf(t testing.TB, f endpoints.Flags, vars map[string]string) *endpoints.Endpoint {
	t.Helper()
	ep, err := endpoints.Resolve(f, env(vars))
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// clientOf is a client of ep over a one-connection transport closed as the
// test ends.
func clientOf(t testing.TB, ep *endpoints.Endpoint) *endpoints.Client {
	tr := endpoints.NewTransport(endpoints.TransportOptions{Conns: 1})
	t.Cleanup(tr.Close)
	return endpoints.NewClient(ep, tr)
}

// modelClient is clientOf the endpoint base (an API base, …/v1) serving
// model, with no key.
func modelClient(t testing.TB, base, model string) *endpoints.Client {
	t.Helper()
	return clientOf(t, endpointOf(t, endpoints.Flags{Endpoint: base, Model: model}, nil))
}

func TestResolveFromFlags(t *testing.T) {
	t.Parallel()
	ep, err := endpoints.Resolve(endpoints.Flags{
		Endpoint: "https://api.example.com/v1/", Model: "m",
		Headers: []string{"X-Team=secret-team-token", "x-other=v=with=equals"},
	}, env(map[string]string{"OPENAI_API_KEY": "sk-supersecret"}))
	if err != nil {
		t.Fatal(err)
	}
	if ep.BaseURL != "https://api.example.com/v1" || ep.Model != "m" || !ep.HasKey() {
		t.Fatalf("%+v", ep)
	}
	if got := strings.Join(ep.HeaderNames(), ","); got != "X-Team,X-Other" {
		t.Fatalf("header names %q", got)
	}
	h := http.Header{}
	ep.Apply(h)
	if h.Get("Authorization") != "Bearer sk-supersecret" || h.Get("X-Other") != "v=with=equals" {
		t.Fatalf("headers %v", h)
	}
	msg := ep.Redact("server said: bad key sk-supersecret for team secret-team-token")
	if strings.Contains(msg, "supersecret") || strings.Contains(msg, "secret-team-token") {
		t.Fatalf("not redacted: %s", msg)
	}
	if s := fmt.Sprint(ep); strings.Contains(s, "secret") {
		t.Fatalf("String leaks: %s", s)
	}
}

func TestResolveFromFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "endpoints.yaml")
	os.WriteFile(file, []byte(`endpoints:
  - name: local
    base_url: http://127.0.0.1:30000/v1
    model: glm-5
  - name: hosted
    base_url: https://api.example.com/v1
    api_key_env: HOSTED_KEY
    headers:
      X-Org: org-123
`), 0o644)
	ep, err := endpoints.Resolve(endpoints.Flags{File: file, Name: "hosted"}, env(map[string]string{"HOSTED_KEY": "k-hosted"}))
	if err != nil {
		t.Fatal(err)
	}
	if ep.Name != "hosted" || ep.BaseURL != "https://api.example.com/v1" || ep.APIKeyEnv != "HOSTED_KEY" || !ep.HasKey() || ep.HeaderNames()[0] != "X-Org" {
		t.Fatalf("%+v", ep)
	}
	ep, err = endpoints.Resolve(endpoints.Flags{File: file, Name: "local", Model: "override"}, env(nil))
	if err != nil || ep.Model != "override" || ep.HasKey() {
		t.Fatalf("%+v %v", ep, err)
	}
}

func TestResolveRejectsBadInputInOneLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	good := write("good.yaml", "endpoints:\n  - name: a\n    base_url: http://x/v1\n")
	for _, tc := range []struct {
		name string
		f    endpoints.Flags
		want string
	}{
		{"malformed URL", endpoints.Flags{Endpoint: "http://[::1"}, "malformed"},
		{"URL without scheme", endpoints.Flags{Endpoint: "localhost:30000/v1"}, "scheme"},
		{"URL without host", endpoints.Flags{Endpoint: "http:///v1"}, "no host"},
		{"URL with a query", endpoints.Flags{Endpoint: "http://h/v1?key=abc"}, "without query"},
		{"header without value", endpoints.Flags{Endpoint: "http://h/v1", Headers: []string{"X-Key"}}, "NAME=VALUE"},
		{"header with a bad name", endpoints.Flags{Endpoint: "http://h/v1", Headers: []string{"X Key=v"}}, "not a valid"},
		{"explicit key variable unset", endpoints.Flags{Endpoint: "http://h/v1", APIKeyEnv: "NOPE", APIKeyEnvSet: true}, "NOPE"},
		{"missing file", endpoints.Flags{File: filepath.Join(dir, "none.yaml"), Name: "a"}, "no such file"},
		{"malformed YAML", endpoints.Flags{File: write("bad.yaml", "endpoints: [name: a\n"), Name: "a"}, "bad.yaml"},
		{"unknown key in YAML", endpoints.Flags{File: write("unk.yaml", "endpoints:\n  - name: a\n    base_url: http://x/v1\n    modle: m\n"), Name: "a"}, "modle"},
		{"unknown name", endpoints.Flags{File: good, Name: "b"}, `no endpoint named "b" (it has: a)`},
		{"file without name", endpoints.Flags{File: good}, "--name"},
		{"both URL and file", endpoints.Flags{File: good, Name: "a", Endpoint: "http://h/v1"}, "not both"},
		{"duplicate names", endpoints.Flags{File: write("dup.yaml", "endpoints:\n  - {name: a, base_url: http://x/v1}\n  - {name: a, base_url: http://y/v1}\n"), Name: "a"}, "twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := endpoints.Resolve(tc.f, env(nil))
			badInputLine(t, tc.name, err, tc.want)
		})
	}
}

func TestListModelsAndItsErrors(t *testing.T) {
	t.Parallel()
	srv := endpointstest.New(nil, func(s *endpointstest.Server) { s.Models = []string{"glm-5", "other"} })
	defer srv.Close()
	ids, err := modelClient(t, srv.BaseURL(), "").ListModels(context.Background())
	if err != nil || strings.Join(ids, ",") != "glm-5,other" {
		t.Fatalf("%v %v", ids, err)
	}
	locked := endpointstest.New(nil, func(s *endpointstest.Server) { s.ModelsStatus = 401 })
	defer locked.Close()
	if _, err := modelClient(t, locked.BaseURL(), "").ListModels(context.Background()); endpoints.HTTPStatus(err) != 401 {
		t.Fatalf("status of %v = %d", err, endpoints.HTTPStatus(err))
	}
}

// countingServer starts a fake endpoint that counts the connections it
// accepts in conns.
func countingServer(t *testing.T, conns *atomic.Int64) *endpointstest.Server {
	t.Helper()
	srv := endpointstest.New(nil, func(s *endpointstest.Server) {
		s.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
	})
	t.Cleanup(srv.Close)
	return srv
}

func TestStreamsReuseKeepAliveConnections(t *testing.T) {
	t.Parallel()
	var conns atomic.Int64
	c := modelClient(t, countingServer(t, &conns).BaseURL(), "")
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"x-000001 hi"}],"max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`)
	for range 5 {
		var res endpoints.StreamResult
		c.StreamAPI(context.Background(), endpoints.APIChat, body, endpoints.StreamLimits{TTFT: 5 * time.Second}, nil, &res)
		if res.Class != "" || !res.Done || res.CompletionTokens != 3 || len(res.Events) != 3 {
			t.Fatalf("%+v", res)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("5 sequential streams used %d connections, want 1", n)
	}
}

func TestConnectFailuresAreClassed(t *testing.T) {
	t.Parallel()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close() // nothing listens here now
	ep, _ := endpoints.Resolve(endpoints.Flags{Endpoint: "http://" + addr + "/v1"}, env(map[string]string{"OPENAI_API_KEY": "sk-hidden-key"}))
	c := endpoints.NewClient(ep, endpoints.NewTransport(endpoints.TransportOptions{Conns: 1, ConnectTimeout: time.Second}))
	var res endpoints.StreamResult
	c.StreamAPI(context.Background(), endpoints.APIChat, []byte(`{}`), endpoints.StreamLimits{}, nil, &res)
	if res.Class != schema.Connect || res.Status != 0 || strings.Contains(res.Detail, "sk-hidden") {
		t.Fatalf("%+v", res)
	}
}

// BenchmarkClientStream measures the whole client path over loopback HTTP:
// a fake server streams 256 one-token events per request and the client
// stamps and parses them. Reports events/s and allocations per event.
func BenchmarkClientStream(b *testing.B) {
	srv := endpointstest.New(nil)
	defer srv.Close()
	c := modelClient(b, srv.BaseURL(), "")
	const n = 256
	body := []byte(fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"x-000001 hi"}],"max_tokens":%d,"stream":true,"stream_options":{"include_usage":true}}`, n))
	res := endpoints.StreamResult{Events: make([]time.Duration, 0, n)}
	// Client and fake server share the process, so allocs/event counts both sides.
	endpoints.LoopEvents(b, n, func() int {
		res.Reset()
		c.StreamAPI(context.Background(), endpoints.APIChat, body, endpoints.StreamLimits{TTFT: 10 * time.Second, Stall: 10 * time.Second}, nil, &res)
		return len(res.Events)
	})
}

func TestPoolWarmsTheConnectionsABurstUses(t *testing.T) {
	t.Parallel()
	var conns atomic.Int64
	srv := countingServer(t, &conns)
	ep, _ := endpoints.Resolve(endpoints.Flags{Endpoint: srv.BaseURL()}, env(nil))
	const n = 40
	pool := endpoints.NewPool(ep, endpoints.TransportOptions{Conns: n, ConnectTimeout: 2 * time.Second})
	defer pool.Close()
	pool.Warm(context.Background(), n)
	// The server counts a connection when it accepts it, which may trail the dial.
	deadline := time.Now().Add(5 * time.Second)
	for conns.Load() < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := conns.Load(); got != n {
		t.Fatalf("warmed %d connections, want %d", got, n)
	}
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"x-000001 hi"}],"max_tokens":2,"stream":true}`)
	done := make(chan endpoints.StreamResult, n)
	for i := range n {
		st := pool.Client(i).PrepareChat(context.Background(), body, endpoints.StreamLimits{TTFT: 5 * time.Second})
		go func() {
			var res endpoints.StreamResult
			st.Run(nil, &res)
			done <- res
		}()
	}
	for range n {
		if res := <-done; res.Class != "" || !res.Done {
			t.Fatalf("%+v", res)
		}
	}
	if got := conns.Load(); got != n {
		t.Fatalf("a burst of %d on %d warmed connections opened %d in all", n, n, got)
	}
}
