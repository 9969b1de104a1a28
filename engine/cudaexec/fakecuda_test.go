package cudaexec_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/engine/cudaexec"
	"github.com/glmbench/glmbench/engine/cudaexec/cudatest"
	"github.com/glmbench/glmbench/engine/cudaexec/fakecuda"
	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/internal/cuda"
	"github.com/glmbench/glmbench/kernels"
)

// The device path through the real bindings without a GPU: internal/cuda
// loads the fake driver, NVRTC and cuBLAS of engine/cudaexec/fakecuda
// (the real prototypes, host memory for device memory, kernels.cu
// compiled in), so a binding that passes a wrong type, width or order, a
// parameter packed at the wrong offset or a row-major mapping onto cuBLAS
// that is wrong fails here as it would on the GPU.

// fakeContext is the fake device's primary context through internal/cuda,
// released when t ends.
func fakeContext(t *testing.T) (*cuda.Driver, *cuda.Device, *cuda.Context) {
	t.Helper()
	fakecuda.Use(t)
	drv, err := cuda.Load()
	if err != nil {
		t.Fatal(err)
	}
	dev, err := drv.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := dev.Retain()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ctx.Close(); err != nil {
			t.Error(err)
		}
	})
	return drv, dev, ctx
}

func TestFakeCUDAOpenDeviceNamesTheFakeDevice(t *testing.T) {
	dir := fakecuda.Use(t)
	ops, err := cudaexec.OpenDevice(cudaexec.DeviceOptions{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if want := "cuda:0 " + fakecuda.DeviceName + " sm_90"; ops.Name() != want {
		t.Errorf("Name() = %q, want %q", ops.Name(), want)
	}
	if err := ops.Close(); err != nil {
		t.Fatal(err)
	}
	// The cubin was cached; a second open loads it from there.
	ops, err = cudaexec.OpenDevice(cudaexec.DeviceOptions{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := ops.Close(); err != nil {
		t.Error(err)
	}
}

func TestFakeCUDADriverCallsPassAndReturnTheirValues(t *testing.T) {
	drv, dev, ctx := fakeContext(t)
	if drv.Version != fakecuda.DriverVersion {
		t.Errorf("Version = %d, want %d", drv.Version, fakecuda.DriverVersion)
	}
	// TotalMem needs all 64 bits of its size_t.
	if dev.Name != fakecuda.DeviceName || dev.Major != fakecuda.Major || dev.Minor != fakecuda.Minor || dev.TotalMem != fakecuda.TotalMem {
		t.Errorf("device %q %d.%d with %d bytes, want %q %d.%d with %d", dev.Name, dev.Major, dev.Minor, dev.TotalMem,
			fakecuda.DeviceName, fakecuda.Major, fakecuda.Minor, fakecuda.TotalMem)
	}
	if _, err := drv.Device(1); err == nil {
		t.Error("Device(1) of a machine with one device succeeded")
	}

	// Alloc zeroes (the fake's fresh memory is 0xCD: only cuMemsetD8 makes it 0).
	p, err := ctx.Alloc(4 * 1000)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 1000)
	if err := cuda.CopyFromDevice(ctx, got, p); err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(got, func(v float32) bool { return v != 0 }) {
		t.Error("Alloc's memory is not zero")
	}
	src := []float32{1.5, -2, float32(math.Inf(1)), 3e-39}
	if err := cuda.CopyToDevice(ctx, p+4*500, src); err != nil {
		t.Fatal(err)
	}
	back := make([]float32, 6)
	if err := cuda.CopyFromDevice(ctx, back, p+4*499); err != nil {
		t.Fatal(err)
	}
	if want := []float32{0, 1.5, -2, float32(math.Inf(1)), 3e-39, 0}; !slices.Equal(back, want) {
		t.Errorf("elements 499..504 are %v, want %v", back, want)
	}
	if err := ctx.Memset(p+4*500, 0xff, 4); err != nil {
		t.Fatal(err)
	}
	ints := make([]int32, 2)
	if err := cuda.CopyFromDevice(ctx, ints, p+4*500); err != nil {
		t.Fatal(err)
	}
	if ints[0] != -1 || ints[1] != int32(math.Float32bits(-2)) {
		t.Errorf("after Memset of 4 bytes of 0xff: %#x, want -1 then -2's bits", ints)
	}
	// A copy past the allocation's end is the driver's CUDA_ERROR_INVALID_VALUE, named.
	err = cuda.CopyToDevice(ctx, p+4*999, []float32{1, 2})
	if e := (*cuda.Error)(nil); !errors.As(err, &e) || e.Name != "CUDA_ERROR_INVALID_VALUE" || e.Code != 1 || e.String != "invalid argument" {
		t.Errorf("a copy past the end: %v, want CUDA_ERROR_INVALID_VALUE (1): invalid argument", err)
	}
	if err := ctx.Free(p); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Free(p); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_INVALID_VALUE") {
		t.Errorf("a second Free: %v, want CUDA_ERROR_INVALID_VALUE", err)
	}
	if _, err := ctx.Alloc(int(fakecuda.TotalMem) + 1); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory") {
		t.Errorf("an allocation past the device's memory: %v, want CUDA_ERROR_OUT_OF_MEMORY", err)
	}

	h, err := ctx.AllocHost(64)
	if err != nil {
		t.Fatal(err)
	}
	if b := h.Bytes(); len(b) != 64 {
		t.Errorf("pinned memory of %d bytes, want 64", len(b))
	}
	if err := ctx.FreeHost(h); err != nil {
		t.Fatal(err)
	}

	// Events time the host clock between their records.
	start, err := ctx.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ctx.NewEvent()
	if _, err := end.Since(start); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_INVALID_HANDLE") {
		t.Errorf("Since before any record: %v, want CUDA_ERROR_INVALID_HANDLE", err)
	}
	start.Record()
	time.Sleep(20 * time.Millisecond)
	end.Record()
	if err := end.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if ms, err := end.Since(start); err != nil || ms < 20 {
		t.Errorf("Since = %g ms, %v; want at least the 20 ms slept between the records", ms, err)
	}
	start.Destroy()
	end.Destroy()

	if _, err := ctx.LoadModule([]byte("\x7fELF not a fake cubin")); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_INVALID_IMAGE") {
		t.Errorf("LoadModule of another image: %v, want CUDA_ERROR_INVALID_IMAGE", err)
	}
	if err := ctx.Synchronize(); err != nil {
		t.Error(err)
	}
}

