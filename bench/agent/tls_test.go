package agent

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/internal/syncbuf"
	"github.com/glmbench/glmbench/reports/schema"
)

// tlsAgents starts one agent server per trust, each writing to its own
// stderr buffer.
func tlsAgents(t *testing.T, trusts ...endpoints.Trust) ([]*Conn, []*syncbuf.Buffer) {
	t.Helper()
	var addrs []string
	var errs []*syncbuf.Buffer
	for k, tr := range trusts {
		errOut := &syncbuf.Buffer{}
		s := NewServer(ServerOptions{Name: "agent-" + string(rune('a'+k)), Getenv: func(string) string { return "" }, Trust: tr, ErrOut: errOut})
		srv := httptest.NewServer(s.Handler())
		t.Cleanup(srv.Close)
		addrs = append(addrs, strings.TrimPrefix(srv.URL, "http://"))
		errs = append(errs, errOut)
	}
	conns, err := Dial(context.Background(), addrs, "")
	if err != nil {
		t.Fatal(err)
	}
	return conns, errs
}

// vLLM's fake behind httptest's private CA, the coordinator trusting it
// (flags, resolved as run resolves them). The CA file does not travel: an
// agent given it (its own --ca-cert) sends its share to completion, one
// without it answers the prepare with x509's reason and both fixes, is
// counted lost with that reason, and sends nothing (its share not_sent).
// The coordinator's --insecure travels: both agents then complete, and
// the one whose trust it overrode says so once on its stderr over two
// phases.
func TestAnAgentVerifiesWithItsOwnCAOrTheCoordinatorsInsecure(t *testing.T) {
	t.Parallel()
	_, srv, _ := endpointstest.StartTLS(t, endpointstest.VLLM, endpointstest.Options{}, nil)
	caFile := endpointstest.WritePEM(t, srv.Certificate())
	trusted, err := endpoints.LoadTrust(caFile, false, "--ca-cert")
	if err != nil {
		t.Fatal(err)
	}

	o, plan := tlsCoordinator(t, srv.URL, endpoints.Flags{CACert: caFile}, "tls")
	conns, _ := tlsAgents(t, trusted, endpoints.Trust{})
	run := RunPhase(context.Background(), o, plan, conns)
	r := run.Result
	if r.Status != schema.StatusDegraded || len(run.Records) != 8 {
		t.Fatalf("status %s with %d records, want degraded with 8", r.Status, len(run.Records))
	}
	if a := r.Agents[0]; a.Lost != "" || a.Records != 4 {
		t.Errorf("the agent with the CA: lost %q, %d records; want none lost, 4", a.Lost, a.Records)
	}
	lost := r.Agents[1].Lost
	for _, want := range []string{"agent-b", "x509: certificate signed by unknown authority", "--ca-cert on the agent, --insecure on the coordinator"} {
		if !strings.Contains(lost, want) {
			t.Errorf("the agent without the CA is lost for %q, which lacks %q", lost, want)
		}
	}
	for i, rec := range run.Records {
		if ok := rec.Completed(); ok != (i%2 == 0) || (!ok && !rec.NotSent) {
			t.Errorf("record %d (agent %d): completed %v, not sent %v; want agent a's completed, agent b's not sent", i, i%2, ok, rec.NotSent)
		}
	}

	o, plan = tlsCoordinator(t, srv.URL, endpoints.Flags{Insecure: true, InsecureSet: true}, "tls")
	conns, errs := tlsAgents(t, trusted, endpoints.Trust{})
	for range 2 {
		run = RunPhase(context.Background(), o, plan, conns)
		if r := run.Result; r.Status != schema.StatusComplete || r.Completed != 8 {
			t.Fatalf("with --insecure: status %s, %d completed (%v); want complete, 8", r.Status, r.Completed, Lost(r))
		}
	}
	for k, e := range errs {
		if n := strings.Count(e.String(), "NOT verified"); n != 1 {
			t.Errorf("agent %d says %d times that it does not verify, want once:\n%s", k, n, e.String())
		}
	}
}

// An endpoint that asks for a client certificate (mTLS) gets each agent's
// own (its --client-cert, --client-key), the coordinator's --insecure
// keeping it: the agent given one sends its share to completion; the one
// without is lost before any load, its reason naming --client-cert, though
// TLS 1.3 lets its handshake end before the server refuses it.
func TestAnAgentSendsItsOwnClientCertificate(t *testing.T) {
	t.Parallel()
	clientCA := endpointstest.NewCA(t)
	_, srv, _ := endpointstest.StartTLSConfig(t, endpointstest.VLLM, endpointstest.Options{}, endpointstest.MTLS(clientCA))
	cert, key := clientCA.ClientFiles()
	withClient, err := endpoints.Trust{}.WithClient(cert, key, "--client-cert and --client-key")
	if err != nil {
		t.Fatal(err)
	}
	o, plan := tlsCoordinator(t, srv.URL, endpoints.Flags{Insecure: true, InsecureSet: true, ClientCert: cert, ClientKey: key}, "mtls")
	conns, _ := tlsAgents(t, withClient, endpoints.Trust{})
	r := RunPhase(context.Background(), o, plan, conns).Result
	if a := r.Agents[0]; a.Lost != "" || a.Records != 4 {
		t.Errorf("the agent with the client certificate: lost %q, %d records; want none lost, 4", a.Lost, a.Records)
	}
	lost := r.Agents[1].Lost
	for _, want := range []string{"agent-b", "tls: certificate required", "--client-cert FILE --client-key FILE", "--client-cert and --client-key on the agent"} {
		if !strings.Contains(lost, want) {
			t.Errorf("the agent without a client certificate is lost for %q, which lacks %q", lost, want)
		}
	}
}

// tlsCoordinator is a coordinator's options and plan of one phase of 8
// requests (32 in, 8 out) against the https server at url, its endpoint
// resolved from f.
func tlsCoordinator(t *testing.T, url string, f endpoints.Flags, phase string) (*bench.Options, bench.Plan) {
	t.Helper()
	f.Endpoint = url + "/v1"
	ep, err := endpoints.Resolve(f, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	ep.Model = "meta-llama/Llama-3.1-8B-Instruct"
	o := &bench.Options{
		Endpoint: ep, Shape: bench.Shape{Model: ep.Model, IgnoreEOS: true},
		Limits:         endpoints.StreamLimits{TTFT: 30 * time.Second, Stall: 30 * time.Second},
		ConnectTimeout: 2 * time.Second, PhaseCap: time.Minute, Seed: 3, Nonce: bench.NewNonce(),
	}
	plans, _, err := bench.Prepare(context.Background(), o, []bench.Spec{{Name: phase, N: 8, In: 32, Out: 8}})
	if err != nil {
		t.Fatal(err)
	}
	return o, plans[0]
}
