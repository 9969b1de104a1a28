package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/badinput"
)

// A report.json past MaxReportFile (/dev/zero, a weights file given by
// mistake) is bad input naming the bound, not read whole into memory; a
// sparse file costs no disk.
func TestLoadRefusesAReportOverTheBound(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxReportFile + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = Load(dir)
	if !badinput.Is(err) || !strings.Contains(err.Error(), "over 256 MiB") {
		t.Fatalf("Load(%d bytes) = %v, want bad input over 256 MiB", MaxReportFile+1, err)
	}
}
