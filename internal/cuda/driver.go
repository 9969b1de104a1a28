package cuda

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// result is a CUresult.
type result int32

const (
	success         result = 0
	errInvalidValue result = 1
)

// Device attributes (CUdevice_attribute) that glmbench reads.
const (
	attrComputeCapabilityMajor = 75
	attrComputeCapabilityMinor = 76
)

// Driver is the loaded driver API, initialised (cuInit). It is safe for
// concurrent use; the calls that need a context go through a Context.
type Driver struct {
	lib *library
	// Version is cuDriverGetVersion's: 1000·major + 10·minor (13000 for 13.0).
	Version int

	cuInit               func(flags uint32) result
	cuDriverGetVersion   func(v *int32) result
	cuDeviceGetCount     func(n *int32) result
	cuDeviceGet          func(dev *int32, ordinal int32) result
	cuDeviceGetName      func(name *byte, n int32, dev int32) result
	cuDeviceGetAttribute func(v *int32, attr int32, dev int32) result
	cuDeviceTotalMem     func(bytes *uint64, dev int32) result
	cuPrimaryCtxRetain   func(ctx *uintptr, dev int32) result
	cuPrimaryCtxRelease  func(dev int32) result
	cuCtxSynchronize     func() result
	cuMemAlloc           func(p *uint64, bytes uintptr) result
	cuMemFree            func(p uint64) result
	cuMemcpyHtoD         func(dst uint64, src unsafe.Pointer, bytes uintptr) result
	cuMemcpyDtoH         func(dst unsafe.Pointer, src uint64, bytes uintptr) result
	cuMemsetD8           func(dst uint64, v uint8, n uintptr) result
	cuMemAllocHost       func(p *unsafe.Pointer, bytes uintptr) result
	cuMemFreeHost        func(p unsafe.Pointer) result
	cuModuleLoadData     func(mod *uintptr, image unsafe.Pointer) result
	cuModuleUnload       func(mod uintptr) result
	cuModuleGetFunction  func(fn *uintptr, mod uintptr, name string) result
	cuFuncGetParamInfo   func(fn uintptr, index uintptr, offset, size *uintptr) result
	cuEventCreate        func(ev *uintptr, flags uint32) result
	cuEventRecord        func(ev uintptr, stream uintptr) result
	cuEventSynchronize   func(ev uintptr) result
	cuEventElapsedTime   func(ms *float32, start, end uintptr) result
	cuEventDestroy       func(ev uintptr) result
	cuGetErrorName       func(r result, s *unsafe.Pointer) result

	// Streams and graphs (graph.go).
	cuStreamCreate              func(s *uintptr, flags uint32) result
	cuStreamDestroy             func(s uintptr) result
	cuStreamSynchronize         func(s uintptr) result
	cuStreamBeginCapture        func(s uintptr, mode int32) result
	cuStreamEndCapture          func(s uintptr, graph *uintptr) result
	cuGraphInstantiateWithFlags func(exec *uintptr, graph uintptr, flags uint64) result
	cuGraphLaunch               func(exec uintptr, s uintptr) result
	cuGraphExecDestroy          func(exec uintptr) result
	cuGraphDestroy              func(graph uintptr) result
	cuGetErrorString            func(r result, s *unsafe.Pointer) result

	// The two calls of every launch go through purego.SyscallN at their
	// addresses, without RegisterFunc's reflection: cuCtxSetCurrent(ctx)
	// and cuLaunchKernel(f, grid, block, shared, stream, params, extra).
	setCurrentAddr, launchAddr uintptr
}

// loaded is Load's result per library ($GLMBENCH_LIBCUDA, "" for
// libcuda.so.1).
var (
	loadMu sync.Mutex
	loaded = map[string]loadResult{}
)

type loadResult struct {
	drv *Driver
	err error
}

// Load opens the driver library (libcuda.so.1, or $GLMBENCH_LIBCUDA),
// binds the calls glmbench uses and runs cuInit, once per process for each
// library (so a test may load a fake driver beside the missing real one).
// A missing library, a missing symbol or a machine without a device gives
// one line that wraps ErrNoDriver.
func Load() (*Driver, error) {
	lib := os.Getenv("GLMBENCH_LIBCUDA")
	loadMu.Lock()
	defer loadMu.Unlock()
	r, ok := loaded[lib]
	if !ok {
		r.drv, r.err = load()
		loaded[lib] = r
	}
	return r.drv, r.err
}

