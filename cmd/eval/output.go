package eval

import (
	"fmt"
	"strings"
	"time"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/evals"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
)

// writeItems puts the items of the evals that ran into out's evals.jsonl,
// beside report.json: each eval's lines replace those it had there (an eval
// that gave no score leaves none), as its result replaces its entry in the
// report's evals section, and those of other evals stay.
func writeItems(out string, results []schema.EvalResult, items []schema.EvalItem) error {
	ran := make([]string, len(results))
	for i, r := range results {
		ran[i] = r.Name
	}
	if err := reports.MergeEvalItemsFile(out, ran, items); err != nil {
		return fmt.Errorf("writing the eval items to %s: %w", out, err)
	}
	return nil
}

// startProgress shows the eval in flight on stderr.
func startProgress(io *cmdutil.IOStreams, p *evals.Progress, every time.Duration) func() {
	return cmdutil.StartProgress(io, every, func(_ time.Time, bar bool) string { return progressLine(p, bar) })
}

func progressLine(p *evals.Progress, bar bool) string {
	stage, start := p.Stage()
	done, total := p.Done.Load(), p.Total.Load()
	var b strings.Builder
	b.WriteString(stage + " ")
	if bar {
		b.WriteString(cmdutil.Bar(done, total))
	}
	fmt.Fprintf(&b, "%d/%d, %s", done, total, time.Since(start).Truncate(100*time.Millisecond))
	return b.String()
}
