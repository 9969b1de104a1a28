package eval

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/evals"
	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/internal/text"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
)

// checkExtraRecord refuses, before any eval request, an extra body that the
// report already in out could not record: a report records one
// (Options.ExtraBody) for all the requests in it, so where its load, or an
// eval this command does not run again, went with another extra body (or
// none), writing this one would misstate them. Passing the same
// --extra-body, or another --out, does.
func checkExtraRecord(out string, extra json.RawMessage, jobs []evals.Job) error {
	old, err := reports.ReadReport(filepath.Join(out, reports.ReportJSON))
	if err != nil {
		return nil // none (one unreadable was refused when the target opened)
	}
	had, now := old.Options.Extra(), string(extra)
	if had == now {
		return nil
	}
	var others []string
	if old.Nonce != "" {
		others = append(others, "load")
	}
	if old.Equivalence != nil {
		others = append(others, "eval compare")
	}
	for _, e := range old.Evals {
		if !slices.ContainsFunc(jobs, func(j evals.Job) bool { return j.Eval.Name == e.Name }) {
			others = append(others, e.Name)
		}
	}
	if len(others) == 0 {
		return nil
	}
	return badinput.Errorf("--extra-body %s: %s holds a report whose %s went with extra body %s; a report records one: pass the same --extra-body, or another --out",
		extraText(now), out, strings.Join(others, ", "), extraText(had))
}

// showRecorded puts in req, a failed request as the report shows it, each
// field of the extra body as recorded (endpoints.RecordedExtra: a key in
// it hidden) in place of what was sent.
func showRecorded(req map[string]any, recorded json.RawMessage) {
	var shown map[string]any
	if len(req) == 0 || json.Unmarshal(recorded, &shown) != nil {
		return
	}
	for k, v := range shown {
		if _, ok := req[k]; ok {
			req[k] = v
		}
	}
}

// extraText is an extra body as an error shows it: "none" for none.
func extraText(s string) string {
	if s == "" {
		return "none"
	}
	return text.Clip(s, 120, "…")
}

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
