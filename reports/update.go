package reports

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/glmbench/glmbench/reports/schema"
)

// ReadReport reads a report.json.
func ReadReport(path string) (*schema.Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r schema.Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Schema != schema.ReportSchema {
		return nil, fmt.Errorf("%s: schema %q, want %q", path, r.Schema, schema.ReportSchema)
	}
	return &r, nil
}

// UpdateDir lets a command that adds one section (evals, conformance) share a
// folder with a run: when dir already holds a report of fresh's label, change
// is applied to that report, so only the changed section is replaced;
// otherwise to fresh. report.json and report.md are rewritten (atomically);
// requests.jsonl is left as it is.
func UpdateDir(dir string, fresh *schema.Report, change func(*schema.Report)) (*schema.Report, error) {
	r := fresh
	old, err := ReadReport(filepath.Join(dir, ReportJSON))
	switch {
	case err == nil && old.Label == fresh.Label:
		r = old
		r.FinishedAt = fresh.FinishedAt
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, err
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