func load() (*Driver, error) {
	lib, err := openLibrary("GLMBENCH_LIBCUDA", "libcuda.so.1")
	if err != nil {
		return nil, noLib(ErrNoDriver, "%v (no NVIDIA driver on this machine)", err)
	}
	d := &Driver{lib: lib}
	elapsed := "cuEventElapsedTime"
	if lib.has("cuEventElapsedTime_v2") {
		elapsed = "cuEventElapsedTime_v2"
	}
	err = lib.bind([]symbol{
		{name: "cuInit", fn: &d.cuInit},
		{name: "cuDriverGetVersion", fn: &d.cuDriverGetVersion},
		{name: "cuDeviceGetCount", fn: &d.cuDeviceGetCount},
		{name: "cuDeviceGet", fn: &d.cuDeviceGet},
		{name: "cuDeviceGetName", fn: &d.cuDeviceGetName},
		{name: "cuDeviceGetAttribute", fn: &d.cuDeviceGetAttribute},
		{name: "cuDeviceTotalMem_v2", fn: &d.cuDeviceTotalMem},
		{name: "cuDevicePrimaryCtxRetain", fn: &d.cuPrimaryCtxRetain},
		{name: "cuDevicePrimaryCtxRelease_v2", fn: &d.cuPrimaryCtxRelease},
		{name: "cuCtxSynchronize", fn: &d.cuCtxSynchronize},
		{name: "cuMemAlloc_v2", fn: &d.cuMemAlloc},
		{name: "cuMemFree_v2", fn: &d.cuMemFree},
		{name: "cuMemcpyHtoD_v2", fn: &d.cuMemcpyHtoD},
		{name: "cuMemcpyDtoH_v2", fn: &d.cuMemcpyDtoH},
		{name: "cuMemsetD8_v2", fn: &d.cuMemsetD8},
		{name: "cuMemAllocHost_v2", fn: &d.cuMemAllocHost},
		{name: "cuMemFreeHost", fn: &d.cuMemFreeHost},
		{name: "cuModuleLoadData", fn: &d.cuModuleLoadData},
		{name: "cuModuleUnload", fn: &d.cuModuleUnload},
		{name: "cuModuleGetFunction", fn: &d.cuModuleGetFunction},
		{name: "cuFuncGetParamInfo", fn: &d.cuFuncGetParamInfo},
		{name: "cuEventCreate", fn: &d.cuEventCreate},
		{name: "cuEventRecord", fn: &d.cuEventRecord},
		{name: "cuEventSynchronize", fn: &d.cuEventSynchronize},
		{name: elapsed, fn: &d.cuEventElapsedTime},
		{name: "cuEventDestroy_v2", fn: &d.cuEventDestroy},
		{name: "cuGetErrorName", fn: &d.cuGetErrorName},
		{name: "cuGetErrorString", fn: &d.cuGetErrorString},
		{name: "cuStreamCreate", fn: &d.cuStreamCreate},
		{name: "cuStreamDestroy_v2", fn: &d.cuStreamDestroy},
		{name: "cuStreamSynchronize", fn: &d.cuStreamSynchronize},
		{name: "cuStreamBeginCapture_v2", fn: &d.cuStreamBeginCapture},
		{name: "cuStreamEndCapture", fn: &d.cuStreamEndCapture},
		{name: "cuGraphInstantiateWithFlags", fn: &d.cuGraphInstantiateWithFlags},
		{name: "cuGraphLaunch", fn: &d.cuGraphLaunch},
		{name: "cuGraphExecDestroy", fn: &d.cuGraphExecDestroy},
		{name: "cuGraphDestroy", fn: &d.cuGraphDestroy},
	})
	if err == nil {
		d.setCurrentAddr, err = lib.addr("cuCtxSetCurrent")
	}
	if err == nil {
		d.launchAddr, err = lib.addr("cuLaunchKernel")
	}
	if err != nil {
		return nil, noLib(ErrNoDriver, "%v", err)
	}
	// cuInit fails when there is no device (CUDA_ERROR_NO_DEVICE) but also
	// when the kernel module is missing or older than the library: either
	// way there is no usable CUDA here.
	if r := d.cuInit(0); r != success {
		return nil, noLib(ErrNoDriver, "%v", d.check("cuInit", r))
	}
	var v int32
	if err := d.check("cuDriverGetVersion", d.cuDriverGetVersion(&v)); err != nil {
		return nil, err
	}
	d.Version = int(v)
	return d, nil
}

