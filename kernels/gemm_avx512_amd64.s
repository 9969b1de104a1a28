//go:build !purego

#include "textflag.h"
#include "gemm_amd64.h"

// Every dot product here follows one fixed order, which is what makes the
// kernels batch-invariant: lane l of a 16-wide accumulator sums
// x[i]·w[i] for i ≡ l (mod 16) in increasing i with FMA; the k%16 tail is
// loaded with zero-masking so the unused lanes add fma(0, 0, acc); then the
// 16 lanes are folded by the four FOLD steps below, which add lane l to lane
// l+8, then l+4, l+2 and l+1. The dot-product kernels reduce several
// accumulators at once with a transpose-and-add, but each accumulator goes
// through exactly those steps, so an output element has the same bits
// whichever kernel, tile or batch produced it.
//
// Slot numbering: after the four steps, a set of 16 accumulators A0..A15
// ends as one vector whose element 4L+j holds A(4j+L). The kernels place
// their accumulators so that this lands every result where it is stored.

// Step 1: fold 8 lanes of a pair (A, B) into one vector [A(8) | B(8)].
#define FOLD8(A, B, DST) \
	VSHUFF32X4 $0x44, B, A, Z16; \
	VSHUFF32X4 $0xEE, B, A, Z17; \
	VADDPS     Z17, Z16, DST

// Step 2: fold 4 lanes of each half.
#define FOLD4(A, B, DST) \
	VSHUFF32X4 $0x88, B, A, Z16; \
	VSHUFF32X4 $0xDD, B, A, Z17; \
	VADDPS     Z17, Z16, DST

// Step 3: fold 2 lanes of each 128-bit quarter.
#define FOLD2(A, B, DST) \
	VUNPCKLPD B, A, Z16; \
	VUNPCKHPD B, A, Z17; \
	VADDPS    Z17, Z16, DST

// Step 4: fold neighbouring lanes.
#define FOLD1(A, B, DST) \
	VSHUFPS $0x88, B, A, Z16; \
	VSHUFPS $0xDD, B, A, Z17; \
	VADDPS  Z17, Z16, DST

// ZERO4 clears the accumulators A0-A3; ZERO8 clears Z0-Z7; ZERO16 clears
// Z0-Z15.
#define ZERO4(A0, A1, A2, A3) \
	VPXORD A0, A0, A0; \
	VPXORD A1, A1, A1; \
	VPXORD A2, A2, A2; \
	VPXORD A3, A3, A3

#define ZERO8 \
	ZERO4(Z0, Z1, Z2, Z3); \
	ZERO4(Z4, Z5, Z6, Z7)

#define ZERO16 \
	ZERO8; \
	ZERO4(Z8, Z9, Z10, Z11); \
	ZERO4(Z12, Z13, Z14, Z15)

// G4FMA adds W (a vector of one w row) times the 4 x rows in Z16-Z19 to the
// accumulators A0-A3.
#define G4FMA(W, A0, A1, A2, A3) \
	VFMADD231PS W, Z16, A0; \
	VFMADD231PS W, Z17, A1; \
	VFMADD231PS W, Z18, A2; \
	VFMADD231PS W, Z19, A3

// func gemm4x4AVX512(dst *float32, ldd int, x *float32, ldx int, w *float32, ldw int, n4 int, k int, kmask uint64)
//
// gemm4x4AVX512 sets dst[r*ldd+j] = x[r*ldx:][:k] · w[j*ldw:][:k] for rows
// r < 4 and columns j < 4*n4, in tiles of 4 rows × 4 columns (16
// accumulators). kmask has the low k%16 bits set. Strides are in elements.
TEXT ·gemm4x4AVX512(SB), NOSPLIT, $0-72
	GEMM4_ARGS(dst+0(FP), x+16(FP), ldx+24(FP), w+32(FP), ldw+40(FP))
	MOVQ n4+48(FP), R14
	MOVQ k+56(FP), CX
	ANDQ $-16, CX
	SHLQ $2, CX          // CX = bytes of the unmasked part of a row
	MOVQ kmask+64(FP), AX
	KMOVW AX, K1
	TESTQ R14, R14
	JEQ   g4done

g4tile:
	// Column c of the tile reads w row c; accumulator slot 4c+r holds (row r, column c).
	LEAQ   (SI)(BX*1), R12
	LEAQ   (R12)(BX*1), R13
	LEAQ   (R13)(BX*1), DX
	ZERO16
	XORQ   AX, AX
	CMPQ   AX, CX
	JGE    g4tail

