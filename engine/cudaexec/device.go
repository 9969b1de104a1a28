package cudaexec

import (
	"errors"
	"fmt"

	"github.com/glmbench/glmbench/internal/cuda"
)

// DeviceOptions choose and set up the GPU.
type DeviceOptions struct {
	// Ordinal is the CUDA device number (0: the first).
	Ordinal int
	// CacheDir keeps compiled cubins ("": the user cache dir's glmbench/cubin).
	CacheDir string
}

// ErrNoDevice is what OpenDevice's error wraps when there is no CUDA driver
// or no device: the case `--device auto` falls back from.
var ErrNoDevice = errors.New("no CUDA device")

// gpuNVRTCOptions are NVRTC's options for KernelSource besides -arch.
var gpuNVRTCOptions = []string{"--std=c++17"}

// OpenDevice opens a GPU and returns the Ops that run kernels.cu on it:
// it loads the driver, retains device o.Ordinal's primary context,
// compiles KernelSource with NVRTC for the device's architecture (or takes
// the cubin from the cache), loads it, and hands a device Memory and
// Caller to NewLaunchOps. A machine without a driver, NVRTC or a device
// gives one line that wraps ErrNoDevice.
func OpenDevice(o DeviceOptions) (Ops, error) {
	d, err := openGPU(o)
	if err != nil {
		return nil, err
	}
	return NewLaunchOps(d, d), nil
}

// openGPU is OpenDevice up to the Memory and Caller.
func openGPU(o DeviceOptions) (*gpuDevice, error) {
	unusable := func(err error) error {
		if errors.Is(err, cuda.ErrNoDriver) || errors.Is(err, cuda.ErrNoNVRTC) {
			return fmt.Errorf("%w: %v", ErrNoDevice, err)
		}
		return fmt.Errorf("cuda: %w", err)
	}
	drv, err := cuda.Load()
	if err != nil {
		return nil, unusable(err)
	}
	dev, err := drv.Device(o.Ordinal)
	if err != nil {
		return nil, unusable(err)
	}
	nv, err := cuda.LoadNVRTC()
	if err != nil {
		return nil, unusable(err)
	}
	dir := o.CacheDir
	if dir == "" {
		dir = cuda.DefaultCacheDir()
	}
	cubin, warn, err := nv.CompileCached(cuda.CubinCache{Dir: dir}, KernelSource, "kernels.cu", dev.Arch(), gpuNVRTCOptions)
	if err != nil {
		return nil, fmt.Errorf("cuda: compiling kernels.cu for %s %s: %w", dev.Name, dev.Arch(), err)
	}
	ctx, err := dev.Retain()
	if err != nil {
		return nil, unusable(err)
	}
	d := &gpuDevice{
		name:      fmt.Sprintf("cuda:%d %s %s", dev.Ordinal, dev.Name, dev.Arch()),
		ctx:       ctx,
		allocs:    map[*gpuMem]struct{}{},
		kernels:   map[string]*gpuKernel{},
		cacheWarn: warn,
	}
	if d.mod, err = ctx.LoadModule(cubin); err != nil {
		ctx.Close()
		return nil, fmt.Errorf("cuda: loading kernels.cu: %w", err)
	}
	if d.launch, err = ctx.NewLauncher(); err != nil {
		d.mod.Unload()
		ctx.Close()
		return nil, fmt.Errorf("cuda: %w", err)
	}
	// The kernels go on a stream of the device's own, which orders with
	// the synchronous copies of the legacy stream and can be captured into
	// a graph (the legacy stream cannot).
	if d.stream, err = ctx.NewStream(); err != nil {
		d.launch.Close()
		d.mod.Unload()
		ctx.Close()
		return nil, fmt.Errorf("cuda: %w", err)
	}
	d.launch.SetStream(d.stream)
	return d, nil
}

// device is a GPU's Memory and Caller: allocations in device memory,
// synchronous copies on the legacy default stream and kernel launches on a
// blocking stream of its own (which waits for the legacy stream's work
// before it and is waited for by the legacy stream's work after it), so
// copies and kernels run in the order they were asked for. It records and
// replays CUDA graphs of its launches (graph.go). It is driven by
// one goroutine at a time (the executor's); internal/cuda makes the
// context current on whatever OS thread that goroutine is on.
type gpuDevice struct {
	name      string
	ctx       *cuda.Context
	mod       *cuda.Module
	launch    *cuda.Launcher
	stream    *cuda.Stream // the launches' (and the graphs')
	graphs    map[*gpuGraph]struct{}
	capturing bool
	allocs    map[*gpuMem]struct{}
	kernels   map[string]*gpuKernel
	params    []cuda.Param // Call's scratch
	err       error
	closed    bool
	cacheWarn error // the cubin cache could not be written (not fatal)
}

