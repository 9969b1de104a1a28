package cuda

import (
	"errors"
	"fmt"
	"runtime"
)

// ErrNoCUBLAS is what an error wraps when cuBLAS cannot be loaded.
var ErrNoCUBLAS = errors.New("no usable cuBLAS")

// cuBLAS enums: cublasOperation_t and cublasMath_t.
const (
	cublasOpN         = 0
	cublasOpT         = 1
	cublasDefaultMath = 0
)

// BLAS is a cuBLAS handle on a Context, for the GEMM baseline. It uses
// the default math mode (CUBLAS_DEFAULT_MATH: full fp32, no TF32), host
// pointer mode and the legacy default stream.
type BLAS struct {
	ctx    *Context
	handle uintptr

	cublasCreate      func(h *uintptr) int32
	cublasDestroy     func(h uintptr) int32
	cublasSetMathMode func(h uintptr, mode int32) int32
	cublasSgemm       func(h uintptr, ta, tb int32, m, n, k int32, alpha *float32, a uint64, lda int32, b uint64, ldb int32, beta *float32, c uint64, ldc int32) int32
}

// NewBLAS opens cuBLAS ($GLMBENCH_LIBCUBLAS, or libcublas.so.13, .so.12)
// and creates a handle in c.
func (c *Context) NewBLAS() (*BLAS, error) {
	lib, err := openLibrary("GLMBENCH_LIBCUBLAS", "libcublas.so.13", "libcublas.so.12", "libcublas.so")
	if err != nil {
		return nil, noLib(ErrNoCUBLAS, "%v", err)
	}
	b := &BLAS{ctx: c}
	err = lib.bind([]symbol{
		{name: "cublasCreate_v2", fn: &b.cublasCreate},
		{name: "cublasDestroy_v2", fn: &b.cublasDestroy},
		{name: "cublasSetMathMode", fn: &b.cublasSetMathMode},
		{name: "cublasSgemm_v2", fn: &b.cublasSgemm},
	})
	if err != nil {
		return nil, noLib(ErrNoCUBLAS, "%v", err)
	}
	err = c.do(func() error {
		if err := blasCheck("cublasCreate_v2", b.cublasCreate(&b.handle)); err != nil {
			return err
		}
		return blasCheck("cublasSetMathMode", b.cublasSetMathMode(b.handle, cublasDefaultMath))
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

func blasCheck(call string, status int32) error {
	if status == 0 {
		return nil
	}
	return fmt.Errorf("%s: cublasStatus %d", call, status)
}

// MatMulT queues dst = x · wᵀ for row-major float32 matrices: dst m×n,
// x m×k, w n×k. In cuBLAS's column-major terms that is dstᵀ (n×m) =
// wᵀᵀ·xᵀ, i.e. C = op(A)·B with A = w (k×n column-major, transposed) and
// B = x (k×m column-major).
func (b *BLAS) MatMulT(dst, x, w DevPtr, m, n, k int) error {
	alpha, beta := float32(1), float32(0)
	err := b.ctx.do(func() error {
		return blasCheck("cublasSgemm_v2", b.cublasSgemm(b.handle, cublasOpT, cublasOpN, int32(n), int32(m), int32(k),
			&alpha, uint64(w), int32(k), uint64(x), int32(k), &beta, uint64(dst), int32(n)))
	})
	runtime.KeepAlive(&alpha)
	runtime.KeepAlive(&beta)
	return err
}

// Close destroys the handle.
func (b *BLAS) Close() error {
	return b.ctx.do(func() error { return blasCheck("cublasDestroy_v2", b.cublasDestroy(b.handle)) })
}
