package run

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
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

// A current llama.cpp sends a chat stream's usage only when
// stream_options.include_usage asks (server-task.cpp, 2026). The truth: the
// fake streams exactly 6 tokens a request (max_tokens 6, ignore_eos); asked,
// every record's n is 6 from usage; not asked (--stream-usage=false), no
// usage comes and n is the count of content events, 6 too.
func TestACurrentLlamaCppsUsageComesOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.LlamaCpp, endpointstest.Options{LlamaRoleChunk: true, LlamaUsageAsked: true})
	for _, c := range []struct {
		args   []string
		source schema.NSource
	}{
		{nil, schema.NFromUsage},
		{[]string{"--stream-usage=false"}, schema.NFromEvents},
	} {
		in := runOK(t, t.TempDir(), append([]string{"--endpoint", p.BaseURL(), "--phase", "p=3/40/6", "--no-metrics"}, c.args...)...)
		for _, r := range in.Records {
			if !r.Completed() || r.N != 6 || r.NSource != c.source || len(r.Events) != 6 {
				t.Errorf("%v: request %d: n %d from %q, %d events; want 6 from %s", c.args, r.I, r.N, r.NSource, len(r.Events), c.source)
			}
		}
	}
}