g4loop:
	VMOVUPS     (R8)(AX*1), Z16
	VMOVUPS     (R9)(AX*1), Z17
	VMOVUPS     (R10)(AX*1), Z18
	VMOVUPS     (R11)(AX*1), Z19
	VMOVUPS     (SI)(AX*1), Z20
	G4FMA(Z20, Z0, Z1, Z2, Z3)
	VMOVUPS     (R12)(AX*1), Z21
	G4FMA(Z21, Z4, Z5, Z6, Z7)
	VMOVUPS     (R13)(AX*1), Z22
	G4FMA(Z22, Z8, Z9, Z10, Z11)
	VMOVUPS     (DX)(AX*1), Z23
	G4FMA(Z23, Z12, Z13, Z14, Z15)
	ADDQ        $64, AX
	CMPQ        AX, CX
	JLT         g4loop

g4tail:
	KORTESTW    K1, K1
	JZ          g4reduce
	VMOVUPS.Z   (R8)(AX*1), K1, Z16
	VMOVUPS.Z   (R9)(AX*1), K1, Z17
	VMOVUPS.Z   (R10)(AX*1), K1, Z18
	VMOVUPS.Z   (R11)(AX*1), K1, Z19
	VMOVUPS.Z   (SI)(AX*1), K1, Z20
	G4FMA(Z20, Z0, Z1, Z2, Z3)
	VMOVUPS.Z   (R12)(AX*1), K1, Z21
	G4FMA(Z21, Z4, Z5, Z6, Z7)
	VMOVUPS.Z   (R13)(AX*1), K1, Z22
	G4FMA(Z22, Z8, Z9, Z10, Z11)
	VMOVUPS.Z   (DX)(AX*1), K1, Z23
	G4FMA(Z23, Z12, Z13, Z14, Z15)

g4reduce:
	FOLD8(Z0, Z1, Z0)
	FOLD8(Z2, Z3, Z1)
	FOLD8(Z4, Z5, Z2)
	FOLD8(Z6, Z7, Z3)
	FOLD8(Z8, Z9, Z4)
	FOLD8(Z10, Z11, Z5)
	FOLD8(Z12, Z13, Z6)
	FOLD8(Z14, Z15, Z7)
	FOLD4(Z0, Z1, Z0)
	FOLD4(Z2, Z3, Z1)
	FOLD4(Z4, Z5, Z2)
	FOLD4(Z6, Z7, Z3)
	FOLD2(Z0, Z1, Z0)
	FOLD2(Z2, Z3, Z1)
	FOLD1(Z0, Z1, Z0)

	// 128-bit lane r of Z0 is row r's four results.
	MOVQ          ldd+8(FP), AX
	SHLQ          $2, AX
	VMOVUPS       X0, (DI)
	VEXTRACTF32X4 $1, Z0, X16
	VMOVUPS       X16, (DI)(AX*1)
	LEAQ          (DI)(AX*2), R12
	VEXTRACTF32X4 $2, Z0, X17
	VMOVUPS       X17, (R12)
	VEXTRACTF32X4 $3, Z0, X18
	VMOVUPS       X18, (R12)(AX*1)
	ADDQ          $16, DI
	LEAQ          (SI)(BX*4), SI
	DECQ          R14
	JNZ           g4tile

g4done:
	VZEROUPPER
	RET

// G8MASKED adds Z16 times the K1 lanes of the row at R+AX to A, using Z17.
#define G8MASKED(R, A) \
	VMOVUPS.Z   (R)(AX*1), K1, Z17; \
	VFMADD231PS Z17, Z16, A

// func gemv8AVX512(dst *float32, x *float32, w *float32, ldw int, idx *int32, n8 int, k int, kmask uint64)
//
// gemv8AVX512 sets dst[j] = x[:k] · row_j[:k] for j < 8*n8, where row_j is
// w[j*ldw:] when idx is nil and w[idx[j]*ldw:] otherwise, in tiles of 8
// columns (8 accumulators). Column c of a tile sits in slot (c>>1)+4(c&1), so
// the reduced vector, compressed to its lanes 0,1,4,5,8,9,12,13, is the
// tile's 8 results in order.
TEXT ·gemv8AVX512(SB), NOSPLIT, $24-64
	GEMV8_ARGS(dst+0(FP), x+8(FP), w+16(FP), ldw+24(FP), idx+32(FP), n8+40(FP), k+48(FP))
	ANDQ  $-16, CX
	SHLQ  $2, CX
	MOVQ  kmask+56(FP), AX
	KMOVW AX, K1
	MOVL  $0x3333, AX
	KMOVW AX, K2
	TESTQ DX, DX
	JEQ   g8done