// gpuMem is one device allocation of n 4-byte elements at ptr (0 when n
// is 0 or the allocation failed after a sticky error).
type gpuMem struct {
	ptr cuda.DevPtr
	n   int
}

// Len implements Mem.
func (m *gpuMem) Len() int { return m.n }

// gpuKernel is a kernel of the module with its parameter layout, checked
// against the driver's on first use.
type gpuKernel struct {
	fn     *cuda.Function
	kinds  []cuda.ParamKind
	layout cuda.Layout
}

// Name implements Memory: "cuda:0 NVIDIA H200 sm_90".
func (d *gpuDevice) Name() string { return d.name }

// Err implements Memory.
func (d *gpuDevice) Err() error { return d.err }

// fail records err as the sticky error, if it is the first.
func (d *gpuDevice) fail(err error) {
	if err != nil && d.err == nil {
		d.err = err
	}
}

// Alloc implements Memory: n zeroed elements.
func (d *gpuDevice) Alloc(n int, kind ElemKind) Mem {
	if n < 0 {
		panic(fmt.Sprintf("cudaexec: Alloc of %d elements", n))
	}
	m := &gpuMem{n: n}
	if n == 0 || d.err != nil {
		return m
	}
	if d.closed {
		d.fail(errors.New("cudaexec: device memory used after Close"))
		return m
	}
	p, err := d.ctx.Alloc(4 * n)
	if err != nil {
		d.fail(err)
		return m
	}
	m.ptr = p
	d.allocs[m] = struct{}{}
	return m
}

// mem is m as this device's allocation; another Ops' Mem is a programming error.
func (d *gpuDevice) mem(m Mem) *gpuMem {
	dm, ok := m.(*gpuMem)
	if !ok {
		panic(fmt.Sprintf("cudaexec: a %T is not device memory", m))
	}
	return dm
}

// Free implements Memory.
func (d *gpuDevice) Free(m Mem) {
	dm := d.mem(m)
	if dm.ptr == 0 {
		return
	}
	if _, ok := d.allocs[dm]; !ok {
		panic("cudaexec: Free of device memory not allocated here, or freed twice")
	}
	delete(d.allocs, dm)
	if !d.closed {
		d.fail(d.ctx.Free(dm.ptr))
	}
	dm.ptr = 0
}

// span checks that elements [off, off+n) lie in m and returns their address.
func (d *gpuDevice) span(m Mem, off, n int) (cuda.DevPtr, bool) {
	dm := d.mem(m)
	if off < 0 || n < 0 || off+n > dm.n {
		panic(fmt.Sprintf("cudaexec: elements [%d, %d) of a %d-element allocation", off, off+n, dm.n))
	}
	if d.err != nil || n == 0 {
		return 0, false
	}
	if dm.ptr == 0 {
		d.fail(errors.New("cudaexec: device memory used after Free or Close"))
		return 0, false
	}
	return dm.ptr + cuda.DevPtr(4*off), true
}

// UploadF32 implements Memory.
func (d *gpuDevice) UploadF32(dst Mem, off int, src []float32) {
	if p, ok := d.span(dst, off, len(src)); ok {
		d.fail(cuda.CopyToDevice(d.ctx, p, src))
	}
}

// UploadI32 implements Memory.
func (d *gpuDevice) UploadI32(dst Mem, off int, src []int32) {
	if p, ok := d.span(dst, off, len(src)); ok {
		d.fail(cuda.CopyToDevice(d.ctx, p, src))
	}
}

// DownloadF32 implements Memory; it waits for the kernels queued before it.
func (d *gpuDevice) DownloadF32(dst []float32, src Mem, off int) {
	if p, ok := d.span(src, off, len(dst)); ok {
		d.fail(cuda.CopyFromDevice(d.ctx, dst, p))
	}
}

// DownloadI32 implements Memory.
func (d *gpuDevice) DownloadI32(dst []int32, src Mem, off int) {
	if p, ok := d.span(src, off, len(dst)); ok {
		d.fail(cuda.CopyFromDevice(d.ctx, dst, p))
	}
}

// Call implements Caller: it packs args (a pointer is its allocation's
// address plus Off elements of 4 bytes) and launches kernel. The first
// call of a kernel checks the arguments' C layout against the driver's
// (cuFuncGetParamInfo); a mismatch, then or later, is the sticky error.
// A grid or block Y or Z of 0 means 1; a grid X of 0 launches nothing.
func (d *gpuDevice) Call(kernel string, grid, block Dim3, shared int, args ...Arg) {
	if d.err != nil {
		return
	}
	if d.closed {
		d.fail(errors.New("cudaexec: kernel launched after Close"))
		return
	}
	d.params = d.pack(d.params[:0], kernel, args)
	if d.err != nil {
		return
	}
	k := d.kernel(kernel, d.params)
	if k == nil {
		return
	}
	if grid.X == 0 {
		return
	}
	g, b := gpuDim(grid), gpuDim(block)
	if b.X == 0 {
		panic(fmt.Sprintf("cudaexec: %s launched with block %v", kernel, block))
	}
	d.fail(d.launch.Launch(k.fn, g, b, shared, k.layout, d.params))
}

