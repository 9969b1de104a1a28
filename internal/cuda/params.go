package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"
)

// ParamKind is a kernel parameter's C type.
type ParamKind int

const (
	// Pointer is a device pointer (T*): 8 bytes, aligned to 8.
	Pointer ParamKind = iota
	// Int32 is an int: 4 bytes, aligned to 4.
	Int32
	// Float32 is a float: 4 bytes, aligned to 4.
	Float32
)

// size is the kind's size, which is also its alignment, in bytes.
func (k ParamKind) size() int {
	if k == Pointer {
		return 8
	}
	return 4
}

func (k ParamKind) String() string {
	switch k {
	case Pointer:
		return "pointer"
	case Int32:
		return "int"
	case Float32:
		return "float"
	}
	return fmt.Sprintf("ParamKind(%d)", int(k))
}

// Layout is where a kernel's parameters lie in its parameter buffer, in
// bytes: parameter i at Offsets[i], Sizes[i] long; Size is where the last
// one ends.
type Layout struct {
	Offsets, Sizes []int
	Size           int
}

// LayoutOf lays kinds out as the C ABI lays out a struct of them (and as
// the device lays out a kernel's parameters): each at the next multiple of
// its alignment.
func LayoutOf(kinds []ParamKind) Layout {
	l := Layout{Offsets: make([]int, len(kinds)), Sizes: make([]int, len(kinds))}
	off := 0
	for i, k := range kinds {
		s := k.size()
		off = (off + s - 1) / s * s
		l.Offsets[i], l.Sizes[i] = off, s
		off += s
	}
	l.Size = off
	return l
}

// Equal reports whether l and m place every parameter alike.
func (l Layout) Equal(m Layout) bool {
	if len(l.Offsets) != len(m.Offsets) {
		return false
	}
	for i := range l.Offsets {
		if l.Offsets[i] != m.Offsets[i] || l.Sizes[i] != m.Sizes[i] {
			return false
		}
	}
	return true
}

func (l Layout) String() string {
	s := "("
	for i := range l.Offsets {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%d:%d", l.Offsets[i], l.Sizes[i])
	}
	return s + ")"
}

// Param is one argument's value: a device address, an int or a float.
type Param struct {
	Kind ParamKind
	Ptr  DevPtr
	I    int32
	F    float32
}

// Pack writes params into buf at l's offsets (little-endian, as the
// device reads them); buf must hold l.Size bytes.
func Pack(buf []byte, l Layout, params []Param) {
	if len(params) != len(l.Offsets) {
		panic(fmt.Sprintf("cuda: %d params for a layout of %d", len(params), len(l.Offsets)))
	}
	for i, p := range params {
		b := buf[l.Offsets[i] : l.Offsets[i]+l.Sizes[i]]
		switch p.Kind {
		case Pointer:
			binary.LittleEndian.PutUint64(b, uint64(p.Ptr))
		case Int32:
			binary.LittleEndian.PutUint32(b, uint32(p.I))
		case Float32:
			binary.LittleEndian.PutUint32(b, math.Float32bits(p.F))
		}
	}
}

// KindsOf returns the kinds of params.
func KindsOf(params []Param) []ParamKind {
	k := make([]ParamKind, len(params))
	for i, p := range params {
		k[i] = p.Kind
	}
	return k
}

// maxParams and maxParamBytes bound one launch's parameters (the device
// allows 32 KiB on recent drivers; glmbench's kernels take far fewer).
const (
	maxParams     = 64
	maxParamBytes = 4096
)

// Launcher launches kernels with parameters packed into pinned host
// memory: a buffer holding the values at their layout's offsets, and the
// kernelParams array (void*[]) pointing into it. cuLaunchKernel copies
// the values before it returns, so one Launcher serves every launch in
// turn. It is not safe for concurrent use.
type Launcher struct {
	ctx    *Context
	stream uintptr  // SetStream's; 0: the legacy default stream
	vals   *HostMem // the packed values
	ptrs   *HostMem // kernelParams: maxParams addresses into vals
}

// NewLauncher allocates a Launcher's pinned buffers.
func (c *Context) NewLauncher() (*Launcher, error) {
	vals, err := c.AllocHost(maxParamBytes)
	if err != nil {
		return nil, err
	}
	ptrs, err := c.AllocHost(maxParams * 8)
	if err != nil {
		c.FreeHost(vals)
		return nil, err
	}
	return &Launcher{ctx: c, vals: vals, ptrs: ptrs}, nil
}

// Close frees the pinned buffers.
func (l *Launcher) Close() error {
	err := l.ctx.FreeHost(l.vals)
	if err2 := l.ctx.FreeHost(l.ptrs); err == nil {
		err = err2
	}
	return err
}

// Dim3 is a grid or block shape.
type Dim3 struct{ X, Y, Z uint32 }

// SetStream makes l's launches go on s (nil: the legacy default stream).
func (l *Launcher) SetStream(s *Stream) {
	l.stream = 0
	if s != nil {
		l.stream = s.handle
	}
}

// Launch queues f on l's stream (SetStream) with params laid out as
// layout (the caller has checked layout against f's ParamInfo).
func (l *Launcher) Launch(f *Function, grid, block Dim3, shared int, layout Layout, params []Param) error {
	if len(params) > maxParams || layout.Size > maxParamBytes {
		return fmt.Errorf("cuda: kernel %s: %d parameters of %d bytes exceed the launcher's %d, %d", f.Name, len(params), layout.Size, maxParams, maxParamBytes)
	}
	Pack(l.vals.Bytes(), layout, params)
	ptrs := unsafe.Slice((*uintptr)(l.ptrs.p), maxParams)
	for i, off := range layout.Offsets {
		ptrs[i] = uintptr(unsafe.Add(l.vals.p, off))
	}
	err := l.ctx.do(func() error {
		// cuLaunchKernel(f, gridX, gridY, gridZ, blockX, blockY, blockZ,
		// sharedMemBytes, stream, kernelParams, extra NULL).
		r, _, _ := purego.SyscallN(l.ctx.drv.launchAddr, f.handle,
			uintptr(grid.X), uintptr(grid.Y), uintptr(grid.Z), uintptr(block.X), uintptr(block.Y), uintptr(block.Z),
			uintptr(shared), l.stream, uintptr(l.ptrs.p), 0)
		if err := l.ctx.drv.check("cuLaunchKernel", result(int32(r))); err != nil {
			return fmt.Errorf("kernel %s grid %v block %v shared %d: %w", f.Name, grid, block, shared, err)
		}
		return nil
	})
	runtime.KeepAlive(l)
	return err
}
