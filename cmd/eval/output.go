package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints"
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

// hiddenValues are the values of extra that endpoints.RecordedExtra hides
// by their field's name (a gateway's key sent in the body: "api_key"), as
// text, those of minHidden bytes or more: a server that quotes one back
// in an error (pydantic's validation errors quote a field's input) would
// otherwise have it in a failure's body and detail, where only the
// endpoint's own secrets are redacted.
func hiddenValues(extra json.RawMessage) []string {
	var sent, shown any
	if decode(extra, &sent) != nil || decode(endpoints.RecordedExtra(extra, nil), &shown) != nil {
		return nil
	}
	var out []string
	var walk func(sent, shown any)
	walk = func(sent, shown any) {
		switch v := shown.(type) {
		case map[string]any:
			m, _ := sent.(map[string]any)
			for k := range v {
				walk(m[k], v[k])
			}
		case []any:
			l, _ := sent.([]any)
			for i := range min(len(v), len(l)) {
				walk(l[i], v[i])
			}
		case string:
			if s, ok := sent.(string); ok && s == v {
				return
			}
			t, ok := sent.(string)
			if !ok {
				b, _ := json.Marshal(sent)
				t = string(b)
			}
			if len(t) >= minHidden {
				out = append(out, t)
			}
		}
	}
	walk(sent, shown)
	return out
}

// minHidden is the shortest value hiddenValues gives, in bytes: a shorter
// one would blank words of every message.
const minHidden = 4

// decode reads b as JSON into v, numbers with their digits.
func decode(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}

// hide is s with each of values as "***".
func hide(s string, values []string) string {
	for _, v := range values {
		s = strings.ReplaceAll(s, v, "***")
	}
	return s
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
