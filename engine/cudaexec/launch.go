package cudaexec

// The Ops that run the CUDA C kernels of kernels.cu (the GPU's, and the
// emulator's that runs the same source on the CPU for tests) share one
// implementation, NewLaunchOps, over a Memory and a Caller.

// ElemKind is what a Mem holds.
type ElemKind int

const (
	F32 ElemKind = iota
	I32
)

// Memory is where a kernel-running Ops keeps its tensors. Its errors are
// sticky (Err); after one, every call does nothing.
type Memory interface {
	// Name says what the memory is, e.g. "cuda:0 NVIDIA H200 sm_90".
	Name() string
	// Alloc returns a zeroed allocation of n elements.
	Alloc(n int, kind ElemKind) Mem
	Free(m Mem)
	// UploadF32 copies src into elements [off, off+len(src)) of dst; the
	// others likewise. Downloads wait for the kernels queued before them.
	UploadF32(dst Mem, off int, src []float32)
	UploadI32(dst Mem, off int, src []int32)
	DownloadF32(dst []float32, src Mem, off int)
	DownloadI32(dst []int32, src Mem, off int)
	Err() error
	Close() error
}

// Dim3 is a CUDA grid or block shape.
type Dim3 struct{ X, Y, Z int }

// ArgKind is a kernel parameter's C type, as kernels.cu declares it.
type ArgKind int

const (
	ArgPtr   ArgKind = iota // float* / const float* / int* / const int*: a Mem and an element offset
	ArgInt                  // int (32 bits)
	ArgFloat                // float
)

// Arg is one kernel argument.
type Arg struct {
	Kind ArgKind
	Mem  Mem // ArgPtr: the allocation (its address + Off elements is passed)
	Off  int
	I    int32
	F    float32
}

// Ptr, Int and Float make kernel arguments.
func Ptr(m Mem, off int) Arg { return Arg{Kind: ArgPtr, Mem: m, Off: off} }
func Int(v int) Arg          { return Arg{Kind: ArgInt, I: int32(v)} }
func Float(v float32) Arg    { return Arg{Kind: ArgFloat, F: v} }

// Caller launches a kernel of kernels.cu by name on the Memory's stream, in
// order with the copies. Errors are the Memory's (sticky).
type Caller interface {
	Call(kernel string, grid, block Dim3, shared int, args ...Arg)
}
