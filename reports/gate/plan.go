package gate

import (
	"encoding/json"
	"io"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/threshold"
)

// Spec names a gate's baseline and thresholds as glmbench gate's and
// run --baseline's flags give them.
type Spec struct {
	// Baseline are report paths; each entry may be a comma list.
	Baseline []string
	// Thresholds are expressions, one per --threshold.
	Thresholds []string
	// ThresholdFile is a YAML file of expressions ("" for none).
	ThresholdFile string
	// Options tune the bootstrap; the zero value means the defaults.
	Options Options
}

// Plan is a gate ready to decide: its baseline read and thresholds parsed,
// the baseline's eval items in Options.BaselineItems.
type Plan struct {
	Baseline   []*schema.Report
	Thresholds []threshold.Threshold
	Options    Options
}

// Prepare reads the baseline and parses the thresholds, writing the
// baseline's load warnings to warn; every error is bad input (exit 2).
// run --baseline calls it before sending any load.
func Prepare(s Spec, warn io.Writer) (*Plan, error) {
	if len(reports.SplitList(s.Baseline)) == 0 {
		return nil, badinput.Errorf("gate: --baseline is required (the reports to compare with)")
	}
	ths, err := threshold.ParseAll(s.Thresholds)
	if err != nil {
		return nil, badinput.Wrap(err)
	}
	if s.ThresholdFile != "" {
		more, err := threshold.ReadFile(s.ThresholdFile)
		if err != nil {
			return nil, badinput.Errorf("--threshold-file: %v", err)
		}
		ths = append(ths, more...)
	}
	base, err := reports.LoadAll(s.Baseline)
	if err != nil {
		return nil, err
	}
	reports.WriteWarnings(warn, base)
	opts := s.Options
	opts.BaselineItems = reports.ItemsOf(base)
	return &Plan{Baseline: reports.Reports(base), Thresholds: ths, Options: opts}, nil
}

// RequireShape fails (exit 2) when the baseline ran phase name with another
// shape, so run --baseline can refuse before sending load that could not
// be compared.
func (p *Plan) RequireShape(name string, n, in, out int) error {
	for _, r := range p.Baseline {
		if ph := reports.FindPhase(r, name); ph != nil && reports.Shape(ph) != [3]int{n, in, out} {
			return badinput.Errorf("phase %s is %d/%d/%d (requests/input/output) here but %d/%d/%d in the baseline (label %s); phases of different shapes are not compared",
				name, n, in, out, ph.BatchSize, ph.InputLen, ph.OutputLen, r.Label)
		}
	}
	return nil
}

// RequireRequest fails (exit 2) when the baseline ran phase name on another
// API than api (chat or completions), or with other --extra-body fields
// than extra, so run --baseline can refuse before sending load that could
// not be compared.
func (p *Plan) RequireRequest(name, api string, extra json.RawMessage) error {
	here, hereExtra := route(api), (&schema.Options{ExtraBody: extra}).Extra()
	for _, r := range p.Baseline {
		there, thereExtra := route(r.Options.APIName()), r.Options.Extra()
		if reports.FindPhase(r, name) != nil && (there != here || thereExtra != hereExtra) {
			return badinput.Errorf("phase %s's load goes to %s here but went to %s in the baseline (label %s); %s",
				name, requestOf(here, hereExtra, thereExtra), requestOf(there, thereExtra, hereExtra), r.Label, notCompared)
		}
	}
	return nil
}

// Evaluate gates current against the plan's baseline (see Evaluate).
func (p *Plan) Evaluate(current []*schema.Report) (*Result, error) {
	return Evaluate(p.Baseline, current, p.Thresholds, p.Options)
}
