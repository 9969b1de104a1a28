package cuda

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"
)

// ErrNoNVRTC is what an error wraps when NVRTC cannot be loaded.
var ErrNoNVRTC = errors.New("no usable NVRTC")

// nvrtcCompilation is NVRTC_ERROR_COMPILATION: the source did not compile.
const nvrtcCompilation = 6

// NVRTC is the loaded runtime compiler.
type NVRTC struct {
	lib *library
	// Major and Minor are nvrtcVersion's.
	Major, Minor int

	nvrtcVersion           func(major, minor *int32) int32
	nvrtcGetErrorString    func(r int32) unsafe.Pointer
	nvrtcCreateProgram     func(prog *uintptr, src, name string, numHeaders int32, headers, includeNames unsafe.Pointer) int32
	nvrtcCompileProgram    func(prog uintptr, numOptions int32, options unsafe.Pointer) int32
	nvrtcGetProgramLogSize func(prog uintptr, n *uintptr) int32
	nvrtcGetProgramLog     func(prog uintptr, log unsafe.Pointer) int32
	nvrtcGetCUBINSize      func(prog uintptr, n *uintptr) int32
	nvrtcGetCUBIN          func(prog uintptr, cubin unsafe.Pointer) int32
	nvrtcDestroyProgram    func(prog *uintptr) int32
}

// LoadNVRTC opens NVRTC ($GLMBENCH_LIBNVRTC, or libnvrtc.so, .so.13,
// .so.12); a failure wraps ErrNoNVRTC in one line.
func LoadNVRTC() (*NVRTC, error) {
	lib, err := openLibrary("GLMBENCH_LIBNVRTC", "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12")
	if err != nil {
		return nil, noLib(ErrNoNVRTC, "%v (no NVRTC: install the CUDA toolkit's)", err)
	}
	n := &NVRTC{lib: lib}
	err = lib.bind([]symbol{
		{name: "nvrtcVersion", fn: &n.nvrtcVersion},
		{name: "nvrtcGetErrorString", fn: &n.nvrtcGetErrorString},
		{name: "nvrtcCreateProgram", fn: &n.nvrtcCreateProgram},
		{name: "nvrtcCompileProgram", fn: &n.nvrtcCompileProgram},
		{name: "nvrtcGetProgramLogSize", fn: &n.nvrtcGetProgramLogSize},
		{name: "nvrtcGetProgramLog", fn: &n.nvrtcGetProgramLog},
		{name: "nvrtcGetCUBINSize", fn: &n.nvrtcGetCUBINSize},
		{name: "nvrtcGetCUBIN", fn: &n.nvrtcGetCUBIN},
		{name: "nvrtcDestroyProgram", fn: &n.nvrtcDestroyProgram},
	})
	if err != nil {
		return nil, noLib(ErrNoNVRTC, "%v", err)
	}
	var major, minor int32
	if err := n.check("nvrtcVersion", n.nvrtcVersion(&major, &minor)); err != nil {
		return nil, err
	}
	n.Major, n.Minor = int(major), int(minor)
	return n, nil
}

// Version is "major.minor".
func (n *NVRTC) Version() string { return fmt.Sprintf("%d.%d", n.Major, n.Minor) }

func (n *NVRTC) check(call string, r int32) error {
	if r == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s (%d)", call, goString(n.nvrtcGetErrorString(r)), r)
}

