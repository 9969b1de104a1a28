//go:build !purego

#include "textflag.h"
#include "gemm_amd64.h"

// The AVX2 kernels follow the same scheme as the AVX-512 ones (see
// gemm_avx512_amd64.s) with 8 lanes: lane l sums x[i]·w[i] for i ≡ l (mod 8)
// with FMA, the k%8 tail is loaded with VMASKMOVPS (zeros in unused lanes),
// and REDUCE8 folds lane l with l+4, then l+2, then l+1. After REDUCE8 a set
// of 8 accumulators A0..A7 ends as one vector [A0 A2 A4 A6 | A1 A3 A5 A7].

// Step 1: fold 4 lanes of a pair (A, B) into one vector [A(4) | B(4)].
#define FOLD4(A, B, DST) \
	VPERM2F128 $0x20, B, A, Y10; \
	VPERM2F128 $0x31, B, A, Y11; \
	VADDPS     Y11, Y10, DST

// Step 2: fold 2 lanes of each 128-bit half.
#define FOLD2(A, B, DST) \
	VUNPCKLPD B, A, Y10; \
	VUNPCKHPD B, A, Y11; \
	VADDPS    Y11, Y10, DST

// Step 3: fold neighbouring lanes.
#define FOLD1(A, B, DST) \
	VSHUFPS $0x88, B, A, Y10; \
	VSHUFPS $0xDD, B, A, Y11; \
	VADDPS  Y11, Y10, DST

// REDUCE8 folds Y0..Y7 into Y0, using Y10 and Y11 as scratch.
#define REDUCE8 \
	FOLD4(Y0, Y1, Y0); \
	FOLD4(Y2, Y3, Y1); \
	FOLD4(Y4, Y5, Y2); \
	FOLD4(Y6, Y7, Y3); \
	FOLD2(Y0, Y1, Y0); \
	FOLD2(Y2, Y3, Y1); \
	FOLD1(Y0, Y1, Y0)

// ZERO4 clears the accumulators A0-A3; ZERO8 clears Y0-Y7.
#define ZERO4(A0, A1, A2, A3) \
	VXORPS A0, A0, A0; \
	VXORPS A1, A1, A1; \
	VXORPS A2, A2, A2; \
	VXORPS A3, A3, A3

#define ZERO8 \
	ZERO4(Y0, Y1, Y2, Y3); \
	ZERO4(Y4, Y5, Y6, Y7)

// A4FMA adds Y12 (a vector of one w row) times the 4 x rows in Y8-Y11 to
// the accumulators A0-A3.
#define A4FMA(A0, A1, A2, A3) \
	VFMADD231PS Y12, Y8, A0; \
	VFMADD231PS Y12, Y9, A1; \
	VFMADD231PS Y12, Y10, A2; \
	VFMADD231PS Y12, Y11, A3

// func gemm4x2AVX2(dst *float32, ldd int, x *float32, ldx int, w *float32, ldw int, n2 int, k int, kmask *int32)
//
// gemm4x2AVX2 sets dst[r*ldd+j] = x[r*ldx:][:k] · w[j*ldw:][:k] for rows
// r < 4 and columns j < 2*n2, in tiles of 4 rows × 2 columns. (row r,
// column c) sits in slot 4(r&1) + 2c + (r>>1), so the reduced vector is the
// tile's results row by row. kmask points at 8 int32 lane masks for the
// k%8 tail.
TEXT ·gemm4x2AVX2(SB), NOSPLIT, $0-72
	GEMM4_ARGS(dst+0(FP), x+16(FP), ldx+24(FP), w+32(FP), ldw+40(FP))
	MOVQ    n2+48(FP), DX
	MOVQ    k+56(FP), CX
	MOVQ    CX, R13
	ANDQ    $7, R13
	ANDQ    $-8, CX
	SHLQ    $2, CX
	MOVQ    kmask+64(FP), AX
	VMOVDQU (AX), Y13
	TESTQ   DX, DX
	JEQ     a4done

a4tile:
	LEAQ (SI)(BX*1), R12
	ZERO8
	XORQ AX, AX
	CMPQ AX, CX
	JGE  a4tail

a4loop:
	VMOVUPS     (R8)(AX*1), Y8
	VMOVUPS     (R9)(AX*1), Y9
	VMOVUPS     (R10)(AX*1), Y10
	VMOVUPS     (R11)(AX*1), Y11
	VMOVUPS     (SI)(AX*1), Y12
	A4FMA(Y0, Y4, Y1, Y5)
	VMOVUPS     (R12)(AX*1), Y12
	A4FMA(Y2, Y6, Y3, Y7)
	ADDQ        $32, AX
	CMPQ        AX, CX
	JLT         a4loop

a4tail:
	TESTQ       R13, R13
	JEQ         a4reduce
	VMASKMOVPS  (R8)(AX*1), Y13, Y8
	VMASKMOVPS  (R9)(AX*1), Y13, Y9
	VMASKMOVPS  (R10)(AX*1), Y13, Y10
	VMASKMOVPS  (R11)(AX*1), Y13, Y11
	VMASKMOVPS  (SI)(AX*1), Y13, Y12
	A4FMA(Y0, Y4, Y1, Y5)
	VMASKMOVPS  (R12)(AX*1), Y13, Y12
	A4FMA(Y2, Y6, Y3, Y7)

a4reduce:
	REDUCE8
	MOVQ         ldd+8(FP), AX
	SHLQ         $2, AX
	VMOVLPS      X0, (DI)
	VMOVHPS      X0, (DI)(AX*1)
	VEXTRACTF128 $1, Y0, X1
	LEAQ         (DI)(AX*2), R14
	VMOVLPS      X1, (R14)
	VMOVHPS      X1, (R14)(AX*1)
	ADDQ         $8, DI
	LEAQ         (SI)(BX*2), SI
	DECQ         DX
	JNZ          a4tile

