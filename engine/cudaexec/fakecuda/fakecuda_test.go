package fakecuda

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/internal/cuda"
)

// nvrtc loads the fake NVRTC through internal/cuda's binding (skipping
// without g++).
func nvrtc(t *testing.T) *cuda.NVRTC {
	t.Helper()
	Use(t)
	n, err := cuda.LoadNVRTC()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

const kernelSource = `extern "C" __global__ void k(float* p) { p[0] = 1; }`

func TestTheFakeNVRTCMakesACubinNamingTheArchitectureAndTheSourcesHash(t *testing.T) {
	n := nvrtc(t)
	if n.Version() != "13.0" {
		t.Errorf("nvrtcVersion = %s, want 13.0", n.Version())
	}
	cubin, err := n.Compile(kernelSource, "k.cu", []string{"-arch=sm_90", "--std=c++17"})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%s sm_90 %016x\x00", cubinMagic, SourceHash(kernelSource))
	if !bytes.Equal(cubin, []byte(want)) {
		t.Errorf("cubin %q, want %q", cubin, want)
	}
}

func TestTheFakeNVRTCRefusesWhatNVRTCRefuses(t *testing.T) {
	n := nvrtc(t)
	for _, tc := range []struct {
		name    string
		options []string
		want    string
	}{
		{"an unknown option", []string{"-arch=sm_90", "--no-such-option"}, "NVRTC_ERROR_INVALID_OPTION (5)"},
		{"an architecture that is not one", []string{"-arch=gfx90a"}, "NVRTC_ERROR_INVALID_OPTION (5)"},
		// NVRTC compiles for a virtual architecture without -arch, and
		// nvrtcGetCUBINSize answers 0: internal/cuda says so.
		{"no -arch", []string{"--std=c++17"}, "gave no cubin"},
		{"a virtual architecture", []string{"--gpu-architecture=compute_90"}, "gave no cubin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := n.Compile(kernelSource, "k.cu", tc.options)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Compile with %q = %v, want an error saying %q", tc.options, err, tc.want)
			}
		})
	}
	if _, err := n.Compile("int x;", "x.cu", []string{"-arch=sm_90"}); err == nil || !strings.Contains(err.Error(), "NVRTC_ERROR_COMPILATION (6)") || !strings.Contains(err.Error(), "x.cu: error") {
		t.Errorf("Compile of a source without a kernel = %v, want NVRTC_ERROR_COMPILATION with the log", err)
	}
}
