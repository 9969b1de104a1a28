package conform

import (
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// The truth: vLLM streams a token every 2 ms; nginx's 4 KiB blocks
// bring its chat chunks to the client 16 or 17 at a time. conform fails
// stream-incremental behind the proxy (exit 1, the check named, nginx's
// fix in its detail) and passes it direct (exit 0).
func TestConformFailsTheIncrementalCheckBehindABufferingProxy(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{Gap: 2 * time.Millisecond})
	proxy := endpointstest.StartBuffering(t, p.URL, 4096)
	stdout, stderr, err := execute(t, "--endpoint", proxy.BaseURL(), "--model", p.Opts.Model, "--only", "stream-incremental", "--out", t.TempDir())
	if cmdutil.ExitCode(err) != cmdutil.ExitFailed || !strings.Contains(err.Error(), "conformance checks failed: stream-incremental") {
		t.Fatalf("behind the proxy: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "nginx: proxy_buffering off, or X-Accel-Buffering: no from upstream") {
		t.Errorf("stdout does not name the fix:\n%s", stdout)
	}
	if _, stderr, err := execute(t, "--endpoint", p.BaseURL(), "--model", p.Opts.Model, "--only", "stream-incremental", "--out", t.TempDir()); err != nil {
		t.Fatalf("direct: %v\n%s", err, stderr)
	}
}
