//go:build !purego

package kernels

import "golang.org/x/sys/cpu"

// hasAVX2 and hasAVX512 report what this CPU and OS can run. The AVX-512
// kernels use 128- and 256-bit EVEX forms (AVX512VL) besides AVX512F.
var (
	hasAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	hasAVX512 = hasAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL
)

// The assembly kernels. Pointers must name storage that holds every element
// the kernel reads or writes; their Go callers (matmul.go, ops.go, exp.go,
// topk.go) check that.

//go:noescape
func gemm4x4AVX512(dst *float32, ldd int, x *float32, ldx int, w *float32, ldw int, n4 int, k int, kmask uint64)

//go:noescape
func gemv8AVX512(dst *float32, x *float32, w *float32, ldw int, idx *int32, n8 int, k int, kmask uint64)

//go:noescape
func vecMatAVX512(dst *float32, x *float32, w *float32, ldw int, idx *int32, k int, masks uint64)

//go:noescape
func gemm4x2AVX2(dst *float32, ldd int, x *float32, ldx int, w *float32, ldw int, n2 int, k int, kmask *int32)

//go:noescape
func gemv8AVX2(dst *float32, x *float32, w *float32, ldw int, idx *int32, n8 int, k int, kmask *int32)

//go:noescape
func vecMatAVX2(dst *float32, x *float32, w *float32, ldw int, idx *int32, k int, masks *int32)

//go:noescape
func expAVX512(dst *float32, src *float32, n int, scale float32, bias float32)

//go:noescape
func expAVX2(dst *float32, src *float32, n int, scale float32, bias float32, tailMask *int32)

//go:noescape
func scaleAVX512(dst *float32, x *float32, w *float32, n int, s float32)

//go:noescape
func scaleAVX2(dst *float32, x *float32, w *float32, n int, s float32, tailMask *int32)

//go:noescape
func gateAVX512(dst *float32, x *float32, up *float32, n int)

//go:noescape
func gateAVX2(dst *float32, x *float32, up *float32, n int, tailMask *int32)

//go:noescape
func maxAVX512(x *float32, n int) float32

//go:noescape
func maxAVX2(x *float32, n int, tailMask *int32) float32

//go:noescape
func reluAXPYAVX512(dst *float32, x *float32, n int, alpha float32)

//go:noescape
func reluAXPYAVX2(dst *float32, x *float32, n int, alpha float32, tailMask *int32)

//go:noescape
func filterGEAVX512(vals *float32, idx *int32, x *float32, n int, thr float32) int
