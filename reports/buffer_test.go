package reports_test

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

// bufferRecords are four completed requests of OUT 32: requests 1 and 3
// came whole in one read 0.4 s after t0, as behind a proxy that holds the
// answer; 0 and 2 one event a read, 10 ms apart.
func bufferRecords() []schema.Record {
	var recs []schema.Record
	for i := range 4 {
		ev := make([]float64, 32)
		for k := range ev {
			ev[k] = 0.1 + float64(k)*0.01
			if i%2 == 1 {
				ev[k] = 0.4
			}
		}
		end := ev[31] + 0.001
		recs = append(recs, schema.Record{Phase: "p", I: i, N: 32, NSource: schema.NFromUsage, Prompt: 8,
			Events: ev, TFirst: &ev[0], TLast: &ev[31], TEnd: &end})
	}
	return recs
}

// report.md names the phase's buffered streams, 2 of 4, with the fix, and
// defines the count; a phase with none has neither line.
func TestReportMDSaysWhichStreamsArrivedBuffered(t *testing.T) {
	t.Parallel()
	write := func(recs []schema.Record) string {
		t.Helper()
		return reportMD(t, &schema.Report{Nonce: "n", Phases: []schema.PhaseResult{summary.Phase("p", 8, 32, recs, schema.StatusComplete)}})
	}
	md := write(bufferRecords())
	wantMD(t, md,
		"- p: 2 of 4 completed streams arrived buffered (buffered), in blocks of many events",
		"(nginx: proxy_buffering off, or X-Accel-Buffering: no from upstream)",
		"- **buffered** = completed requests whose content events arrived in blocks",
	)
	streamed := bufferRecords()
	md = write([]schema.Record{streamed[0], streamed[2]})
	if strings.Contains(md, "buffered") {
		t.Errorf("a phase streamed one event a read mentions buffering:\n%s", md)
	}
}
