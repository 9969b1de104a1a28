package conform

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// incremental runs stream-incremental (and what it uses) against base.
func incremental(t *testing.T, base, model string) (status Status, detail string) {
	t.Helper()
	cfg := testConfig(base, model)
	cfg.Only = []string{"stream-incremental"}
	res := run(t, cfg)
	if r := res["stream"]; r.Status != string(Pass) {
		t.Logf("stream: %s %q", r.Status, r.Detail)
	}
	r := res["stream-incremental"]
	return Status(r.Status), r.Detail
}

// The truth: each personality streams a token a millisecond, each event
// flushed on its own, so its first 64 content events come one a read.
func TestEveryPersonalityStreamsIncrementally(t *testing.T) {
	t.Parallel()
	for _, kind := range endpointstest.Names() {
		p := endpointstest.Start(t, kind, endpointstest.Options{Gap: time.Millisecond})
		// It hangs up after 64; a few more may have come by then.
		if st, d := incremental(t, p.BaseURL(), p.Opts.Model); st != Pass || !strings.Contains(d, "content events in") {
			t.Errorf("%s: %s %q, want a pass over its first 64 content events", kind, st, d)
		}
	}
}

// The truth: behind a proxy that buffers, vLLM's events (a token every 2
// ms, the 64 judged past 100 ms, chat chunks of 230 to 330 bytes) reach
// the client a block at a time: a 4 KiB block carries 13 or more of them,
// an 8 KiB one 26 or more, so the 64 judged come in at most 5 and 3 reads;
// the whole answer (1024 chunks) comes at once, read 32 KiB (the SSE
// reader's buffer, over 64 chunks) at a time, so the 64 come in one. The
// check fails, giving the reads and nginx's fix; with X-Accel-Buffering:
// no from the upstream the same proxy forwards each event as it comes, and
// the check passes.
func TestTheIncrementalCheckFailsBehindABufferingProxy(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{Gap: 2 * time.Millisecond})
	for _, tc := range []struct {
		name string
		base string
		want Status
		// maxReads is the most reads the 64 judged events come in.
		maxReads int
	}{
		{"4 KiB blocks", endpointstest.StartBuffering(t, p.URL, 4096).BaseURL(), Fail, 5},
		{"8 KiB blocks", endpointstest.StartBuffering(t, p.URL, 8192).BaseURL(), Fail, 3},
		{"the whole answer", endpointstest.StartBuffering(t, p.URL, endpointstest.BufferAll).BaseURL(), Fail, 1},
		{"4 KiB blocks, X-Accel-Buffering: no from upstream", endpointstest.StartBuffering(t, endpointstest.AccelNo(t, p.URL).URL, 4096).BaseURL(), Pass, 0},
	} {
		st, d := incremental(t, tc.base, p.Opts.Model)
		if st != tc.want {
			t.Errorf("%s: %s %q, want %s", tc.name, st, d, tc.want)
			continue
		}
		if tc.want == Pass {
			continue
		}
		var n, reads int
		if _, err := fmt.Sscanf(d, "%d content events arrived in %d read", &n, &reads); err != nil || n != 64 || reads > tc.maxReads {
			t.Errorf("%s: %q: %d events in %d reads, want 64 in at most %d", tc.name, d, n, reads, tc.maxReads)
		}
		if !strings.Contains(d, "nginx: proxy_buffering off, or X-Accel-Buffering: no from upstream") {
			t.Errorf("%s: %q does not name the fix", tc.name, d)
		}
	}
}
