package target

import (
	"context"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/internal/badinput"
)

// A --metrics-url on a host behind a CA the endpoint's trust does not
// hold (a Prometheus exporter on another host) is bad input saying x509's
// reason and the fix: the scrape verifies as the endpoint's requests do,
// so its CA goes in the same --ca-cert bundle; with that bundle the
// scrape works.
func TestAMetricsURLBehindAnotherCAIsRefusedWithTheFix(t *testing.T) {
	t.Parallel()
	_, srv, _ := endpointstest.StartTLS(t, endpointstest.VLLM, endpointstest.Options{}, nil)
	resolve := func(f endpoints.Flags) *endpoints.Endpoint {
		f.Endpoint = "https://gw.internal/v1"
		ep, err := endpoints.Resolve(f, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		return ep
	}
	m := &MetricsFlags{URL: srv.URL + "/metrics"}
	_, _, err := m.Open(context.Background(), resolve(endpoints.Flags{}))
	if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "x509: certificate signed by unknown authority") ||
		!strings.Contains(err.Error(), "--ca-cert FILE") || strings.Contains(err.Error(), "\n") {
		t.Errorf("%v: want bad input in one line naming x509's reason and --ca-cert", err)
	}
	s, _, err := m.Open(context.Background(), resolve(endpoints.Flags{CACert: endpointstest.WritePEM(t, srv.Certificate())}))
	if err != nil || s == nil {
		t.Errorf("with the metrics host's CA in --ca-cert: %v", err)
	}
}
