// Package gate is `glmbench gate`: the flags of package reports/gate, the
// CI performance-regression gate of current reports against a baseline
// (thresholds in the small k6-like language of package reports/threshold).
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
	"github.com/glmbench/glmbench/reports/gate"
	"github.com/glmbench/glmbench/reports/schema"
)

// Options are gate's parsed flags and injected state.
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
	Gate gate.Options
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

// Run is the gate command's work: prepare the gate, load the current
// reports, Decide.
func Run(o *Options) error {
	if len(reports.SplitList(o.Current)) == 0 {
		return badinput.Errorf("gate: --current is required (the reports to check)")
	}
	p, err := gate.Prepare(o.spec(), o.F.IO.ErrOut)
	if err != nil {
		return err
	}
	cur, err := reports.LoadAll(o.Current)
	if err != nil {
		return err
	}
	reports.WriteWarnings(o.F.IO.ErrOut, cur)
	// The current reports' evals.jsonl, for the paired rule on eval
	// thresholds (the baseline's come with the plan).
	p.Options.CurrentItems = reports.ItemsOf(cur)
	return Decide(o.F, p, o.JUnit, reports.Reports(cur))
}

// spec is the gate the flags ask for.
func (o *Options) spec() gate.Spec {
	return gate.Spec{Baseline: o.Baseline, Thresholds: o.Thresholds, ThresholdFile: o.ThresholdFile, Options: o.Gate}
}

// Decide gates current against p's baseline: it prints the ✓/✗ lines to
// stdout, appends Markdown to $GITHUB_STEP_SUMMARY when set and writes
// JUnit XML to junit unless it is "". It returns nil when every line
// passed, else an error whose exit code is 2 (bad input, such as phases of
// different shapes), 1 (an output could not be written) or 99 (thresholds
// crossed), in that precedence. run --baseline calls it too.
func Decide(f *cmdutil.Factory, p *gate.Plan, junit string, current []*schema.Report) error {
	res, err := p.Evaluate(current)
	if err != nil {
		return err
	}
	if err := gate.WriteLines(f.IO.Out, res); err != nil {
		return err
	}
	var outErr error
	if path := f.Getenv("GITHUB_STEP_SUMMARY"); path != "" {
		if err := gate.AppendStepSummary(path, res); err != nil {
			outErr = errors.Join(outErr, fmt.Errorf("writing $GITHUB_STEP_SUMMARY: %w", err))
		}
	}
	if junit != "" {
		var buf bytes.Buffer
		err := gate.WriteJUnit(&buf, res)
		if err == nil {
			err = os.WriteFile(junit, buf.Bytes(), 0o644)
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
