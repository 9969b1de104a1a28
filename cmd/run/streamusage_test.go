package run

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/engine/enginetest"
	"github.com/glmbench/glmbench/reports/schema"
)

// With --stream-usage=false the built-in engine, like SGLang, sends no usage
// in a stream it was not asked for: n is the count of content events (at
// most the 8 tokens generated: the detokenizer holds back a token that ends
// inside a UTF-8 character, so two tokens can make one event), and the
// report says the field was left out.
func TestARunWithoutStreamOptionsCountsEventsAndSaysSo(t *testing.T) {
	t.Parallel()
	e := enginetest.Start(t)
	rep, records, md := runEngine(t, e, "--phase", "p=3/64/8", "--stream-usage=false")
	if !rep.Options.NoStreamUsage || !strings.Contains(md, "ignore_eos true, no stream_options, timeouts") {
		t.Errorf("no_stream_usage %t; report.md:\n%s", rep.Options.NoStreamUsage, md)
	}
	if len(records) != 3 {
		t.Fatalf("%d records, want 3", len(records))
	}
	for _, r := range records {
		if !r.Completed() || r.N != len(r.Events) || r.N < 1 || r.N > 8 || r.NSource == schema.NFromUsage {
			t.Errorf("request %d: n %d from %q, %d events; want the events counted, at most 8", r.I, r.N, r.NSource, len(r.Events))
		}
	}
	if o := parse(t); !o.StreamUsage {
		t.Errorf("--stream-usage defaults to false")
	}
}
