#include "textflag.h"
#include "neon_arm64.h"

// The panel packers of pack_amd64.s on NEON: eight weight rows (stride
// bytes apart) of n8·8 values each, converted to float32 (exactly: a copy,
// binary16 widened by FCVTL, bfloat16 placed in the high half of a
// float32) and transposed into columns 0..7 of a 16-wide panel,
// dst[k·16 + r] = row r's value k. Row r's eight values of a step are
// V(2r) (values 0..3) and V(2r+1) (4..7); TR4 transposes four of those
// registers in place, and the stores write each value's two four-row
// halves at their offsets.

#define TRN1_4S(d, n, m) ENC3(0x4e802800, d, n, m)
#define TRN2_4S(d, n, m) ENC3(0x4e806800, d, n, m)
#define TRN1_2D(d, n, m) ENC3(0x4ec02800, d, n, m)
#define TRN2_2D(d, n, m) ENC3(0x4ec06800, d, n, m)
#define ZIP1_8H(d, n, m) ENC3(0x4e403800, d, n, m)
#define ZIP2_8H(d, n, m) ENC3(0x4e407800, d, n, m)

// TR4 transposes the 4×4 block of rows a, b, c, d (registers, four
// values each) in place: afterwards a holds value 0 of the four rows,
// b value 1, c value 2, d value 3. Clobbers V16..V19.
#define TR4(a, b, c, d) \
	TRN1_4S(16, a, b) \
	TRN2_4S(17, a, b) \
	TRN1_4S(18, c, d) \
	TRN2_4S(19, c, d) \
	TRN1_2D(a, 16, 18) \
	TRN2_2D(c, 16, 18) \
	TRN1_2D(b, 17, 19) \
	TRN2_2D(d, 17, 19)

// SETUP loads the arguments: R10..R15, R19, R20 the eight rows, R2 the count, R3
// the panel.
#define SETUP \
	MOVD src+0(FP), R10 \
	MOVD stride+8(FP), R9 \
	MOVD n8+16(FP), R2 \
	MOVD dst+24(FP), R3 \
	ADD R9, R10, R11 \
	ADD R9, R11, R12 \
	ADD R9, R12, R13 \
	ADD R9, R13, R14 \
	ADD R9, R14, R15 \
	ADD R9, R15, R19 \
	ADD R9, R19, R20

// TRANSPOSE_STORE writes the eight values of the eight rows in V0..V15
// to the panel at R3 and moves R3 to the next eight values.
#define TRANSPOSE_STORE \
	TR4(0, 2, 4, 6) \
	FMOVQ F0, 0(R3) \
	FMOVQ F2, 64(R3) \
	FMOVQ F4, 128(R3) \
	FMOVQ F6, 192(R3) \
	TR4(8, 10, 12, 14) \
	FMOVQ F8, 16(R3) \
	FMOVQ F10, 80(R3) \
	FMOVQ F12, 144(R3) \
	FMOVQ F14, 208(R3) \
	TR4(1, 3, 5, 7) \
	FMOVQ F1, 256(R3) \
	FMOVQ F3, 320(R3) \
	FMOVQ F5, 384(R3) \
	FMOVQ F7, 448(R3) \
	TR4(9, 11, 13, 15) \
	FMOVQ F9, 272(R3) \
	FMOVQ F11, 336(R3) \
	FMOVQ F13, 400(R3) \
	FMOVQ F15, 464(R3) \
	ADD $512, R3

// func pack8F32NEON(src *byte, stride int, n8 int, dst *float32)
TEXT ·pack8F32NEON(SB), NOSPLIT, $0-32
	SETUP
	CBZ R2, done
loop:
	VLD1.P 32(R10), [V0.S4, V1.S4]
	VLD1.P 32(R11), [V2.S4, V3.S4]
	VLD1.P 32(R12), [V4.S4, V5.S4]
	VLD1.P 32(R13), [V6.S4, V7.S4]
	VLD1.P 32(R14), [V8.S4, V9.S4]
	VLD1.P 32(R15), [V10.S4, V11.S4]
	VLD1.P 32(R19), [V12.S4, V13.S4]
	VLD1.P 32(R20), [V14.S4, V15.S4]
	TRANSPOSE_STORE
	SUB $1, R2
	CBNZ R2, loop
done:
	RET

// func pack8F16NEON(src *byte, stride int, n8 int, dst *float32)
// FCVTL converts binary16 to float32 exactly, subnormals included.
TEXT ·pack8F16NEON(SB), NOSPLIT, $0-32
	SETUP
	CBZ R2, done
loop:
	VLD1.P 16(R10), [V16.H8]
	VLD1.P 16(R11), [V17.H8]
	VLD1.P 16(R12), [V18.H8]
	VLD1.P 16(R13), [V19.H8]
	VLD1.P 16(R14), [V20.H8]
	VLD1.P 16(R15), [V21.H8]
	VLD1.P 16(R19), [V22.H8]
	VLD1.P 16(R20), [V23.H8]
	FCVTL4S(0, 16)
	FCVTL24S(1, 16)
	FCVTL4S(2, 17)
	FCVTL24S(3, 17)
	FCVTL4S(4, 18)
	FCVTL24S(5, 18)
	FCVTL4S(6, 19)
	FCVTL24S(7, 19)
	FCVTL4S(8, 20)
	FCVTL24S(9, 20)
	FCVTL4S(10, 21)
	FCVTL24S(11, 21)
	FCVTL4S(12, 22)
	FCVTL24S(13, 22)
	FCVTL4S(14, 23)
	FCVTL24S(15, 23)
	TRANSPOSE_STORE
	SUB $1, R2
	CBNZ R2, loop
done:
	RET

// func pack8BF16NEON(src *byte, stride int, n8 int, dst *float32)
// A bfloat16 is the top half of a float32: interleaved with zeros from
// V24, each lands there.
TEXT ·pack8BF16NEON(SB), NOSPLIT, $0-32
	SETUP
	VEOR V24.B16, V24.B16, V24.B16
	CBZ R2, done
loop:
	VLD1.P 16(R10), [V16.H8]
	VLD1.P 16(R11), [V17.H8]
	VLD1.P 16(R12), [V18.H8]
	VLD1.P 16(R13), [V19.H8]
	VLD1.P 16(R14), [V20.H8]
	VLD1.P 16(R15), [V21.H8]
	VLD1.P 16(R19), [V22.H8]
	VLD1.P 16(R20), [V23.H8]
	ZIP1_8H(0, 24, 16)
	ZIP2_8H(1, 24, 16)
	ZIP1_8H(2, 24, 17)
	ZIP2_8H(3, 24, 17)
	ZIP1_8H(4, 24, 18)
	ZIP2_8H(5, 24, 18)
	ZIP1_8H(6, 24, 19)
	ZIP2_8H(7, 24, 19)
	ZIP1_8H(8, 24, 20)
	ZIP2_8H(9, 24, 20)
	ZIP1_8H(10, 24, 21)
	ZIP2_8H(11, 24, 21)
	ZIP1_8H(12, 24, 22)
	ZIP2_8H(13, 24, 22)
	ZIP1_8H(14, 24, 23)
	ZIP2_8H(15, 24, 23)
	TRANSPOSE_STORE
	SUB $1, R2
	CBNZ R2, loop
done:
	RET

