package threshold

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/boundedfile/boundedfiletest"
)

// A threshold file past maxThresholdFile (/dev/zero, a report given by
// mistake) is refused with the bound in the error, not read whole.
func TestReadFileRefusesAFileOverTheBound(t *testing.T) {
	path := boundedfiletest.Sparse(t, filepath.Join(t.TempDir(), "huge.yaml"), maxThresholdFile+1)
	if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), "over 16 MiB") {
		t.Fatalf("ReadFile(%d bytes) = %v, want an over-16-MiB error", maxThresholdFile+1, err)
	}
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
