package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/internal/boundedfile/boundedfiletest"
)

// A workload file past maxSpecFile (/dev/zero, a data set given as
// --workload) is refused as bad input after reading at most one byte more
// than the bound, not read whole into memory.
func TestLoadRefusesAFileOverTheBound(t *testing.T) {
	// A sparse file: its size costs no disk.
	err := boundedfiletest.OverBound(t, "huge.yaml", maxSpecFile, "over 16 MiB", func(path string) error {
		_, err := Load(path)
		return err
	})
	if !badinput.Is(err) {
		t.Fatalf("Load(%d bytes) = %v, want a bad-input error", maxSpecFile+1, err)
	}
}

// A file of exactly maxSpecFile bytes is read (and fails only as YAML), so
// the bound is where the doc comment says.
func TestLoadReadsAFileAtTheBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(path, []byte("phases: []\n"+strings.Repeat("#", maxSpecFile-11)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || strings.Contains(err.Error(), "over 16 MiB") {
		t.Fatalf("Load(%d bytes) = %v, want the no-phases error", maxSpecFile, err)
	}
	if !strings.Contains(err.Error(), "no phases") {
		t.Errorf("error %q, want no phases", err)
	}
}
