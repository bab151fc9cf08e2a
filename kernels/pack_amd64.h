// Shared by the float panel packers of the avx2 tier (pack_amd64.s, 16-wide
// panels, k rows 64 bytes apart) and the avx512 tier (pack_avx512_amd64.s,
// 32-wide panels, 128 bytes apart): eight weight rows are loaded eight values
// at a time (Y0..Y7 = rows 0..7), converted to float32, transposed so that
// Y8..Y15 hold k = 0..7 across the eight rows, and stored as eight
// consecutive k rows of a panel, rb bytes apart.
//
// Row addressing: rows 0..7 are SI, SI+DX, SI+2DX, R8=SI+3DX, SI+4DX,
// R9=SI+5DX, R9+DX, R9+2DX.

#define SETUP \
	MOVQ src+0(FP), SI \
	MOVQ stride+8(FP), DX \
	MOVQ n8+16(FP), CX \
	MOVQ dst+24(FP), DI \
	LEAQ (SI)(DX*2), R8 \
	ADDQ DX, R8 \
	LEAQ (SI)(DX*4), R9 \
	ADDQ DX, R9 \
	TESTQ CX, CX \
	JZ   done

#define TRANSPOSE_STORE(rb) \
	VUNPCKLPS Y1, Y0, Y8 \
	VUNPCKHPS Y1, Y0, Y9 \
	VUNPCKLPS Y3, Y2, Y10 \
	VUNPCKHPS Y3, Y2, Y11 \
	VUNPCKLPS Y5, Y4, Y12 \
	VUNPCKHPS Y5, Y4, Y13 \
	VUNPCKLPS Y7, Y6, Y14 \
	VUNPCKHPS Y7, Y6, Y15 \
	VSHUFPS $0x44, Y10, Y8, Y0 \
	VSHUFPS $0xEE, Y10, Y8, Y1 \
	VSHUFPS $0x44, Y11, Y9, Y2 \
	VSHUFPS $0xEE, Y11, Y9, Y3 \
	VSHUFPS $0x44, Y14, Y12, Y4 \
	VSHUFPS $0xEE, Y14, Y12, Y5 \
	VSHUFPS $0x44, Y15, Y13, Y6 \
	VSHUFPS $0xEE, Y15, Y13, Y7 \
	VPERM2F128 $0x20, Y4, Y0, Y8 \
	VPERM2F128 $0x20, Y5, Y1, Y9 \
	VPERM2F128 $0x20, Y6, Y2, Y10 \
	VPERM2F128 $0x20, Y7, Y3, Y11 \
	VPERM2F128 $0x31, Y4, Y0, Y12 \
	VPERM2F128 $0x31, Y5, Y1, Y13 \
	VPERM2F128 $0x31, Y6, Y2, Y14 \
	VPERM2F128 $0x31, Y7, Y3, Y15 \
	VMOVUPS Y8, 0(DI) \
	VMOVUPS Y9, (1*rb)(DI) \
	VMOVUPS Y10, (2*rb)(DI) \
	VMOVUPS Y11, (3*rb)(DI) \
	VMOVUPS Y12, (4*rb)(DI) \
	VMOVUPS Y13, (5*rb)(DI) \
	VMOVUPS Y14, (6*rb)(DI) \
	VMOVUPS Y15, (7*rb)(DI) \
	ADDQ $(8*rb), DI

#define ADVANCE(bytes) \
	ADDQ $bytes, SI \
	ADDQ $bytes, R8 \
	ADDQ $bytes, R9 \
	DECQ CX

// LOAD_ROWS8 applies op to the same place of rows 0..7 (SI, DX apart; R8
// = row 3, R9 = row 5), results in r0..r7.
#define LOAD_ROWS8(op, r0, r1, r2, r3, r4, r5, r6, r7) \
	op (SI), r0 \
	op (SI)(DX*1), r1 \
	op (SI)(DX*2), r2 \
	op (R8), r3 \
	op (SI)(DX*4), r4 \
	op (R9), r5 \
	op (R9)(DX*1), r6 \
	op (R9)(DX*2), r7

// The loaders: Y0..Y7 = eight values of rows 0..7 as float32.
#define LOAD8_F32 \
	LOAD_ROWS8(VMOVUPS, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)

#define LOAD8_F16 \
	LOAD_ROWS8(VCVTPH2PS, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)

#define LOAD8_BF16 \
	LOAD_ROWS8(VPMOVZXWD, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7) \
	VPSLLD $16, Y0, Y0 \
	VPSLLD $16, Y1, Y1 \
	VPSLLD $16, Y2, Y2 \
	VPSLLD $16, Y3, Y3 \
	VPSLLD $16, Y4, Y4 \
	VPSLLD $16, Y5, Y5 \
	VPSLLD $16, Y6, Y6 \
	VPSLLD $16, Y7, Y7
