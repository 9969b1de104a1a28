package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/internal/syncbuf"
)

// The package's tests look again every 5 ms, not every 2 s.
func init() { readyPoll = 5 * time.Millisecond }

// await resolves url (the key given) and waits up to wait for it.
func await(t *testing.T, ctx context.Context, url, key string, wait time.Duration, warn *syncbuf.Buffer) (*endpoints.Endpoint, error) {
	t.Helper()
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: url}, func(string) string { return key })
	if err != nil {
		t.Fatal(err)
	}
	return ep, awaitReady(ctx, ep, time.Second, wait, warn)
}

// vllmProxy is a reverse proxy to a vLLM fake started with opts: the
// server behind a gateway, a late listener or an echo of the tests.
func vllmProxy(t *testing.T, opts endpointstest.Options) http.Handler {
	t.Helper()
	target, err := url.Parse(endpointstest.Start(t, endpointstest.VLLM, opts).URL)
	if err != nil {
		t.Fatal(err)
	}
	return httputil.NewSingleHostReverseProxy(target)
}

// closedAddr is a loopback address that nothing listens on: a port taken
// and let go.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// llama.cpp answers /v1/models at once while it loads its model, and 503
// "Loading model" on /health and every other route. The truth: the fake is
// ready after its third 503 on /health, so --wait-ready looks exactly
// three times before it returns, no request but /models and /health reaches
// the server while it loads, and the reason is said once, with the wait's
// end.
func TestWaitReadyWaitsForLlamaCppToLoadItsModel(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.LlamaCpp, endpointstest.Options{LoadingChecks: 3})
	var warn syncbuf.Buffer
	ep, err := await(t, context.Background(), p.URL, "", time.Minute, &warn)
	if err != nil {
		t.Fatalf("%v; said %q", err, warn.String())
	}
	health, other := p.LoadingAnswers()
	if health != 3 || other != 0 {
		t.Errorf("the server answered /health 503 %d times and other routes %d times while loading: want 3 and 0", health, other)
	}
	out := warn.String()
	if strings.Count(out, "waiting for") != 1 || !strings.Contains(out, "GET /health answered HTTP 503 (Loading model)") || !strings.Contains(out, ep.String()+" is ready, after ") {
		t.Errorf("said %q: want one waiting line naming the 503 and its message, and the ready line", out)
	}
	if strings.Count(out, "as the API base") != 1 {
		t.Errorf("said %q: want the /v1 note once, not once a look", out)
	}
}

// SGLang answers /health 503 with no body until its warm-up request has
// run; the wait says the status and what a bare 503 may mean (vLLM's dead
// engine answers the same).
func TestWaitReadyWaitsForSGLangsWarmUp(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.SGLang, endpointstest.Options{LoadingChecks: 2})
	var warn syncbuf.Buffer
	if _, err := await(t, context.Background(), p.BaseURL(), "", time.Minute, &warn); err != nil {
		t.Fatal(err)
	}
	if health, _ := p.LoadingAnswers(); health != 2 {
		t.Errorf("/health answered 503 %d times: want 2 (ready on the third)", health)
	}
	if out := warn.String(); !strings.Contains(out, "GET /health answered HTTP 503"+bare503+"\n") {
		t.Errorf("said %q: want the bare 503 named", out)
	}
}

// Without --wait-ready a loading server is not waited for: the warning names
// the 503 and the flag, the endpoint resolves (the probes then say what the
// server answers), and /health was asked once.
func TestWithoutWaitReadyALoadingServerIsAWarning(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.LlamaCpp, endpointstest.Options{LoadingChecks: 5})
	var warn syncbuf.Buffer
	if _, err := await(t, context.Background(), p.BaseURL(), "", 0, &warn); err != nil {
		t.Fatal(err)
	}
	if health, _ := p.LoadingAnswers(); health != 1 {
		t.Errorf("/health asked %d times: want 1", health)
	}
	if out := warn.String(); !strings.Contains(out, "warning: GET /health answered HTTP 503 (Loading model): the server says it is not ready yet; --wait-ready 10m waits for it") {
		t.Errorf("said %q", out)
	}
}

// A vLLM whose engine died still serves /v1/models, and answers /health a
// bare 503 (EngineDeadError), as SGLang does while warming up: without
// --wait-ready the warning says what either means, so a user does not wait on
// a server that only a restart mends.
func TestABare503OnHealthSaysItMayBeADeadVLLMEngine(t *testing.T) {
	t.Parallel()
	models := `{"object":"list","data":[{"id":"m","object":"model","owned_by":"vllm","max_model_len":4096}]}`
	if out := unavailableWarning(t, models, ""); !strings.Contains(out, "warning: GET /health answered HTTP 503 with no body (SGLang before its warm-up; vLLM only once its engine has died, which only a restart mends)") {
		t.Errorf("said %q", out)
	}
}