// Error is a failed driver call: the call's name and CUDA's error name
// and description.
type Error struct {
	Call   string
	Code   int
	Name   string
	String string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (%d): %s", e.Call, e.Name, e.Code, e.String)
}

// check turns a failing CUresult of call into an *Error (nil on success).
func (d *Driver) check(call string, r result) error {
	if r == success {
		return nil
	}
	e := &Error{Call: call, Code: int(r), Name: "CUDA_ERROR_UNKNOWN_CODE", String: "unrecognised error code"}
	var p unsafe.Pointer
	if d.cuGetErrorName(r, &p) == success {
		e.Name = goString(p)
	}
	p = nil
	if d.cuGetErrorString(r, &p) == success {
		e.String = goString(p)
	}
	return e
}

// DeviceCount is the number of CUDA devices.
func (d *Driver) DeviceCount() (int, error) {
	var n int32
	if err := d.check("cuDeviceGetCount", d.cuDeviceGetCount(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Device is one GPU.
type Device struct {
	drv     *Driver
	handle  int32
	Ordinal int
	Name    string
	// Major and Minor are the compute capability (9, 0 on an H100/H200).
	Major, Minor int
	// TotalMem is the device memory in bytes.
	TotalMem uint64
}

// Arch is the device's real architecture for NVRTC, e.g. "sm_90".
func (dev *Device) Arch() string { return fmt.Sprintf("sm_%d%d", dev.Major, dev.Minor) }

// Device returns device ordinal; a machine with no device, or fewer than
// ordinal+1, is an error (wrapping ErrNoDriver when there are none).
func (d *Driver) Device(ordinal int) (*Device, error) {
	n, err := d.DeviceCount()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, noLib(ErrNoDriver, "the driver (CUDA %d.%d) sees no device", d.Version/1000, d.Version%1000/10)
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("cuda: no device %d (have %d)", ordinal, n)
	}
	dev := &Device{drv: d, Ordinal: ordinal}
	if err := d.check("cuDeviceGet", d.cuDeviceGet(&dev.handle, int32(ordinal))); err != nil {
		return nil, err
	}
	name := make([]byte, 256)
	if err := d.check("cuDeviceGetName", d.cuDeviceGetName(&name[0], int32(len(name)), dev.handle)); err != nil {
		return nil, err
	}
	dev.Name = goString(unsafe.Pointer(&name[0]))
	var major, minor int32
	if err := d.check("cuDeviceGetAttribute", d.cuDeviceGetAttribute(&major, attrComputeCapabilityMajor, dev.handle)); err != nil {
		return nil, err
	}
	if err := d.check("cuDeviceGetAttribute", d.cuDeviceGetAttribute(&minor, attrComputeCapabilityMinor, dev.handle)); err != nil {
		return nil, err
	}
	dev.Major, dev.Minor = int(major), int(minor)
	if err := d.check("cuDeviceTotalMem_v2", d.cuDeviceTotalMem(&dev.TotalMem, dev.handle)); err != nil {
		return nil, err
	}
	return dev, nil
}

// Context is a device's primary context. Every method makes it current on
// the calling goroutine's OS thread for the length of the call: a CUDA
// context is current per OS thread and goroutines move between threads, so
// each call locks its goroutine to its thread, sets the context (a
// thread-local store, cheap) and unlocks after. This keeps every caller
// correct from any goroutine without the hop of a command channel to one
// locked goroutine, which would cost a goroutine switch on each of the
// thousands of launches a forward pass makes. A mutex serialises the calls,
// so the context's work queues in the order the calls were made.
type Context struct {
	Dev    *Device
	drv    *Driver
	handle uintptr
	mu     sync.Mutex
	closed bool
}

// Retain retains dev's primary context.
func (dev *Device) Retain() (*Context, error) {
	c := &Context{Dev: dev, drv: dev.drv}
	if err := dev.drv.check("cuDevicePrimaryCtxRetain", dev.drv.cuPrimaryCtxRetain(&c.handle, dev.handle)); err != nil {
		return nil, err
	}
	return c, nil
}

// do runs f with c current on a locked OS thread, under c's mutex.
func (c *Context) do(f func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("cuda: context of device %d used after Close", c.Dev.Ordinal)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r, _, _ := purego.SyscallN(c.drv.setCurrentAddr, c.handle)
	if err := c.drv.check("cuCtxSetCurrent", result(int32(r))); err != nil {
		return err
	}
	return f()
}

// Do runs f with the context current on the calling goroutine's (locked)
// OS thread, for libraries such as cuBLAS that use the current context.
func (c *Context) Do(f func() error) error { return c.do(f) }

// Synchronize waits for all the context's work (cuCtxSynchronize); a
// kernel's fault surfaces here or at the next copy.
func (c *Context) Synchronize() error {
	return c.do(func() error { return c.drv.check("cuCtxSynchronize", c.drv.cuCtxSynchronize()) })
}

// Close releases the primary context (the caller frees its memory first).
func (c *Context) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	return c.drv.check("cuDevicePrimaryCtxRelease_v2", c.drv.cuPrimaryCtxRelease(c.Dev.handle))
}

// DevPtr is a device address (CUdeviceptr).
type DevPtr uint64

// Alloc returns bytes of device memory, zeroed (cuMemAlloc, cuMemsetD8).
func (c *Context) Alloc(bytes int) (DevPtr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("cuda: Alloc of %d bytes", bytes)
	}
	var p uint64
	err := c.do(func() error {
		if err := c.drv.check("cuMemAlloc_v2", c.drv.cuMemAlloc(&p, uintptr(bytes))); err != nil {
			return fmt.Errorf("%w (%d bytes)", err, bytes)
		}
		if err := c.drv.check("cuMemsetD8_v2", c.drv.cuMemsetD8(p, 0, uintptr(bytes))); err != nil {
			c.drv.cuMemFree(p)
			return err
		}
		return nil
	})
	return DevPtr(p), err
}

