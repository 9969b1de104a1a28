package cudaexec

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// IndexScores returns the indexer's scores of o's last SelectKeys: the
// scratch allocation, T × stride; ok is false when o is not a NewLaunchOps
// Ops. It lives in a test file so that the external tests (which run the
// emulator, a package that imports this one) can read them.
func IndexScores(o Ops) (m Mem, stride int, ok bool) {
	lo, ok := o.(*launchOps)
	if g, isGraph := o.(*graphOps); isGraph {
		lo, ok = g.launchOps, true
	}
	if !ok {
		return nil, 0, false
	}
	return lo.scores, lo.scoreStride, true
}

func TestKernelSignaturesAreTheSourceDeclarations(t *testing.T) {
	decls, err := ParseKernels(KernelSource)
	if err != nil {
		t.Fatal(err)
	}
	sigs := KernelSignatures()
	if len(decls) != len(sigs) {
		t.Errorf("kernels.cu declares %d kernels, the Go table has %d", len(decls), len(sigs))
	}
	for _, d := range decls {
		want, ok := sigs[d.Name]
		if !ok {
			t.Errorf("kernel %s is not in KernelSignatures", d.Name)
			continue
		}
		var got []ArgKind
		for _, p := range d.Params {
			got = append(got, p.Kind)
		}
		if !slices.Equal(got, want) {
			t.Errorf("kernel %s: source kinds %v, Go table %v", d.Name, got, want)
		}
	}
	for name := range sigs {
		if !slices.ContainsFunc(decls, func(d KernelDecl) bool { return d.Name == name }) {
			t.Errorf("KernelSignatures names %s, which kernels.cu does not declare", name)
		}
	}
}

