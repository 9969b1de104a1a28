package engine

import (
	"testing"

	"github.com/glmbench/glmbench/internal/boundedfile/boundedfiletest"
)

// A file past maxServerConfigFile (/dev/zero, a wrong path) is refused with the bound
// in the error, not read whole into memory; a sparse file costs no disk.
func TestFileOverTheBoundIsRefused(t *testing.T) {
	boundedfiletest.OverBound(t, "huge", maxServerConfigFile, "over 16 MiB", func(path string) error {
		var opts Options
		_, err := ApplyServerConfig(path, &opts)
		return err
	})
}
