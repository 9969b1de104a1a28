package emu

import (
	"errors"
	"testing"
)

// start returns a running emulator, closed when the test ends; it skips
// when g++ is missing.
func start(t *testing.T) *Device {
	t.Helper()
	d, err := Start()
	if errors.Is(err, ErrNoCompiler) {
		t.Skip("g++ is not on PATH: the kernel emulator cannot be built")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}
