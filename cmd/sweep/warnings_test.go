package sweep

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports"
)

// Ollama drops ignore_eos (its request struct has no such field), so a
// model that ends at EOS after 3 tokens answers every request of 8 with
// finish_reason stop after 3. run warns of that after its phase; sweep
// warns of it after each point, naming the point, with the point's own
// count of completed requests, on the line after the point's; with
// --ignore-eos=false the early stop is what was asked, and no point warns.
func TestASweepSaysRunsPhaseWarningsForEachPoint(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.Ollama, endpointstest.Options{EOSAfter: 3})
	args := []string{"--endpoint", p.BaseURL(), "--shape", "64/8", "--concurrency", "1,2", "--warmup", "0s",
		"--duration", "300ms", "--slice", "300ms", "--no-metrics"}
	dir := filepath.Join(t.TempDir(), "out")
	code, _, stderr := execute(t, append(args, "--out", dir)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	in, err := reports.Load(filepath.Join(dir, reports.ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	pts := in.Report.Sweeps[0].Points
	if len(pts) != 2 {
		t.Fatalf("%d points; want 2", len(pts))
	}
	lines := strings.Split(stderr, "\n")
	for _, pt := range pts {
		// Every completed request stopped at 3 of its 8 tokens.
		want := fmt.Sprintf("glmbench: warning: point %d, concurrency %d: %d of %d completed requests stopped (finish_reason stop) before their max_tokens though ignore_eos was sent",
			pt.Point, pt.Concurrency, pt.Completed, pt.Completed)
		at := -1
		for i, l := range lines {
			if strings.HasPrefix(l, fmt.Sprintf("glmbench: point %d, ", pt.Point)) {
				at = i
			}
		}
		if pt.Completed == 0 || at < 0 || at+1 >= len(lines) || !strings.HasPrefix(lines[at+1], want) {
			t.Errorf("point %d: the line after the point's is not its ignore_eos warning (%q…):\n%s", pt.Point, want, stderr)
		}
	}
	_, _, stderr = execute(t, append(args, "--ignore-eos=false", "--out", t.TempDir())...)
	if strings.Contains(stderr, "warning: point") {
		t.Errorf("--ignore-eos=false: a point warned:\n%s", stderr)
	}
}
