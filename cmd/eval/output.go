package eval

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/evals"
	"github.com/glmbench/glmbench/reports/schema"
)

// WriteTable prints the results as a Markdown table: one row per eval.
func WriteTable(w io.Writer, results []schema.EvalResult) error {
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewMarkdown()),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
	)
	t.Header("eval", "status", "method", "n", "metrics", "failure")
	for _, r := range results {
		fail := ""
		if r.Failure != nil {
			fail = r.Failure.Short()
		}
		if err := t.Append(r.Name, r.Status, r.Method, strconv.Itoa(r.N), metricsText(&r), cell(fail)); err != nil {
			return err
		}
	}
	return t.Render()
}

func cell(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\|`)
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
