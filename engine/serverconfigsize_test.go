package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file past maxServerConfigFile (/dev/zero, a wrong path) is refused with the bound
// in the error, not read whole into memory; a sparse file costs no disk.
func TestFileOverTheBoundIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxServerConfigFile + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var opts Options
	_, err = ApplyServerConfig(path, &opts)
	if err == nil || !strings.Contains(err.Error(), "over 16 MiB") {
		t.Fatalf("reading %d bytes: %v, want an over-16-MiB error", maxServerConfigFile+1, err)
	}
}
