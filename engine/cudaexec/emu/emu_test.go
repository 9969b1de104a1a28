package emu

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/engine/cudaexec"
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

func TestDeviceRoundTripsMemory(t *testing.T) {
	d := start(t)
	f := d.Alloc(5, cudaexec.F32)
	d.UploadF32(f, 1, []float32{1.5, -2, float32(math.Inf(1))})
	got := make([]float32, 5)
	d.DownloadF32(got, f, 0)
	if want := []float32{0, 1.5, -2, float32(math.Inf(1)), 0}; !slices.Equal(got, want) {
		t.Errorf("floats %v, want %v (zeroed, then three at offset 1)", got, want)
	}
	i := d.Alloc(3, cudaexec.I32)
	d.UploadI32(i, 0, []int32{-1, 7, math.MaxInt32})
	gi := make([]int32, 2)
	d.DownloadI32(gi, i, 1)
	if !slices.Equal(gi, []int32{7, math.MaxInt32}) {
		t.Errorf("ints %v, want [7 %d]", gi, math.MaxInt32)
	}
	d.Free(f)
	if err := d.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestDeviceRunsAKernelWithEveryArgumentKind(t *testing.T) {
	d := start(t)
	// scale(x, stride 3, T 2, C 2, alpha 0.5) on a 2×3 buffer: only columns 0 and 1 change.
	x := d.Alloc(6, cudaexec.F32)
	d.UploadF32(x, 0, []float32{2, 4, 6, 8, 10, 12})
	d.Call("scale", cudaexec.Dim3{X: 2, Y: 1, Z: 1}, cudaexec.Dim3{X: 32, Y: 1, Z: 1}, 0,
		cudaexec.Ptr(x, 0), cudaexec.Int(3), cudaexec.Int(2), cudaexec.Int(2), cudaexec.Float(0.5))
	got := make([]float32, 6)
	d.DownloadF32(got, x, 0)
	if want := []float32{1, 2, 6, 4, 5, 12}; !slices.Equal(got, want) || d.Err() != nil {
		t.Errorf("got %v (%v), want %v", got, d.Err(), want)
	}
}

func TestDeviceErrorsAreSticky(t *testing.T) {
	d := start(t)
	x := d.Alloc(2, cudaexec.F32)
	d.Call("no_such_kernel", cudaexec.Dim3{X: 1, Y: 1, Z: 1}, cudaexec.Dim3{X: 1, Y: 1, Z: 1}, 0)
	err := d.Err()
	if err == nil || !strings.Contains(err.Error(), "no kernel no_such_kernel") {
		t.Fatalf("error %v, want one naming the missing kernel", err)
	}
	d.UploadF32(x, 0, []float32{1, 2}) // does nothing now
	got := []float32{9, 9}
	d.DownloadF32(got, x, 0)
	if !slices.Equal(got, []float32{9, 9}) || d.Err() != err {
		t.Errorf("after the error: download wrote %v, error %v", got, d.Err())
	}
	if cerr := d.Close(); cerr != err {
		t.Errorf("Close returned %v, want the first error", cerr)
	}
}

func TestDispatchUnpacksEachParameterByKind(t *testing.T) {
	got := Dispatch([]cudaexec.KernelDecl{{Name: "k", Params: []cudaexec.KernelParam{
		{Type: "const float*", Name: "x", Kind: cudaexec.ArgPtr}, {Type: "int", Name: "n", Kind: cudaexec.ArgInt},
		{Type: "float", Name: "s", Kind: cudaexec.ArgFloat}}}})
	for _, want := range []string{"k((const float*)a[0].p, a[1].i, a[2].f);", `{"k", 3, emu_call_k}`} {
		if !strings.Contains(got, want) {
			t.Errorf("dispatch lacks %q:\n%s", want, got)
		}
	}
}
