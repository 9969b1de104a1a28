package target

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/internal/badinput"
)

// readyPoll is how long --wait-ready waits between two looks at an endpoint
// that is not ready (vLLM's bench waits 5 s; a server's load is minutes, so
// 2 s costs nothing and starts the run sooner). Tests shorten it.
var readyPoll = 2 * time.Second

// notReady is a look's answer for an endpoint that answers as a server still
// starting does: no connection at all (vLLM listens only once its engine is
// up; a Kubernetes Service has no ready pod yet), a gateway's 502, 503 or 504
// on /models, or 503 on /health (llama.cpp loading its model, SGLang before
// its warm-up request). Only --wait-ready gets one: it looks again.
type notReady struct {
	// why is what the endpoint did, in one line.
	why string
}

func (e *notReady) Error() string { return e.why }

// starting reports whether an HTTP status on /models is what a proxy or a
// server says while what is behind it is not up yet: 502, 503, 504, and
// Cloudflare's own for an origin it cannot reach (521 refused, 522 timed
// out, 523 unreachable, 530 a Tunnel not connected).
func starting(status int) bool {
	switch status {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, 521, 522, 523, 530:
		return true
	}
	return false
}

// startingHint is the clause an error or warning about a server that may be
// starting ends with (status 0: no answer at all); "" for other statuses.
func startingHint(status int) string {
	if status != 0 && !starting(status) {
		return ""
	}
	return " (a server still starting? --wait-ready 10m waits for it)"
}

// plainToTLS reports whether err is an http:// endpoint answering with
// bytes that are no HTTP response: a TLS server's alert (uvicorn with
// --ssl-keyfile, as vLLM serves https, answers a plain request so), which
// waiting will not change. Go's transport says it only in its text
// ("malformed HTTP response"); a Go or nginx TLS server answers a plain
// request with a 400 instead, an answer said as such.
func plainToTLS(ep *endpoints.Endpoint, err error) bool {
	return strings.HasPrefix(ep.BaseURL, "http:") && strings.Contains(err.Error(), "malformed HTTP response")
}

// ended is ctx's cause when it ended other than by its own deadline (a
// Ctrl-C, the caller's end), nil otherwise: an error a look got then is
// not the endpoint's answer.
func ended(ctx context.Context) error {
	if cause := context.Cause(ctx); cause != context.DeadlineExceeded {
		return cause
	}
	return nil
}

// noSuchHost reports whether err is a host name that did not resolve.
func noSuchHost(err error) bool {
	var dns *net.DNSError
	return errors.As(err, &dns) && dns.IsNotFound
}

// look is one look at an endpoint: its models (listModels), then its
// readiness route. A 503 there is a *notReady when waiting, and a warning
// otherwise (the run goes on: a /health that some proxy answers is not the
// server's word). Any other answer, or none, is no verdict; ctx ending
// (Ctrl-C) while it asks is ctx's cause.
func look(ctx context.Context, ep *endpoints.Endpoint, connect time.Duration, warn io.Writer, waiting bool) error {
	if err := listModels(ctx, ep, connect, warn, waiting); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, connect+20*time.Second)
	defer cancel()
	tr := endpoints.NewTransport(endpoints.TransportOptions{Conns: 1, ConnectTimeout: connect, Trust: ep.Trust})
	defer tr.Close()
	status, msg, err := endpoints.NewClient(ep, tr).Health(ctx)
	if cause := ended(ctx); err != nil && cause != nil {
		return cause // Ctrl-C while asking: no verdict that it is ready
	}
	if err != nil || status != http.StatusServiceUnavailable {
		return nil
	}
	why := "GET /health answered HTTP 503"
	switch {
	case msg == "":
		why += bare503
	case strings.HasPrefix(msg, trtllmUnavailable):
		why += " (" + msg + "): trtllm-serve's executor has died, which only a restart mends"
	default:
		why += " (" + msg + ")"
	}
	if waiting {
		return &notReady{why: why}
	}
	fmt.Fprintf(warn, "glmbench: warning: %s: the server says it is not ready yet; --wait-ready 10m waits for it\n", why)
	return nil
}

