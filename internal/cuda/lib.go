// Package cuda is glmbench's cgo-free binding of the NVIDIA driver API
// (libcuda.so.1), NVRTC (libnvrtc) and, for a baseline, cuBLAS
// (libcublas), loaded at run time through purego. It exposes what the
// device path of engine/cudaexec needs: a device and its primary context,
// device memory, synchronous copies on the legacy default stream, modules
// compiled by NVRTC (with an on-disk cubin cache), kernel launches with
// parameters packed in pinned host memory and checked against
// cuFuncGetParamInfo, a created stream captured into CUDA graphs and
// replayed (graph.go), events for timing, and one SGEMM.
//
// No Go pointer is kept by C after a call returns: handles are integers,
// host addresses that C hands back arrive as unsafe.Pointer out-parameters,
// and the only host memory C reads after a call (kernel parameters, until
// cuLaunchKernel has copied them) is pinned memory C allocated.
package cuda

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// ErrNoDriver is what an error wraps when there is no usable CUDA: the
// driver library is missing or lacks a symbol, or it finds no device.
var ErrNoDriver = errors.New("no usable CUDA driver")

// unusable is an error that wraps a sentinel (ErrNoDriver, ErrNoNVRTC,
// ErrNoCUBLAS) but reads as its cause alone, so that a caller adding its
// own words does not repeat the sentinel's.
type unusable struct {
	sentinel error
	cause    string
}

func (e *unusable) Error() string { return e.cause }
func (e *unusable) Unwrap() error { return e.sentinel }

// noLib returns an error wrapping sentinel that says cause.
func noLib(sentinel error, format string, args ...any) error {
	return &unusable{sentinel: sentinel, cause: fmt.Sprintf(format, args...)}
}

// library is a loaded shared object.
type library struct {
	path   string
	handle uintptr
}

// openLibrary opens the first of paths that loads (env, when set, is the
// only candidate). The error names every path tried and dlerror's reason.
func openLibrary(env string, paths ...string) (*library, error) {
	if p := os.Getenv(env); p != "" {
		paths = []string{p}
	}
	var firstErr error
	for _, p := range paths {
		h, err := dlopen(p)
		if err == nil {
			return &library{path: p, handle: h}, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if len(paths) > 1 {
		return nil, fmt.Errorf("%v (nor %s; %s chooses another)", firstErr, strings.Join(paths[1:], ", "), env)
	}
	return nil, firstErr
}

// dlopen opens a shared object on one OS thread: dlerror's reason is
// per thread, and purego reads it in a second call after dlopen's, so a
// goroutine that moved between them would read another thread's (none:
// an empty reason).
func dlopen(path string) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
}

// symbol is one function to bind: its C name and a pointer to the Go func
// variable purego fills.
type symbol struct {
	name string
	fn   any
}

// bind resolves every symbol of syms in l; a missing one is an error
// naming it and the library.
func (l *library) bind(syms []symbol) error {
	for _, s := range syms {
		addr, err := l.addr(s.name)
		if err != nil {
			return err
		}
		purego.RegisterFunc(s.fn, addr)
	}
	return nil
}

// addr is name's address in l.
func (l *library) addr(name string) (uintptr, error) {
	a, err := purego.Dlsym(l.handle, name)
	if err != nil || a == 0 {
		return 0, fmt.Errorf("%s has no symbol %s (not the library expected, or too old)", l.path, name)
	}
	return a, nil
}

// has reports whether l exports name.
func (l *library) has(name string) bool {
	addr, err := purego.Dlsym(l.handle, name)
	return err == nil && addr != 0
}

// goString copies the NUL-terminated C string at p (nil: "").
func goString(p unsafe.Pointer) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(p, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(p), n))
}

// cString returns s as a NUL-terminated byte slice for C to read during a call.
func cString(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}
