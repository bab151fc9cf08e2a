#include "textflag.h"
#include "tile8x32_amd64.h"

// The avx512-bf16 tier's microkernel: the avx512 8x32 tile with
// VDPBF16PS (AVX512_BF16) in place of the FMA. a and b hold pairs of
// bfloat16 values, k = 2p in the low half of 32-bit word p and k = 2p+1 in
// the high half; a panel row p holds the pairs of the 32 columns (128
// bytes). One VDPBF16PS adds, in each of 16 float32 lanes, the two
// products of a pair (exact in float32) to the accumulator, so each k-pair
// step does 16 instructions of 32 products. Sums start from zero in each
// k slice and are then added to c when acc is set.
//
// The Go assembler has no mnemonic for VDPBF16PS: each is emitted as its
// EVEX encoding, EVEX.512.F3.0F38.W0 52 /r (Intel SDM), with the Intel-syntax
// instruction it encodes beside it. Z28, Z29 are the panel vectors, Z30 and
// Z31 the broadcast a pairs (alternating), Z0..Z15 the accumulators.

#define KSTEPBF8(aoff, boff) \
	VMOVUPS boff(BX), Z28 \
	VMOVUPS boff+64(BX), Z29 \
	VPBROADCASTD aoff(R8), Z30 \
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc6 /* VDPBF16PS zmm0, zmm28, zmm30 */ \
	BYTE $0x62; BYTE $0x92; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xce /* VDPBF16PS zmm1, zmm29, zmm30 */ \
	VPBROADCASTD aoff(R8)(DX*1), Z31 \
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xd7 /* VDPBF16PS zmm2, zmm28, zmm31 */ \
	BYTE $0x62; BYTE $0x92; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xdf /* VDPBF16PS zmm3, zmm29, zmm31 */ \
	VPBROADCASTD aoff(R8)(DX*2), Z30 \
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe6 /* VDPBF16PS zmm4, zmm28, zmm30 */ \
	BYTE $0x62; BYTE $0x92; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xee /* VDPBF16PS zmm5, zmm29, zmm30 */ \
	VPBROADCASTD aoff(R9), Z31 \
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xf7 /* VDPBF16PS zmm6, zmm28, zmm31 */ \
	BYTE $0x62; BYTE $0x92; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xff /* VDPBF16PS zmm7, zmm29, zmm31 */ \
	VPBROADCASTD aoff(R9)(DX*1), Z30 \
	BYTE $0x62; BYTE $0x12; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc6 /* VDPBF16PS zmm8, zmm28, zmm30 */ \
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xce /* VDPBF16PS zmm9, zmm29, zmm30 */ \
	VPBROADCASTD aoff(R9)(DX*2), Z31 \
	BYTE $0x62; BYTE $0x12; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xd7 /* VDPBF16PS zmm10, zmm28, zmm31 */ \
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xdf /* VDPBF16PS zmm11, zmm29, zmm31 */ \
	VPBROADCASTD aoff(R10), Z30 \
	BYTE $0x62; BYTE $0x12; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe6 /* VDPBF16PS zmm12, zmm28, zmm30 */ \
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xee /* VDPBF16PS zmm13, zmm29, zmm30 */ \
	VPBROADCASTD aoff(R10)(DX*1), Z31 \
	BYTE $0x62; BYTE $0x12; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xf7 /* VDPBF16PS zmm14, zmm28, zmm31 */ \
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xff /* VDPBF16PS zmm15, zmm29, zmm31 */

// func kernel8x32BF16(kp int, a *float32, lda int, b *float32, c *float32, ldc int, acc int)
// kp pairs of k; lda is in pairs (32-bit words), ldc in floats.
TEXT ·kernel8x32BF16(SB), NOSPLIT, $0-56
	MOVQ kp+0(FP), CX
	TILE8X32_ROWS
	ZERO16

	MOVQ CX, R13
	SHRQ $2, R13
	JZ   tail

loop4:
	KSTEPBF8(0, 0)
	KSTEPBF8(4, 128)
	KSTEPBF8(8, 256)
	KSTEPBF8(12, 384)
	ADDQ $16, R8
	ADDQ $16, R9
	ADDQ $16, R10
	ADDQ $512, BX
	DECQ R13
	JNZ  loop4

