// Package emu runs kernels.cu on the CPU, so that every kernel of the
// device path is tested without a GPU. It compiles the CUDA C source with
// g++ behind a shim (shim.h: __global__ and friends, threadIdx and
// blockIdx as thread_locals, __shared__ as static, __syncthreads as a
// std::barrier over the block's threads) and a harness (harness.cpp.in, a .cpp once written out: the go tool refuses
// C++ files in a package without cgo; and runner.h, the launch runner it
// shares with the fake CUDA driver) whose
// kernel table is generated here from the parsed declarations. The harness
// runs as a child process; Device speaks to it over its stdin and stdout
// and is a cudaexec.Memory and a cudaexec.Caller, so
// cudaexec.NewLaunchOps(d, d) is the Ops a GPU runs, run on the CPU.
//
// A launch runs its blocks one after another, each with one OS thread per
// CUDA thread: exact, slow, and meant for test-sized problems. With
// GLMBENCH_EMU_SANITIZE=1 the harness is built with AddressSanitizer and
// UBSan, so a kernel's out-of-bounds access fails the test that made it.
//
// The protocol (little-endian) is one request byte and its fields, each
// answered with a status byte (0 done; 1 an error: u32 length and text):
//
//	'A' kind u8, n u64                      → status, id u32
//	'F' id u32                              → status
//	'U' id u32, off u64, n u64, n×4 bytes   → status
//	'D' id u32, off u64, n u64              → status, n×4 bytes
//	'L' name (u16 length, bytes), grid 3×u32, block 3×u32, shared u32,
//	    nargs u32, per argument kind u8 and (0) id u32, off u64 | (1) i32 | (2) f32
//	                                        → status
//	'Q'                                     (the harness exits)
package emu

import (
	"bufio"
	"crypto/sha256"
	_ "embed"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/glmbench/glmbench/engine/cudaexec"
)

//go:embed shim.h
var shimSource string

//go:embed runner.h
var runnerSource string

//go:embed harness.cpp.in
var harnessSource string

// Runtime returns the C++ headers that let kernels.cu run on the CPU, by
// file name: shim.h (__global__, threadIdx, __syncthreads and friends) and
// runner.h (emu_run_launch, a launch's blocks one after another with a
// thread per CUDA thread). The harness and the fake CUDA driver
// (engine/cudaexec/fakecuda) include them.
func Runtime() map[string]string {
	return map[string]string{"shim.h": shimSource, "runner.h": runnerSource}
}

// ErrNoCompiler is what Start's error wraps when g++ is not on PATH.
var ErrNoCompiler = errors.New("emu: no g++ on PATH to build the kernel emulator")

// Dispatch returns the harness's kernel table for decls, C++ that defines
// one unpacking function per kernel and emu_kernels, the table of them.
func Dispatch(decls []cudaexec.KernelDecl) string {
	var b strings.Builder
	for _, d := range decls {
		fmt.Fprintf(&b, "static void emu_call_%s(const emu_arg* a) {\n    (void)a;\n    %s(", d.Name, d.Name)
		for i, p := range d.Params {
			if i > 0 {
				b.WriteString(", ")
			}
			switch p.Kind {
			case cudaexec.ArgPtr:
				fmt.Fprintf(&b, "(%s)a[%d].p", p.Type, i)
			case cudaexec.ArgInt:
				fmt.Fprintf(&b, "a[%d].i", i)
			default:
				fmt.Fprintf(&b, "a[%d].f", i)
			}
		}
		b.WriteString(");\n}\n")
	}
	b.WriteString("static const emu_kernel emu_kernels[] = {\n")
	for _, d := range decls {
		fmt.Fprintf(&b, "    {%q, %d, emu_call_%s},\n", d.Name, len(d.Params), d.Name)
	}
	b.WriteString("};\n")
	return b.String()
}

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// harness returns the path of the built harness, building it once per
// process into the temp dir, keyed by a hash of its sources (a build of the
// same sources by another process is reused).
func harness() (string, error) {
	buildOnce.Do(func() { buildPath, buildErr = build() })
	return buildPath, buildErr
}

