// Register set-up and row addressing shared by the AVX2 and AVX-512 product
// kernels (gemm_avx2_amd64.s, gemm_avx512_amd64.s). The arguments come in as
// macro parameters, spelled at each call as name+offset(FP): go vet's asmdecl
// checks them there against the kernel's Go declaration, and it does not
// read this file (the tests run only the paths this CPU has, so a wrong
// offset in an AVX-512 kernel would pass them on an AVX2 machine).

// GEMM4_ARGS loads the arguments of gemm4x2AVX2 and gemm4x4AVX512 but the
// tile count, k and the mask: R8-R11 point at the 4 rows of x, SI at w, BX
// is ldw in bytes and DI points at dst.
#define GEMM4_ARGS(dst, x, ldx, w, ldw) \
	MOVQ x, R8; \
	MOVQ ldx, AX; \
	SHLQ $2, AX; \
	LEAQ (R8)(AX*1), R9; \
	LEAQ (R9)(AX*1), R10; \
	LEAQ (R10)(AX*1), R11; \
	MOVQ w, SI; \
	MOVQ ldw, BX; \
	SHLQ $2, BX; \
	MOVQ dst, DI

// GEMV8_ARGS loads the arguments of gemv8AVX2 and gemv8AVX512 but the mask:
// DI points at dst, SI at x, DX is n8 and CX is k; the locals ldb (ldw in
// bytes), wcur (the next row of w) and icur (the next entry of idx) are set.
#define GEMV8_ARGS(dst, x, w, ldw, idx, n8, k) \
	MOVQ dst, DI; \
	MOVQ x, SI; \
	MOVQ ldw, AX; \
	SHLQ $2, AX; \
	MOVQ AX, ldb-24(SP); \
	MOVQ w, AX; \
	MOVQ AX, wcur-8(SP); \
	MOVQ idx, AX; \
	MOVQ AX, icur-16(SP); \
	MOVQ n8, DX; \
	MOVQ k, CX

// GEMV8_ROWS points R8-R14 and BX at the 8 rows of w from wcur on, and moves
// wcur past them.
#define GEMV8_ROWS \
	MOVQ wcur-8(SP), R8; \
	MOVQ ldb-24(SP), AX; \
	LEAQ (R8)(AX*1), R9; \
	LEAQ (R9)(AX*1), R10; \
	LEAQ (R10)(AX*1), R11; \
	LEAQ (R11)(AX*1), R12; \
	LEAQ (R12)(AX*1), R13; \
	LEAQ (R13)(AX*1), R14; \
	LEAQ (R14)(AX*1), BX; \
	LEAQ (BX)(AX*1), AX; \
	MOVQ AX, wcur-8(SP)

// GEMV8_ROW points R at row idx[OFF/4] of w, idx at AX.
#define GEMV8_ROW(w, OFF, R) \
	MOVLQSX OFF(AX), R; \
	IMULQ   ldb-24(SP), R; \
	ADDQ    w, R

// GEMV8_GATHER points R8-R14 and BX at the rows of w that the 8 entries of
// idx at AX name, and moves icur past them.
#define GEMV8_GATHER(w) \
	GEMV8_ROW(w, 0, R8); \
	GEMV8_ROW(w, 4, R9); \
	GEMV8_ROW(w, 8, R10); \
	GEMV8_ROW(w, 12, R11); \
	GEMV8_ROW(w, 16, R12); \
	GEMV8_ROW(w, 20, R13); \
	GEMV8_ROW(w, 24, R14); \
	GEMV8_ROW(w, 28, BX); \
	ADDQ $32, AX; \
	MOVQ AX, icur-16(SP)

// VECMAT_ARGS loads the arguments of vecMatAVX2 and vecMatAVX512: DI points
// at dst, SI at x, R9 at w, BX is ldw in bytes, DX points at idx (or is 0),
// CX is k and AX points at (AVX2) or holds (AVX-512) the masks.
#define VECMAT_ARGS(dst, x, w, ldw, idx, k, masks) \
	MOVQ dst, DI; \
	MOVQ x, SI; \
	MOVQ w, R9; \
	MOVQ ldw, BX; \
	SHLQ $2, BX; \
	MOVQ idx, DX; \
	MOVQ k, CX; \
	MOVQ masks, AX

// VECMAT_ROW points R8 at row idx[AX] of w when there is an idx; without
// one it jumps to next, R8 already pointing at row AX.
#define VECMAT_ROW(next) \
	TESTQ   DX, DX; \
	JEQ     next; \
	MOVLQSX (DX)(AX*4), R8; \
	IMULQ   BX, R8; \
	ADDQ    R9, R8

// GEMV8_FMA adds X times the 8 rows at offset AX of GEMV8_ROWS or
// GEMV8_GATHER to the accumulators A0-A7, one FMA each.
#define GEMV8_FMA(X, A0, A1, A2, A3, A4, A5, A6, A7) \
	VFMADD231PS (R8)(AX*1), X, A0; \
	VFMADD231PS (R9)(AX*1), X, A1; \
	VFMADD231PS (R10)(AX*1), X, A2; \
	VFMADD231PS (R11)(AX*1), X, A3; \
	VFMADD231PS (R12)(AX*1), X, A4; \
	VFMADD231PS (R13)(AX*1), X, A5; \
	VFMADD231PS (R14)(AX*1), X, A6; \
	VFMADD231PS (BX)(AX*1), X, A7
