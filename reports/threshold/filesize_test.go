package threshold

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/glmbench/glmbench/internal/boundedfile/boundedfiletest"
)

// A threshold file past maxThresholdFile (/dev/zero, a report given by
// mistake) is refused with the bound in the error, not read whole.
func TestReadFileRefusesAFileOverTheBound(t *testing.T) {
	boundedfiletest.OverBound(t, "huge.yaml", maxThresholdFile, "over 16 MiB", func(path string) error {
		_, err := ReadFile(path)
		return err
	})
}

// A small file is still read and parsed.
func TestReadFileReadsASmallFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.yaml")
	if err := os.WriteFile(path, []byte("- 'decode_medium.out_tput > -5%'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts, err := ReadFile(path)
	if err != nil || len(ts) != 1 {
		t.Fatalf("ReadFile = %v, %v; want one threshold", ts, err)
	}
}
