package run

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

// bufferedRun runs phase p, 8 streams of 64 tokens, against base and
// returns its phase, the records and stderr.
func bufferedRun(t *testing.T, base, model string, extra ...string) (schema.PhaseResult, []schema.Record, string) {
	t.Helper()
	out := t.TempDir()
	f, _, errOut := cmdutil.TestFactory(context.Background(), nil)
	args := append([]string{"--endpoint", base, "--model", model, "--phase", "p=8/32/64", "--no-metrics", "--out", out}, extra...)
	if code := cmdutil.ExitCode(cmdtest.Execute(f, NewCmdRun, args...)); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var rep schema.Report
	if err := json.Unmarshal([]byte(cmdtest.ReadFile(t, out, reports.ReportJSON)), &rep); err != nil || len(rep.Phases) != 1 {
		t.Fatalf("report.json: %v, %d phases", err, len(rep.Phases))
	}
	recs := readRecords(t, out)
	return rep.Phases[0], recs, errOut.String() + "\n" + cmdtest.ReadFile(t, out, reports.ReportMD)
}

// readRecords is the requests.jsonl a run wrote in dir.
func readRecords(t *testing.T, dir string) []schema.Record {
	t.Helper()
	recs, err := reports.ReadRecords(strings.NewReader(cmdtest.ReadFile(t, dir, reports.RecordsJSONL)))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// The truth: vLLM streams a token every 2 ms, each event flushed on its
// own (64 of them end past 100 ms, long enough to judge). Behind a proxy
// that holds the whole answer, each stream's 64 events reach glmbench in
// one write (endpointstest.Blocks); behind nginx's 4 KiB blocks, in
// Blocks(its bytes, 4096) writes, about 14 KiB in 4: 16 events a write.
// Every request of both is buffered, and run warns with the fix. With
// X-Accel-Buffering: no from the upstream the same proxy forwards each
// event as it comes, and direct there is no proxy: none is.
func TestARunBehindABufferingProxySaysItsStreamsArrivedBuffered(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{Gap: 2 * time.Millisecond})
	for _, tc := range []struct {
		name     string
		base     string
		buffered bool
	}{
		{"the whole answer at its end", endpointstest.StartBuffering(t, p.URL, endpointstest.BufferAll).BaseURL(), true},
		{"4 KiB blocks", endpointstest.StartBuffering(t, p.URL, 4096).BaseURL(), true},
		{"4 KiB blocks, X-Accel-Buffering: no from upstream", endpointstest.StartBuffering(t, endpointstest.AccelNo(t, p.URL).URL, 4096).BaseURL(), false},
		{"direct", p.BaseURL(), false},
	} {
		ph, recs, said := bufferedRun(t, tc.base, p.Opts.Model)
		want := 0
		if tc.buffered {
			want = 8
		}
		if ph.Completed != 8 || ph.Buffered != want {
			t.Errorf("%s: %d completed, buffered %d; want 8 and %d", tc.name, ph.Completed, ph.Buffered, want)
		}
		for _, rec := range recs {
			if rec.Completed() && summary.Buffered(&rec) != tc.buffered {
				t.Errorf("%s: request %d: %d events in %d arrivals: buffered %v, want %v", tc.name, rec.I, len(rec.Events), summary.Arrivals(rec.Events), !tc.buffered, tc.buffered)
			}
		}
		warned := strings.Contains(said, "glmbench: warning: phase p: 8 of 8 completed streams arrived buffered") &&
			strings.Contains(said, "nginx: proxy_buffering off, or X-Accel-Buffering: no from upstream") &&
			strings.Contains(said, "- p: 8 of 8 completed streams arrived buffered (buffered)")
		if warned != tc.buffered || !tc.buffered && strings.Contains(said, "arrived buffered") {
			t.Errorf("%s: warned %v, want %v:\n%s", tc.name, warned, tc.buffered, said)
		}
	}
}

// The truth: each personality, a token a millisecond and no proxy,
// streams one event per flush, so none of its streams is buffered.
func TestNoPersonalityStreamingDirectlyIsBuffered(t *testing.T) {
	t.Parallel()
	for _, kind := range endpointstest.Names() {
		p := endpointstest.Start(t, kind, endpointstest.Options{Gap: time.Millisecond})
		var extra []string
		if kind == endpointstest.OpenAI {
			extra = []string{"--ignore-eos=false"} // it refuses the field
		}
		ph, _, said := bufferedRun(t, p.BaseURL(), p.Opts.Model, extra...)
		if ph.Completed != 8 || ph.Buffered != 0 || strings.Contains(said, "arrived buffered") {
			t.Errorf("%s: %d completed, buffered %d; want 8 and 0:\n%s", kind, ph.Completed, ph.Buffered, said)
		}
	}
}
