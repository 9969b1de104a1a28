package run

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// A run's stdout is the compact summary on a terminal and report.md's
// Markdown tables anywhere else, unless --summary says which.
func TestStdoutIsCompactOnATerminalAndMarkdownElsewhere(t *testing.T) {
	t.Parallel()
	// Every fourth request is refused as OpenAI refuses a rate-limited one.
	srv := endpointstest.New(func(r endpointstest.Request) endpointstest.Behavior {
		if r.I != bench.ProbeIndex && r.I%4 == 3 {
			return endpointstest.Behavior{Fail: endpointstest.Status, Status: 429, Body: `{"error":{"message":"slow down"}}`}
		}
		return endpointstest.Behavior{}
	})
	t.Cleanup(srv.Close) // the parallel subtests run after this function returns
	for _, tc := range []struct {
		name    string
		tty     bool
		args    []string
		compact bool
	}{
		{"a terminal", true, nil, true},
		{"a pipe or a file", false, nil, false},
		{"a terminal with --summary full", true, []string{"--summary", "full"}, false},
		{"a pipe with --summary compact", false, []string{"--summary", "compact"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			f, out, errOut := cmdutil.TestFactory(context.Background(), nil)
			if tc.tty {
				f.IO.Out = cmdutil.TTY(out)
			}
			args := append([]string{"--endpoint", srv.BaseURL(), "--model", "m", "--phase", "x=4/40/4", "--out", dir}, tc.args...)
			if err := cmdtest.Execute(f, NewCmdRun, args...); err != nil {
				t.Fatalf("%v\n%s", err, errOut)
			}
			stdout := out.String()
			markdown := strings.Contains(stdout, "## Phases") && strings.Contains(stdout, "| x ")
			compact := strings.Contains(stdout, "x: 1 error: rate_limited 1") &&
				strings.Contains(stdout, "Full report: "+filepath.Join(dir, "report.md")) && !strings.Contains(stdout, "queue_full")
			if markdown == tc.compact || compact != tc.compact {
				t.Fatalf("compact %t, Markdown %t; want compact %t:\n%s", compact, markdown, tc.compact, stdout)
			}
		})
	}
}

func TestABadSummaryValueExitsTwoBeforeAnyLoad(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1: a run that got past validation would fail
	// to connect, and exit 1, not 2.
	code, stderr := execute(t, context.Background(), "--endpoint", "http://127.0.0.1:1/v1", "--phase", "x=4/40/4", "--summary", "short", "--out", t.TempDir())
	if code != cmdutil.ExitBadInput || !strings.Contains(stderr, `--summary must be auto, full or compact, not "short"`) {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
}
