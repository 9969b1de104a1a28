package run

import (
	"fmt"

	"github.com/glmbench/glmbench/reports/schema"
)

// bufferWarning is the warning for a phase whose streams arrived buffered
// (summary.Buffered): in blocks of many events, or whole, not one by one,
// so the phase's TTFT is a buffer filling and its ITL mostly 0; "" when
// none did. nginx buffers a proxied answer unless proxy_buffering is off
// for it or the upstream answers X-Accel-Buffering: no.
func bufferWarning(r *schema.PhaseResult) string {
	if r.Buffered == 0 {
		return ""
	}
	return fmt.Sprintf("glmbench: warning: phase %s: %d of %d completed streams arrived buffered, in blocks of many events rather than one by one: something between glmbench and the server buffers the stream (a reverse proxy, an ingress, a gateway), so the phase's TTFT is its buffer filling and its ITL mostly 0, not the server's; nginx: proxy_buffering off, or X-Accel-Buffering: no from upstream; or measure the server directly",
		r.Phase, r.Buffered, r.Completed)
}
