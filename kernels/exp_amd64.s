//go:build !purego

#include "textflag.h"
#include "tail_amd64.h"

// The vector exponentials compute exactly what exp32 (exp.go) computes, one
// rounded operation at a time and with no FMA, so every path gives the same
// bits. Input u = scale·src + bias (two rounded operations).

DATA expConsts<>+0(SB)/4, $0x3fb8aa3b  // log2(e)
DATA expConsts<>+4(SB)/4, $0x4b400000  // 1.5·2^23, rounds to an integer
DATA expConsts<>+8(SB)/4, $0x3f318000  // ln2 high part
DATA expConsts<>+12(SB)/4, $0xb95e8083 // ln2 low part
DATA expConsts<>+16(SB)/4, $0x39506967 // polynomial, highest degree first
DATA expConsts<>+20(SB)/4, $0x3ab743ce
DATA expConsts<>+24(SB)/4, $0x3c088908
DATA expConsts<>+28(SB)/4, $0x3d2aa9c1
DATA expConsts<>+32(SB)/4, $0x3e2aaaaa
DATA expConsts<>+36(SB)/4, $0x3f000000
DATA expConsts<>+40(SB)/4, $0x3f800000 // 1
DATA expConsts<>+44(SB)/4, $0x42b17217 // above this, +Inf
DATA expConsts<>+48(SB)/4, $0xc2cff1b4 // below this, 0
DATA expConsts<>+52(SB)/4, $0x7f800000 // +Inf
DATA expConsts<>+56(SB)/4, $0x4b400000 // bits of 1.5·2^23 (the exponent bias of t)
DATA expConsts<>+60(SB)/4, $0x0000007f // 127
GLOBL expConsts<>(SB), RODATA|NOPTR, $64

// HORNER sets P = P·T + C, two rounded operations: one step of the
// polynomial in exp32.
#define HORNER(T, P, C) \
	VMULPS T, P, P; \
	VADDPS C, P, P

// EXP16_CONSTS loads what EXP16 reads: expConsts broadcast into Z16-Z29
// and 0 into Z15. It leaves AX pointing at expConsts.
#define EXP16_CONSTS \
	LEAQ         expConsts<>(SB), AX; \
	VBROADCASTSS 0(AX), Z29; \
	VBROADCASTSS 4(AX), Z28; \
	VBROADCASTSS 8(AX), Z27; \
	VBROADCASTSS 12(AX), Z26; \
	VBROADCASTSS 16(AX), Z20; \
	VBROADCASTSS 20(AX), Z21; \
	VBROADCASTSS 24(AX), Z22; \
	VBROADCASTSS 28(AX), Z23; \
	VBROADCASTSS 32(AX), Z24; \
	VBROADCASTSS 36(AX), Z25; \
	VBROADCASTSS 40(AX), Z19; \
	VBROADCASTSS 44(AX), Z18; \
	VBROADCASTSS 48(AX), Z17; \
	VBROADCASTSS 52(AX), Z16; \
	VPXORD       Z15, Z15, Z15

// EXP16 sets Z5 = exp(Z0), Z0 holding u; it uses Z1-Z6 and K2-K4.
#define EXP16 \
	VMULPS    Z29, Z0, Z1; \
	VADDPS    Z28, Z1, Z1; \
	VSUBPS    Z28, Z1, Z2; \
	VMULPS    Z27, Z2, Z3; \
	VSUBPS    Z3, Z0, Z3; \
	VMULPS    Z26, Z2, Z4; \
	VSUBPS    Z4, Z3, Z3; \
	VMULPS    Z20, Z3, Z5; \
	VADDPS    Z21, Z5, Z5; \
	HORNER(Z3, Z5, Z22); \
	HORNER(Z3, Z5, Z23); \
	HORNER(Z3, Z5, Z24); \
	HORNER(Z3, Z5, Z25); \
	VMULPS    Z3, Z3, Z6; \
	VMULPS    Z6, Z5, Z5; \
	VADDPS    Z3, Z5, Z5; \
	VADDPS    Z19, Z5, Z5; \
	VSCALEFPS Z2, Z5, Z5; \
	VCMPPS    $0x1e, Z18, Z0, K2; \
	VMOVAPS   Z16, K2, Z5; \
	VCMPPS    $0x11, Z17, Z0, K3; \
	VMOVAPS   Z15, K3, Z5; \
	VCMPPS    $0x03, Z0, Z0, K4; \
	VMOVAPS   Z0, K4, Z5

// func expAVX512(dst *float32, src *float32, n int, scale float32, bias float32)
//
// expAVX512 sets dst[i] = exp(scale·src[i] + bias) for i < n.
TEXT ·expAVX512(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS scale+24(FP), Z31
	VBROADCASTSS bias+28(FP), Z30
	EXP16_CONSTS
	XORQ         AX, AX
	MOVQ         CX, DX
	ANDQ         $-16, DX
	CMPQ         AX, DX
	JGE          e16tail

e16loop:
	VMOVUPS (SI)(AX*4), Z0
	VMULPS  Z31, Z0, Z0
	VADDPS  Z30, Z0, Z0
	EXP16
	VMOVUPS Z5, (DI)(AX*4)
	ADDQ    $16, AX
	CMPQ    AX, DX
	JLT     e16loop

e16tail:
	SUBQ      AX, CX
	JEQ       e16done
	LOWMASK(DX, K1)
	VMOVUPS.Z (SI)(AX*4), K1, Z0
	VMULPS    Z31, Z0, Z0
	VADDPS    Z30, Z0, Z0
	EXP16
	VMOVUPS   Z5, K1, (DI)(AX*4)

e16done:
	VZEROUPPER
	RET

// EXP8_CONSTS points BX at expConsts, which EXP8 reads, and broadcasts the
// constants it keeps in registers into Y9-Y15 (AVX2 has 16 Y registers, too
// few for all of them).
#define EXP8_CONSTS \
	LEAQ         expConsts<>(SB), BX; \
	VBROADCASTSS 0(BX), Y15; \
	VBROADCASTSS 4(BX), Y14; \
	VBROADCASTSS 8(BX), Y13; \
	VBROADCASTSS 12(BX), Y12; \
	VBROADCASTSS 24(BX), Y11; \
	VBROADCASTSS 28(BX), Y10; \
	VBROADCASTSS 32(BX), Y9

// EXP8 sets Y5 = exp(Y0), Y0 holding u, with AVX2: 2^n is applied as two
// exact factors 2^(n>>1) and 2^(n−n>>1), so only the last product rounds, as
// in exp32. It uses Y1-Y7 and reads constants at BX.
#define EXP8 \
	VMULPS       Y15, Y0, Y1; \
	VADDPS       Y14, Y1, Y1; \
	VSUBPS       Y14, Y1, Y2; \
	VMULPS       Y13, Y2, Y3; \
	VSUBPS       Y3, Y0, Y3; \
	VMULPS       Y12, Y2, Y4; \
	VSUBPS       Y4, Y3, Y3; \
	VBROADCASTSS 16(BX), Y5; \
	VMULPS       Y3, Y5, Y5; \
	VBROADCASTSS 20(BX), Y6; \
	VADDPS       Y6, Y5, Y5; \
	HORNER(Y3, Y5, Y11); \
	HORNER(Y3, Y5, Y10); \
	HORNER(Y3, Y5, Y9); \
	VMULPS       Y3, Y5, Y5; \
	VBROADCASTSS 36(BX), Y6; \
	VADDPS       Y6, Y5, Y5; \
	VMULPS       Y3, Y3, Y6; \
	VMULPS       Y6, Y5, Y5; \
	VADDPS       Y3, Y5, Y5; \
	VBROADCASTSS 40(BX), Y6; \
	VADDPS       Y6, Y5, Y5; \
	VBROADCASTSS 56(BX), Y6; \
	VPSUBD       Y6, Y1, Y1; \
	VPSRAD       $1, Y1, Y2; \
	VPSUBD       Y2, Y1, Y1; \
	VBROADCASTSS 60(BX), Y6; \
	VPADDD       Y6, Y2, Y2; \
	VPADDD       Y6, Y1, Y1; \
	VPSLLD       $23, Y2, Y2; \
	VPSLLD       $23, Y1, Y1; \
	VMULPS       Y2, Y5, Y5; \
	VMULPS       Y1, Y5, Y5; \
	VBROADCASTSS 44(BX), Y6; \
	VCMPPS       $0x1e, Y6, Y0, Y7; \
	VBROADCASTSS 52(BX), Y6; \
	VBLENDVPS    Y7, Y6, Y5, Y5; \
	VBROADCASTSS 48(BX), Y6; \
	VCMPPS       $0x11, Y6, Y0, Y7; \
	VXORPS       Y6, Y6, Y6; \
	VBLENDVPS    Y7, Y6, Y5, Y5; \
	VCMPPS       $0x03, Y0, Y0, Y7; \
	VBLENDVPS    Y7, Y0, Y5, Y5

// func expAVX2(dst *float32, src *float32, n int, scale float32, bias float32, tailMask *int32)
//
// expAVX2 sets dst[i] = exp(scale·src[i] + bias) for i < n; tailMask points
// at int32 lane masks for the last n%8 elements.
TEXT ·expAVX2(SB), NOSPLIT, $0-40
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS scale+24(FP), Y8
	MOVQ         tailMask+32(FP), DX
	EXP8_CONSTS
	XORQ         AX, AX
	MOVQ         CX, R8
	ANDQ         $-8, R8
	CMPQ         AX, R8
	JGE          e8tail

e8loop:
	VMOVUPS      (SI)(AX*4), Y0
	VMULPS       Y8, Y0, Y0
	VBROADCASTSS bias+28(FP), Y1
	VADDPS       Y1, Y0, Y0
	EXP8
	VMOVUPS      Y5, (DI)(AX*4)
	ADDQ         $8, AX
	CMPQ         AX, R8
	JLT          e8loop

e8tail:
	CMPQ         AX, CX
	JEQ          e8done
	VMOVDQU      (DX), Y7
	VMASKMOVPS   (SI)(AX*4), Y7, Y0
	VMULPS       Y8, Y0, Y0
	VBROADCASTSS bias+28(FP), Y1
	VADDPS       Y1, Y0, Y0
	EXP8
	VMOVDQU      (DX), Y7
	VMASKMOVPS   Y5, Y7, (DI)(AX*4)

e8done:
	VZEROUPPER
	RET

// GATE16_DENOM sets Z5 = 1 + e^−x, Z10 holding x, with e^−x computed as
// expAffine(x, −1, 0) computes it (Z31 = −1, Z30 = 0).
#define GATE16_DENOM \
	VMULPS Z31, Z10, Z0; \
	VADDPS Z30, Z0, Z0; \
	EXP16; \
	VADDPS Z19, Z5, Z5

// func gateAVX512(dst *float32, x *float32, up *float32, n int)
//
// gateAVX512 sets dst[i] = x[i] / (1 + e^−x[i]) · up[i] (SiLU times up), or
// 1 / (1 + e^−x[i]) (the sigmoid) when up is nil, for i < n, with the same
// rounded operations as the Go loops (e^−x as expAffine(x, −1, 0)).
TEXT ·gateAVX512(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         up+16(FP), DX
	MOVQ         n+24(FP), CX
	EXP16_CONSTS
	VPXORD       Z30, Z30, Z30   // bias 0
	VSUBPS       Z19, Z30, Z31   // scale −1
	XORQ         AX, AX
	SPLIT16(K1)

g16loop:
	CMPQ    AX, BX
	JGE     g16tail
	VMOVUPS (SI)(AX*4), Z10
	GATE16_DENOM
	TESTQ   DX, DX
	JEQ     g16sig
	VDIVPS  Z5, Z10, Z6
	VMULPS  (DX)(AX*4), Z6, Z6
	JMP     g16store

g16sig:
	VDIVPS Z5, Z19, Z6

g16store:
	VMOVUPS Z6, (DI)(AX*4)
	ADDQ    $16, AX
	JMP     g16loop

g16tail:
	KORTESTW  K1, K1
	JZ        g16done
	VMOVUPS.Z (SI)(AX*4), K1, Z10
	GATE16_DENOM
	TESTQ     DX, DX
	JEQ       g16tsig
	VDIVPS    Z5, Z10, Z6
	VMOVUPS.Z (DX)(AX*4), K1, Z7
	VMULPS    Z7, Z6, Z6
	JMP       g16tstore

g16tsig:
	VDIVPS Z5, Z19, Z6

g16tstore:
	VMOVUPS Z6, K1, (DI)(AX*4)

g16done:
	VZEROUPPER
	RET

// GATE8_DENOM sets Y5 = 1 + e^−x, Y0 holding x, with e^−x computed as
// expAffine(x, −1, 0) computes it (Y8 = −1); it overwrites Y0 and leaves 1
// in Y6.
#define GATE8_DENOM \
	VMULPS       Y8, Y0, Y0; \
	VXORPS       Y1, Y1, Y1; \
	VADDPS       Y1, Y0, Y0; \
	EXP8; \
	VBROADCASTSS 40(BX), Y6; \
	VADDPS       Y6, Y5, Y5

// func gateAVX2(dst *float32, x *float32, up *float32, n int, tailMask *int32)
//
// gateAVX2 is gateAVX512 for AVX2; tailMask points at int32 lane masks for
// the last n%8 elements.
TEXT ·gateAVX2(SB), NOSPLIT, $0-40
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         up+16(FP), DX
	MOVQ         n+24(FP), CX
	MOVQ         tailMask+32(FP), R9
	EXP8_CONSTS
	VXORPS       Y1, Y1, Y1
	VBROADCASTSS 40(BX), Y2
	VSUBPS       Y2, Y1, Y8      // scale −1
	XORQ         AX, AX
	MOVQ         CX, R8
	ANDQ         $-8, R8

a8gloop:
	CMPQ    AX, R8
	JGE     a8gtail
	VMOVUPS (SI)(AX*4), Y0
	GATE8_DENOM
	TESTQ   DX, DX
	JEQ     a8gsig
	VMOVUPS (SI)(AX*4), Y1
	VDIVPS  Y5, Y1, Y1
	VMULPS  (DX)(AX*4), Y1, Y1
	JMP     a8gstore

a8gsig:
	VDIVPS Y5, Y6, Y1

a8gstore:
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     a8gloop

a8gtail:
	CMPQ       AX, CX
	JEQ        a8gdone
	VMOVDQU    (R9), Y7
	VMASKMOVPS (SI)(AX*4), Y7, Y0
	GATE8_DENOM
	VMOVDQU    (R9), Y7
	TESTQ      DX, DX
	JEQ        a8gtsig
	VMASKMOVPS (SI)(AX*4), Y7, Y1
	VDIVPS     Y5, Y1, Y1
	VMASKMOVPS (DX)(AX*4), Y7, Y2
	VMULPS     Y2, Y1, Y1
	JMP        a8gtstore

a8gtsig:
	VDIVPS Y5, Y6, Y1

a8gtstore:
	VMASKMOVPS Y1, Y7, (DI)(AX*4)

a8gdone:
	VZEROUPPER
	RET
