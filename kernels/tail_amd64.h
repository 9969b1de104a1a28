// Tail masks for the AVX-512 element-wise kernels, which handle the last
// n%16 elements of a row with one masked operation.

// LOWMASK sets K to the mask of the low CX lanes (CX < 16), using R.
#define LOWMASK(R, K) \
	MOVL  $1, R; \
	SHLL  CX, R; \
	DECL  R; \
	KMOVW R, K

// SPLIT16 splits the CX elements of a row into BX = CX rounded down to a
// multiple of 16 and a tail of CX%16 (left in CX), and sets K to the tail's
// lanes, using R8.
#define SPLIT16(K) \
	MOVQ CX, BX; \
	ANDQ $-16, BX; \
	SUBQ BX, CX; \
	LOWMASK(R8, K)
