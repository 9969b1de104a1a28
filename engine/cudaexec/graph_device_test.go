package cudaexec

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/engine/cudaexec/cudatest"
	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/internal/cuda"
)

// On the GPU: an Executor replaying CUDA graphs and one launching
// directly, on the same weights, give the same bits on every decode step
// (the fake driver's test, TestFakeCUDADecodeGraphsGiveTheDirectLaunchesBits,
// on the real driver: real capture, real cuGraphLaunch), on nano and tiny
// with index_topk 8 so the indexer chooses within a few steps; and at a
// bucket past 64 rows (72, for batches of 65 and 70), where the GEMMs are
// the wide kernels and most of a bucket can be padding. Every decode step
// went through a graph.
func TestDeviceDecodeGraphsGiveTheDirectLaunchesBits(t *testing.T) {
	gpuOps(t) // skips without a GPU, before the weights are made
	wide := cudatest.Decode{Steps: [][]int{make([]int, 70), make([]int, 65), make([]int, 40), make([]int, 70)}}
	for range 70 {
		wide.Lens = append(wide.Lens, 3)
	}
	for _, st := range wide.Steps {
		for j := range st {
			st[j] = j
		}
	}
	for _, c := range []struct {
		name, preset string
		maxBS        int
		script       cudatest.Decode
	}{
		{"nano", "nano", 8, cudatest.DecodeSteps},
		{"tiny", "tiny", 8, cudatest.DecodeSteps},
		{"nano past 64 rows", "nano", 80, wide},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := model.Preset(c.preset)
			if err != nil {
				t.Fatal(err)
			}
			cfg.IndexTopK = 8
			w := model.Synth(cfg, 5)
			const pages, pageSize = 80, 16
			with, without := gpuExecutor(t, cfg, w, pages, pageSize), gpuExecutor(t, cfg, w, pages, pageSize)
			if !with.UseGraphs(c.maxBS) {
				t.Fatal("UseGraphs on the GPU's Ops is off")
			}
			c.script.Same(t, with, without, with.Pool(), cfg.VocabSize)
			st := with.GraphStats()
			if st.Captures+st.Replays != len(c.script.Steps) || st.Replays == 0 {
				t.Errorf("graph stats %+v over %d decode steps: want every step through a graph, some replayed", st, len(c.script.Steps))
			}
		})
	}
}

// On the GPU, as on the fake driver: during a capture of the device's
// stream (global mode) a synchronous copy is refused, and the capture
// then ends with no graph (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED). The
// copy's error is the driver's for an unsafe call during a capture or for
// the legacy stream's implicit wait on the capturing stream.
func TestDeviceCaptureRefusesASynchronousCopy(t *testing.T) {
	d := gpuOpen(t)
	p, err := d.ctx.Alloc(16)
	if err != nil {
		t.Fatal(err)
	}
	defer d.ctx.Free(p)
	if err := d.stream.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	err = cuda.CopyToDevice(d.ctx, p, []float32{1, 2, 3, 4})
	if err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED") && !strings.Contains(err.Error(), "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT") {
		t.Errorf("a synchronous copy during a capture: %v, want CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED or _IMPLICIT", err)
	}
	if g, err := d.stream.EndCapture(); err == nil || g != nil || !strings.Contains(err.Error(), "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED") {
		if g != nil {
			g.Destroy()
		}
		t.Errorf("ending the capture: graph %v, %v; want none and CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", g, err)
	}
}
