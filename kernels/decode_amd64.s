#include "textflag.h"

// Row decoders for the most used quantized types: n values of one weight
// row into contiguous float32, with the same single roundings as the
// reference (integer quant converted exactly, then multiplied by a float32
// factor, then the offset subtracted where the type has one).

DATA dq<>+0(SB)/4, $15
DATA dq<>+4(SB)/4, $3
DATA dq<>+8(SB)/4, $32
GLOBL dq<>(SB), RODATA|NOPTR, $12

// func decodeQ8_0AVX2(src *byte, nb int, dst *float32)
// nb blocks of 34 bytes: f16 scale, 32 int8.
TEXT ·decodeQ8_0AVX2(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ dst+16(FP), DI
	TESTQ CX, CX
	JZ   done
loop:
	MOVWLZX (SI), AX
	VMOVD AX, X0
	VCVTPH2PS X0, X0
	VBROADCASTSS X0, Y0
	VPMOVSXBD 2(SI), Y1
	VPMOVSXBD 10(SI), Y2
	VPMOVSXBD 18(SI), Y3
	VPMOVSXBD 26(SI), Y4
	VCVTDQ2PS Y1, Y1
	VCVTDQ2PS Y2, Y2
	VCVTDQ2PS Y3, Y3
	VCVTDQ2PS Y4, Y4
	VMULPS Y0, Y1, Y1
	VMULPS Y0, Y2, Y2
	VMULPS Y0, Y3, Y3
	VMULPS Y0, Y4, Y4
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, 32(DI)
	VMOVUPS Y3, 64(DI)
	VMOVUPS Y4, 96(DI)
	ADDQ $34, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  loop
done:
	VZEROUPPER
	RET

// NIBOUT finishes eight values of each of a chunk's two sub-blocks, the
// first's in Y2 and the second's in Y1 (as int32): y = d·q − m, rounding
// after the product as the reference does, with the first's d, m in Y11,
// Y12 and the second's in Y13, Y14; stored at lo(DI) and hi(DI).
#define NIBOUT(lo, hi) \
	VCVTDQ2PS Y2, Y2 \
	VCVTDQ2PS Y1, Y1 \
	VMULPS Y11, Y2, Y2 \
	VSUBPS Y12, Y2, Y2 \
	VMULPS Y13, Y1, Y1 \
	VSUBPS Y14, Y1, Y1 \
	VMOVUPS Y2, lo(DI) \
	VMOVUPS Y1, hi(DI)

// Q4 nibble step: the 8 bytes at off(SI) give the 8 low-nibble values
// into lo(DI) and the 8 high-nibble values into hi(DI).
#define NIB(off, lo, hi) \
	VPMOVZXBD off(SI), Y1 \
	VPAND Y15, Y1, Y2 \
	VPSRLD $4, Y1, Y1 \
	NIBOUT(lo, hi)

// CHUNK decodes a 64-value chunk of a Q4_K or Q5_K super-block with step
// (NIB or NIB5): the factors d1, m1, d2, m2 of its two sub-blocks from DX
// into Y11..Y14, then four steps of eight values of each sub-block.
#define CHUNK(step) \
	VBROADCASTSS 0(DX), Y11 \
	VBROADCASTSS 4(DX), Y12 \
	VBROADCASTSS 8(DX), Y13 \
	VBROADCASTSS 12(DX), Y14 \
	step(0, 0, 128) \
	step(8, 32, 160) \
	step(16, 64, 192) \
	step(24, 96, 224)

// func decodeQ4KAVX2(qs *byte, f *float32, dst *float32)
// One Q4_K super-block's 128 quant bytes; f holds, per 64-value chunk c,
// d·sc and dmin·m of its two sub-blocks: f[4c..4c+3] = d1, m1, d2, m2.
TEXT ·decodeQ4KAVX2(SB), NOSPLIT, $0-24
	MOVQ qs+0(FP), SI
	MOVQ f+8(FP), DX
	MOVQ dst+16(FP), DI
	VPBROADCASTD dq<>+0(SB), Y15
	MOVQ $4, CX
chunk:
	CHUNK(NIB)
	ADDQ $32, SI
	ADDQ $16, DX
	ADDQ $256, DI
	DECQ CX
	JNZ  chunk
	VZEROUPPER
	RET

// Q6PUT finishes eight values of a Q6_K half: the four low bits in Y3,
// the two high bits in bits 0 and 1 of h (the rest not yet masked off);
// q−32 to float32, times the factor at fs(DX), stored at off(DI).
#define Q6PUT(h, fs, off) \
	VPAND Y14, h, Y4 \
	VPSLLD $4, Y4, Y4 \
	VPOR Y4, Y3, Y3 \
	VPSUBD Y13, Y3, Y3 \
	VCVTDQ2PS Y3, Y3 \
	VBROADCASTSS fs(DX), Y5 \
	VMULPS Y5, Y3, Y3 \
	VMOVUPS Y3, off(DI)

// Q6 step for l..l+7 of one 128-value half: ql at SI, qh at BX, factors
// (d·scale, per 16 values) at DX; writes y[l], y[l+32], y[l+64], y[l+96].
#define Q6STEP(l, fs) \
	VPMOVZXBD l(SI), Y0 \
	VPMOVZXBD l+32(SI), Y1 \
	VPMOVZXBD l(BX), Y2 \
	VPAND Y15, Y0, Y3 \
	Q6PUT(Y2, fs, 4*l) \
	VPAND Y15, Y1, Y3 \
	VPSRLD $2, Y2, Y4 \
	Q6PUT(Y4, fs+8, 4*l+128) \
	VPSRLD $4, Y0, Y3 \
	VPSRLD $4, Y2, Y4 \
	Q6PUT(Y4, fs+16, 4*l+256) \
	VPSRLD $4, Y1, Y3 \
	VPSRLD $6, Y2, Y4 \
	Q6PUT(Y4, fs+24, 4*l+384)

// func decodeQ6KAVX2(blk *byte, f *float32, dst *float32)
// One Q6_K super-block; f holds its 16 factors d·scale[i].
TEXT ·decodeQ6KAVX2(SB), NOSPLIT, $0-24
	MOVQ blk+0(FP), SI
	MOVQ f+8(FP), DX
	MOVQ dst+16(FP), DI
	LEAQ 128(SI), BX
	VPBROADCASTD dq<>+0(SB), Y15
	VPBROADCASTD dq<>+4(SB), Y14
	VPBROADCASTD dq<>+8(SB), Y13
	MOVQ $2, CX
half:
	Q6STEP(0, 0)
	Q6STEP(8, 0)
	Q6STEP(16, 4)
	Q6STEP(24, 4)
	ADDQ $64, SI
	ADDQ $32, BX
	ADDQ $32, DX
	ADDQ $512, DI
	DECQ CX
	JNZ  half
	VZEROUPPER
	RET

DATA nib<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nib<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL nib<>(SB), RODATA|NOPTR, $16

// Eight int8 codes in the low half of X register xs to float32, times the
// factor in Y3, stored at off(DI).
#define CODES8(xs, off) \
	VPMOVSXBD xs, Y4 \
	VCVTDQ2PS Y4, Y4 \
	VMULPS Y3, Y4, Y4 \
	VMOVUPS Y4, off(DI)

// func decodeNib4AVX2(qs *byte, stride int, tab *byte, f *float32, nb int, dst *float32)
// nb 32-value blocks of 4-bit codes (16 bytes each, stride bytes apart;
// byte j holds value j in its low nibble and value j+16 in its high one),
// mapped through the 16-entry int8 table tab and multiplied by f[block]:
// the layout of Q4_0 (table −8..7), IQ4_NL and IQ4_XS.
TEXT ·decodeNib4AVX2(SB), NOSPLIT, $0-48
	MOVQ qs+0(FP), SI
	MOVQ stride+8(FP), BX
	MOVQ tab+16(FP), AX
	MOVQ f+24(FP), DX
	MOVQ nb+32(FP), CX
	MOVQ dst+40(FP), DI
	VMOVDQU (AX), X14
	VMOVDQU nib<>(SB), X15
	TESTQ CX, CX
	JZ   done
loop:
	VMOVDQU (SI), X0
	VPAND X15, X0, X1
	VPSRLW $4, X0, X2
	VPAND X15, X2, X2
	VPSHUFB X1, X14, X1
	VPSHUFB X2, X14, X2
	VBROADCASTSS (DX), Y3
	CODES8(X1, 0)
	VPSRLDQ $8, X1, X1
	CODES8(X1, 32)
	CODES8(X2, 64)
	VPSRLDQ $8, X2, X2
	CODES8(X2, 96)
	ADDQ BX, SI
	ADDQ $4, DX
	ADDQ $128, DI
	DECQ CX
	JNZ  loop
done:
	VZEROUPPER
	RET

DATA dq5<>+0(SB)/4, $1
DATA dq5<>+4(SB)/4, $2
GLOBL dq5<>(SB), RODATA|NOPTR, $8

// Q5 step: like NIB, with the fifth bits from the qh bytes at off(BX),
// shifted right by X8 (2c): bit 0 goes to the low value, bit 1 to the high.
#define NIB5(off, lo, hi) \
	VPMOVZXBD off(SI), Y1 \
	VPMOVZXBD off(BX), Y5 \
	VPSRLD X8, Y5, Y5 \
	VPAND Y15, Y1, Y2 \
	VPSRLD $4, Y1, Y1 \
	VPAND Y10, Y5, Y6 \
	VPSLLD $4, Y6, Y6 \
	VPOR Y6, Y2, Y2 \
	VPAND Y9, Y5, Y6 \
	VPSLLD $3, Y6, Y6 \
	VPOR Y6, Y1, Y1 \
	NIBOUT(lo, hi)

// func decodeQ5KAVX2(blk *byte, f *float32, dst *float32)
// One Q5_K super-block; f as for decodeQ4KAVX2.
TEXT ·decodeQ5KAVX2(SB), NOSPLIT, $0-24
	MOVQ blk+0(FP), SI
	MOVQ f+8(FP), DX
	MOVQ dst+16(FP), DI
	LEAQ 16(SI), BX
	ADDQ $48, SI
	VPBROADCASTD dq<>+0(SB), Y15
	VPBROADCASTD dq5<>+0(SB), Y10
	VPBROADCASTD dq5<>+4(SB), Y9
	XORQ AX, AX
	MOVQ $4, CX
chunk:
	VMOVQ AX, X8
	CHUNK(NIB5)
	ADDQ $2, AX
	ADDQ $32, SI
	ADDQ $16, DX
	ADDQ $256, DI
	DECQ CX
	JNZ  chunk
	VZEROUPPER
	RET

// Shift counts 0..31 that move bit e of a 32-bit qh word to bit 0 of lane
// e mod 8 in vector e/8.
DATA lsh<>+0(SB)/4, $0
DATA lsh<>+4(SB)/4, $1
DATA lsh<>+8(SB)/4, $2
DATA lsh<>+12(SB)/4, $3
DATA lsh<>+16(SB)/4, $4
DATA lsh<>+20(SB)/4, $5
DATA lsh<>+24(SB)/4, $6
DATA lsh<>+28(SB)/4, $7
DATA lsh<>+32(SB)/4, $8
DATA lsh<>+36(SB)/4, $9
DATA lsh<>+40(SB)/4, $10
DATA lsh<>+44(SB)/4, $11
DATA lsh<>+48(SB)/4, $12
DATA lsh<>+52(SB)/4, $13
DATA lsh<>+56(SB)/4, $14
DATA lsh<>+60(SB)/4, $15
DATA lsh<>+64(SB)/4, $16
DATA lsh<>+68(SB)/4, $17
DATA lsh<>+72(SB)/4, $18
DATA lsh<>+76(SB)/4, $19
DATA lsh<>+80(SB)/4, $20
DATA lsh<>+84(SB)/4, $21
DATA lsh<>+88(SB)/4, $22
DATA lsh<>+92(SB)/4, $23
DATA lsh<>+96(SB)/4, $24
DATA lsh<>+100(SB)/4, $25
DATA lsh<>+104(SB)/4, $26
DATA lsh<>+108(SB)/4, $27
DATA lsh<>+112(SB)/4, $28
DATA lsh<>+116(SB)/4, $29
DATA lsh<>+120(SB)/4, $30
DATA lsh<>+124(SB)/4, $31
GLOBL lsh<>(SB), RODATA|NOPTR, $128

// Finish eight 4- or 5-bit values in Y(v) (as int32): minus the offset Y13,
// to float32, times Y3, minus Y4, stored at off(DI).
#define LEG8(v, off) \
	VPSUBD Y13, v, v \
	VCVTDQ2PS v, v \
	VMULPS Y3, v, v \
	VSUBPS Y4, v, v \
	VMOVUPS v, off(DI)

// OR the fifth bits (Y0 = the qh word in every lane) shifted by Y(s) into
// Y(v): bit → bit 4.
#define HB(s, v) \
	VPSRLVD s, Y0, Y5 \
	VPAND Y14, Y5, Y5 \
	VPSLLD $4, Y5, Y5 \
	VPOR Y5, v, v

// func decodeLegacyAVX2(qs *byte, qh *byte, stride int, f *float32, off int32, nb int, dst *float32)
// nb 32-value blocks of the legacy types, stride bytes apart: byte j of qs
// holds values j and j+16 in its nibbles; qh, when not nil, is a 32-bit word
// of fifth bits (bit e for value e). Value e is
// float32(f[2b]·(q_e − off)) − f[2b+1]: Q4_1 and Q5_1 pass −m as f[2b+1]
// (x − (−m) is x + m exactly), Q5_0 passes 0 and off = 16.
TEXT ·decodeLegacyAVX2(SB), NOSPLIT, $0-56
	MOVQ qs+0(FP), SI
	MOVQ qh+8(FP), BX
	MOVQ stride+16(FP), R8
	MOVQ f+24(FP), DX
	MOVL off+32(FP), AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	MOVQ nb+40(FP), CX
	MOVQ dst+48(FP), DI
	VPBROADCASTD dq<>+0(SB), Y15
	VPBROADCASTD dq5<>+0(SB), Y14
	VMOVDQU lsh<>+0(SB), Y9
	VMOVDQU lsh<>+32(SB), Y10
	VMOVDQU lsh<>+64(SB), Y11
	VMOVDQU lsh<>+96(SB), Y12
	TESTQ CX, CX
	JZ   done
loop:
	VPMOVZXBD 0(SI), Y1
	VPMOVZXBD 8(SI), Y2
	VPSRLD $4, Y1, Y6
	VPSRLD $4, Y2, Y7
	VPAND Y15, Y1, Y1
	VPAND Y15, Y2, Y2
	TESTQ BX, BX
	JZ   nohigh
	VPBROADCASTD (BX), Y0
	HB(Y9, Y1)
	HB(Y10, Y2)
	HB(Y11, Y6)
	HB(Y12, Y7)
	ADDQ R8, BX
nohigh:
	VBROADCASTSS 0(DX), Y3
	VBROADCASTSS 4(DX), Y4
	LEG8(Y1, 0)
	LEG8(Y2, 32)
	LEG8(Y6, 64)
	LEG8(Y7, 96)
	ADDQ R8, SI
	ADDQ $8, DX
	ADDQ $128, DI
	DECQ CX
	JNZ  loop
done:
	VZEROUPPER
	RET