a4done:
	VZEROUPPER
	RET

// A8MASKED adds Y8 times the Y9 lanes of the row at R+AX to A, using Y10.
#define A8MASKED(R, A) \
	VMASKMOVPS  (R)(AX*1), Y9, Y10; \
	VFMADD231PS Y10, Y8, A

// func gemv8AVX2(dst *float32, x *float32, w *float32, ldw int, idx *int32, n8 int, k int, kmask *int32)
//
// gemv8AVX2 sets dst[j] = x[:k] · row_j[:k] for j < 8*n8, where row_j is
// w[j*ldw:] when idx is nil and w[idx[j]*ldw:] otherwise, in tiles of 8
// columns. Column c sits in slot 2(c&3) + (c>>2), so the reduced vector is
// the tile's results in order.
TEXT ·gemv8AVX2(SB), NOSPLIT, $24-64
	GEMV8_ARGS(dst+0(FP), x+8(FP), w+16(FP), ldw+24(FP), idx+32(FP), n8+40(FP), k+48(FP))
	ANDQ    $-8, CX
	SHLQ    $2, CX
	MOVQ    kmask+56(FP), AX
	VMOVDQU (AX), Y9
	TESTQ   DX, DX
	JEQ     a8done

a8tile:
	MOVQ  icur-16(SP), AX
	TESTQ AX, AX
	JNE   a8gather
	GEMV8_ROWS
	JMP   a8compute

a8gather:
	GEMV8_GATHER(w+16(FP))

a8compute:
	ZERO8
	XORQ AX, AX
	CMPQ AX, CX
	JGE  a8tail

a8loop:
	VMOVUPS     (SI)(AX*1), Y8
	GEMV8_FMA(Y8, Y0, Y2, Y4, Y6, Y1, Y3, Y5, Y7)
	ADDQ        $32, AX
	CMPQ        AX, CX
	JLT         a8loop

a8tail:
	VTESTPS     Y9, Y9
	JEQ         a8reduce
	VMASKMOVPS  (SI)(AX*1), Y9, Y8
	A8MASKED(R8, Y0)
	A8MASKED(R9, Y2)
	A8MASKED(R10, Y4)
	A8MASKED(R11, Y6)
	A8MASKED(R12, Y1)
	A8MASKED(R13, Y3)
	A8MASKED(R14, Y5)
	A8MASKED(BX, Y7)

a8reduce:
	REDUCE8
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	DECQ    DX
	JNZ     a8tile

a8done:
	VZEROUPPER
	RET

// func vecMatAVX2(dst *float32, x *float32, w *float32, ldw int, idx *int32, k int, masks *int32)
//
// vecMatAVX2 sets dst[j] = Σ_{p<k} x[p]·row_p[j] for the columns j < 32 whose
// int32 lane mask in masks[0:32] is set, where row_p is w[p*ldw:] when idx is
// nil and w[idx[p]*ldw:] otherwise. Each output is summed in two FMA chains,
// even p (Y0-Y3) and odd p (Y10-Y13), each in increasing p, then even + odd,
// as in vecMatAVX512.
// AVSTEP adds x[AX]·(row at R8)[j] to the accumulators A0-A3 for the
// masked columns, then moves R8 to the next row and AX to the next p.
#define AVSTEP(A0, A1, A2, A3) \
	VBROADCASTSS (SI)(AX*4), Y8; \
	VMASKMOVPS   (R8), Y4, Y9; \
	VFMADD231PS  Y9, Y8, A0; \
	VMASKMOVPS   32(R8), Y5, Y9; \
	VFMADD231PS  Y9, Y8, A1; \
	VMASKMOVPS   64(R8), Y6, Y9; \
	VFMADD231PS  Y9, Y8, A2; \
	VMASKMOVPS   96(R8), Y7, Y9; \
	VFMADD231PS  Y9, Y8, A3; \
	ADDQ         BX, R8; \
	INCQ         AX

TEXT ·vecMatAVX2(SB), NOSPLIT, $0-56
	VECMAT_ARGS(dst+0(FP), x+8(FP), w+16(FP), ldw+24(FP), idx+32(FP), k+40(FP), masks+48(FP))
	VMOVDQU (AX), Y4
	VMOVDQU 32(AX), Y5
	VMOVDQU 64(AX), Y6
	VMOVDQU 96(AX), Y7
	ZERO4(Y0, Y1, Y2, Y3)
	ZERO4(Y10, Y11, Y12, Y13)
	XORQ    AX, AX
	MOVQ    R9, R8
	TESTQ   CX, CX
	JEQ     avsum

avloop:
	VECMAT_ROW(aveven)

aveven:
	AVSTEP(Y0, Y1, Y2, Y3)
	CMPQ         AX, CX
	JGE          avsum
	VECMAT_ROW(avodd)

avodd:
	AVSTEP(Y10, Y11, Y12, Y13)
	CMPQ         AX, CX
	JLT          avloop

avsum:
	VADDPS     Y10, Y0, Y0
	VADDPS     Y11, Y1, Y1
	VADDPS     Y12, Y2, Y2
	VADDPS     Y13, Y3, Y3
	VMASKMOVPS Y0, Y4, (DI)
	VMASKMOVPS Y1, Y5, 32(DI)
	VMASKMOVPS Y2, Y6, 64(DI)
	VMASKMOVPS Y3, Y7, 96(DI)
	VZEROUPPER
	RET
