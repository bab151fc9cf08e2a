#include "textflag.h"

// One 32-value block of a Q2_K half: the half's 32 bytes (Y0) shifted
// right by shift, masked to two bits (Y7), stored at qoff(DI); the sums of
// its two 16-value halves (VPSADBW against zero: one qword per eight
// bytes, then each 128-bit lane's two added) stored at soff(DX) and
// soff+4(DX).
#define Q2BLK(shift, qoff, soff) \
	VPSRLW $shift, Y0, Y1 \
	VPAND Y7, Y1, Y1 \
	VMOVDQU Y1, qoff(DI) \
	VPSADBW Y6, Y1, Y2 \
	VPSHUFD $0x4E, Y2, Y3 \
	VPADDQ Y3, Y2, Y2 \
	VMOVD X2, soff(DX) \
	VEXTRACTI128 $1, Y2, X3 \
	VMOVD X3, soff+4(DX)

// func decodeQ2KU8AVX2(blk *byte, nsb int, q *int8, sum *int32, mul *int16, fd *float32, fs int)
//
// The 2-bit values of nsb Q2_K super-blocks (84 bytes apart, the values'
// 64 bytes from byte 16) in order, with their sums over each 16, the low
// nibbles of the 16 scale bytes as int16 multipliers, and d (the
// binary16 at byte 80) as the factor of each of the eight 32-value blocks,
// fs floats apart.
TEXT ·decodeQ2KU8AVX2(SB), NOSPLIT, $0-56
	MOVQ blk+0(FP), SI
	MOVQ nsb+8(FP), CX
	MOVQ q+16(FP), DI
	MOVQ sum+24(FP), DX
	MOVQ mul+32(FP), R8
	MOVQ fd+40(FP), R10
	MOVQ fs+48(FP), R9
	SHLQ $2, R9
	MOVL $0x03030303, AX
	MOVD AX, X7
	VPBROADCASTD X7, Y7
	MOVL $0x000f000f, AX
	MOVD AX, X5
	VPBROADCASTD X5, Y5
	VPXOR Y6, Y6, Y6
	TESTQ CX, CX
	JZ   q2done

q2sb:
	VPMOVZXBW 0(SI), Y4
	VPAND Y5, Y4, Y4
	VMOVDQU Y4, 0(R8)
	MOVWLZX 80(SI), AX
	MOVD AX, X4
	VCVTPH2PS X4, X4
	MOVQ $8, BX

q2fd:
	VMOVSS X4, 0(R10)
	ADDQ R9, R10
	DECQ BX
	JNZ  q2fd
	VMOVDQU 16(SI), Y0
	Q2BLK(0, 0, 0)
	Q2BLK(2, 32, 8)
	Q2BLK(4, 64, 16)
	Q2BLK(6, 96, 24)
	VMOVDQU 48(SI), Y0
	Q2BLK(0, 128, 32)
	Q2BLK(2, 160, 40)
	Q2BLK(4, 192, 48)
	Q2BLK(6, 224, 56)
	ADDQ $84, SI
	ADDQ $256, DI
	ADDQ $64, DX
	ADDQ $32, R8
	DECQ CX
	JNZ  q2sb

q2done:
	VZEROUPPER
	RET

// func q2kMinsAVX2(blk *byte, nsb int, dst *float32)
//
// The sixteen offsets −dmin·m of each of nsb Q2_K super-blocks (84 bytes
// apart: m the high nibbles of the first 16 bytes, dmin the binary16 at
// byte 82), 16 float32 per super-block. −dmin·m is −(dmin·m) exactly
// (rounding is symmetric).
TEXT ·q2kMinsAVX2(SB), NOSPLIT, $0-24
	MOVQ blk+0(FP), SI
	MOVQ nsb+8(FP), CX
	MOVQ dst+16(FP), DI
	MOVL $0x80000000, AX
	MOVD AX, X5
	VPBROADCASTD X5, Y5
	TESTQ CX, CX
	JZ   minsdone

minssb:
	MOVWLZX 82(SI), AX
	MOVD AX, X4
	VCVTPH2PS X4, X4
	VBROADCASTSS X4, Y4
	VXORPS Y5, Y4, Y4
	VPMOVZXBD 0(SI), Y0
	VPMOVZXBD 8(SI), Y1
	VPSRLD $4, Y0, Y0
	VPSRLD $4, Y1, Y1
	VCVTDQ2PS Y0, Y0
	VCVTDQ2PS Y1, Y1
	VMULPS Y4, Y0, Y0
	VMULPS Y4, Y1, Y1
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $84, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  minssb

minsdone:
	VZEROUPPER
	RET