g8tile:
	MOVQ  icur-16(SP), AX
	TESTQ AX, AX
	JNE   g8gather
	GEMV8_ROWS
	JMP   g8compute

g8gather:
	GEMV8_GATHER(w+16(FP))

g8compute:
	ZERO8
	XORQ   AX, AX
	CMPQ   AX, CX
	JGE    g8tail

g8loop:
	VMOVUPS     (SI)(AX*1), Z16
	GEMV8_FMA(Z16, Z0, Z4, Z1, Z5, Z2, Z6, Z3, Z7)
	ADDQ        $64, AX
	CMPQ        AX, CX
	JLT         g8loop

g8tail:
	KORTESTW    K1, K1
	JZ          g8reduce
	VMOVUPS.Z   (SI)(AX*1), K1, Z16
	G8MASKED(R8, Z0)
	G8MASKED(R9, Z4)
	G8MASKED(R10, Z1)
	G8MASKED(R11, Z5)
	G8MASKED(R12, Z2)
	G8MASKED(R13, Z6)
	G8MASKED(R14, Z3)
	G8MASKED(BX, Z7)

g8reduce:
	FOLD8(Z0, Z1, Z0)
	FOLD8(Z2, Z3, Z1)
	FOLD8(Z4, Z5, Z2)
	FOLD8(Z6, Z7, Z3)
	FOLD4(Z0, Z1, Z0)
	FOLD4(Z2, Z3, Z1)
	FOLD2(Z0, Z1, Z0)
	FOLD1(Z0, Z0, Z0)
	VCOMPRESSPS Z0, K2, Z1
	VMOVUPS     Y1, (DI)
	ADDQ        $32, DI
	DECQ        DX
	JNZ         g8tile

g8done:
	VZEROUPPER
	RET

// func vecMatAVX512(dst *float32, x *float32, w *float32, ldw int, idx *int32, k int, masks uint64)
//
// vecMatAVX512 sets dst[j] = Σ_{p<k} x[p]·row_p[j] for the columns j < 64
// that masks selects (16 bits per vector of 16 columns), where row_p is
// w[p*ldw:] when idx is nil and w[idx[p]*ldw:] otherwise. Each output is
// summed in two FMA chains, even p (Z0-Z3) and odd p (Z4-Z7), each in
// increasing p, then even + odd: two chains halve the wait on FMA latency.
// VMSTEP adds x[AX]·(row at R8)[j] to the accumulators A0-A3 for the
// columns K1-K4 select, with X as scratch, then moves R8 to the next row and
// AX to the next p.
#define VMSTEP(X, A0, A1, A2, A3) \
	VBROADCASTSS (SI)(AX*4), X; \
	VFMADD231PS  (R8), X, K1, A0; \
	VFMADD231PS  64(R8), X, K2, A1; \
	VFMADD231PS  128(R8), X, K3, A2; \
	VFMADD231PS  192(R8), X, K4, A3; \
	ADDQ         BX, R8; \
	INCQ         AX

TEXT ·vecMatAVX512(SB), NOSPLIT, $0-56
	VECMAT_ARGS(dst+0(FP), x+8(FP), w+16(FP), ldw+24(FP), idx+32(FP), k+40(FP), masks+48(FP))
	KMOVW  AX, K1
	SHRQ   $16, AX
	KMOVW  AX, K2
	SHRQ   $16, AX
	KMOVW  AX, K3
	SHRQ   $16, AX
	KMOVW  AX, K4
	ZERO8
	XORQ   AX, AX
	MOVQ   R9, R8
	TESTQ  CX, CX
	JEQ    vmsum

vmloop:
	VECMAT_ROW(vmeven)

vmeven:
	VMSTEP(Z16, Z0, Z1, Z2, Z3)
	CMPQ         AX, CX
	JGE          vmsum
	VECMAT_ROW(vmodd)

vmodd:
	VMSTEP(Z17, Z4, Z5, Z6, Z7)
	CMPQ         AX, CX
	JLT          vmloop

vmsum:
	VADDPS  Z4, Z0, Z0
	VADDPS  Z5, Z1, Z1
	VADDPS  Z6, Z2, Z2
	VADDPS  Z7, Z3, Z3
	VMOVUPS Z0, K1, (DI)
	VMOVUPS Z1, K2, 64(DI)
	VMOVUPS Z2, K3, 128(DI)
	VMOVUPS Z3, K4, 192(DI)
	VZEROUPPER
	RET