// Compile compiles CUDA C source (name is its file name in messages) to a
// cubin with options, e.g. "-arch=sm_90". A compile failure's error holds
// NVRTC's log.
func (n *NVRTC) Compile(source, name string, options []string) ([]byte, error) {
	var prog uintptr
	if err := n.check("nvrtcCreateProgram", n.nvrtcCreateProgram(&prog, source, name, 0, nil, nil)); err != nil {
		return nil, err
	}
	defer n.nvrtcDestroyProgram(&prog)
	// The options array and its strings are Go memory that NVRTC reads
	// only during the call.
	strs := make([][]byte, len(options))
	ptrs := make([]*byte, len(options)+1)
	for i, o := range options {
		strs[i] = cString(o)
		ptrs[i] = &strs[i][0]
	}
	r := n.nvrtcCompileProgram(prog, int32(len(options)), unsafe.Pointer(&ptrs[0]))
	runtime.KeepAlive(strs)
	runtime.KeepAlive(ptrs)
	if r != 0 {
		err := n.check("nvrtcCompileProgram", r)
		if r == nvrtcCompilation {
			return nil, fmt.Errorf("%w of %s (%s):\n%s", err, name, strings.Join(options, " "), n.log(prog))
		}
		return nil, err
	}
	var size uintptr
	if err := n.check("nvrtcGetCUBINSize", n.nvrtcGetCUBINSize(prog, &size)); err != nil {
		return nil, err
	}
	if size == 0 {
		return nil, fmt.Errorf("nvrtc: %s gave no cubin (options %s: a real sm_XY architecture is needed)", name, strings.Join(options, " "))
	}
	cubin := make([]byte, size)
	if err := n.check("nvrtcGetCUBIN", n.nvrtcGetCUBIN(prog, unsafe.Pointer(&cubin[0]))); err != nil {
		return nil, err
	}
	return cubin, nil
}

// log is the program's compile log.
func (n *NVRTC) log(prog uintptr) string {
	var size uintptr
	if n.nvrtcGetProgramLogSize(prog, &size) != 0 || size <= 1 {
		return "(no log)"
	}
	b := make([]byte, size)
	if n.nvrtcGetProgramLog(prog, unsafe.Pointer(&b[0])) != 0 {
		return "(no log)"
	}
	return strings.TrimRight(string(b[:size-1]), "\n\x00")
}

// CacheKey is the hex sha256 of what a cubin depends on: the source, the
// options (in order), NVRTC's version and the architecture. Each field is
// length-prefixed, so no two different inputs share a key.
func CacheKey(source string, options []string, nvrtcVersion, arch string) string {
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field("glmbench cubin v1")
	field(source)
	field(fmt.Sprint(len(options)))
	for _, o := range options {
		field(o)
	}
	field(nvrtcVersion)
	field(arch)
	return hex.EncodeToString(h.Sum(nil))
}

// DefaultCacheDir is os.UserCacheDir()/glmbench/cubin ("" when there is none).
func DefaultCacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "glmbench", "cubin")
}

// CubinCache keeps compiled cubins in Dir, one file per CacheKey.
type CubinCache struct {
	Dir string
}

// path is key's file.
func (c CubinCache) path(key string) string { return filepath.Join(c.Dir, key+".cubin") }

// Get returns the cached cubin of key, or false.
func (c CubinCache) Get(key string) ([]byte, bool) {
	if c.Dir == "" {
		return nil, false
	}
	b, err := os.ReadFile(c.path(key))
	if err != nil || len(b) == 0 {
		return nil, false
	}
	return b, true
}

// Put stores cubin under key, writing a temporary file and renaming it so
// a reader never sees half a cubin.
func (c CubinCache) Put(key string, cubin []byte) error {
	if c.Dir == "" {
		return errors.New("cuda: no cubin cache directory")
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(c.Dir, key+".*.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(cubin)
	if err2 := f.Close(); err == nil {
		err = err2
	}
	if err == nil {
		err = os.Rename(f.Name(), c.path(key))
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// CompileCached returns source's cubin for arch (e.g. "sm_90") from cache,
// compiling it with NVRTC (options plus -arch=arch) and storing it when
// absent. A failure to store is not an error: it is returned as warn for
// the caller to mention.
func (n *NVRTC) CompileCached(cache CubinCache, source, name, arch string, options []string) (cubin []byte, warn, err error) {
	opts := append([]string{"-arch=" + arch}, options...)
	key := CacheKey(source, opts, n.Version(), arch)
	if b, ok := cache.Get(key); ok {
		return b, nil, nil
	}
	cubin, err = n.Compile(source, name, opts)
	if err != nil {
		return nil, nil, err
	}
	if err := cache.Put(key, cubin); err != nil {
		warn = fmt.Errorf("cubin cache not written: %w", err)
	}
	return cubin, warn, nil
}
