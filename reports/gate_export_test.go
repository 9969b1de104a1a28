package reports

import (
	"testing"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/reports/schema"
)

// What the gate's tests (gate_test.go, package reports_test: package
// reports/gate imports reports, so they cannot live inside it and still
// share its synthetic runs and golden files) use of this package's tests.

// SynthRun is a synthetic run (run) with its fields exported.
type SynthRun struct {
	Label  string
	Seed   uint64
	Speed  float64
	Jitter float64
	Specs  []bench.Spec
	Fail   []schema.Class
}

// Report is the run's report, summarised from its records as `run` does.
func (s SynthRun) Report() *schema.Report {
	rep, _ := run{label: s.Label, seed: s.Seed, speed: s.Speed, jitter: s.Jitter, specs: s.Specs, fail: s.Fail}.build()
	return rep
}

// WorkloadReport is workloadReport's report: a fixed phase "single" and a
// shared-prefix phase "chat" (cache_test.go says its truths).
func WorkloadReport(cached bool) *schema.Report {
	rep, _ := workloadReport(cached)
	return rep
}

var (
	Single     = single
	DecodeMd   = decodeMd
	LegacyFile = legacyFile
	Decode     = decode
)

// Golden compares got with testdata/name, rewriting it under -update.
func Golden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden(t, name, got)
}
