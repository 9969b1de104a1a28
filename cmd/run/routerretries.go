package run

import (
	"fmt"

	"github.com/glmbench/glmbench/reports/schema"
)

// routerRetriesWarning is the warning for a phase whose server block
// counts retries: a router in front of the workers (sgl-router, the SGLang
// Model Gateway) sent attempts again after a retryable answer (408, 429,
// 5xx) and told the client nothing, so a retried request's latency
// includes the failed attempts and the backoff between them, not the
// workers' alone; "" when it counts none.
func routerRetriesWarning(r *schema.PhaseResult) string {
	if r.Server == nil || r.Server.Retries == nil || *r.Server.Retries <= 0 {
		return ""
	}
	return fmt.Sprintf("glmbench: warning: phase %s: the router in front of the workers retried %g attempts inside (%s's retries counter; no answer says so): the retried requests' latency includes the failed attempts and the backoff; start it with --disable-retries (or --retry-max-retries 1) to measure the workers",
		r.Phase, *r.Server.Retries, r.Server.Source)
}