tail:
	ANDQ $3, CX
	JZ   store

loop1:
	KSTEPBF8(0, 0)
	ADDQ $4, R8
	ADDQ $4, R9
	ADDQ $4, R10
	ADDQ $128, BX
	DECQ CX
	JNZ  loop1

store:
	TILE8X32_ADD

write:
	TILE8X32_WRITE
	VZEROUPPER
	RET

// The interleave of VPERMW after VCVTNE2PS2BF16: word 2j of the result is
// word j of the source (row k = 2p, column j) and word 2j+1 is word 16+j
// (row 2p+1, column j).
DATA bf16Interleave<>+0(SB)/4, $0x100000
DATA bf16Interleave<>+4(SB)/4, $0x110001
DATA bf16Interleave<>+8(SB)/4, $0x120002
DATA bf16Interleave<>+12(SB)/4, $0x130003
DATA bf16Interleave<>+16(SB)/4, $0x140004
DATA bf16Interleave<>+20(SB)/4, $0x150005
DATA bf16Interleave<>+24(SB)/4, $0x160006
DATA bf16Interleave<>+28(SB)/4, $0x170007
DATA bf16Interleave<>+32(SB)/4, $0x180008
DATA bf16Interleave<>+36(SB)/4, $0x190009
DATA bf16Interleave<>+40(SB)/4, $0x1a000a
DATA bf16Interleave<>+44(SB)/4, $0x1b000b
DATA bf16Interleave<>+48(SB)/4, $0x1c000c
DATA bf16Interleave<>+52(SB)/4, $0x1d000d
DATA bf16Interleave<>+56(SB)/4, $0x1e000e
DATA bf16Interleave<>+60(SB)/4, $0x1f000f
GLOBL bf16Interleave<>(SB), RODATA|NOPTR, $64

// func bf16PanelPairs(src *float32, np int, dst *float32)
// Rounds np pairs of rows of a 32-wide float32 panel (rows 2p and 2p+1,
// 256 bytes at src+256p) to bfloat16 pairs: row p of a 32-wide panel of
// pairs, 128 bytes at dst+128p. dst may be src: row p is
// written after rows 2p and 2p+1 are read, and p <= 2p.
TEXT ·bf16PanelPairs(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ np+8(FP), CX
	MOVQ dst+16(FP), DI
	VMOVDQU32 bf16Interleave<>(SB), Z31
	TESTQ CX, CX
	JZ   pdone

ploop:
	VMOVUPS 0(SI), Z0
	VMOVUPS 64(SI), Z1
	VMOVUPS 128(SI), Z2
	VMOVUPS 192(SI), Z3
	BYTE $0x62; BYTE $0xf2; BYTE $0x6f; BYTE $0x48; BYTE $0x72; BYTE $0xe0 /* VCVTNE2PS2BF16 zmm4, zmm2, zmm0: words 0..15 from zmm0, 16..31 from zmm2 */
	BYTE $0x62; BYTE $0xf2; BYTE $0x67; BYTE $0x48; BYTE $0x72; BYTE $0xe9 /* VCVTNE2PS2BF16 zmm5, zmm3, zmm1 */
	VPERMW Z4, Z31, Z6
	VPERMW Z5, Z31, Z7
	VMOVUPS Z6, 0(DI)
	VMOVUPS Z7, 64(DI)
	ADDQ $256, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  ploop

pdone:
	VZEROUPPER
	RET

// func bf16Row(src *float32, n32 int, dst *float32)
// Rounds n32·32 consecutive float32 values to bfloat16, in order (so
// values 2p and 2p+1 form pair p), 64 bytes of output per 32 values.
TEXT ·bf16Row(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ n32+8(FP), CX
	MOVQ dst+16(FP), DI
	TESTQ CX, CX
	JZ   rdone

rloop:
	VMOVUPS 0(SI), Z0
	VMOVUPS 64(SI), Z1
	BYTE $0x62; BYTE $0xf2; BYTE $0x77; BYTE $0x48; BYTE $0x72; BYTE $0xd0 /* VCVTNE2PS2BF16 zmm2, zmm1, zmm0: words 0..15 from zmm0, 16..31 from zmm1 */
	VMOVUPS Z2, 0(DI)
	ADDQ $128, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  rloop

rdone:
	VZEROUPPER
	RET
