#include "textflag.h"

// The colour conversion and fancy upsampling of color_amd64.s on NEON:
// the same integer expressions as the portable loops in color.go, so the
// same bytes.

#define ENC2(op, d, n) WORD $((op) | ((n)<<5) | (d))
#define ENC3(op, d, n, m) WORD $((op) | ((m)<<16) | ((n)<<5) | (d))
// uxtl/uxtl2 .8b/.16b to .8h, .4h/.8h to .4s; sxtl/sxtl2 .4h/.8h to .4s.
#define UXTL8H(d, n) ENC2(0x2f08a400, d, n)
#define UXTL28H(d, n) ENC2(0x6f08a400, d, n)
#define UXTL4S(d, n) ENC2(0x2f10a400, d, n)
#define UXTL24S(d, n) ENC2(0x6f10a400, d, n)
#define SXTL4S(d, n) ENC2(0x0f10a400, d, n)
#define SXTL24S(d, n) ENC2(0x4f10a400, d, n)
// Integer lanes: .8h add, sub; .4s add, mul, mla; sshr .4s #16; ushr .8h
// #2 and #4.
#define ADD8H(d, n, m) ENC3(0x4e608400, d, n, m)
#define SUB8H(d, n, m) ENC3(0x6e608400, d, n, m)
#define ADD4S(d, n, m) ENC3(0x4ea08400, d, n, m)
#define MUL4S(d, n, m) ENC3(0x4ea09c00, d, n, m)
#define MLA4S(d, n, m) ENC3(0x4ea09400, d, n, m)
#define SSHR4S_16(d, n) ENC2(0x4f300400, d, n)
#define USHR8H_2(d, n) ENC2(0x6f1e0400, d, n)
#define USHR8H_4(d, n) ENC2(0x6f1c0400, d, n)
// Narrowing: sqxtn(2) .4s to .4h (signed saturation), sqxtun(2) .8h to
// .8b (unsigned saturation: VPACKSSDW, VPACKUSWB), xtn(2) .8h to .8b.
#define SQXTN4H(d, n) ENC2(0x0e614800, d, n)
#define SQXTN28H(d, n) ENC2(0x4e614800, d, n)
#define SQXTUN8B(d, n) ENC2(0x2e212800, d, n)
#define SQXTUN216B(d, n) ENC2(0x6e212800, d, n)
#define XTN8B(d, n) ENC2(0x0e212800, d, n)
#define XTN216B(d, n) ENC2(0x4e212800, d, n)

// YCC8 converts eight pixels, the low (ext = UXTL8H) or high (UXTL28H)
// halves of Y (V0), Cb (V1) and Cr (V2), to R, G and B in the low (nar =
// SQXTUN8B) or high (SQXTUN216B) halves of V26, V27, V28: libjpeg's
// fixed-point products in 32-bit lanes, clamped by saturating narrowing
// (every sum lies in [-227, 482]). Constants: V20 91881, V21 116130, V22
// -22554, V23 -46802, V24 32768 (.4s), V25 128 (.8h).
#define YCC8(ext, nar) \
	ENC2(ext, 3, 0) \
	ENC2(ext, 4, 1) \
	ENC2(ext, 5, 2) \
	SUB8H(4, 4, 25) \
	SUB8H(5, 5, 25) \
	UXTL4S(6, 3) \
	UXTL24S(7, 3) \
	SXTL4S(8, 4) \
	SXTL24S(9, 4) \
	SXTL4S(10, 5) \
	SXTL24S(11, 5) \
	MUL4S(12, 10, 20) \
	MUL4S(13, 11, 20) \
	MUL4S(14, 8, 21) \
	MUL4S(15, 9, 21) \
	MUL4S(16, 8, 22) \
	MUL4S(17, 9, 22) \
	MLA4S(16, 10, 23) \
	MLA4S(17, 11, 23) \
	ADD4S(12, 12, 24) \
	ADD4S(13, 13, 24) \
	ADD4S(14, 14, 24) \
	ADD4S(15, 15, 24) \
	ADD4S(16, 16, 24) \
	ADD4S(17, 17, 24) \
	SSHR4S_16(12, 12) \
	SSHR4S_16(13, 13) \
	SSHR4S_16(14, 14) \
	SSHR4S_16(15, 15) \
	SSHR4S_16(16, 16) \
	SSHR4S_16(17, 17) \
	ADD4S(12, 12, 6) \
	ADD4S(13, 13, 7) \
	ADD4S(14, 14, 6) \
	ADD4S(15, 15, 7) \
	ADD4S(16, 16, 6) \
	ADD4S(17, 17, 7) \
	SQXTN4H(18, 12) \
	SQXTN28H(18, 13) \
	SQXTN4H(19, 16) \
	SQXTN28H(19, 17) \
	SQXTN4H(29, 14) \
	SQXTN28H(29, 15) \
	ENC2(nar, 26, 18) \
	ENC2(nar, 27, 19) \
	ENC2(nar, 28, 29)

// func yccNEON(out *uint8, y, cb, cr *uint8, n int)
// Converts n pixels (a multiple of 16) as yccRow does; ST3 interleaves
// the channels.
TEXT ·yccNEON(SB), NOSPLIT, $0-40
	MOVD out+0(FP), R0
	MOVD y+8(FP), R1
	MOVD cb+16(FP), R2
	MOVD cr+24(FP), R3
	MOVD n+32(FP), R4
	MOVW $91881, R5
	VDUP R5, V20.S4
	MOVW $116130, R5
	VDUP R5, V21.S4
	MOVW $-22554, R5
	VDUP R5, V22.S4
	MOVW $-46802, R5
	VDUP R5, V23.S4
	MOVW $32768, R5
	VDUP R5, V24.S4
	MOVW $128, R5
	VDUP R5, V25.H8
	CBZ R4, yccdone

