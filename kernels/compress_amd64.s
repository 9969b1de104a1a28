//go:build !purego

#include "textflag.h"
#include "tail_amd64.h"

DATA iota16<>+0(SB)/4, $0
DATA iota16<>+4(SB)/4, $1
DATA iota16<>+8(SB)/4, $2
DATA iota16<>+12(SB)/4, $3
DATA iota16<>+16(SB)/4, $4
DATA iota16<>+20(SB)/4, $5
DATA iota16<>+24(SB)/4, $6
DATA iota16<>+28(SB)/4, $7
DATA iota16<>+32(SB)/4, $8
DATA iota16<>+36(SB)/4, $9
DATA iota16<>+40(SB)/4, $10
DATA iota16<>+44(SB)/4, $11
DATA iota16<>+48(SB)/4, $12
DATA iota16<>+52(SB)/4, $13
DATA iota16<>+56(SB)/4, $14
DATA iota16<>+60(SB)/4, $15
GLOBL iota16<>(SB), RODATA|NOPTR, $64

// EMIT stores the lanes of Z0 that K1 selects at vals[R10:] and their
// indices (Z2) at idx[R10:], and adds how many to R10.
#define EMIT \
	VCOMPRESSPS Z0, K1, (DI)(R10*4); \
	VPCOMPRESSD Z2, K1, (R9)(R10*4); \
	KMOVW       K1, R11; \
	POPCNTL     R11, R11; \
	ADDQ        R11, R10

// func filterGEAVX512(vals *float32, idx *int32, x *float32, n int, thr float32) int
// Writes every x[i] >= thr (ordered: NaN never passes) and its index i, in
// order, to vals and idx, and returns how many. VCOMPRESSPS/VPCOMPRESSD store
// the passing lanes of 16 at a time; blocks with none cost one compare.
TEXT ·filterGEAVX512(SB), NOSPLIT, $0-48
	MOVQ         vals+0(FP), DI
	MOVQ         idx+8(FP), R9
	MOVQ         x+16(FP), SI
	MOVQ         n+24(FP), CX
	VBROADCASTSS thr+32(FP), Z1
	VMOVDQU32    iota16<>(SB), Z2
	MOVL         $16, R11
	VPBROADCASTD R11, Z3
	XORQ         R10, R10        // count
	XORQ         AX, AX          // i
	SPLIT16(K2)

f16loop:
	CMPQ        AX, BX
	JGE         f16tail
	VMOVUPS     (SI)(AX*4), Z0
	VCMPPS      $0x1d, Z1, Z0, K1
	KORTESTW    K1, K1
	JZ          f16next
	EMIT

f16next:
	VPADDD Z3, Z2, Z2
	ADDQ   $16, AX
	JMP    f16loop

f16tail:
	KORTESTW    K2, K2
	JZ          f16done
	VMOVUPS.Z   (SI)(AX*4), K2, Z0
	VCMPPS      $0x1d, Z1, Z0, K1
	KANDW       K2, K1, K1
	EMIT

f16done:
	MOVQ R10, ret+40(FP)
	VZEROUPPER
	RET