func TestParseKernelsReadsEveryParameterType(t *testing.T) {
	src := `// extern "C" __global__ void commented(int x) is not a kernel
extern "C" __global__ void k(float* a, const float* b, int* c,
                            const int *__restrict__ d, int n, float s) {}
extern "C" __global__ void none() {}`
	decls, err := ParseKernels(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(decls) != 2 || decls[0].Name != "k" || decls[1].Name != "none" || len(decls[1].Params) != 0 {
		t.Fatalf("got %+v", decls)
	}
	want := []KernelParam{{"float*", "a", ArgPtr}, {"const float*", "b", ArgPtr}, {"int*", "c", ArgPtr},
		{"const int*", "d", ArgPtr}, {"int", "n", ArgInt}, {"float", "s", ArgFloat}}
	if !slices.Equal(decls[0].Params, want) {
		t.Errorf("params %+v, want %+v", decls[0].Params, want)
	}
}

func TestParseKernelsRejectsWhatItCannotPass(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"a double parameter", `extern "C" __global__ void k(double x) {}`, `kernel k, parameter 1 ("double x")`},
		{"an unnamed parameter", `extern "C" __global__ void k(int* a, int) {}`, `kernel k, parameter 2 ("int")`},
		{"a pointer to pointer", `extern "C" __global__ void k(float** a) {}`, `parameter 1`},
		{"a const scalar", `extern "C" __global__ void k(const int n) {}`, `drop the const`},
		{"a kernel returning int", `extern "C" __global__ int k(int n) {}`, `want ` + "`void name(params)`"},
		{"a missing parenthesis", `extern "C" __global__ void k(int n`, `no closing parenthesis`},
		{"a kernel declared twice", `extern "C" __global__ void k(int n) {} extern "C" __global__ void k(int n) {}`, `declared twice`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseKernels(c.src)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestLaunchPanicsOnArgumentsThatDoNotMatchTheSignature(t *testing.T) {
	for _, c := range []struct {
		name string
		args []Arg
	}{
		{"too few", []Arg{Int(1)}},
		{"an int for a float", []Arg{Ptr(fakeMem(8), 0), Int(1), Int(1), Int(1), Int(1)}},
		{"a pointer past its allocation", []Arg{Ptr(fakeMem(8), 9), Int(1), Int(1), Int(1), Float(1)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			checkLaunch("scale", c.args)
		})
	}
	checkLaunch("scale", []Arg{Ptr(fakeMem(8), 8), Int(1), Int(1), Int(1), Float(1)}) // a well-formed call passes
}

type fakeMem int

func (m fakeMem) Len() int { return int(m) }

// FuzzParseKernels holds that the parser never panics and that what it
// accepts, written back as declarations, parses to the same thing.
func FuzzParseKernels(f *testing.F) {
	f.Add(KernelSource)
	f.Add(`extern "C" __global__ void k(const int *__restrict__ d, float s) {}`)
	f.Add(`extern "C" __global__ void k(`)
	f.Add(`/* extern "C" __global__ void k(int n) */ extern "C" __global__ void j(void) {}`)
	f.Fuzz(func(t *testing.T, src string) {
		decls, err := ParseKernels(src)
		if err != nil {
			return
		}
		var b strings.Builder
		for _, d := range decls {
			b.WriteString(`extern "C" __global__ void ` + d.Name + "(")
			for i, p := range d.Params {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(p.Type + " " + p.Name)
			}
			b.WriteString(") {}\n")
		}
		again, err := ParseKernels(b.String())
		if err != nil {
			t.Fatalf("%q parsed, its rewrite %q did not: %v", src, b.String(), err)
		}
		if len(again) != len(decls) {
			t.Fatalf("%d declarations, rewritten %d", len(decls), len(again))
		}
		for i := range decls {
			if decls[i].Name != again[i].Name || !slices.Equal(decls[i].Params, again[i].Params) {
				t.Fatalf("%+v rewritten as %+v", decls[i], again[i])
			}
		}
	})
}

// clangCUDAPrelude stands in for the CUDA headers that NVRTC builds in:
// the execution-space attributes, threadIdx and friends, and the device
// math functions, from clang's own CUDA headers.
const clangCUDAPrelude = `#define __host__ __attribute__((host))
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __CUDACC__ 1
#define CUDA_VERSION 12000
typedef unsigned long size_t;
#define INT_MAX 2147483647
#define INT_MIN (-INT_MAX - 1)
#define HUGE_VAL __builtin_huge_val()
#define HUGE_VALF __builtin_huge_valf()
#include "__clang_cuda_builtin_vars.h"
#include "__clang_cuda_libdevice_declares.h"
#include "__clang_cuda_device_functions.h"
#include "__clang_cuda_math.h"
`

// TestKernelSourceCompilesAsCUDA compiles kernels.cu to PTX with clang's
// CUDA front end (a stand-in for NVRTC here, where there is no CUDA): every
// declared kernel must come out as an entry, with no error, and the GEMM
// kernels must keep their accumulators out of local memory. It skips
// without clang.
func TestKernelSourceCompilesAsCUDA(t *testing.T) {
	var clang string
	for _, name := range []string{"clang++", "clang++-18", "clang++-17", "clang++-16", "clang++-15", "clang++-14"} {
		if p, err := exec.LookPath(name); err == nil {
			clang = p
			break
		}
	}
	if clang == "" {
		t.Skip("no clang++ on PATH: kernels.cu is not compiled as CUDA here (NVRTC compiles it on a GPU)")
	}
	dir := t.TempDir()
	prelude := filepath.Join(dir, "prelude.h")
	src := filepath.Join(dir, "kernels.cu")
	ptx := filepath.Join(dir, "kernels.ptx")
	for name, text := range map[string]string{prelude: clangCUDAPrelude, src: KernelSource} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(clang, "-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=sm_80", "-nocudainc",
		"-nocudalib", "-O2", "-S", "-Werror", "-Wall", "-Wno-unknown-cuda-version", "-include", prelude, src, "-o", ptx).CombinedOutput()
	if err != nil {
		t.Fatalf("clang: %v\n%s", err, out)
	}
	code, err := os.ReadFile(ptx)
	if err != nil {
		t.Fatal(err)
	}
	decls, err := ParseKernels(KernelSource)
	if err != nil {
		t.Fatal(err)
	}
	// Split the PTX by entry: name → body.
	bodies := map[string]string{}
	parts := strings.Split(string(code), ".entry ")
	for _, p := range parts[1:] {
		name := p[:strings.IndexByte(p, '(')]
		bodies[name] = p
	}
	for _, d := range decls {
		body, ok := bodies[d.Name]
		if !ok {
			t.Errorf("no PTX entry for kernel %s", d.Name)
			continue
		}
		if strings.HasPrefix(d.Name, "matmul") && strings.Contains(body, ".local") {
			t.Errorf("kernel %s uses local memory (its accumulators spilled or not unrolled)", d.Name)
		}
	}
}
