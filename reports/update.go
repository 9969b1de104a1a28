package reports

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

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
// nil when dir holds no report or one of that label.
func CheckUpdateDir(dir, label string) error {
	_, err := dirReport(dir, label)
	return err
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
