package cudaexec_test

import (
	"math"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/cuda"
)

// A capture on the fake driver refuses what the real one refuses in
// CU_STREAM_CAPTURE_MODE_GLOBAL (a synchronous copy, a context sync:
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, and the capture is then
// invalidated: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED from cuStreamEndCapture),
// and a good capture records its launches without running them, each
// replay running them with the parameters they were captured with.
func TestFakeCUDACaptureRefusesASynchronousCopyAndReplaysWhatItRecorded(t *testing.T) {
	_, dev, ctx := fakeContext(t)
	mod := fakeModule(t, dev, ctx)
	s, err := ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Destroy(); err != nil {
			t.Error(err)
		}
	}()
	p, err := ctx.Alloc(4 * 4)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Free(p)

	if err := s.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	if err := cuda.CopyToDevice(ctx, p, []float32{1, 2, 3, 4}); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED") {
		t.Errorf("a synchronous copy during a capture: %v, want CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", err)
	}
	if err := ctx.Synchronize(); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED") {
		t.Errorf("a context sync during a capture: %v, want CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", err)
	}
	if g, err := s.EndCapture(); err == nil || g != nil || !strings.Contains(err.Error(), "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED") {
		t.Errorf("ending a capture a copy invalidated: graph %v, %v; want none and CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", g, err)
	}

	// scale(x, xs, T, C, alpha) on 1 × 4 floats, captured with alpha 2.
	if err := cuda.CopyToDevice(ctx, p, []float32{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	fn, layout, l := fakeKernel(t, ctx, mod, "scale")
	defer l.Close()
	l.SetStream(s)
	params := []cuda.Param{{Kind: cuda.Pointer, Ptr: p}, {Kind: cuda.Int32, I: 4}, {Kind: cuda.Int32, I: 1}, {Kind: cuda.Int32, I: 4}, {Kind: cuda.Float32, F: 2}}
	if err := s.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	if err := l.Launch(fn, cuda.Dim3{X: 1, Y: 1, Z: 1}, cuda.Dim3{X: 32, Y: 1, Z: 1}, 0, layout, params); err != nil {
		t.Fatal(err)
	}
	g, err := s.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	x, err := g.Instantiate()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 4)
	check := func(what string, want []float32) {
		t.Helper()
		if err := cuda.CopyFromDevice(ctx, got, p); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: %v, want %v", what, got, want)
			}
		}
	}
	check("after the capture (nothing ran)", []float32{1, 2, 3, 4})
	// A direct launch with alpha 3 reuses the launcher's buffer: the graph
	// keeps its own copy of alpha 2.
	params[4].F = 3
	if err := l.Launch(fn, cuda.Dim3{X: 1, Y: 1, Z: 1}, cuda.Dim3{X: 32, Y: 1, Z: 1}, 0, layout, params); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := x.Launch(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	check("after a direct launch and two replays", []float32{12, 24, 36, 48})
	if err := x.Destroy(); err != nil {
		t.Fatal(err)
	}
}
