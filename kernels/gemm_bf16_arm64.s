#include "textflag.h"
#include "neon_arm64.h"

// The rounding of float32 to bfloat16 pairs of the neon-bf16 tier
// (narrower.x and narrower.panel): bf16Round's integer arithmetic in
// four-lane vectors, so its bits (round to nearest even, NaNs quieted,
// denormals flushed to signed zero).

#define USHR4S_16(d, n) ENC2(0x6f300400, d, n)
// cmhi vd.4s, vn.4s, vm.4s: unsigned vn > vm; cmeq vd.4s, vn.4s, #0.
#define CMHI4S(d, n, m) ENC3(0x6ea03400, d, n, m)
#define CMEQZ4S(d, n) ENC2(0x4ea09800, d, n)
// bit vd.16b, vn.16b, vm.16b: vd takes vn's bits where vm's are set.
#define BIT16B(d, n, m) ENC3(0x6ea01c00, d, n, m)

// ROUND sets d (its low 16 bits, the rest zero) to bf16Round of the four
// values of s. Constants: V31 0x7fffffff, V30 0x7f800000, V29 0x7fff,
// V28 0x40, V27 0x8000, V26 1. Clobbers V20..V23.
#define ROUND(d, s) \
	USHR4S_16(20, s) \
	AND16B(21, 20, 26) \
	ADD4S(d, s, 29) \
	ADD4S(d, d, 21) \
	USHR4S_16(d, d) \
	AND16B(21, s, 31) \
	CMHI4S(21, 21, 30) \
	VORR V28.B16, V20.B16, V22.B16 \
	BIT16B(d, 22, 21) \
	AND16B(21, s, 30) \
	CMEQZ4S(21, 21) \
	AND16B(23, 20, 27) \
	BIT16B(d, 23, 21)

#define CONSTS \
	MOVW $0x7fffffff, R4 \
	VDUP R4, V31.S4 \
	MOVW $0x7f800000, R4 \
	VDUP R4, V30.S4 \
	MOVW $0x7fff, R4 \
	VDUP R4, V29.S4 \
	MOVW $0x40, R4 \
	VDUP R4, V28.S4 \
	MOVW $0x8000, R4 \
	VDUP R4, V27.S4 \
	MOVW $1, R4 \
	VDUP R4, V26.S4

// func bf16RowNEON(src *float32, n8 int, dst *float32)
// Rounds n8 groups of eight values to four bfloat16 pairs each, value 2p
// in the low half of word p (UZP1 of the rounded halves).
TEXT ·bf16RowNEON(SB), NOSPLIT, $0-24
	MOVD src+0(FP), R0
	MOVD n8+8(FP), R1
	MOVD dst+16(FP), R2
	CONSTS
	CBZ R1, rdone

rloop:
	VLD1.P 32(R0), [V0.S4, V1.S4]
	ROUND(2, 0)
	ROUND(3, 1)
	VUZP1 V3.H8, V2.H8, V4.H8
	VST1.P [V4.S4], 16(R2)
	SUB $1, R1
	CBNZ R1, rloop

rdone:
	RET

// func bf16PanelPairsNEON(src *float32, np int, dst *float32)
// Rounds np pairs of 16-wide panel rows (2p and 2p+1 at src) to rows of
// pairs (row p at dst): word j holds row 2p's value j in its low half,
// row 2p+1's in its high half (SLI). dst may be src: row p is written
// after rows 2p and 2p+1 are read.
TEXT ·bf16PanelPairsNEON(SB), NOSPLIT, $0-24
	MOVD src+0(FP), R0
	MOVD np+8(FP), R1
	MOVD dst+16(FP), R2
	CONSTS
	CBZ R1, pdone

ploop:
	VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R0), [V4.S4, V5.S4, V6.S4, V7.S4]
	ROUND(8, 0)
	ROUND(9, 1)
	ROUND(10, 2)
	ROUND(11, 3)
	ROUND(12, 4)
	ROUND(13, 5)
	ROUND(14, 6)
	ROUND(15, 7)
	VSLI $16, V12.S4, V8.S4
	VSLI $16, V13.S4, V9.S4
	VSLI $16, V14.S4, V10.S4
	VSLI $16, V15.S4, V11.S4
	VST1.P [V8.S4, V9.S4, V10.S4, V11.S4], 64(R2)
	SUB $1, R1
	CBNZ R1, ploop

pdone:
	RET
