#include "textflag.h"
#include "pack_amd64.h"

// Panel packing straight to the bfloat16 pairs of the avx512-bf16 tier
// (gemm_bf16.go): eight weight rows, 16 values of each per step, become
// eight pair rows (k = 2p, 2p+1 in one 32-bit word) of columns 0..7 of a
// 32-wide pair panel, 128 bytes apart. A row's 16 values are converted to
// float32 (exactly, for F16) and rounded to bfloat16 by VCVTNEPS2BF16 into
// the eight words of a ymm register in k order, so the words are already
// pairs; the 8x8 word transpose of pack_avx512_amd64.s then turns rows
// into pair rows. The results are the bits that decoding to float32 and
// rounding the panel (bf16PanelPairs) give, without the float32 panel.
//
// The Go assembler has no mnemonic for VCVTNEPS2BF16 (AVX512_BF16): it is
// emitted as its EVEX encoding, EVEX.512.F3.0F38.W0 72 /r with a ymm
// destination (Intel SDM), the instruction beside each.

#define SETUP32 \
	MOVQ src+0(FP), SI \
	MOVQ stride+8(FP), DX \
	MOVQ n16+16(FP), CX \
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


#define ROUND8 \
	BYTE $0x62; BYTE $0xf2; BYTE $0x7e; BYTE $0x48; BYTE $0x72; BYTE $0xc0 /* VCVTNEPS2BF16 ymm0, zmm0 */ \
	BYTE $0x62; BYTE $0xf2; BYTE $0x7e; BYTE $0x48; BYTE $0x72; BYTE $0xc9 /* VCVTNEPS2BF16 ymm1, zmm1 */ \
	BYTE $0x62; BYTE $0xf2; BYTE $0x7e; BYTE $0x48; BYTE $0x72; BYTE $0xd2 /* VCVTNEPS2BF16 ymm2, zmm2 */ \
	BYTE $0x62; BYTE $0xf2; BYTE $0x7e; BYTE $0x48; BYTE $0x72; BYTE $0xdb /* VCVTNEPS2BF16 ymm3, zmm3 */ \
	BYTE $0x62; BYTE $0xf2; BYTE $0x7e; BYTE $0x48; BYTE $0x72; BYTE $0xe4 /* VCVTNEPS2BF16 ymm4, zmm4 */ \
	BYTE $0x62; BYTE $0xf2; BYTE $0x7e; BYTE $0x48; BYTE $0x72; BYTE $0xed /* VCVTNEPS2BF16 ymm5, zmm5 */ \
	BYTE $0x62; BYTE $0xf2; BYTE $0x7e; BYTE $0x48; BYTE $0x72; BYTE $0xf6 /* VCVTNEPS2BF16 ymm6, zmm6 */ \
	BYTE $0x62; BYTE $0xf2; BYTE $0x7e; BYTE $0x48; BYTE $0x72; BYTE $0xff /* VCVTNEPS2BF16 ymm7, zmm7 */

// func pack8F16Pairs(src *byte, stride int, n16 int, dst *float32)
TEXT ·pack8F16Pairs(SB), NOSPLIT, $0-32
	SETUP32
loop:
	LOAD_ROWS8(VCVTPH2PS, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ROUND8
	TRANSPOSE_STORE32
	ADVANCE32(32)
	JNZ  loop
done:
	VZEROUPPER
	RET

// func pack8F32Pairs(src *byte, stride int, n16 int, dst *float32)
TEXT ·pack8F32Pairs(SB), NOSPLIT, $0-32
	SETUP32
loop:
	LOAD_ROWS8(VMOVUPS, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ROUND8
	TRANSPOSE_STORE32
	ADVANCE32(64)
	JNZ  loop
done:
	VZEROUPPER
	RET

// func pack8BF16Pairs(src *byte, stride int, n16 int, dst *float32)
// BF16 values are already bfloat16: only the transpose.
TEXT ·pack8BF16Pairs(SB), NOSPLIT, $0-32
	SETUP32
loop:
	LOAD_ROWS8(VMOVUPS, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	TRANSPOSE_STORE32
	ADVANCE32(32)
	JNZ  loop
done:
	VZEROUPPER
	RET
