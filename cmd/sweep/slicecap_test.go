package sweep

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdutil"
)

// The cap counts the slices the report cuts, the last one short included:
// a 10 s window in slices of 9.995 ms is 1001 of them (10/0.009995 =
// 1000.5, the last slice half long), one past the cap, refused before any
// load; 10 s in slices of 10 ms is 1000, taken.
func TestTheSliceCapCountsTheLastShortSlice(t *testing.T) {
	t.Parallel()
	code, _, stderr := execute(t, "--endpoint", "http://127.0.0.1:1/v1", "--duration", "10s", "--slice", "9.995ms")
	if code != cmdutil.ExitBadInput || !strings.Contains(stderr, "into 1001 slices, more than 1000") {
		t.Errorf("--slice 9.995ms of 10s: exit %d\n%s\nwant 2 naming 1001 slices", code, stderr)
	}
	_, _, stderr = execute(t, "--endpoint", "http://127.0.0.1:1/v1", "--duration", "10s", "--slice", "10ms")
	if strings.Contains(stderr, "slices, more than") {
		t.Errorf("--slice 10ms of 10s (1000 slices) refused:\n%s", stderr)
	}
}
