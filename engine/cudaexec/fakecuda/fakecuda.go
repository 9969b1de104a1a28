// Package fakecuda builds a fake CUDA driver, NVRTC and cuBLAS: shared
// libraries with the real libraries' C prototypes, so that internal/cuda's
// purego bindings and engine/cudaexec's device path (OpenDevice, its
// Memory and Caller) run end to end on a machine without a GPU. Point
// GLMBENCH_LIBCUDA, GLMBENCH_LIBNVRTC and GLMBENCH_LIBCUBLAS at Build's
// libraries (Libs.Env) and OpenDevice opens "glmbench fake GPU".
//
// The fake driver (libcuda.cpp.in) keeps "device" memory in host memory
// (a CUdeviceptr is the address of an allocation it made, and copies are
// real copies), has one device of compute capability 9.0 and its primary
// context, current per OS thread as on a GPU (a call without it is
// CUDA_ERROR_INVALID_CONTEXT), and runs kernels.cu compiled in: each
// kernel's parameters are a C struct of its declared types, so
// cuFuncGetParamInfo answers the offsets and sizes the C++ compiler gives
// them, and cuLaunchKernel copies each parameter from kernelParams by its
// size into that struct and runs the kernel with the emulator's launch
// runner (engine/cudaexec/emu: blocks one after another, a thread per
// CUDA thread). Created streams run their work when it is queued, as the
// legacy stream does, except while captured: then cuLaunchKernel records
// the launch (a copy of its parameters) into the graph, the calls the
// driver refuses during a global-mode capture (a synchronous copy or
// memset, a sync, an allocation) fail with
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidate it, and
// cuGraphLaunch replays the recorded launches in order, each checked as a
// launch is (Counts reports the graph launches and what is alive). The fake NVRTC (libnvrtc.cpp.in) checks the options and
// makes a "cubin" naming the architecture and the source's hash, which
// cuModuleLoadData checks against kernels.cu's. The fake cuBLAS
// (libcublas.cpp.in) computes cublasSgemm_v2 by its column-major
// definition in double.
//
// The sources are .cpp.in: the go tool refuses C++ files in a package
// without cgo.
package fakecuda

import (
	_ "embed"
	"fmt"
	"hash/fnv"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/ebitengine/purego"
	"github.com/glmbench/glmbench/engine/cudaexec"
	"github.com/glmbench/glmbench/engine/cudaexec/emu"
)

//go:embed libcuda.cpp.in
var libcudaSource string

//go:embed libnvrtc.cpp.in
var libnvrtcSource string

//go:embed libcublas.cpp.in
var libcublasSource string

// What the fake device and libraries say they are.
const (
	// DeviceName is cuDeviceGetName's answer.
	DeviceName = "glmbench fake GPU"
	// Major and Minor are the compute capability (an H100/H200's).
	Major, Minor = 9, 0
	// TotalMem is cuDeviceTotalMem_v2's answer in bytes (an H200's 141 GiB
	// less a little: more than 32 bits, so a binding that reads 4 bytes of
	// it is caught). Allocations are host memory, bounded by this too.
	TotalMem uint64 = 150754820096
	// DriverVersion is cuDriverGetVersion's: CUDA 13.0.
	DriverVersion = 13000
	// NVRTCMajor and NVRTCMinor are nvrtcVersion's.
	NVRTCMajor, NVRTCMinor = 13, 0
	// cubinMagic starts every fake cubin.
	cubinMagic = "GLMBENCH-FAKE-CUBIN"
)

// ErrNoCompiler is what Build's error wraps when g++ is not on PATH (the
// emulator's sentinel: both need g++).
var ErrNoCompiler = emu.ErrNoCompiler

// Libs are the paths of the built fake libraries.
type Libs struct {
	CUDA, NVRTC, CUBLAS string
}

// Env is the environment that points internal/cuda at the fakes.
func (l Libs) Env() map[string]string {
	return map[string]string{"GLMBENCH_LIBCUDA": l.CUDA, "GLMBENCH_LIBNVRTC": l.NVRTC, "GLMBENCH_LIBCUBLAS": l.CUBLAS}
}

// SourceHash is the FNV-1a hash (64 bits) of src, as the fake NVRTC
// writes it into a cubin.
func SourceHash(src string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(src))
	return h.Sum64()
}

// KernelTable returns the fake driver's kernel table for decls (C++,
// kernels.inc): per kernel a struct of its parameters in their declared
// C types, whose offsetof and sizeof are the layout cuFuncGetParamInfo
// answers, a call that unpacks that struct into the kernel, and
// fc_kernels, the table of them.
func KernelTable(decls []cudaexec.KernelDecl) string {
	var b strings.Builder
	for _, d := range decls {
		fmt.Fprintf(&b, "struct fc_params_%s {\n", d.Name)
		if len(d.Params) == 0 {
			b.WriteString("    char fc_none;\n")
		}
		for i, p := range d.Params {
			fmt.Fprintf(&b, "    %s p%d;\n", p.Type, i)
		}
		b.WriteString("};\n")
		fmt.Fprintf(&b, "static const fc_param fc_layout_%s[] = {\n", d.Name)
		for i, p := range d.Params {
			fmt.Fprintf(&b, "    {offsetof(fc_params_%s, p%d), sizeof(fc_params_%[1]s::p%[2]d), %v},\n", d.Name, i, p.Kind == cudaexec.ArgPtr)
		}
		if len(d.Params) == 0 {
			b.WriteString("    {0, 0, false},\n")
		}
		b.WriteString("};\n")
		fmt.Fprintf(&b, "static void fc_call_%s(const void* v) {\n    const fc_params_%[1]s* s = (const fc_params_%[1]s*)v;\n    (void)s;\n    %[1]s(", d.Name)
		for i := range d.Params {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "s->p%d", i)
		}
		b.WriteString(");\n}\n")
	}
	b.WriteString("static const fc_kernel fc_kernels[] = {\n")
	for _, d := range decls {
		size := fmt.Sprintf("sizeof(fc_params_%s)", d.Name)
		if len(d.Params) == 0 {
			size = "0"
		}
		fmt.Fprintf(&b, "    {%q, %d, fc_layout_%s, %s, fc_call_%[3]s},\n", d.Name, len(d.Params), d.Name, size)
	}
	b.WriteString("};\n")
	return b.String()
}

