// Package report is `glmbench report`: the side-by-side comparison of
// reports, and their plots.
package report

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports"
)

// Options are report's parsed flags and injected state.
type Options struct {
	F *cmdutil.Factory
	// Files are the reports: report.json files, folders holding one, or
	// legacy JSON lists.
	Files  []string
	Format string
	// Plots is a folder for the PNG and SVG figures ("" for none).
	Plots string
	// Out is a file for the comparison ("" for stdout).
	Out string
}

// NewCmdReport binds report's flags. runF replaces the run function in tests.
func NewCmdReport(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{F: f}
	cmd := &cobra.Command{
		Use:   "report FILE...",
		Short: "Compare reports side by side, and plot them",
		Long: `Report reads reports and renders them side by side: one row per phase, one
column per label (reports with the same label are merged: means over the
runs, sums of the counts). Each cell gives output and input throughput, TTFT
and TPOT median and p99, requests completed of those asked and the errors by
class; then a row per eval (its score, or why it gave none) and a
conformance summary.

A FILE is a report.json, a folder holding one, or a JSON list of rows from
the older harness (labelled by its file name; its error messages are sorted
into classes by prefix). Where a requests.jsonl lies beside a report.json,
every phase is recomputed from its records, so a report can be re-made
offline. --plots DIR draws, from those records, TTFT and TPOT CDFs, output
tokens/s over time and errors over time by class, as PNG and SVG.`,
		Example: `  glmbench report glmbench-results/*/report.json
  glmbench report sglang/ vllm/ legacy_h200.json --format text
  glmbench report a/report.json b/report.json --out compare.md --plots plots/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Files = args
			if runF != nil {
				return runF(o)
			}
			return Run(o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Format, "format", reports.FormatMarkdown, "output format: "+strings.Join(reports.Formats, ", "))
	fl.StringVar(&o.Plots, "plots", "", "write PNG and SVG figures into this folder")
	fl.StringVar(&o.Out, "out", "", "write the comparison to this file instead of stdout")
	return cmd
}

// Run is the report command's work. Bad input (no file, a missing or
// malformed report, an unknown format) exits 2 before anything is written.
func Run(o *Options) error {
	if len(o.Files) == 0 {
		return badinput.Errorf("report: name at least one report (a report.json, a folder holding one, or a legacy JSON list)")
	}
	if !slices.Contains(reports.Formats, o.Format) {
		return badinput.Errorf("report: unknown --format %q (want %s)", o.Format, strings.Join(reports.Formats, ", "))
	}
	ins, err := reports.LoadAll(o.Files)
	if err != nil {
		return err
	}
	reports.WriteWarnings(o.F.IO.ErrOut, ins)
	c, err := reports.Compare(ins)
	if err != nil {
		return err
	}
	// Render into memory first, so a failure never leaves half a file.
	var buf bytes.Buffer
	if err := reports.WriteComparison(&buf, c, o.Format); err != nil {
		return err
	}
	if err := reports.WriteSweepComparison(&buf, reports.Reports(ins)); err != nil {
		return err
	}
	if o.Out == "" {
		if _, err := o.F.IO.Out.Write(buf.Bytes()); err != nil {
			return err
		}
	} else if err := os.WriteFile(o.Out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing the comparison: %w", err)
	}
	if o.Plots != "" {
		files, err := reports.WritePlots(o.Plots, ins)
		if err != nil {
			return err
		}
		sweeps, err := reports.WriteSweepPlots(o.Plots, reports.Reports(ins)...)
		if err != nil {
			return err
		}
		fmt.Fprintf(o.F.IO.ErrOut, "glmbench: %d figures written to %s\n", len(files)+len(sweeps), o.Plots)
	}
	return nil
}
