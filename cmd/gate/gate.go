// Package gate is `glmbench gate`: a CI performance-regression gate of
// current reports against a baseline, with thresholds in a small k6-like
// language (see package reports/threshold for its grammar).
package gate

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/threshold"
)

// Options are gate's parsed flags and injected state. `run --baseline`
// fills the same struct (without Current) and calls Prepare and Check.
type Options struct {
	F *cmdutil.Factory
	// Baseline and Current are report paths; each entry may be a comma list.
	Baseline []string
	Current  []string
	// Thresholds are expressions, one per --threshold.
	Thresholds []string
	// ThresholdFile is a YAML file of expressions ("" for none).
	ThresholdFile string
	// JUnit is a file for JUnit XML ("" for none).
	JUnit string
	// Gate tunes the bootstrap; the zero value means the defaults.
	Gate reports.GateOptions
}

// NewCmdGate binds gate's flags. runF replaces the run function in tests.
func NewCmdGate(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	o := &Options{F: f}
	cmd := &cobra.Command{
		Use:   "gate --baseline FILE[,FILE...] --current FILE[,FILE...]",
		Short: "Fail CI when a build got slower or worse than a baseline",
		Long: `Gate compares current reports with baseline reports and checks thresholds:

  single.tpot_med < 0.015        absolute: the current value
  decode_medium.out_tput > -5%   relative: (current - baseline) / baseline
  *.error_rate <= 0.01           every phase
  ppl.ppl < +1%                  an eval metric

A metric is a phase field of report.json (out_tput, in_tput, ttft_med,
ttft_p99, tpot_med, tpot_p99, lat_med, itl_p99, error_rate, completed, ...),
an error class (rate_limited, stalled, ...: its count) or an eval metric.
Operators: < <= > >= == !=. With no threshold, the defaults apply to every
phase in both sides: out_tput > -5%, ttft_p99 < +10%, tpot_med < +5%.

Several files on a side are runs of one build: the mean is compared, and
with three or more runs on each side a threshold fails only when the 95%
bootstrap confidence interval of the change lies wholly past it, so noise
alone does not fail a gate. A metric missing on a side is a failure. Phases
of different shapes are not compared.

Prints one ✓/✗ line per check with the observed values; appends Markdown to
$GITHUB_STEP_SUMMARY when it is set; writes JUnit XML with --junit.
Exit codes: 0 passed, 99 thresholds crossed, 2 bad input.`,
		Example: `  glmbench gate --baseline main/report.json --current pr/report.json
  glmbench gate --baseline b1,b2,b3 --current c1,c2,c3 --threshold 'decode_medium.out_tput > -3%'
  glmbench gate --baseline base.json --current new/ --threshold-file gate.yaml --junit gate.xml`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			return Run(o)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&o.Baseline, "baseline", nil, "baseline reports (comma list or repeated): report.json, a folder or a legacy file")
	fl.StringSliceVar(&o.Current, "current", nil, "current reports (comma list or repeated)")
	fl.StringArrayVar(&o.Thresholds, "threshold", nil, "a threshold expression, e.g. 'decode_medium.out_tput > -5%' (repeatable)")
	fl.StringVar(&o.ThresholdFile, "threshold-file", "", "YAML file of threshold expressions")
	fl.StringVar(&o.JUnit, "junit", "", "write JUnit XML to this file")
	return cmd
}

// Run is the gate command's work: Prepare, load the current reports, Check.
func Run(o *Options) error {
	if len(reports.SplitList(o.Current)) == 0 {
		return badinput.Errorf("gate: --current is required (the reports to check)")
	}
	p, err := Prepare(o)
	if err != nil {
		return err
	}
	cur, err := reports.LoadAll(o.Current)
	if err != nil {
		return err
	}
	warn(o.F, cur)
	return p.Check(reports.Reports(cur))
}

// Plan is a gate ready to check: its baseline read and thresholds parsed.
type Plan struct {
	o          *Options
	Baseline   []*schema.Report
	Thresholds []threshold.Threshold
}

// Prepare reads the baseline and parses the thresholds; every error is bad
// input (exit 2). `run --baseline` calls it before sending any load.
func Prepare(o *Options) (*Plan, error) {
	if len(reports.SplitList(o.Baseline)) == 0 {
		return nil, badinput.Errorf("gate: --baseline is required (the reports to compare with)")
	}
	ths, err := threshold.ParseAll(o.Thresholds)
	if err != nil {
		return nil, badinput.Wrap(err)
	}
	if o.ThresholdFile != "" {
		more, err := threshold.ReadFile(o.ThresholdFile)
		if err != nil {
			return nil, badinput.Errorf("--threshold-file: %v", err)
		}
		ths = append(ths, more...)
	}
	base, err := reports.LoadAll(o.Baseline)
	if err != nil {
		return nil, err
	}
	warn(o.F, base)
	return &Plan{o: o, Baseline: reports.Reports(base), Thresholds: ths}, nil
}

// CheckShape fails (exit 2) when the baseline ran phase name with another
// shape, so `run --baseline` can refuse before sending load that could not
// be compared.
func (p *Plan) CheckShape(name string, n, in, out int) error {
	for _, r := range p.Baseline {
		if ph := reports.FindPhase(r, name); ph != nil && reports.Shape(ph) != [3]int{n, in, out} {
			return badinput.Errorf("phase %s is %d/%d/%d (requests/input/output) here but %d/%d/%d in the baseline (label %s); phases of different shapes are not compared",
				name, n, in, out, ph.BatchSize, ph.InputLen, ph.OutputLen, r.Label)
		}
	}
	return nil
}

// Check gates current against the plan's baseline: it prints the ✓/✗ lines
// to stdout, appends Markdown to $GITHUB_STEP_SUMMARY when set and writes
// JUnit XML when asked. It returns nil when every check passed, else an
// error whose exit code is 2 (bad input, such as phases of different
// shapes), 1 (an output could not be written) or 99 (thresholds crossed),
// in that precedence.
func (p *Plan) Check(current []*schema.Report) error {
	f := p.o.F
	res, err := reports.Gate(p.Baseline, current, p.Thresholds, p.o.Gate)
	if err != nil {
		return err
	}
	if err := reports.WriteGateLines(f.IO.Out, res); err != nil {
		return err
	}
	var outErr error
	if path := f.Getenv("GITHUB_STEP_SUMMARY"); path != "" {
		if err := reports.AppendStepSummary(path, res); err != nil {
			outErr = errors.Join(outErr, fmt.Errorf("writing $GITHUB_STEP_SUMMARY: %w", err))
		}
	}
	if p.o.JUnit != "" {
		var buf bytes.Buffer
		err := reports.WriteGateJUnit(&buf, res)
		if err == nil {
			err = os.WriteFile(p.o.JUnit, buf.Bytes(), 0o644)
		}
		if err != nil {
			outErr = errors.Join(outErr, fmt.Errorf("writing --junit: %w", err))
		}
	}
	if outErr != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitFailed, Err: outErr}
	}
	if !res.Passed() {
		return &cmdutil.ExitError{Code: cmdutil.ExitThresholds, Err: fmt.Errorf("gate: %s", res.Summary())}
	}
	fmt.Fprintf(f.IO.ErrOut, "glmbench: gate %s\n", res.Summary())
	return nil
}

func warn(f *cmdutil.Factory, ins []*reports.Input) {
	for _, in := range ins {
		for _, w := range in.Warnings {
			fmt.Fprintf(f.IO.ErrOut, "glmbench: warning: %s\n", w)
		}
	}
}
