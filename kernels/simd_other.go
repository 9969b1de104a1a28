//go:build !amd64 || purego

package kernels

// Without the amd64 assembly only the pure-Go path exists. The stubs below
// keep the dispatch code in one piece; they are never called because
// NewCPU refuses the SIMD paths when hasAVX2 and hasAVX512 are false.
const (
	hasAVX2   = false
	hasAVX512 = false
)

func gemm4x4AVX512(dst *float32, ldd int, x *float32, ldx int, w *float32, ldw int, n4 int, k int, kmask uint64) {
	panic("kernels: AVX-512 kernel called on a build without it")
}

func gemv8AVX512(dst *float32, x *float32, w *float32, ldw int, idx *int32, n8 int, k int, kmask uint64) {
	panic("kernels: AVX-512 kernel called on a build without it")
}

func vecMatAVX512(dst *float32, x *float32, w *float32, ldw int, idx *int32, k int, masks uint64) {
	panic("kernels: AVX-512 kernel called on a build without it")
}

func gemm4x2AVX2(dst *float32, ldd int, x *float32, ldx int, w *float32, ldw int, n2 int, k int, kmask *int32) {
	panic("kernels: AVX2 kernel called on a build without it")
}

func gemv8AVX2(dst *float32, x *float32, w *float32, ldw int, idx *int32, n8 int, k int, kmask *int32) {
	panic("kernels: AVX2 kernel called on a build without it")
}

func vecMatAVX2(dst *float32, x *float32, w *float32, ldw int, idx *int32, k int, masks *int32) {
	panic("kernels: AVX2 kernel called on a build without it")
}

func expAVX512(dst *float32, src *float32, n int, scale float32, bias float32) {
	panic("kernels: AVX-512 kernel called on a build without it")
}

func expAVX2(dst *float32, src *float32, n int, scale float32, bias float32, tailMask *int32) {
	panic("kernels: AVX2 kernel called on a build without it")
}

func scaleAVX512(dst *float32, x *float32, w *float32, n int, s float32) {
	panic("kernels: AVX-512 kernel called on a build without it")
}

func scaleAVX2(dst *float32, x *float32, w *float32, n int, s float32, tailMask *int32) {
	panic("kernels: AVX2 kernel called on a build without it")
}

func gateAVX512(dst *float32, x *float32, up *float32, n int) {
	panic("kernels: AVX-512 kernel called on a build without it")
}

func gateAVX2(dst *float32, x *float32, up *float32, n int, tailMask *int32) {
	panic("kernels: AVX2 kernel called on a build without it")
}

func maxAVX512(x *float32, n int) float32 {
	panic("kernels: AVX-512 kernel called on a build without it")
}

func maxAVX2(x *float32, n int, tailMask *int32) float32 {
	panic("kernels: AVX2 kernel called on a build without it")
}

func reluAXPYAVX512(dst *float32, x *float32, n int, alpha float32) {
	panic("kernels: AVX-512 kernel called on a build without it")
}

func reluAXPYAVX2(dst *float32, x *float32, n int, alpha float32, tailMask *int32) {
	panic("kernels: AVX2 kernel called on a build without it")
}

func filterGEAVX512(vals *float32, idx *int32, x *float32, n int, thr float32) int {
	panic("kernels: AVX-512 kernel called on a build without it")
}
