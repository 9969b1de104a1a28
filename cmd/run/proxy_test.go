package run

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
)

func TestRunWarnsOfAProxysRetriesAndFallbacksAndOnlyOfThem(t *testing.T) {
	t.Parallel()
	if w := proxyWarnings(&schema.PhaseResult{Phase: "p", Completed: 8}); len(w) != 0 {
		t.Errorf("a phase no proxy retried: %q; want no warning", w)
	}
	w := proxyWarnings(&schema.PhaseResult{Phase: "p", Completed: 8, ProxyRetried: 3})
	if len(w) != 1 || !strings.HasPrefix(w[0], "glmbench: warning: phase p: 3 of 8 completed requests were retried inside the proxy (x-litellm-attempted-retries") ||
		!strings.Contains(w[0], "num_retries to 0") {
		t.Errorf("3 of 8 retried: %q", w)
	}
	// A fallback is the louder warning, and comes first.
	w = proxyWarnings(&schema.PhaseResult{Phase: "p", Completed: 8, ProxyRetried: 3, ProxyFallback: 2})
	if len(w) != 2 || !strings.HasPrefix(w[0], "glmbench: warning: phase p: 2 of 8 completed requests were answered by a FALLBACK inside the proxy") ||
		!strings.Contains(w[0], "another model or provider than the one asked for") || !strings.Contains(w[1], "3 of 8 completed requests were retried") {
		t.Errorf("2 fallbacks, 3 retried of 8: %q", w)
	}
}
