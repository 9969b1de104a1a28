package endpoints

import (
	"testing"

	"github.com/glmbench/glmbench/internal/boundedfile/boundedfiletest"
)

// A file past maxEndpointsFile (/dev/zero, a wrong path) is refused with the bound
// in the error, not read whole into memory; a sparse file costs no disk.
func TestFileOverTheBoundIsRefused(t *testing.T) {
	boundedfiletest.OverBound(t, "huge", maxEndpointsFile, "over 16 MiB", func(path string) error {
		_, err := loadEntry(path, "x")
		return err
	})
}
