package cudaexec_test

import (
	"errors"
	"testing"

	"github.com/glmbench/glmbench/engine/cudaexec"
	"github.com/glmbench/glmbench/engine/cudaexec/cudatest"
	"github.com/glmbench/glmbench/engine/cudaexec/emu"
	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/kernels"
)

// The whole GPU path without a GPU: the Executor over NewLaunchOps, every
// op a kernel of kernels.cu run by the emulator, against the CPU model on
// the same weights, within the device's bound (cudatest).
func TestEmulatedExecutorMatchesTheCPUModelWithin1e4(t *testing.T) {
	t.Parallel()
	d, err := emu.Start()
	if errors.Is(err, emu.ErrNoCompiler) {
		t.Skip("g++ is not on PATH: the kernel emulator cannot be built")
	}
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := model.Preset("nano")
	if err != nil {
		t.Fatal(err)
	}
	w := model.Synth(cfg, 11)
	const pages, pageSize = 16, 16
	ex, err := cudaexec.NewExecutor(cfg, w, d.Ops(), pages, pageSize, false)
	if err != nil {
		d.Close()
		t.Fatal(err)
	}
	defer func() {
		if err := ex.Close(); err != nil {
			t.Error(err)
		}
	}()
	cpu := model.New(cfg, w, kernels.Default(), model.NewKVCacheNoMTP(cfg, pages, pageSize))
	// 5 tokens attend densely; 70 pass nano's index_topk of 64, so the
	// indexer's top-k chooses the keys of its last rows.
	cudatest.Greedy{Lens: []int{5, 70}, Steps: 4, Rel: 1e-4, Reverse: true, Seed: 5}.Check(t, ex, cpu)
}