// trtllm-serve's /health 503 names its dead executor in its own words; the
// warning says no wait mends it.
func TestTRTLLMsUnavailableHealthSaysOnlyARestartMendsIt(t *testing.T) {
	t.Parallel()
	models := `{"object":"list","data":[{"id":"m","object":"model","owned_by":"tensorrt_llm"}]}`
	if out := unavailableWarning(t, models, "LLM is unavailable. Please check the server logs for more details."); !strings.Contains(out, "(LLM is unavailable. Please check the server logs for more details.): trtllm-serve's executor has died, which only a restart mends") {
		t.Errorf("said %q", out)
	}
}

// unavailableWarning is what await, without --wait-ready, warns of a server
// that lists models as /v1/models and answers /health 503 with body.
func unavailableWarning(t *testing.T, models, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			fmt.Fprint(w, models)
		case "/health":
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, body)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	var warn syncbuf.Buffer
	if _, err := await(t, context.Background(), srv.URL+"/v1", "", 0, &warn); err != nil {
		t.Fatal(err)
	}
	return warn.String()
}

// vLLM listens only once its engine is up. The truth: a port refused at
// first, then served (by a proxy to vLLM's fake) once the wait has said it
// is waiting; the wait returns with the model, having named the refusal.
func TestWaitReadyWaitsForAPortThatIsNotListeningYet(t *testing.T) {
	t.Parallel()
	proxy := vllmProxy(t, endpointstest.Options{Model: "org/late-7b"})
	addr := closedAddr(t)
	var warn syncbuf.Buffer
	done := make(chan error, 1)
	var ep *endpoints.Endpoint
	go func() {
		var err error
		ep, err = await(t, context.Background(), "http://"+addr+"/v1", "", time.Minute, &warn)
		done <- err
	}()
	for !strings.Contains(warn.String(), "waiting for") {
		select {
		case err := <-done:
			t.Fatalf("returned %v before the port listened; said %q", err, warn.String())
		case <-time.After(time.Millisecond):
		}
	}
	late, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	srv := &http.Server{Handler: proxy}
	go srv.Serve(late)
	defer srv.Close()
	if err := <-done; err != nil {
		t.Fatalf("%v; said %q", err, warn.String())
	}
	if ep.Model != "org/late-7b" || !strings.Contains(warn.String(), "connection refused") {
		t.Errorf("model %q, said %q: want the served model and the refusal named", ep.Model, warn.String())
	}
}

// startingGateway answers /v1/models 503 (an ingress with no ready pod:
// HTML) its first n times, then passes every request to next.
func startingGateway(t *testing.T, n int64, next http.Handler) (*httptest.Server, *atomic.Int64) {
	var asked atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" && asked.Add(1) <= n {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("<html><body>no healthy upstream</body></html>"))
			return
		}
		next.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s, &asked
}

// A gateway's 503 on /models is waited on with --wait-ready (ready on the
// fourth look), and without it is said with the hint, at once.
func TestAGateways503OnModelsIsWaitedOn(t *testing.T) {
	t.Parallel()
	proxy := vllmProxy(t, endpointstest.Options{})
	gw, asked := startingGateway(t, 3, proxy)
	var warn syncbuf.Buffer
	if _, err := await(t, context.Background(), gw.URL+"/v1", "", time.Minute, &warn); err != nil {
		t.Fatal(err)
	}
	if asked.Load() != 4 || !strings.Contains(warn.String(), "GET /models answered HTTP 503") {
		t.Errorf("/v1/models asked %d times, said %q: want 4 and the 503 named", asked.Load(), warn.String())
	}
	gw2, asked2 := startingGateway(t, 1, proxy)
	_, err := await(t, context.Background(), gw2.URL+"/v1", "", 0, &warn)
	if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), "HTTP 503") || !strings.Contains(err.Error(), "--wait-ready 10m waits for it") || asked2.Load() != 1 {
		t.Errorf("without the flag: %v after %d asks; want bad input at once, with the hint", err, asked2.Load())
	}
}

