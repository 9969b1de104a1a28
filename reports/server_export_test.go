package reports

import (
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
)

// ServerReport is serverRun's report (the scraped decode_medium: accept
// length 4, TTFT p50 0.05 s), for the gate's tests; accept, when not nil,
// replaces its accept length (a pointer to nil: none).
func ServerReport(t *testing.T, label string, accept **float64) *schema.Report {
	rep, _, _ := serverRun(t)
	rep.Label = label
	if accept != nil {
		rep.Phases[1].Server.AcceptLength = *accept
	}
	return rep
}
