package reports

import (
	"fmt"
	"strconv"

	"github.com/glmbench/glmbench/reports/schema"
)

// agentTable renders each distributed phase's agents: their share of the
// schedule, what came back, their clocks against the coordinator's.
func (p *printer) agentTable(r *schema.Report) {
	has := false
	for _, ph := range r.Phases {
		has = has || len(ph.Agents) > 0
	}
	if !has {
		return
	}
	p.f("\n## Agents\n\n")
	p.f("Each agent sent the requests i with i mod its count equal to its index, from a start broadcast on its own clock. Offset: its clock minus the coordinator's, ± half the best ping's round trip; skew: how late it began, on the coordinator's clock.\n\n")
	p.table([]string{"phase", "agent", "index", "requests", "records", "offset ms", "start skew ms", "max concurrency", "client saturated", "lost"}, func(add func(...string)) {
		for _, ph := range r.Phases {
			for _, a := range ph.Agents {
				conc := "—"
				if a.MaxConcurrency > 0 {
					conc = strconv.Itoa(a.MaxConcurrency)
				}
				add(ph.Phase, a.Name, fmt.Sprintf("%d of %d", a.Index, a.Count), strconv.Itoa(a.Requests), strconv.Itoa(a.Records),
					fmt.Sprintf("%+.3f ± %.3f", a.OffsetMs, a.UncertaintyMs), fmt.Sprintf("%.3f", a.StartSkewMs), conc, strconv.FormatBool(a.Saturated), orDash(a.Lost))
			}
		}
	})
}