// Free frees device memory of Alloc.
func (c *Context) Free(p DevPtr) error {
	return c.do(func() error { return c.drv.check("cuMemFree_v2", c.drv.cuMemFree(uint64(p))) })
}

// Memset sets bytes of device memory at p to v.
func (c *Context) Memset(p DevPtr, v byte, bytes int) error {
	return c.do(func() error { return c.drv.check("cuMemsetD8_v2", c.drv.cuMemsetD8(uint64(p), v, uintptr(bytes))) })
}

// CopyToDevice copies src to dst synchronously (cuMemcpyHtoD: it returns
// once src may be reused), in order after the kernels queued before it.
func CopyToDevice[T int32 | float32 | byte](c *Context, dst DevPtr, src []T) error {
	if len(src) == 0 {
		return nil
	}
	bytes := uintptr(len(src)) * unsafe.Sizeof(src[0])
	err := c.do(func() error {
		return c.drv.check("cuMemcpyHtoD_v2", c.drv.cuMemcpyHtoD(uint64(dst), unsafe.Pointer(unsafe.SliceData(src)), bytes))
	})
	runtime.KeepAlive(src)
	return err
}

// CopyFromDevice copies device memory at src into dst once the work
// queued before it is done (cuMemcpyDtoH).
func CopyFromDevice[T int32 | float32 | byte](c *Context, dst []T, src DevPtr) error {
	if len(dst) == 0 {
		return nil
	}
	bytes := uintptr(len(dst)) * unsafe.Sizeof(dst[0])
	err := c.do(func() error {
		return c.drv.check("cuMemcpyDtoH_v2", c.drv.cuMemcpyDtoH(unsafe.Pointer(unsafe.SliceData(dst)), uint64(src), bytes))
	})
	runtime.KeepAlive(dst)
	return err
}

// HostMem is pinned (page-locked) host memory of cuMemAllocHost: C memory,
// which C may read after a call returns.
type HostMem struct {
	p unsafe.Pointer
	n int
}

// Bytes is the memory as a byte slice.
func (h *HostMem) Bytes() []byte { return unsafe.Slice((*byte)(h.p), h.n) }

