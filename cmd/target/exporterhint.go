package target

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/glmbench/glmbench/endpoints"
)

// sglRouterExporterPort is sgl-router's --prometheus-port default: its
// metrics are there, and its API port's /metrics is a 404
// (sgl-router/src/metrics.rs, server.rs).
const sglRouterExporterPort = "29000"

// exporterHint is the clause that says where a router's metrics are when
// the default metrics URL answered 404: sgl-router (the SGLang Model
// Gateway), known by its /health's own words ("All servers healthy",
// "Unhealthy servers: [...]"), serves them on its exporter's port. ""
// otherwise.
func exporterHint(ctx context.Context, ep *endpoints.Endpoint, metricsURL string, err error) string {
	if !strings.Contains(err.Error(), "HTTP 404") {
		return ""
	}
	req, rerr := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(metricsURL, "/metrics")+"/health", nil)
	if rerr != nil {
		return ""
	}
	resp, rerr := scrapeClient(ep).Do(req)
	if rerr != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	if body := string(b); !strings.HasPrefix(body, "All servers healthy") && !strings.HasPrefix(body, "Unhealthy servers: ") {
		return ""
	}
	u, perr := url.Parse(metricsURL)
	if perr != nil {
		return ""
	}
	u.Host = net.JoinHostPort(u.Hostname(), sglRouterExporterPort)
	return fmt.Sprintf("; sgl-router serves its metrics on its --prometheus-port (default %s): --metrics-url %s", sglRouterExporterPort, ep.Redact(endpoints.RedactURL(u.String())))
}
