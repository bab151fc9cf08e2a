#include "textflag.h"

// The first stage's Hamming minima (hamming.go) on NEON: a block's eight
// tokens a step, their distances to a query code counted by CNT per byte
// and summed by pairwise additions to one byte per token (at most 128),
// the running minima in bytes.

#define ENC2(op, d, n) WORD $((op) | ((n)<<5) | (d))
#define ENC3(op, d, n, m) WORD $((op) | ((m)<<16) | ((n)<<5) | (d))
// add and addp (pairwise) on .16b; uxtl widening .8b to .8h, .4h/.8h to
// .4s, .2s/.4s to .2d.
#define ADD16B(d, n, m) ENC3(0x4e208400, d, n, m)
#define ADDP16B(d, n, m) ENC3(0x4e20bc00, d, n, m)
#define UXTL8H(d, n) ENC2(0x2f08a400, d, n)
#define UXTL4S(d, n) ENC2(0x2f10a400, d, n)
#define UXTL24S(d, n) ENC2(0x6f10a400, d, n)
#define UXTL2D(d, n) ENC2(0x2f20a400, d, n)
#define UXTL22D(d, n) ENC2(0x6f20a400, d, n)

// func hammingMinNEON(q, blocks, out []uint64)
// For each query code (2 words), the 8 lanes' minima of the Hamming
// distance to the blocks' tokens (lane k: token k of each block), as
// uint64. blocks holds at least one block.
TEXT ·hammingMinNEON(SB), NOSPLIT, $0-72
	MOVD q_base+0(FP), R0
	MOVD q_len+8(FP), R1
	LSR  $1, R1
	MOVD blocks_base+24(FP), R2
	MOVD blocks_len+32(FP), R3
	LSR  $4, R3
	MOVD out_base+48(FP), R4
	CBZ  R1, done

qloop:
	VLD1R.P 8(R0), [V16.D2]
	VLD1R.P 8(R0), [V17.D2]
	VMOVI $255, V18.B16
	MOVD R2, R5
	MOVD R3, R6

bloop:
	VLD1.P 64(R5), [V0.D2, V1.D2, V2.D2, V3.D2]
	VLD1.P 64(R5), [V4.D2, V5.D2, V6.D2, V7.D2]
	VEOR V16.B16, V0.B16, V0.B16
	VEOR V16.B16, V1.B16, V1.B16
	VEOR V16.B16, V2.B16, V2.B16
	VEOR V16.B16, V3.B16, V3.B16
	VEOR V17.B16, V4.B16, V4.B16
	VEOR V17.B16, V5.B16, V5.B16
	VEOR V17.B16, V6.B16, V6.B16
	VEOR V17.B16, V7.B16, V7.B16
	VCNT V0.B16, V0.B16
	VCNT V1.B16, V1.B16
	VCNT V2.B16, V2.B16
	VCNT V3.B16, V3.B16
	VCNT V4.B16, V4.B16
	VCNT V5.B16, V5.B16
	VCNT V6.B16, V6.B16
	VCNT V7.B16, V7.B16
	ADD16B(0, 0, 4)
	ADD16B(1, 1, 5)
	ADD16B(2, 2, 6)
	ADD16B(3, 3, 7)
	ADDP16B(0, 0, 1)
	ADDP16B(2, 2, 3)
	ADDP16B(0, 0, 2)
	ADDP16B(0, 0, 0)
	VUMIN V0.B16, V18.B16, V18.B16
	SUB  $1, R6
	CBNZ R6, bloop

	UXTL8H(19, 18)
	UXTL4S(20, 19)
	UXTL24S(21, 19)
	UXTL2D(22, 20)
	UXTL22D(23, 20)
	UXTL2D(24, 21)
	UXTL22D(25, 21)
	VST1.P [V22.D2, V23.D2, V24.D2, V25.D2], 64(R4)
	SUB  $1, R1
	CBNZ R1, qloop

done:
	RET