// AllocHost returns bytes of pinned host memory.
func (c *Context) AllocHost(bytes int) (*HostMem, error) {
	h := &HostMem{n: bytes}
	err := c.do(func() error {
		return c.drv.check("cuMemAllocHost_v2", c.drv.cuMemAllocHost(&h.p, uintptr(bytes)))
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}

// FreeHost frees pinned memory of AllocHost.
func (c *Context) FreeHost(h *HostMem) error {
	if h == nil || h.p == nil {
		return nil
	}
	err := c.do(func() error { return c.drv.check("cuMemFreeHost", c.drv.cuMemFreeHost(h.p)) })
	h.p, h.n = nil, 0
	return err
}

// Module is a loaded cubin.
type Module struct {
	ctx    *Context
	handle uintptr
}

// LoadModule loads a cubin (cuModuleLoadData, which reads image during the call).
func (c *Context) LoadModule(image []byte) (*Module, error) {
	if len(image) == 0 {
		return nil, fmt.Errorf("cuda: LoadModule of an empty image")
	}
	m := &Module{ctx: c}
	err := c.do(func() error {
		return c.drv.check("cuModuleLoadData", c.drv.cuModuleLoadData(&m.handle, unsafe.Pointer(unsafe.SliceData(image))))
	})
	runtime.KeepAlive(image)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Unload unloads the module.
func (m *Module) Unload() error {
	return m.ctx.do(func() error { return m.ctx.drv.check("cuModuleUnload", m.ctx.drv.cuModuleUnload(m.handle)) })
}

// Function is a kernel of a Module.
type Function struct {
	ctx    *Context
	handle uintptr
	Name   string
}

// Function looks up the extern "C" kernel name.
func (m *Module) Function(name string) (*Function, error) {
	f := &Function{ctx: m.ctx, Name: name}
	err := m.ctx.do(func() error {
		if err := m.ctx.drv.check("cuModuleGetFunction", m.ctx.drv.cuModuleGetFunction(&f.handle, m.handle, name)); err != nil {
			return fmt.Errorf("kernel %s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// ParamInfo is the kernel's device-side parameter layout, from
// cuFuncGetParamInfo: indices are asked for until the driver answers
// CUDA_ERROR_INVALID_VALUE, the end of the list.
func (f *Function) ParamInfo() (Layout, error) {
	var l Layout
	err := f.ctx.do(func() error {
		for i := 0; ; i++ {
			var off, size uintptr
			r := f.ctx.drv.cuFuncGetParamInfo(f.handle, uintptr(i), &off, &size)
			if r == errInvalidValue {
				return nil
			}
			if err := f.ctx.drv.check("cuFuncGetParamInfo", r); err != nil {
				return fmt.Errorf("kernel %s parameter %d: %w", f.Name, i, err)
			}
			l.Offsets = append(l.Offsets, int(off))
			l.Sizes = append(l.Sizes, int(size))
			l.Size = max(l.Size, int(off+size))
		}
	})
	return l, err
}

// Event is a CUDA event, for timing work on the stream.
type Event struct {
	ctx    *Context
	handle uintptr
}

// NewEvent creates an event (CU_EVENT_DEFAULT: it records time).
func (c *Context) NewEvent() (*Event, error) {
	e := &Event{ctx: c}
	if err := c.do(func() error { return c.drv.check("cuEventCreate", c.drv.cuEventCreate(&e.handle, 0)) }); err != nil {
		return nil, err
	}
	return e, nil
}

// Record records the event on the legacy default stream.
func (e *Event) Record() error {
	return e.ctx.do(func() error { return e.ctx.drv.check("cuEventRecord", e.ctx.drv.cuEventRecord(e.handle, 0)) })
}

// Synchronize waits for the event.
func (e *Event) Synchronize() error {
	return e.ctx.do(func() error { return e.ctx.drv.check("cuEventSynchronize", e.ctx.drv.cuEventSynchronize(e.handle)) })
}

// Since is the time in milliseconds from start to e, both recorded and done.
func (e *Event) Since(start *Event) (float32, error) {
	var ms float32
	err := e.ctx.do(func() error {
		return e.ctx.drv.check("cuEventElapsedTime", e.ctx.drv.cuEventElapsedTime(&ms, start.handle, e.handle))
	})
	return ms, err
}

// Destroy destroys the event.
func (e *Event) Destroy() error {
	return e.ctx.do(func() error { return e.ctx.drv.check("cuEventDestroy_v2", e.ctx.drv.cuEventDestroy(e.handle)) })
}