// pack appends args to params as the device reads them: a pointer is its
// allocation's address plus Off elements of 4 bytes (a nil Mem is NULL;
// a freed one is the sticky error).
func (d *gpuDevice) pack(params []cuda.Param, kernel string, args []Arg) []cuda.Param {
	for i, a := range args {
		switch a.Kind {
		case ArgPtr:
			var p cuda.DevPtr
			if a.Mem != nil {
				dm := d.mem(a.Mem)
				if a.Off < 0 || a.Off > dm.n {
					panic(fmt.Sprintf("cudaexec: %s argument %d: offset %d of a %d-element allocation", kernel, i, a.Off, dm.n))
				}
				switch {
				case dm.ptr != 0:
					p = dm.ptr + cuda.DevPtr(4*a.Off)
				case dm.n > 0: // freed, or closed: a NULL would fault the context
					d.fail(fmt.Errorf("cudaexec: %s argument %d is device memory used after Free or Close", kernel, i))
				}
			}
			params = append(params, cuda.Param{Kind: cuda.Pointer, Ptr: p})
		case ArgInt:
			params = append(params, cuda.Param{Kind: cuda.Int32, I: a.I})
		case ArgFloat:
			params = append(params, cuda.Param{Kind: cuda.Float32, F: a.F})
		default:
			panic(fmt.Sprintf("cudaexec: %s argument %d of kind %d", kernel, i, a.Kind))
		}
	}
	return params
}

// gpuDim converts a Dim3, 0 in Y or Z meaning 1.
func gpuDim(v Dim3) cuda.Dim3 {
	if v.X < 0 || v.Y < 0 || v.Z < 0 {
		panic(fmt.Sprintf("cudaexec: negative launch shape %v", v))
	}
	return cuda.Dim3{X: uint32(v.X), Y: uint32(max(v.Y, 1)), Z: uint32(max(v.Z, 1))}
}

// kernel returns name's function with its layout, looking it up and
// checking the layout on first use; nil after recording an error.
func (d *gpuDevice) kernel(name string, params []cuda.Param) *gpuKernel {
	k, ok := d.kernels[name]
	if !ok {
		fn, err := d.mod.Function(name)
		if err != nil {
			d.fail(err)
			return nil
		}
		info, err := fn.ParamInfo()
		if err != nil {
			d.fail(err)
			return nil
		}
		k = &gpuKernel{fn: fn, kinds: cuda.KindsOf(params), layout: cuda.LayoutOf(cuda.KindsOf(params))}
		if !k.layout.Equal(info) {
			d.fail(fmt.Errorf("cudaexec: kernel %s: the arguments %v lay out as %v but the compiled kernel's parameters are %v", name, k.kinds, k.layout, info))
			return nil
		}
		d.kernels[name] = k
	}
	if len(params) != len(k.kinds) {
		d.fail(fmt.Errorf("cudaexec: kernel %s called with %d arguments, %d before", name, len(params), len(k.kinds)))
		return nil
	}
	for i, p := range params {
		if p.Kind != k.kinds[i] {
			d.fail(fmt.Errorf("cudaexec: kernel %s argument %d is a %v, a %v before", name, i, p.Kind, k.kinds[i]))
			return nil
		}
	}
	return k
}

// Close implements Memory: it frees every allocation, the module and the
// launcher's pinned memory, and releases the context. It returns the
// first error of those, or else the sticky one.
func (d *gpuDevice) Close() error {
	if d.closed {
		return nil
	}
	var first error
	note := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	if d.capturing { // a capture left open: end it and drop its graph
		if g, err := d.stream.EndCapture(); err == nil {
			note(g.Destroy())
		}
		d.capturing = false
	}
	for g := range d.graphs {
		note(g.exec.Destroy())
	}
	clear(d.graphs)
	note(d.stream.Destroy())
	for m := range d.allocs {
		note(d.ctx.Free(m.ptr))
		m.ptr = 0
	}
	clear(d.allocs)
	note(d.launch.Close())
	note(d.mod.Unload())
	note(d.ctx.Close())
	d.closed = true
	if first == nil {
		first = d.err
	}
	return first
}

// gpuArgKinds maps the Go side's kinds to internal/cuda's.
func gpuArgKinds(kinds []ArgKind) []cuda.ParamKind {
	out := make([]cuda.ParamKind, len(kinds))
	for i, k := range kinds {
		switch k {
		case ArgPtr:
			out[i] = cuda.Pointer
		case ArgInt:
			out[i] = cuda.Int32
		case ArgFloat:
			out[i] = cuda.Float32
		default:
			panic(fmt.Sprintf("cudaexec: argument kind %d", k))
		}
	}
	return out
}