ycc16:
	VLD1.P 16(R1), [V0.B16]
	VLD1.P 16(R2), [V1.B16]
	VLD1.P 16(R3), [V2.B16]
	YCC8(0x2f08a400, 0x2e212800)
	YCC8(0x6f08a400, 0x6e212800)
	VST3.P [V26.B16, V27.B16, V28.B16], 48(R0)
	SUB $16, R4
	CBNZ R4, ycc16

yccdone:
	RET

// FANCY computes, for eight inputs c (.8h) with their left and right
// neighbours l and r, (3·c + l + V29) and (3·c + r + V30) shifted right by
// sh, narrowed by nar (XTN: the low half, XTN2: the high half) into V26
// (the even outputs) and V27 (the odd ones). Clobbers V16..V18.
#define FANCY(l, c, r, sh, nar) \
	ADD8H(16, c, c) \
	ADD8H(16, 16, c) \
	ADD8H(17, 16, l) \
	ADD8H(17, 17, 29) \
	ADD8H(18, 16, r) \
	ADD8H(18, 18, 30) \
	sh(17, 17) \
	sh(18, 18) \
	ENC2(nar, 26, 17) \
	ENC2(nar, 27, 18)

// func h2FancyNEON(out *uint8, in *uint8, n int)
// Computes outputs 2i and 2i+1 of h2FancyRow for n inputs i (a multiple
// of 16) starting at in, reading in[-1] through in[n]: (3*in[i] + in[i-1]
// + 1) >> 2 and (3*in[i] + in[i+1] + 2) >> 2, exact in 16-bit lanes; ST2
// interleaves them.
TEXT ·h2FancyNEON(SB), NOSPLIT, $0-24
	MOVD out+0(FP), R0
	MOVD in+8(FP), R1
	MOVD n+16(FP), R4
	MOVW $1, R5
	VDUP R5, V29.H8
	MOVW $2, R5
	VDUP R5, V30.H8
	SUB $1, R1, R2
	ADD $1, R1, R3
	CBZ R4, h2done

h2loop:
	VLD1.P 16(R2), [V0.B16]
	VLD1.P 16(R1), [V4.B16]
	VLD1.P 16(R3), [V8.B16]
	UXTL8H(9, 0)
	UXTL8H(10, 4)
	UXTL8H(11, 8)
	FANCY(9, 10, 11, USHR8H_2, 0x0e212800)
	UXTL28H(9, 0)
	UXTL28H(10, 4)
	UXTL28H(11, 8)
	FANCY(9, 10, 11, USHR8H_2, 0x4e212800)
	VST2.P [V26.B16, V27.B16], 32(R0)
	SUB $16, R4
	CBNZ R4, h2loop

h2done:
	RET

// COLSUM sets d to 3·near + far (.8h) from the bytes of near (n) and far
// (f) widened by ext.
#define COLSUM(ext, n, f, d) \
	ENC2(ext, 19, n) \
	ENC2(ext, 20, f) \
	ADD8H(d, 19, 19) \
	ADD8H(d, d, 19) \
	ADD8H(d, d, 20)

// func h2v2FancyNEON(out *uint8, near, far *uint8, n int)
// Computes outputs 2i and 2i+1 of h2v2FancyRow for n inputs i (a
// multiple of 16) starting at near, reading near[-1] through near[n] (and
// far likewise): column sums 3·near + far, then (3·c + left + 8) >> 4 and
// (3·c + right + 7) >> 4, below 4096: exact in 16-bit lanes.
TEXT ·h2v2FancyNEON(SB), NOSPLIT, $0-32
	MOVD out+0(FP), R0
	MOVD near+8(FP), R1
	MOVD far+16(FP), R6
	MOVD n+24(FP), R4
	MOVW $8, R5
	VDUP R5, V29.H8
	MOVW $7, R5
	VDUP R5, V30.H8
	SUB $1, R1, R2
	ADD $1, R1, R3
	SUB $1, R6, R7
	ADD $1, R6, R8
	CBZ R4, h2v2done

h2v2loop:
	VLD1.P 16(R2), [V0.B16]
	VLD1.P 16(R1), [V4.B16]
	VLD1.P 16(R3), [V8.B16]
	VLD1.P 16(R7), [V1.B16]
	VLD1.P 16(R6), [V5.B16]
	VLD1.P 16(R8), [V21.B16]
	COLSUM(0x2f08a400, 0, 1, 9)
	COLSUM(0x2f08a400, 4, 5, 10)
	COLSUM(0x2f08a400, 8, 21, 11)
	FANCY(9, 10, 11, USHR8H_4, 0x0e212800)
	COLSUM(0x6f08a400, 0, 1, 9)
	COLSUM(0x6f08a400, 4, 5, 10)
	COLSUM(0x6f08a400, 8, 21, 11)
	FANCY(9, 10, 11, USHR8H_4, 0x4e212800)
	VST2.P [V26.B16, V27.B16], 32(R0)
	SUB $16, R4
	CBNZ R4, h2v2loop

h2v2done:
	RET
