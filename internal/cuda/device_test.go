package cuda

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// These tests need a GPU and NVRTC; they skip without them, and fail
// instead when GLMBENCH_REQUIRE_CUDA=1.

// gpu opens device 0's primary context, or skips.
func gpu(t *testing.T) *Context {
	t.Helper()
	skip := func(err error) {
		t.Helper()
		if os.Getenv("GLMBENCH_REQUIRE_CUDA") == "1" {
			t.Fatalf("GLMBENCH_REQUIRE_CUDA=1 but no usable GPU: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	d, err := Load()
	if errors.Is(err, ErrNoDriver) {
		skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	dev, err := d.Device(0)
	if errors.Is(err, ErrNoDriver) {
		skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	c, err := dev.Retain()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// testKernel takes every parameter kind, in an order that needs padding.
const testKernel = `
extern "C" __global__ void axpb(float* y, const float* x, int n, float a, const int* idx, float b) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = __fadd_rn(__fmul_rn(a, x[idx[i]]), b);
}
`

func TestGPULaunchPassesMixedParametersInTheirCLayout(t *testing.T) {
	c := gpu(t)
	nv, err := LoadNVRTC()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cubin, warn, err := nv.CompileCached(CubinCache{Dir: dir}, testKernel, "test.cu", c.Dev.Arch(), nil)
	if err != nil || warn != nil {
		t.Fatalf("compile: %v (warn %v)", err, warn)
	}
	// The second compile is the cache's file, byte for byte.
	again, _, err := nv.CompileCached(CubinCache{Dir: dir}, testKernel, "test.cu", c.Dev.Arch(), nil)
	if err != nil || !bytes.Equal(again, cubin) {
		t.Fatalf("cached compile: %v, same bytes %v", err, bytes.Equal(again, cubin))
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*.cubin")); len(files) != 1 {
		t.Errorf("cache holds %v, want one cubin", files)
	}
	mod, err := c.LoadModule(cubin)
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Unload()
	fn, err := mod.Function("axpb")
	if err != nil {
		t.Fatal(err)
	}
	kinds := []ParamKind{Pointer, Pointer, Int32, Float32, Pointer, Float32}
	info, err := fn.ParamInfo()
	if err != nil {
		t.Fatal(err)
	}
	layout := LayoutOf(kinds)
	if !info.Equal(layout) {
		t.Fatalf("the device lays axpb's parameters out as %v, LayoutOf as %v", info, layout)
	}
	if _, err := mod.Function("no_such_kernel"); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_NOT_FOUND") {
		t.Errorf("a missing kernel: %v, want CUDA_ERROR_NOT_FOUND", err)
	}

	const n = 1000
	x, idx := make([]float32, n), make([]int32, n)
	for i := range n {
		x[i] = float32(i)*0.37 - 100
		idx[i] = int32((i * 7) % n)
	}
	px, _ := c.Alloc(4 * n)
	pi, _ := c.Alloc(4 * n)
	py, err := c.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { c.Free(px); c.Free(pi); c.Free(py) }()
	if err := CopyToDevice(c, px, x); err != nil {
		t.Fatal(err)
	}
	if err := CopyToDevice(c, pi, idx); err != nil {
		t.Fatal(err)
	}
	l, err := c.NewLauncher()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	start, _ := c.NewEvent()
	end, err := c.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	defer start.Destroy()
	defer end.Destroy()
	const a, b = float32(1.5), float32(-0.25)
	start.Record()
	// Two launches from the one launcher: the second's values replace the first's.
	if err := l.Launch(fn, Dim3{8, 1, 1}, Dim3{128, 1, 1}, 0, layout, []Param{{Kind: Pointer, Ptr: py}, {Kind: Pointer, Ptr: px}, {Kind: Int32, I: n}, {Kind: Float32, F: 9}, {Kind: Pointer, Ptr: pi}, {Kind: Float32, F: 9}}); err != nil {
		t.Fatal(err)
	}
	if err := l.Launch(fn, Dim3{8, 1, 1}, Dim3{128, 1, 1}, 0, layout, []Param{{Kind: Pointer, Ptr: py}, {Kind: Pointer, Ptr: px}, {Kind: Int32, I: n - 1}, {Kind: Float32, F: a}, {Kind: Pointer, Ptr: pi}, {Kind: Float32, F: b}}); err != nil {
		t.Fatal(err)
	}
	end.Record()
	y := make([]float32, n)
	if err := CopyFromDevice(c, y, py); err != nil {
		t.Fatal(err)
	}
	for i, v := range y {
		want := float32(float32(a*x[idx[i]]) + b)
		if i == n-1 { // outside the second launch's n: the first launch's value
			want = float32(float32(9*x[idx[i]]) + 9)
		}
		if math.Float32bits(v) != math.Float32bits(want) {
			t.Fatalf("y[%d] = %g, want %g", i, v, want)
		}
	}
	if err := end.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if ms, err := end.Since(start); err != nil || ms < 0 {
		t.Errorf("elapsed %g ms, %v", ms, err)
	}
}

func TestGPUCompileFailureReturnsNVRTCsLog(t *testing.T) {
	c := gpu(t)
	nv, err := LoadNVRTC()
	if err != nil {
		t.Fatal(err)
	}
	_, err = nv.Compile("extern \"C\" __global__ void k() { undeclared_thing(); }", "bad.cu", []string{"-arch=" + c.Dev.Arch()})
	if err == nil || !strings.Contains(err.Error(), "undeclared_thing") || !strings.Contains(err.Error(), "NVRTC_ERROR_COMPILATION") {
		t.Errorf("compile error %v: want NVRTC_ERROR_COMPILATION with the log naming undeclared_thing", err)
	}
}

func TestGPUContextIsCorrectFromManyGoroutines(t *testing.T) {
	c := gpu(t)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := make([]int32, 1<<16)
			for i := range src {
				src[i] = int32(g<<20 + i)
			}
			for range 20 {
				p, err := c.Alloc(4 * len(src))
				if err != nil {
					errs <- err
					return
				}
				back := make([]int32, len(src))
				if err := CopyToDevice(c, p, src); err != nil {
					errs <- err
					return
				}
				if err := CopyFromDevice(c, back, p); err != nil {
					errs <- err
					return
				}
				if err := c.Free(p); err != nil {
					errs <- err
					return
				}
				for i := range back {
					if back[i] != src[i] {
						errs <- errors.New("a round trip from a goroutine came back different")
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestGPUDeviceIsDescribed(t *testing.T) {
	c := gpu(t)
	if c.Dev.Name == "" || c.Dev.Major < 3 || c.Dev.TotalMem == 0 || !strings.HasPrefix(c.Dev.Arch(), "sm_") {
		t.Errorf("device %+v", *c.Dev)
	}
	if c.drv.Version < 11000 {
		t.Errorf("driver version %d", c.drv.Version)
	}
}
