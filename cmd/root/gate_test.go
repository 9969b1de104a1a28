package root

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports"
)

func TestRunBaselineGatesTheRunAfterWritingItsReport(t *testing.T) {
	t.Parallel()
	srv := endpointstest.New(func(endpointstest.Request) endpointstest.Behavior {
		return endpointstest.Behavior{Gap: time.Millisecond}
	})
	defer srv.Close()
	run := func(out string, args ...string) (int, string, string) {
		t.Helper()
		return execute(t, context.Background(), append([]string{"run", "--endpoint", srv.BaseURL(), "--model", "m", "--out", out}, args...)...)
	}
	base := filepath.Join(t.TempDir(), "base")
	if code, _, stderr := run(base, "--phase", "x=4/40/4"); code != 0 {
		t.Fatalf("baseline run: exit %d: %s", code, stderr)
	}
	baseReport := filepath.Join(base, reports.ReportJSON)

	pass := filepath.Join(t.TempDir(), "pass")
	code, stdout, stderr := run(pass, "--phase", "x=4/40/4", "--baseline", baseReport, "--threshold", "x.completed == 4")
	if code != 0 || !strings.Contains(stdout, "✓") {
		t.Fatalf("passing gate: exit %d\n%s\n%s", code, stdout, stderr)
	}

	crossed := filepath.Join(t.TempDir(), "crossed")
	code, stdout, stderr = run(crossed, "--phase", "x=4/40/4", "--baseline", baseReport, "--threshold", "x.completed < 4")
	if code != 99 || !strings.Contains(stdout, "✗") {
		t.Fatalf("crossed gate: exit %d, want 99\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(crossed, reports.ReportJSON)); err != nil {
		t.Errorf("a crossed gate must still leave the report: %v", err)
	}

	// Bad input is refused before any load: no report is written.
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"other shape", []string{"--phase", "x=5/40/4", "--baseline", baseReport}, "not compared"},
		{"threshold alone", []string{"--phase", "x=4/40/4", "--threshold", "x.completed == 4"}, "need --baseline"},
		{"bad threshold", []string{"--phase", "x=4/40/4", "--baseline", baseReport, "--threshold", "x.completed ~ 4"}, "threshold"},
		{"no baseline file", []string{"--phase", "x=4/40/4", "--baseline", filepath.Join(base, "nope.json")}, "nope.json"},
	} {
		out := filepath.Join(t.TempDir(), "bad")
		code, _, stderr := run(out, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%s: exit %d, stderr %q (want 2 and one line with %q)", tc.name, code, stderr, tc.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: wrote %s before refusing", tc.name, out)
		}
	}
}
