package cuda

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadOfAMissingDriverIsOneLineWrappingErrNoDriver(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libcuda.so.1")
	t.Setenv("GLMBENCH_LIBCUDA", missing)
	_, err := load()
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("load() = %v, want an error wrapping ErrNoDriver", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, missing) || !strings.Contains(msg, "no NVIDIA driver") {
		t.Errorf("error %q: want one line naming %s and saying there is no NVIDIA driver", msg, missing)
	}
}

func TestLoadOfALibraryThatIsNotCUDANamesTheMissingSymbol(t *testing.T) {
	t.Setenv("GLMBENCH_LIBCUDA", "libm.so.6")
	_, err := load()
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("load() = %v, want an error wrapping ErrNoDriver", err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "libm.so.6 has no symbol cuInit") {
		t.Errorf("error %q: want one line saying libm.so.6 has no symbol cuInit", msg)
	}
}

func TestLoadNVRTCOfAMissingLibraryWrapsErrNoNVRTC(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libnvrtc.so")
	t.Setenv("GLMBENCH_LIBNVRTC", missing)
	_, err := LoadNVRTC()
	if !errors.Is(err, ErrNoNVRTC) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), missing) {
		t.Fatalf("LoadNVRTC() = %v, want one line wrapping ErrNoNVRTC and naming %s", err, missing)
	}
	t.Setenv("GLMBENCH_LIBNVRTC", "libm.so.6")
	if _, err := LoadNVRTC(); !errors.Is(err, ErrNoNVRTC) || !strings.Contains(err.Error(), "no symbol nvrtcVersion") {
		t.Fatalf("LoadNVRTC(libm) = %v, want ErrNoNVRTC naming nvrtcVersion", err)
	}
}

func TestNewBLASOfAMissingLibraryWrapsErrNoCUBLAS(t *testing.T) {
	t.Setenv("GLMBENCH_LIBCUBLAS", filepath.Join(t.TempDir(), "libcublas.so.13"))
	// The library is opened before the context is touched, so no device is needed.
	if _, err := (&Context{}).NewBLAS(); !errors.Is(err, ErrNoCUBLAS) {
		t.Fatalf("NewBLAS() = %v, want ErrNoCUBLAS", err)
	}
}

func TestLayoutOfMatchesTheCLayoutOfTheSameStruct(t *testing.T) {
	P, I, F := Pointer, Int32, Float32
	tests := []struct {
		name    string
		kinds   []ParamKind
		offsets []int
		size    int
	}{
		// struct { float *a; const float *b; int n; } → 0, 8, 16; 20 bytes of parameters.
		{"two pointers then an int", []ParamKind{P, P, I}, []int{0, 8, 16}, 20},
		// struct { int n; float *p; } → the pointer is padded to 8.
		{"an int before a pointer is padded to 8", []ParamKind{I, P}, []int{0, 8}, 16},
		// struct { int a; float b; float *p; int c; float *q; } → 0, 4, 8, 16, 24.
		{"two 4-byte values fill the gap before a pointer", []ParamKind{I, F, P, I, P}, []int{0, 4, 8, 16, 24}, 32},
		// struct { float *p; int a; int b; int c; float *q; float s; } → 0, 8, 12, 16, 24, 32.
		{"three ints then a pointer pads 4", []ParamKind{P, I, I, I, P, F}, []int{0, 8, 12, 16, 24, 32}, 36},
		{"no parameters", nil, []int{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := LayoutOf(tt.kinds)
			if len(l.Offsets) != len(tt.offsets) || l.Size != tt.size {
				t.Fatalf("LayoutOf = %v size %d, want offsets %v size %d", l, l.Size, tt.offsets, tt.size)
			}
			for i, off := range tt.offsets {
				if l.Offsets[i] != off || l.Sizes[i] != tt.kinds[i].size() {
					t.Errorf("parameter %d (%v) at %d:%d, want %d:%d", i, tt.kinds[i], l.Offsets[i], l.Sizes[i], off, tt.kinds[i].size())
				}
			}
		})
	}
}

