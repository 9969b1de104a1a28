package reports

import (
	"path/filepath"
	"testing"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/internal/boundedfile/boundedfiletest"
)

// A report.json past MaxReportFile (/dev/zero, a weights file given by
// mistake) is bad input naming the bound, not read whole into memory; a
// sparse file costs no disk.
func TestLoadRefusesAReportOverTheBound(t *testing.T) {
	err := boundedfiletest.OverBound(t, ReportJSON, MaxReportFile, "over 256 MiB", func(path string) error {
		_, err := Load(filepath.Dir(path))
		return err
	})
	if !badinput.Is(err) {
		t.Fatalf("Load(%d bytes) = %v, want bad input", MaxReportFile+1, err)
	}
}