func build() (string, error) {
	gxx, err := exec.LookPath("g++")
	if err != nil {
		return "", ErrNoCompiler
	}
	decls, err := cudaexec.ParseKernels(cudaexec.KernelSource)
	if err != nil {
		return "", fmt.Errorf("emu: %w", err)
	}
	files := Runtime()
	files["harness.cpp"] = harnessSource
	files["kernels.cu"] = cudaexec.KernelSource
	files["dispatch.inc"] = Dispatch(decls)
	args := []string{"-std=c++20", "-O2", "-pthread", "-ffp-contract=off", "-fno-strict-aliasing", "-w"}
	if os.Getenv("GLMBENCH_EMU_SANITIZE") == "1" {
		// AddressSanitizer and UBSan: a kernel that reads or writes outside
		// its allocations kills the harness with a report on stderr.
		args = append(args, "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all")
	}
	dir, err := BuildCached("emu", files, args, []string{"harness"}, func(work string) error {
		cmd := exec.Command(gxx, append(args, "-o", filepath.Join(work, "harness"), filepath.Join(work, "harness.cpp"))...)
		if msg, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("emu: g++: %v\n%s", err, msg)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "harness"), nil
}

// BuildCached makes outputs (file names) from files (name to source) with
// compile, once per set of sources and flags: into a directory of the temp
// dir named by prefix and a hash of files and args, which it returns, and
// where a build of the same sources by another process is reused when
// every output is there. compile writes the outputs in a directory of its
// own holding files; they are then renamed into place, so that processes
// building at once never read each other's half-written files. Its own
// errors are prefixed with prefix; compile's are returned as they are.
func BuildCached(prefix string, files map[string]string, args, outputs []string, compile func(work string) error) (string, error) {
	h := sha256.New()
	for _, name := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "%s %d\n%s", name, len(files[name]), files[name])
	}
	fmt.Fprintln(h, args)
	dir := filepath.Join(os.TempDir(), "glmbench-"+prefix+"-"+hex.EncodeToString(h.Sum(nil))[:16])
	if !slices.ContainsFunc(outputs, func(o string) bool { return !present(filepath.Join(dir, o)) }) {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("%s: %w", prefix, err)
	}
	work, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", fmt.Errorf("%s: %w", prefix, err)
	}
	defer os.RemoveAll(work)
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(src), 0o644); err != nil {
			return "", fmt.Errorf("%s: %w", prefix, err)
		}
	}
	if err := compile(work); err != nil {
		return "", err
	}
	for _, o := range outputs {
		if err := os.Rename(filepath.Join(work, o), filepath.Join(dir, o)); err != nil {
			return "", fmt.Errorf("%s: %w", prefix, err)
		}
	}
	return dir, nil
}

// present reports whether path exists.
func present(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Device is one running emulator: a cudaexec.Memory and a cudaexec.Caller.
// Its methods may be called from several goroutines (one request at a
// time); its errors are sticky.
type Device struct {
	mu   sync.Mutex
	cmd  *exec.Cmd
	in   *bufio.Writer
	inC  io.Closer
	out  *bufio.Reader
	err  error
	buf  []byte
	live map[*mem]bool
}

var (
	_ cudaexec.Memory = (*Device)(nil)
	_ cudaexec.Caller = (*Device)(nil)
)

// mem is one harness allocation.
type mem struct {
	id   uint32
	n    int
	kind cudaexec.ElemKind
}

// Len implements cudaexec.Mem.
func (m *mem) Len() int { return m.n }

// Start builds the harness (once per process) and starts one. Its error
// wraps ErrNoCompiler when g++ is missing.
func Start() (*Device, error) {
	bin, err := harness()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("emu: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("emu: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("emu: %w", err)
	}
	return &Device{cmd: cmd, in: bufio.NewWriterSize(in, 1<<16), inC: in, out: bufio.NewReaderSize(out, 1<<16),
		live: map[*mem]bool{}}, nil
}

// Ops returns the Ops that run kernels.cu on d: cudaexec.NewLaunchOps(d, d).
// Closing them closes d.
func (d *Device) Ops() cudaexec.Ops { return cudaexec.NewLaunchOps(d, d) }

// Memory returns d as a cudaexec.Memory.
func (d *Device) Memory() cudaexec.Memory { return d }

// Caller returns d as a cudaexec.Caller.
func (d *Device) Caller() cudaexec.Caller { return d }

// Name implements cudaexec.Memory.
func (d *Device) Name() string { return "emu kernels.cu on the CPU" }

// Err implements cudaexec.Memory.
func (d *Device) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

func (d *Device) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *Device) put(v ...any) {
	for _, x := range v {
		binary.Write(d.in, binary.LittleEndian, x) // a bufio.Writer: errors surface at Flush
	}
}

// reply flushes the request and reads its status; false (with the error
// recorded) when it failed.
func (d *Device) reply(what string) bool {
	if err := d.in.Flush(); err != nil {
		d.fail(fmt.Errorf("emu: %s: the harness is gone: %w", what, err))
		return false
	}
	st, err := d.out.ReadByte()
	if err != nil {
		d.fail(fmt.Errorf("emu: %s: the harness is gone (crashed?): %w", what, err))
		return false
	}
	if st == 0 {
		return true
	}
	var n uint32
	if err := binary.Read(d.out, binary.LittleEndian, &n); err != nil {
		d.fail(fmt.Errorf("emu: %s: %w", what, err))
		return false
	}
	msg := make([]byte, n)
	io.ReadFull(d.out, msg)
	d.fail(fmt.Errorf("emu: %s: %s", what, msg))
	return false
}

// Alloc implements cudaexec.Memory.
func (d *Device) Alloc(n int, kind cudaexec.ElemKind) cudaexec.Mem {
	d.mu.Lock()
	defer d.mu.Unlock()
	m := &mem{n: n, kind: kind}
	if d.err != nil {
		return m
	}
	d.in.WriteByte('A')
	d.put(uint8(kind), uint64(n))
	if d.reply("alloc") {
		if err := binary.Read(d.out, binary.LittleEndian, &m.id); err != nil {
			d.fail(fmt.Errorf("emu: alloc: %w", err))
		}
		d.live[m] = true
	}
	return m
}