func TestLayoutEqualComparesEveryOffsetAndSize(t *testing.T) {
	a := LayoutOf([]ParamKind{Pointer, Int32, Float32})
	if !a.Equal(Layout{Offsets: []int{0, 8, 12}, Sizes: []int{8, 4, 4}, Size: 16}) {
		t.Error("a layout differs from the same offsets and sizes")
	}
	for _, b := range []Layout{
		LayoutOf([]ParamKind{Pointer, Int32}),
		LayoutOf([]ParamKind{Int32, Pointer, Float32}),
		{Offsets: []int{0, 8, 12}, Sizes: []int{8, 4, 8}},
	} {
		if a.Equal(b) {
			t.Errorf("%v equals %v", a, b)
		}
	}
}

func TestPackWritesEachValueAtItsOffsetLittleEndian(t *testing.T) {
	params := []Param{{Kind: Int32, I: -3}, {Kind: Pointer, Ptr: 0x7f0011223344}, {Kind: Float32, F: 1.5}, {Kind: Pointer, Ptr: 8}}
	l := LayoutOf(KindsOf(params))
	buf := bytes.Repeat([]byte{0xAA}, l.Size)
	Pack(buf, l, params)
	want := make([]byte, 32)
	copy(want, bytes.Repeat([]byte{0xAA}, 32))
	binary.LittleEndian.PutUint32(want[0:], uint32(0xFFFFFFFD))
	binary.LittleEndian.PutUint64(want[8:], 0x7f0011223344)
	binary.LittleEndian.PutUint32(want[16:], math.Float32bits(1.5))
	binary.LittleEndian.PutUint64(want[24:], 8)
	if l.Size != 32 || !bytes.Equal(buf, want) {
		t.Errorf("packed % x\nwant   % x", buf, want)
	}
}

func TestCacheKeyChangesWithEachInput(t *testing.T) {
	base := CacheKey("src", []string{"-arch=sm_90", "-std=c++17"}, "13.0", "sm_90")
	if base != CacheKey("src", []string{"-arch=sm_90", "-std=c++17"}, "13.0", "sm_90") {
		t.Fatal("the same inputs give different keys")
	}
	others := map[string]string{
		"source":         CacheKey("src ", []string{"-arch=sm_90", "-std=c++17"}, "13.0", "sm_90"),
		"an option":      CacheKey("src", []string{"-arch=sm_90", "-std=c++20"}, "13.0", "sm_90"),
		"option order":   CacheKey("src", []string{"-std=c++17", "-arch=sm_90"}, "13.0", "sm_90"),
		"fewer options":  CacheKey("src", []string{"-arch=sm_90"}, "13.0", "sm_90"),
		"NVRTC version":  CacheKey("src", []string{"-arch=sm_90", "-std=c++17"}, "13.1", "sm_90"),
		"arch":           CacheKey("src", []string{"-arch=sm_90", "-std=c++17"}, "13.0", "sm_100"),
		"field boundary": CacheKey("sr", []string{"c-arch=sm_90", "-std=c++17"}, "13.0", "sm_90"),
	}
	for what, k := range others {
		if k == base {
			t.Errorf("changing the %s leaves the key %s", what, k)
		}
	}
}

func TestCubinCacheRoundTripsOnDisk(t *testing.T) {
	c := CubinCache{Dir: filepath.Join(t.TempDir(), "glmbench", "cubin")}
	key := CacheKey("src", nil, "13.0", "sm_90")
	if _, ok := c.Get(key); ok {
		t.Fatal("an empty cache has the key")
	}
	cubin := []byte("\x7fELF fake cubin")
	if err := c.Put(key, cubin); err != nil {
		t.Fatal(err)
	}
	got, ok := c.Get(key)
	if !ok || !bytes.Equal(got, cubin) {
		t.Fatalf("Get = %q, %v; want %q", got, ok, cubin)
	}
	entries, _ := os.ReadDir(c.Dir)
	if len(entries) != 1 || entries[0].Name() != key+".cubin" {
		t.Errorf("cache dir holds %v, want only %s.cubin", entries, key)
	}
}

func TestCubinCachePutIntoAnUnwritableDirFails(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := (CubinCache{Dir: filepath.Join(file, "cubin")}).Put("k", []byte("x")); err == nil {
		t.Error("Put under a regular file succeeded")
	}
}