// fakeModule compiles kernels.cu with the fake NVRTC, as OpenDevice does,
// and loads it.
func fakeModule(t *testing.T, dev *cuda.Device, ctx *cuda.Context) *cuda.Module {
	t.Helper()
	nv, err := cuda.LoadNVRTC()
	if err != nil {
		t.Fatal(err)
	}
	cubin, _, err := nv.CompileCached(cuda.CubinCache{Dir: t.TempDir()}, cudaexec.KernelSource, "kernels.cu", dev.Arch(), []string{"--std=c++17"})
	if err != nil {
		t.Fatal(err)
	}
	mod, err := ctx.LoadModule(cubin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mod.Unload() })
	return mod
}

// fakeKernel is mod's kernel name, its parameter layout, and a launcher on
// ctx for it; the caller closes the launcher.
func fakeKernel(t *testing.T, ctx *cuda.Context, mod *cuda.Module, name string) (*cuda.Function, cuda.Layout, *cuda.Launcher) {
	t.Helper()
	fn, err := mod.Function(name)
	if err != nil {
		t.Fatal(err)
	}
	layout, err := fn.ParamInfo()
	if err != nil {
		t.Fatal(err)
	}
	l, err := ctx.NewLauncher()
	if err != nil {
		t.Fatal(err)
	}
	return fn, layout, l
}

func TestFakeCUDAKernelLayoutsAreTheCCompilersAndEqualKernelSignatures(t *testing.T) {
	_, dev, ctx := fakeContext(t)
	mod := fakeModule(t, dev, ctx)
	decls, err := cudaexec.ParseKernels(cudaexec.KernelSource)
	if err != nil {
		t.Fatal(err)
	}
	sigs := cudaexec.KernelSignatures()
	if len(decls) != len(sigs) {
		t.Errorf("kernels.cu declares %d kernels, KernelSignatures has %d", len(decls), len(sigs))
	}
	for _, d := range decls {
		fn, err := mod.Function(d.Name)
		if err != nil {
			t.Errorf("kernel %s: %v", d.Name, err)
			continue
		}
		// ParamInfo asks index after index until CUDA_ERROR_INVALID_VALUE.
		info, err := fn.ParamInfo()
		if err != nil {
			t.Errorf("kernel %s: %v", d.Name, err)
			continue
		}
		kinds := make([]cuda.ParamKind, len(sigs[d.Name]))
		for i, k := range sigs[d.Name] {
			kinds[i] = map[cudaexec.ArgKind]cuda.ParamKind{cudaexec.ArgPtr: cuda.Pointer, cudaexec.ArgInt: cuda.Int32, cudaexec.ArgFloat: cuda.Float32}[k]
		}
		if want := cuda.LayoutOf(kinds); len(info.Offsets) != len(d.Params) || !info.Equal(want) {
			t.Errorf("kernel %s: the C compiler lays its %d parameters out as %v, the Go side packs %v as %v", d.Name, len(d.Params), info, sigs[d.Name], want)
		}
	}
	if _, err := mod.Function("no_such_kernel"); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_NOT_FOUND (500): named symbol not found") {
		t.Errorf("Function of a kernel that is not there: %v, want CUDA_ERROR_NOT_FOUND", err)
	}
}