// What waiting cannot change is said at once, as without the flag: a
// refused key (asked once) and a 404 with no model to fall back on.
func TestWaitReadyDoesNotWaitOnARefusal(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{APIKey: "sk-right-0123456789"})
	var warn syncbuf.Buffer
	start := time.Now()
	_, err := await(t, context.Background(), p.BaseURL(), "sk-wrong-9876543210", time.Hour, &warn)
	if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), "refused the credentials (HTTP 401)") {
		t.Errorf("%v: want the credentials refused", err)
	}
	if n := p.Requests("GET /v1/models"); n != 1 || strings.Contains(warn.String(), "waiting") {
		t.Errorf("/v1/models asked %d times, said %q: want once, and no wait", n, warn.String())
	}
	_, err = await(t, context.Background(), p.URL+"/openai", "sk-right-0123456789", time.Hour, &warn)
	if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("%v: want the 404", err)
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("took %s: the refusals were waited on", time.Since(start))
	}
}

// A port that never listens: at the end of the wait, bad input naming the
// flag, its value and the last reason.
func TestWaitReadyEndsWithTheLastReason(t *testing.T) {
	t.Parallel()
	var warn syncbuf.Buffer
	_, err := await(t, context.Background(), "http://"+closedAddr(t)+"/v1", "", 50*time.Millisecond, &warn)
	if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), "was not ready within --wait-ready 50ms: ") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("%v: want bad input naming the wait and the refusal", err)
	}
}

// Ctrl-C during the wait ends it with the interrupt (exit 130), not with
// the endpoint's fault.
func TestCtrlCEndsTheWait(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.SGLang, endpointstest.Options{LoadingChecks: 1 << 30})
	ctx, cancel := context.WithCancelCause(context.Background())
	var warn syncbuf.Buffer
	go func() {
		for !strings.Contains(warn.String(), "waiting for") {
			time.Sleep(time.Millisecond)
		}
		cancel(cmdutil.ErrInterrupted)
	}()
	_, err := await(t, ctx, p.BaseURL(), "", time.Hour, &warn)
	if !errors.Is(err, cmdutil.ErrInterrupted) || cmdutil.ExitCode(err) != cmdutil.ExitInterrupted {
		t.Errorf("%v: want the interrupt", err)
	}
}

// A readiness answer that echoes the request's credentials says none of
// them: the header value is redacted from the message quoted, and the key
// is not sent to /health at all.
func TestAHealthMessageNeverShowsTheKey(t *testing.T) {
	t.Parallel()
	proxy := vllmProxy(t, endpointstest.Options{})
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error": {"message": "not ready for ` + r.Header.Get("Authorization") + ` via ` + r.Header.Get("X-Gateway-Token") + `"}}`))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer echo.Close()
	const key, token = "sk-secret-0123456789abcdef", "gw-token-9876543210fedcba"
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: echo.URL + "/v1", Headers: []string{"X-Gateway-Token=" + token}}, func(string) string { return key })
	if err != nil {
		t.Fatal(err)
	}
	var warn syncbuf.Buffer
	if err := awaitReady(context.Background(), ep, time.Second, 0, &warn); err != nil {
		t.Fatal(err)
	}
	if out := warn.String(); strings.Contains(out, key) || strings.Contains(out, token) || !strings.Contains(out, "not ready for via ***") {
		t.Errorf("said %q: want the message with no key sent and the header value redacted", out)
	}
}

// Ctrl-C while the readiness route is being asked (SGLang's /health takes a
// second or more once it is up) ends the wait with the interrupt: the
// unanswered /health is no verdict that the endpoint is ready. The truth:
// /health never answers before the interrupt, so nothing said it is ready.
func TestCtrlCDuringHealthIsTheInterrupt(t *testing.T) {
	t.Parallel()
	proxy := vllmProxy(t, endpointstest.Options{})
	asked := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			asked <- struct{}{}
			<-r.Context().Done()
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer srv.Close()
	for _, wait := range []time.Duration{time.Hour, 0} {
		ctx, cancel := context.WithCancelCause(context.Background())
		go func() {
			<-asked
			cancel(cmdutil.ErrInterrupted)
		}()
		var warn syncbuf.Buffer
		_, err := await(t, ctx, srv.URL+"/v1", "", wait, &warn)
		if !errors.Is(err, cmdutil.ErrInterrupted) || strings.Contains(warn.String(), "is ready") {
			t.Errorf("--wait-ready %s: %v, said %q: want the interrupt", wait, err, warn.String())
		}
	}
}

