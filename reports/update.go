package reports

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports/schema"
)

// ReadReport reads a report.json. An error reading the file is os's own,
// unwrapped (so errors.Is(err, fs.ErrNotExist) tells a missing file); one
// about its content is bad input (badinput.Error).
func ReadReport(path string) (*schema.Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseReport(path, b)
}

// UpdateDir lets a command that adds one section (evals, conformance) share a
// folder with a run: when dir already holds a report of fresh's label, change
// is applied to that report, so only the changed section is replaced;
// otherwise, when dir holds no report, to fresh. A report of another label is
// not overwritten (that run's phases would be lost): it is a bad-input error.
// report.json and report.md are rewritten (atomically); requests.jsonl is
// left as it is.
// Commands call CheckUpdateDir before they send any load, so that refusal
// comes before the work, not after it.
func UpdateDir(dir string, fresh *schema.Report, change func(*schema.Report)) (*schema.Report, error) {
	old, err := dirReport(dir, fresh.Label)
	if err != nil {
		return nil, err
	}
	r := fresh
	if old != nil {
		r = old
		r.FinishedAt = fresh.FinishedAt
	}
	change(r)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := writeAtomic(dir, ReportJSON, func(w io.Writer) error { return WriteJSON(w, r) }); err != nil {
		return nil, err
	}
	if err := writeAtomic(dir, ReportMD, func(w io.Writer) error { return WriteMarkdown(w, r) }); err != nil {
		return nil, err
	}
	return r, nil
}

// CheckUpdateDir says whether UpdateDir could write a report of label to dir:
// nil when dir holds no report or one of that label. Any other answer is
// bad input (badinput.Error), the report of another label as much as one
// that cannot be read: the user names another --out before any load is sent.
func CheckUpdateDir(dir, label string) error {
	if _, err := dirReport(dir, label); err != nil {
		return badinput.Wrap(err)
	}
	return nil
}

// dirReport is the report dir holds, nil when none; one of a label other
// than label is a bad-input error.
func dirReport(dir, label string) (*schema.Report, error) {
	old, err := ReadReport(filepath.Join(dir, ReportJSON))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	case old.Label != label:
		return nil, badinput.Errorf("%s holds the report of label %q, not %q; pass another --out", dir, old.Label, label)
	}
	return old, nil
}

// MergeEvals puts results into rep's evals section: each replaces the
// entry of its name, or is added; entries of other evals stay, so evals
// run one by one into one folder add up.
func MergeEvals(rep *schema.Report, results []schema.EvalResult) {
	for _, res := range results {
		if i := slices.IndexFunc(rep.Evals, func(e schema.EvalResult) bool { return e.Name == res.Name }); i >= 0 {
			rep.Evals[i] = res
		} else {
			rep.Evals = append(rep.Evals, res)
		}
	}
}

// PutChecks writes results into rep's conformance section. The results of
// every check (some false) replace the section whole, so an entry of a
// check this version no longer has, or has renamed, goes; those of some
// checks (--only) are merged into it (MergeChecks), in order, the suite's
// check IDs.
func PutChecks(rep *schema.Report, results []schema.CheckResult, some bool, order []string) {
	if some {
		MergeChecks(rep, results, order)
		return
	}
	rep.Conformance = slices.Clone(results)
}

// MergeChecks puts results into rep's conformance section: each replaces
// the entry of its id, or is added; entries of checks that did not run
// stay, so runs with --only into one folder add up. The section is kept in
// the suite's order (order, its check IDs); an entry of a check not in it
// goes last.
func MergeChecks(rep *schema.Report, results []schema.CheckResult, order []string) {
	for _, r := range results {
		if i := slices.IndexFunc(rep.Conformance, func(c schema.CheckResult) bool { return c.ID == r.ID }); i >= 0 {
			rep.Conformance[i] = r
		} else {
			rep.Conformance = append(rep.Conformance, r)
		}
	}
	rank := func(id string) int {
		if i := slices.Index(order, id); i >= 0 {
			return i
		}
		return len(order) // a check this version no longer has: last
	}
	slices.SortStableFunc(rep.Conformance, func(a, b schema.CheckResult) int { return rank(a.ID) - rank(b.ID) })
}
