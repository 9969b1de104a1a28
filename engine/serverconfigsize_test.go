package engine

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/boundedfile/boundedfiletest"
)

// A file past maxServerConfigFile (/dev/zero, a wrong path) is refused with the bound
// in the error, not read whole into memory; a sparse file costs no disk.
func TestFileOverTheBoundIsRefused(t *testing.T) {
	path := boundedfiletest.Sparse(t, filepath.Join(t.TempDir(), "huge"), maxServerConfigFile+1)
	var opts Options
	_, err := ApplyServerConfig(path, &opts)
	if err == nil || !strings.Contains(err.Error(), "over 16 MiB") {
		t.Fatalf("reading %d bytes: %v, want an over-16-MiB error", maxServerConfigFile+1, err)
	}
}
