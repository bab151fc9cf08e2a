#include "textflag.h"

// Panel packing for the float types into the 32-wide panels of the avx512
// tier: pack_amd64.s with the k rows 128 bytes apart. Eight weight rows are
// loaded eight values at a time (Y0..Y7 = rows 0..7), converted to float32,
// transposed so that Y8..Y15 hold k = 0..7 across the eight rows, and
// stored as eight consecutive k rows of a 32-wide panel.
//
// Row addressing: rows 0..7 are SI, SI+DX, SI+2DX, R8=SI+3DX, SI+4DX,
// R9=SI+5DX, R9+DX, R9+2DX.

#define SETUP32 \
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

#define TRANSPOSE_STORE32 \
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
	VMOVUPS Y9, 128(DI) \
	VMOVUPS Y10, 256(DI) \
	VMOVUPS Y11, 384(DI) \
	VMOVUPS Y12, 512(DI) \
	VMOVUPS Y13, 640(DI) \
	VMOVUPS Y14, 768(DI) \
	VMOVUPS Y15, 896(DI) \
	ADDQ $1024, DI

#define ADVANCE32(bytes) \
	ADDQ $bytes, SI \
	ADDQ $bytes, R8 \
	ADDQ $bytes, R9 \
	DECQ CX

// func pack8F32x32(src *byte, stride int, n8 int, dst *float32)
TEXT ·pack8F32x32(SB), NOSPLIT, $0-32
	SETUP32
loop:
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(DX*1), Y1
	VMOVUPS (SI)(DX*2), Y2
	VMOVUPS (R8), Y3
	VMOVUPS (SI)(DX*4), Y4
	VMOVUPS (R9), Y5
	VMOVUPS (R9)(DX*1), Y6
	VMOVUPS (R9)(DX*2), Y7
	TRANSPOSE_STORE32
	ADVANCE32(32)
	JNZ  loop
done:
	VZEROUPPER
	RET

// func pack8F16x32(src *byte, stride int, n8 int, dst *float32)
// VCVTPH2PS converts binary16 to float32 exactly, subnormals included.
TEXT ·pack8F16x32(SB), NOSPLIT, $0-32
	SETUP32
loop:
	VCVTPH2PS (SI), Y0
	VCVTPH2PS (SI)(DX*1), Y1
	VCVTPH2PS (SI)(DX*2), Y2
	VCVTPH2PS (R8), Y3
	VCVTPH2PS (SI)(DX*4), Y4
	VCVTPH2PS (R9), Y5
	VCVTPH2PS (R9)(DX*1), Y6
	VCVTPH2PS (R9)(DX*2), Y7
	TRANSPOSE_STORE32
	ADVANCE32(16)
	JNZ  loop
done:
	VZEROUPPER
	RET

// func pack8BF16x32(src *byte, stride int, n8 int, dst *float32)
// A bfloat16 is the top half of a float32: zero-extend and shift.
TEXT ·pack8BF16x32(SB), NOSPLIT, $0-32
	SETUP32
loop:
	VPMOVZXWD (SI), Y0
	VPMOVZXWD (SI)(DX*1), Y1
	VPMOVZXWD (SI)(DX*2), Y2
	VPMOVZXWD (R8), Y3
	VPMOVZXWD (SI)(DX*4), Y4
	VPMOVZXWD (R9), Y5
	VPMOVZXWD (R9)(DX*1), Y6
	VPMOVZXWD (R9)(DX*2), Y7
	VPSLLD $16, Y0, Y0
	VPSLLD $16, Y1, Y1
	VPSLLD $16, Y2, Y2
	VPSLLD $16, Y3, Y3
	VPSLLD $16, Y4, Y4
	VPSLLD $16, Y5, Y5
	VPSLLD $16, Y6, Y6
	VPSLLD $16, Y7, Y7
	TRANSPOSE_STORE32
	ADVANCE32(16)
	JNZ  loop
done:
	VZEROUPPER
	RET
