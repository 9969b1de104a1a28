package target

import (
	"fmt"
	"io"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
)

// Section is how eval and conform end: their section of a report, written
// into the target's folder, which may already hold the rest of that report.
type Section struct {
	// Change puts the section into the report.
	Change func(*schema.Report)
	// Table prints the section to stdout.
	Table func(io.Writer) error
	// Interrupted ends the command with 130 once the section is written.
	Interrupted bool
	// Failed, when set, ends it with exit 1 and says why.
	Failed error
}

// sectionOutput is output for a command that writes one section of a
// report (WriteSection): a folder already holding another label's report is
// refused as bad input (reports.CheckUpdateDir), before any load is sent,
// rather than after the work.
func (t *Target) sectionOutput(label, out string) (string, string, error) {
	label, out = t.output(label, out)
	if err := reports.CheckUpdateDir(out, label); err != nil {
		return "", "", err
	}
	return label, out, nil
}

// WriteSection writes s into the target's folder (reports.UpdateDir, from
// a fresh Report when the folder holds none), prints its table, says where
// the report went, and returns the command's ending: nothing measured is
// lost before an interruption or a failure is said.
func (t *Target) WriteSection(f *cmdutil.Factory, s Section) error {
	std := f.IO
	if _, err := reports.UpdateDir(t.Out, t.Report(f), s.Change); err != nil {
		return fmt.Errorf("writing the report to %s: %w", t.Out, err)
	}
	if err := s.Table(std.Out); err != nil {
		return err
	}
	fmt.Fprintf(std.ErrOut, "glmbench: report written to %s\n", t.Out)
	switch {
	case s.Interrupted:
		return cmdutil.Silent(cmdutil.ExitInterrupted)
	case s.Failed != nil:
		return &cmdutil.ExitError{Code: cmdutil.ExitFailed, Err: s.Failed}
	}
	return nil
}
