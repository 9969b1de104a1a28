package cmdtest

import (
	"testing"

	"github.com/glmbench/glmbench/engine/cudaexec"
)

// NoGPU skips t where a GPU opens: the test checks a machine without one
// (a refusal of --device cuda, say).
func NoGPU(t testing.TB) {
	t.Helper()
	ops, err := cudaexec.OpenDevice(cudaexec.DeviceOptions{})
	if err == nil {
		ops.Close()
		t.Skip("a GPU opened: this checks a machine without one")
	}
}