func TestFakeCUDACuBLASMatMulTIsTheRowMajorProduct(t *testing.T) {
	_, _, ctx := fakeContext(t)
	b, err := ctx.NewBLAS()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rng := rand.New(rand.NewPCG(9, 10))
	// Odd sizes, m ≠ n ≠ k, so any swapped dimension or leading dimension
	// reads the wrong elements (or past an allocation, which the fake refuses).
	for _, s := range []struct{ m, n, k int }{{1, 1, 1}, {37, 29, 133}, {5, 131, 19}, {64, 3, 7}} {
		x, w := randMat(rng, s.m, s.k), randMat(rng, s.n, s.k)
		px, _ := ctx.Alloc(4 * len(x.Data))
		pw, _ := ctx.Alloc(4 * len(w.Data))
		pd, _ := ctx.Alloc(4 * s.m * s.n)
		cuda.CopyToDevice(ctx, px, x.Data)
		cuda.CopyToDevice(ctx, pw, w.Data)
		if err := b.MatMulT(pd, px, pw, s.m, s.n, s.k); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, s.m*s.n)
		if err := cuda.CopyFromDevice(ctx, got, pd); err != nil {
			t.Fatal(err)
		}
		// The fake sums each dot product in double in k's order and
		// rounds once: the same float64 sum here gives the same float32.
		bad := 0
		for i := range s.m {
			for j := range s.n {
				var ref float64
				for c := range s.k {
					ref += float64(x.Data[i*s.k+c]) * float64(w.Data[j*s.k+c])
				}
				if g := got[i*s.n+j]; g != float32(ref) {
					if bad++; bad <= 5 {
						t.Errorf("%d×%d·(%d×%d)ᵀ [%d,%d] = %g, want %g", s.m, s.k, s.n, s.k, i, j, g, float32(ref))
					}
				}
			}
		}
		ctx.Free(px)
		ctx.Free(pw)
		ctx.Free(pd)
	}
}

// The whole GPU path without a GPU: the Executor over OpenDevice's Ops,
// every op a kernel of kernels.cu launched through the real bindings
// (cuLaunchKernel with packed parameters) and run by the emulator's runner
// in the fake driver, against the CPU model on the same weights, within the
// device's bound (cudatest). (It was first made over the emulator's own
// Ops, where a combine that dropped the last expert failed it; this one
// covers that path and the bindings too.)
func TestFakeCUDAExecutorMatchesTheCPUModelWithin1e4(t *testing.T) {
	dir := fakecuda.Use(t)
	ops, err := cudaexec.OpenDevice(cudaexec.DeviceOptions{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := model.Preset("nano")
	if err != nil {
		t.Fatal(err)
	}
	w := model.Synth(cfg, 13)
	const pages, pageSize = 16, 16
	ex, err := cudaexec.NewExecutor(cfg, w, ops, pages, pageSize, false)
	if err != nil {
		ops.Close()
		t.Fatal(err)
	}
	defer func() {
		if err := ex.Close(); err != nil {
			t.Error(err)
		}
	}()
	cpu := model.New(cfg, w, kernels.Default(), model.NewKVCacheNoMTP(cfg, pages, pageSize))
	// 5 tokens attend densely; 70 pass nano's index_topk of 64.
	cudatest.Greedy{Lens: []int{5, 70}, Steps: 3, Rel: 1e-4, Seed: 7}.Check(t, ex, cpu)
}

func TestFakeCUDAAKernelGivenAPointerOutsideDeviceMemoryFaultsTheContext(t *testing.T) {
	_, dev, ctx := fakeContext(t)
	mod := fakeModule(t, dev, ctx)
	fn, layout, l := fakeKernel(t, ctx, mod, "scale")
	kinds := cudaexec.KernelSignatures()["scale"]
	params := make([]cuda.Param, len(kinds))
	for i, k := range kinds {
		switch k {
		case cudaexec.ArgPtr:
			params[i] = cuda.Param{Kind: cuda.Pointer, Ptr: 0x1000} // not an allocation
		case cudaexec.ArgInt:
			params[i] = cuda.Param{Kind: cuda.Int32, I: 1}
		default:
			params[i] = cuda.Param{Kind: cuda.Float32, F: 1}
		}
	}
	err := l.Launch(fn, cuda.Dim3{X: 1, Y: 1, Z: 1}, cuda.Dim3{X: 1, Y: 1, Z: 1}, 0, layout, params)
	if err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_ILLEGAL_ADDRESS (700)") || !strings.Contains(err.Error(), "scale") {
		t.Fatalf("a launch with a pointer outside device memory: %v, want CUDA_ERROR_ILLEGAL_ADDRESS naming the kernel", err)
	}
	// As on a GPU the fault is the context's: every later call returns it.
	if err := ctx.Synchronize(); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_ILLEGAL_ADDRESS") {
		t.Errorf("Synchronize after the fault: %v, want CUDA_ERROR_ILLEGAL_ADDRESS", err)
	}
}
