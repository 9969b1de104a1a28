//go:build !purego

#include "textflag.h"
#include "tail_amd64.h"

// func scaleAVX512(dst *float32, x *float32, w *float32, n int, s float32)
//
// scaleAVX512 sets dst[i] = (x[i]·s)·w[i] for i < n, or x[i]·s when w is
// nil: the same two rounded products as the Go loops it replaces.
TEXT ·scaleAVX512(SB), NOSPLIT, $0-36
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         w+16(FP), DX
	MOVQ         n+24(FP), CX
	VBROADCASTSS s+32(FP), Z1
	XORQ         AX, AX
	SPLIT16(K1)
	TESTQ        DX, DX
	JEQ          s16plain

s16wloop:
	CMPQ    AX, BX
	JGE     s16wtail
	VMULPS  (SI)(AX*4), Z1, Z0
	VMULPS  (DX)(AX*4), Z0, Z0
	VMOVUPS Z0, (DI)(AX*4)
	ADDQ    $16, AX
	JMP     s16wloop

s16wtail:
	KORTESTW  K1, K1
	JZ        s16done
	VMOVUPS.Z (SI)(AX*4), K1, Z0
	VMULPS    Z1, Z0, Z0
	VMOVUPS.Z (DX)(AX*4), K1, Z2
	VMULPS    Z2, Z0, Z0
	VMOVUPS   Z0, K1, (DI)(AX*4)
	JMP       s16done

s16plain:
	CMPQ    AX, BX
	JGE     s16ptail
	VMULPS  (SI)(AX*4), Z1, Z0
	VMOVUPS Z0, (DI)(AX*4)
	ADDQ    $16, AX
	JMP     s16plain

s16ptail:
	KORTESTW  K1, K1
	JZ        s16done
	VMOVUPS.Z (SI)(AX*4), K1, Z0
	VMULPS    Z1, Z0, Z0
	VMOVUPS   Z0, K1, (DI)(AX*4)

s16done:
	VZEROUPPER
	RET

// func scaleAVX2(dst *float32, x *float32, w *float32, n int, s float32, tailMask *int32)
//
// scaleAVX2 is scaleAVX512 for AVX2; tailMask points at int32 lane masks for
// the last n%8 elements.
TEXT ·scaleAVX2(SB), NOSPLIT, $0-48
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         w+16(FP), DX
	MOVQ         n+24(FP), CX
	VBROADCASTSS s+32(FP), Y1
	MOVQ         tailMask+40(FP), R8
	VMOVDQU      (R8), Y3
	XORQ         AX, AX
	ANDQ         $-8, CX
	TESTQ        DX, DX
	JEQ          s8plain

s8wloop:
	CMPQ    AX, CX
	JGE     s8wtail
	VMULPS  (SI)(AX*4), Y1, Y0
	VMULPS  (DX)(AX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     s8wloop

s8wtail:
	VTESTPS    Y3, Y3
	JEQ        s8done
	VMASKMOVPS (SI)(AX*4), Y3, Y0
	VMULPS     Y1, Y0, Y0
	VMASKMOVPS (DX)(AX*4), Y3, Y2
	VMULPS     Y2, Y0, Y0
	VMASKMOVPS Y0, Y3, (DI)(AX*4)
	JMP        s8done

s8plain:
	CMPQ    AX, CX
	JGE     s8ptail
	VMULPS  (SI)(AX*4), Y1, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     s8plain

s8ptail:
	VTESTPS    Y3, Y3
	JEQ        s8done
	VMASKMOVPS (SI)(AX*4), Y3, Y0
	VMULPS     Y1, Y0, Y0
	VMASKMOVPS Y0, Y3, (DI)(AX*4)

s8done:
	VZEROUPPER
	RET

DATA negInf<>+0(SB)/4, $0xff800000
GLOBL negInf<>(SB), RODATA|NOPTR, $4

// MAX8 sets lane 0 of X0 to the largest of the 8 lanes of Y0, using X1.
#define MAX8 \
	VEXTRACTF128 $1, Y0, X1; \
	VMAXPS       X1, X0, X0; \
	VPERMILPS    $0x4e, X0, X1; \
	VMAXPS       X1, X0, X0; \
	VPERMILPS    $0xb1, X0, X1; \
	VMAXPS       X1, X0, X0

// func maxAVX512(x *float32, n int) float32
//
// maxAVX512 returns the largest of x[:n], n ≥ 1. With a NaN among them the
// result is unspecified (softmax turns the row into NaN anyway).
TEXT ·maxAVX512(SB), NOSPLIT, $0-20
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS negInf<>(SB), Z0
	VMOVAPS      Z0, Z1
	XORQ         AX, AX
	MOVQ         CX, BX
	ANDQ         $-32, BX

m16loop2:
	CMPQ   AX, BX
	JGE    m16one
	VMAXPS (SI)(AX*4), Z0, Z0
	VMAXPS 64(SI)(AX*4), Z1, Z1
	ADDQ   $32, AX
	JMP    m16loop2

m16one:
	MOVQ  CX, BX
	ANDQ  $-16, BX
	CMPQ  AX, BX
	JGE   m16tail
	VMAXPS (SI)(AX*4), Z0, Z0
	ADDQ  $16, AX

m16tail:
	SUBQ    AX, CX
	JEQ     m16fold
	LOWMASK(R8, K1)
	VMOVAPS Z1, Z2
	VMOVUPS (SI)(AX*4), K1, Z2   // lanes past n keep −Inf
	VMAXPS  Z2, Z0, Z0

m16fold:
	VMAXPS        Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VMAXPS        Y1, Y0, Y0
	MAX8
	VMOVSS        X0, ret+16(FP)
	VZEROUPPER
	RET

// func maxAVX2(x *float32, n int, tailMask *int32) float32
//
// maxAVX2 is maxAVX512 for AVX2; tailMask points at int32 lane masks for the
// last n%8 elements.
TEXT ·maxAVX2(SB), NOSPLIT, $0-28
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS negInf<>(SB), Y0
	VMOVAPS      Y0, Y1
	VMOVAPS      Y0, Y4
	XORQ         AX, AX
	MOVQ         CX, BX
	ANDQ         $-8, BX

m8loop:
	CMPQ   AX, BX
	JGE    m8tail
	VMAXPS (SI)(AX*4), Y0, Y0
	ADDQ   $8, AX
	JMP    m8loop

m8tail:
	CMPQ       AX, CX
	JEQ        m8fold
	MOVQ       tailMask+16(FP), R8
	VMOVDQU    (R8), Y3
	VMASKMOVPS (SI)(AX*4), Y3, Y2
	VBLENDVPS  Y3, Y2, Y4, Y2    // lanes past n become −Inf
	VMAXPS     Y2, Y0, Y0

m8fold:
	MAX8
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET
