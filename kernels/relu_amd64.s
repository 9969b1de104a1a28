//go:build !purego

#include "textflag.h"
#include "tail_amd64.h"

// func reluAXPYAVX512(dst *float32, x *float32, n int, alpha float32)
// dst[i] += alpha · max(x[i], 0), one fused multiply-add per element,
// 16 lanes at a time with a masked tail, so every element gets the same op.
// MAXPS returns its second source when the first is NaN: max(NaN, 0) = 0.
TEXT ·reluAXPYAVX512(SB), NOSPLIT, $0-28
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS alpha+24(FP), Z1
	VXORPS       Z2, Z2, Z2
	XORQ         AX, AX
	SPLIT16(K1)

r16loop:
	CMPQ        AX, BX
	JGE         r16tail
	VMOVUPS     (SI)(AX*4), Z0
	VMAXPS      Z2, Z0, Z0
	VMOVUPS     (DI)(AX*4), Z3
	VFMADD231PS Z1, Z0, Z3
	VMOVUPS     Z3, (DI)(AX*4)
	ADDQ        $16, AX
	JMP         r16loop

r16tail:
	KORTESTW    K1, K1
	JZ          r16done
	VMOVUPS.Z   (SI)(AX*4), K1, Z0
	VMAXPS      Z2, Z0, Z0
	VMOVUPS.Z   (DI)(AX*4), K1, Z3
	VFMADD231PS Z1, Z0, Z3
	VMOVUPS     Z3, K1, (DI)(AX*4)

r16done:
	VZEROUPPER
	RET

// func reluAXPYAVX2(dst *float32, x *float32, n int, alpha float32, tailMask *int32)
// As reluAXPYAVX512 with 8 lanes; the n%8 tail goes through VMASKMOVPS with
// tailMask (its first n%8 lanes set).
TEXT ·reluAXPYAVX2(SB), NOSPLIT, $0-40
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS alpha+24(FP), Y1
	MOVQ         tailMask+32(FP), R8
	VMOVDQU      (R8), Y4
	VXORPS       Y2, Y2, Y2
	XORQ         AX, AX
	ANDQ         $-8, CX

r8loop:
	CMPQ        AX, CX
	JGE         r8tail
	VMOVUPS     (SI)(AX*4), Y0
	VMAXPS      Y2, Y0, Y0
	VMOVUPS     (DI)(AX*4), Y3
	VFMADD231PS Y1, Y0, Y3
	VMOVUPS     Y3, (DI)(AX*4)
	ADDQ        $8, AX
	JMP         r8loop

r8tail:
	VTESTPS     Y4, Y4
	JEQ         r8done
	VMASKMOVPS  (SI)(AX*4), Y4, Y0
	VMAXPS      Y2, Y0, Y0
	VMASKMOVPS  (DI)(AX*4), Y4, Y3
	VFMADD231PS Y1, Y0, Y3
	VMASKMOVPS  Y3, Y4, (DI)(AX*4)

r8done:
	VZEROUPPER
	RET