// Behind Cloudflare, an origin not up yet is 521 (it refused the
// connection), 522 (it timed out), 523 (unreachable) or 530 (a Tunnel not
// connected yet): a server still starting, as a 502 is. The truth: the
// gateway answers each once, then passes requests on; with --wait-ready the
// fifth look is ready, and without it the 521 is said with the hint.
func TestCloudflaresOriginDownIsWaitedOn(t *testing.T) {
	t.Parallel()
	proxy := vllmProxy(t, endpointstest.Options{})
	codes := []int{521, 522, 523, 530}
	var asked atomic.Int64
	cf := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := asked.Add(1) - 1; r.URL.Path == "/v1/models" && n < int64(len(codes)) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(codes[n])
			w.Write([]byte("<html><body>Web server is down</body></html>"))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer cf.Close()
	var warn syncbuf.Buffer
	if _, err := await(t, context.Background(), cf.URL+"/v1", "", time.Minute, &warn); err != nil {
		t.Fatalf("%v; said %q", err, warn.String())
	}
	if strings.Count(warn.String(), "waiting for") != len(codes) {
		t.Errorf("said %q: want one waiting line for each of %v", warn.String(), codes)
	}
	asked.Store(0)
	_, err := await(t, context.Background(), cf.URL+"/v1", "", 0, &warn)
	if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), "HTTP 521") || !strings.Contains(err.Error(), "--wait-ready 10m waits for it") {
		t.Errorf("without the flag: %v; want bad input naming the 521, with the hint", err)
	}
}

// A server that takes the connection and never answers (a port-forward to
// a pod still loading, a wedged proxy): a look after the first ends with the
// wait, not a look's own limit (the connect timeout plus 20 s, 21 s here).
// The truth: /v1/models answers 503 once, then hangs until the client gives
// up; the wait of 200 ms has ended long before 21 s, so the hung look is
// cancelled well inside 10 s, and the error names the wait, the 503 and the
// look left unanswered.
func TestAHungLookEndsWithTheWait(t *testing.T) {
	t.Parallel()
	var asked atomic.Int64
	hung := make(chan time.Duration, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if asked.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		began := time.Now()
		<-r.Context().Done()
		hung <- time.Since(began)
	}))
	defer srv.Close()
	var warn syncbuf.Buffer
	_, err := await(t, context.Background(), srv.URL+"/v1", "", 200*time.Millisecond, &warn)
	if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), "was not ready within --wait-ready 200ms: GET /models answered HTTP 503 (then no answer before the wait ended)") {
		t.Errorf("%v: want bad input naming the wait, the 503 and the look left unanswered", err)
	}
	if d := <-hung; d > 10*time.Second {
		t.Errorf("the hung look was cancelled after %s: want it ended with the wait", d)
	}
}

// An http:// URL given for a TLS server that answers a plain request with
// an alert (Python's ssl, as uvicorn serves vLLM's --ssl-keyfile): no HTTP
// comes back, and waiting will not change that. The truth: a listener that
// writes a TLS alert record to every connection; the wait returns at once,
// asking whether the endpoint is https.
func TestAPlainRequestToATLSServerIsNotWaitedOn(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var conns atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Write([]byte{0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x28}) // alert: fatal, handshake_failure
			c.Close()
		}
	}()
	var warn syncbuf.Buffer
	_, err = await(t, context.Background(), "http://"+l.Addr().String()+"/v1", "", 20*time.Second, &warn)
	if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), "is it https://?") || strings.Contains(warn.String(), "waiting") {
		t.Errorf("%v, said %q: want bad input at once asking about https", err, warn.String())
	}
}

// A host name that does not resolve is most likely a typo: without
// --wait-ready its error has no hint at waiting (with it, it is waited on,
// as a compose service's name resolves only once its container runs).
func TestNoSuchHostIsNoServerStarting(t *testing.T) {
	t.Parallel()
	err := &url.Error{Op: "Get", URL: "http://glm-serevr:8000/v1/models", Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "glm-serevr", IsNotFound: true}}}
	if !noSuchHost(err) || noSuchHost(errors.New("dial tcp 127.0.0.1:1: connect: connection refused")) {
		t.Errorf("noSuchHost: a wrapped not-found DNS error is one, a refused connection is not")
	}
}

// A 401 where the credential is a header's (Azure's api-key through
// --header-env) names the headers sent, by name, beside the key's variable.
func TestARefusalNamesTheHeadersSent(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{APIKey: "sk-right-0123456789"})
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: p.BaseURL(), HeaderEnv: []string{"api-key=AZ"}}, func(v string) string {
		return map[string]string{"AZ": "azure-value-0123456789"}[v]
	})
	if err != nil {
		t.Fatal(err)
	}
	err = resolveModel(context.Background(), ep, time.Second, io.Discard)
	if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), "and the headers sent (Api-Key)") || strings.Contains(err.Error(), "azure-value") {
		t.Errorf("%v: want the header named, not its value", err)
	}
}
