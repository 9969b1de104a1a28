package eval

import (
	"fmt"
	"strings"
	"time"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/evals"
)

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