// bare503 is what a bare 503 on /health may mean: SGLang answers so before
// its warm-up request has run (python/sglang/srt/entrypoints/http_server.py),
// and vLLM only once its engine has died, EngineDeadError
// (vllm/entrypoints/serve/instrumentator/health.py; while its engine loads
// it does not listen at all), which only a restart mends.
const bare503 = " with no body (SGLang before its warm-up; vLLM only once its engine has died, which only a restart mends)"

// trtllmUnavailable starts trtllm-serve's /health 503: its executor is
// unhealthy (tensorrt_llm/serve/openai_server.py); while it loads its
// model it does not listen.
const trtllmUnavailable = "LLM is unavailable."

// awaitReady is resolveModel for --wait-ready wait: while the endpoint
// answers as a server still starting, it says why on warn (each new reason
// once) and looks again every readyPoll, until it is ready, answers
// something that waiting will not change (a refused key, a 404, a TLS
// failure: said at once, as without the flag), wait has passed (bad input
// naming the last reason; a look after the first ends with the wait), or
// ctx ends (its cause: Ctrl-C exits 130). wait 0 is resolveModel.
func awaitReady(ctx context.Context, ep *endpoints.Endpoint, connect, wait time.Duration, warn io.Writer) error {
	if wait <= 0 {
		return resolveModel(ctx, ep, connect, warn)
	}
	start := time.Now()
	once := &onceLines{w: warn}
	// The first look has its own limit, as without the flag; the later
	// ones end with the wait, so a server that takes the connection and
	// never answers does not keep it a look's limit past its end.
	bounded, cancel := context.WithDeadline(ctx, start.Add(wait))
	defer cancel()
	lookCtx := ctx
	last := "" // the last look's reason, said on warn
	for {
		err := look(lookCtx, ep, connect, once, true)
		lookCtx = bounded
		var nr *notReady
		if !errors.As(err, &nr) {
			if err == nil && last != "" {
				fmt.Fprintf(warn, "glmbench: %s is ready, after %s\n", ep, time.Since(start).Round(time.Second))
			}
			return err
		}
		if errors.Is(bounded.Err(), context.DeadlineExceeded) && last != "" {
			// The wait ended during this look: the last answer is the reason.
			nr.why = last + " (then no answer before the wait ended)"
		}
		left := wait - time.Since(start)
		if left <= 0 {
			return notReadyWithin(ep, wait, nr.why)
		}
		if nr.why != last {
			fmt.Fprintf(warn, "glmbench: waiting for %s to be ready (up to %s more): %s\n", ep, left.Round(time.Second), nr.why)
		}
		last = nr.why
		t := time.NewTimer(min(readyPoll, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
		}
		if time.Since(start) >= wait {
			// A look now would end as it starts.
			return notReadyWithin(ep, wait, last)
		}
	}
}

// notReadyWithin is awaitReady's error at the end of the wait, naming why.
func notReadyWithin(ep *endpoints.Endpoint, wait time.Duration, why string) error {
	return badinput.Errorf("the endpoint %s was not ready within --wait-ready %s: %s", ep, wait, why)
}

// onceLines writes each distinct line once: a look's own notes and warnings
// (the /v1 base found, /models' status) are said on the first look only.
type onceLines struct {
	w    io.Writer
	seen map[string]bool
}

func (o *onceLines) Write(p []byte) (int, error) {
	if o.seen == nil {
		o.seen = map[string]bool{}
	}
	for _, line := range bytes.SplitAfter(p, []byte("\n")) {
		if len(line) == 0 || o.seen[string(line)] {
			continue
		}
		o.seen[string(line)] = true
		if _, err := o.w.Write(line); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}