var (
	buildOnce sync.Once
	built     Libs
	buildErr  error
)

// Build builds the three libraries once per process into the temp dir,
// keyed by a hash of their sources (a build by another process of the same
// sources is reused), and returns their paths. Its error wraps
// ErrNoCompiler when g++ is missing.
func Build() (Libs, error) {
	buildOnce.Do(func() { built, buildErr = build() })
	return built, buildErr
}

func build() (Libs, error) {
	gxx, err := exec.LookPath("g++")
	if err != nil {
		return Libs{}, fmt.Errorf("fakecuda: %w", ErrNoCompiler)
	}
	decls, err := cudaexec.ParseKernels(cudaexec.KernelSource)
	if err != nil {
		return Libs{}, fmt.Errorf("fakecuda: %w", err)
	}
	files := emu.Runtime()
	files["kernels.cu"] = cudaexec.KernelSource
	files["kernels.inc"] = KernelTable(decls)
	files["libcuda.cpp"] = libcudaSource
	files["libnvrtc.cpp"] = libnvrtcSource
	files["libcublas.cpp"] = libcublasSource
	defs := []string{
		fmt.Sprintf("-DFC_DEVICE_NAME=%q", DeviceName),
		fmt.Sprintf("-DFC_CC_MAJOR=%d", Major), fmt.Sprintf("-DFC_CC_MINOR=%d", Minor),
		fmt.Sprintf("-DFC_TOTAL_MEM=%dull", TotalMem),
		fmt.Sprintf("-DFC_DRIVER_VERSION=%d", DriverVersion),
		fmt.Sprintf("-DFC_NVRTC_MAJOR=%d", NVRTCMajor), fmt.Sprintf("-DFC_NVRTC_MINOR=%d", NVRTCMinor),
		fmt.Sprintf("-DFC_CUBIN_MAGIC=%q", cubinMagic),
		fmt.Sprintf("-DFC_SOURCE_HASH=0x%016xull", SourceHash(cudaexec.KernelSource)),
	}
	// Clipped: the compiles below append to it at once.
	args := slices.Clip(append([]string{"-shared", "-fPIC", "-std=c++20", "-O2", "-pthread", "-fvisibility=hidden", "-ffp-contract=off", "-fno-strict-aliasing", "-w"}, defs...))
	libs := []struct{ src, out string }{
		{"libcuda.cpp", "libcuda.so.1"}, {"libnvrtc.cpp", "libnvrtc.so"}, {"libcublas.cpp", "libcublas.so"},
	}
	outs := []string{libs[0].out, libs[1].out, libs[2].out}
	dir, err := emu.BuildCached("fakecuda", files, args, outs, func(work string) error {
		errs := make([]error, len(libs))
		var wg sync.WaitGroup
		for i, l := range libs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command(gxx, append(args, "-o", filepath.Join(work, l.out), filepath.Join(work, l.src))...)
				if msg, err := cmd.CombinedOutput(); err != nil {
					errs[i] = fmt.Errorf("fakecuda: g++ %s: %v\n%s", l.src, err, msg)
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Libs{}, err
	}
	return Libs{CUDA: filepath.Join(dir, outs[0]), NVRTC: filepath.Join(dir, outs[1]), CUBLAS: filepath.Join(dir, outs[2])}, nil
}

// GraphCounts are the fake driver's counts of its streams and graphs,
// since the library was loaded.
type GraphCounts struct {
	// Launches is how many times cuGraphLaunch ran a graph; Captures how
	// many captures ended with a graph.
	Launches, Captures uint64
	// Streams, Graphs and Execs are the live created streams, graphs and
	// executable graphs.
	Streams, Graphs, Execs uint64
	// Leaked is how many of those were still alive when the primary
	// context was destroyed (its last retain released).
	Leaked uint64
}

// Counts reads the counts of the fake driver at l.CUDA (loading it if no
// one has: the same library internal/cuda loaded, when that is the path).
func Counts(l Libs) (GraphCounts, error) {
	h, err := purego.Dlopen(l.CUDA, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return GraphCounts{}, fmt.Errorf("fakecuda: %w", err)
	}
	var counts func(out *[6]uint64)
	purego.RegisterLibFunc(&counts, h, "glmbench_fakecuda_graph_counts")
	var out [6]uint64
	counts(&out)
	return GraphCounts{Launches: out[0], Captures: out[1], Streams: out[2], Graphs: out[3], Execs: out[4], Leaked: out[5]}, nil
}