func (d *Device) own(m cudaexec.Mem, what string) *mem {
	mm, ok := m.(*mem)
	if !ok || !d.live[mm] {
		panic(fmt.Sprintf("emu: %s of memory this device did not allocate (or freed)", what))
	}
	return mm
}

// Free implements cudaexec.Memory.
func (d *Device) Free(m cudaexec.Mem) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return
	}
	mm := d.own(m, "Free")
	delete(d.live, mm)
	d.in.WriteByte('F')
	d.put(mm.id)
	d.reply("free")
}

func (d *Device) upload(dst cudaexec.Mem, off int, n int, kind cudaexec.ElemKind, bits func(i int) uint32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return
	}
	mm := d.own(dst, "upload")
	if mm.kind != kind || off < 0 || off+n > mm.n {
		panic(fmt.Sprintf("emu: upload of %d elements (kind %d) at %d into %d (kind %d)", n, kind, off, mm.n, mm.kind))
	}
	d.in.WriteByte('U')
	d.put(mm.id, uint64(off), uint64(n))
	if cap(d.buf) < 4*n {
		d.buf = make([]byte, 4*n)
	}
	b := d.buf[:4*n]
	for i := range n {
		binary.LittleEndian.PutUint32(b[4*i:], bits(i))
	}
	d.in.Write(b)
	d.reply("upload")
}

// UploadF32 implements cudaexec.Memory.
func (d *Device) UploadF32(dst cudaexec.Mem, off int, src []float32) {
	d.upload(dst, off, len(src), cudaexec.F32, func(i int) uint32 { return math.Float32bits(src[i]) })
}

// UploadI32 implements cudaexec.Memory.
func (d *Device) UploadI32(dst cudaexec.Mem, off int, src []int32) {
	d.upload(dst, off, len(src), cudaexec.I32, func(i int) uint32 { return uint32(src[i]) })
}

func (d *Device) download(src cudaexec.Mem, off, n int, kind cudaexec.ElemKind, set func(i int, v uint32)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return
	}
	mm := d.own(src, "download")
	if mm.kind != kind || off < 0 || off+n > mm.n {
		panic(fmt.Sprintf("emu: download of %d elements (kind %d) at %d from %d (kind %d)", n, kind, off, mm.n, mm.kind))
	}
	d.in.WriteByte('D')
	d.put(mm.id, uint64(off), uint64(n))
	if !d.reply("download") {
		return
	}
	if cap(d.buf) < 4*n {
		d.buf = make([]byte, 4*n)
	}
	b := d.buf[:4*n]
	if _, err := io.ReadFull(d.out, b); err != nil {
		d.fail(fmt.Errorf("emu: download: %w", err))
		return
	}
	for i := range n {
		set(i, binary.LittleEndian.Uint32(b[4*i:]))
	}
}

// DownloadF32 implements cudaexec.Memory.
func (d *Device) DownloadF32(dst []float32, src cudaexec.Mem, off int) {
	d.download(src, off, len(dst), cudaexec.F32, func(i int, v uint32) { dst[i] = math.Float32frombits(v) })
}

// DownloadI32 implements cudaexec.Memory.
func (d *Device) DownloadI32(dst []int32, src cudaexec.Mem, off int) {
	d.download(src, off, len(dst), cudaexec.I32, func(i int, v uint32) { dst[i] = int32(v) })
}

// Call implements cudaexec.Caller: it runs the kernel and returns when it
// is done.
func (d *Device) Call(kernel string, grid, block cudaexec.Dim3, shared int, args ...cudaexec.Arg) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return
	}
	d.in.WriteByte('L')
	d.put(uint16(len(kernel)))
	d.in.WriteString(kernel)
	d.put(uint32(grid.X), uint32(grid.Y), uint32(grid.Z), uint32(block.X), uint32(block.Y), uint32(block.Z),
		uint32(shared), uint32(len(args)))
	for _, a := range args {
		d.in.WriteByte(byte(a.Kind))
		switch a.Kind {
		case cudaexec.ArgPtr:
			mm := d.own(a.Mem, "kernel "+kernel)
			d.put(mm.id, uint64(a.Off))
		case cudaexec.ArgInt:
			d.put(a.I)
		default:
			d.put(math.Float32bits(a.F))
		}
	}
	d.reply("kernel " + kernel)
}

// Close implements cudaexec.Memory: it ends the harness and returns the
// first error, if any.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil {
		return d.err
	}
	d.in.WriteByte('Q')
	d.in.Flush()
	d.inC.Close()
	werr := d.cmd.Wait()
	d.cmd = nil
	if d.err == nil && werr != nil {
		d.err = fmt.Errorf("emu: the harness: %w", werr)
	}
	return d.err
}
