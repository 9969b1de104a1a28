package reports

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/internal/boundedfile/boundedfiletest"
)

// A report.json past MaxReportFile (/dev/zero, a weights file given by
// mistake) is bad input naming the bound, not read whole into memory; a
// sparse file costs no disk.
func TestLoadRefusesAReportOverTheBound(t *testing.T) {
	dir := t.TempDir()
	boundedfiletest.Sparse(t, filepath.Join(dir, ReportJSON), MaxReportFile+1)
	_, err := Load(dir)
	if !badinput.Is(err) || !strings.Contains(err.Error(), "over 256 MiB") {
		t.Fatalf("Load(%d bytes) = %v, want bad input over 256 MiB", MaxReportFile+1, err)
	}
}
