#include "textflag.h"
#include "neon_arm64.h"

// The VNNI-layout decoders of Q8_0 and the IQ4 types (gemm_vnni_amd64.s)
// and the SMMLA panel packer on NEON: byte moves, table lookups and exact
// integer sums.

// SUMS80 stores the sums of the sixteen bytes of a and of b with their
// top bits flipped (V31 = 0x80: each signed byte plus 128) as two int32 at
// off(R3). Clobbers V26..V29.
#define SUMS80(a, b, off) \
	VEOR V31.B16, a.B16, V28.B16 \
	VEOR V31.B16, b.B16, V29.B16 \
	VUADDLV V28.B16, V26 \
	VUADDLV V29.B16, V27 \
	FMOVS F26, off(R3) \
	FMOVS F27, off+4(R3)

// func decodeQ8_0S8NEON(src *byte, nb int, q *int8, sum *int32, fd *float32, fs int)
//
// The values of nb Q8_0 blocks (34 bytes apart, the f16 scale first) as
// bytes, with the sums of each block's halves plus 16·128 (the caller
// subtracts it); the scales as float32 (FCVTL: exact, as halfToFloat) fs
// floats apart.
TEXT ·decodeQ8_0S8NEON(SB), NOSPLIT, $0-48
	MOVD src+0(FP), R0
	MOVD nb+8(FP), R1
	MOVD q+16(FP), R2
	MOVD sum+24(FP), R3
	MOVD fd+32(FP), R4
	MOVD fs+40(FP), R5
	LSL $2, R5
	VMOVI $0x80, V31.B16
	CBZ R1, q8done

q8block:
	VLD1R.P 2(R0), [V20.H8]
	FCVTL4S(20, 20)
	FMOVS F20, (R4)
	ADD R5, R4
	VLD1.P 32(R0), [V0.B16, V1.B16]
	VST1.P [V0.B16, V1.B16], 32(R2)
	SUMS80(V0, V1, 0)
	ADD $8, R3
	SUB $1, R1
	CBNZ R1, q8block

q8done:
	RET

// func decodeIQ4S8NEON(qs *byte, nb int, stride int, q *int8, sum *int32)
//
// The codebook values of nb blocks of 16 IQ4 nibble bytes (stride bytes
// apart) as signed bytes (the low nibbles' values, then the high ones'),
// with the sums of both halves plus 16·128 (the caller subtracts it).
TEXT ·decodeIQ4S8NEON(SB), NOSPLIT, $0-40
	MOVD qs+0(FP), R0
	MOVD nb+8(FP), R1
	MOVD stride+16(FP), R5
	MOVD q+24(FP), R2
	MOVD sum+32(FP), R3
	MOVD $·iq4Codes(SB), R6
	VLD1 (R6), [V30.B16]
	VMOVI $15, V25.B16
	VMOVI $0x80, V31.B16
	CBZ R1, iq4done

iq4block:
	VLD1 (R0), [V0.B16]
	ADD R5, R0
	VAND V25.B16, V0.B16, V1.B16
	VUSHR $4, V0.B16, V2.B16
	VTBL V1.B16, [V30.B16], V1.B16
	VTBL V2.B16, [V30.B16], V2.B16
	VST1.P [V1.B16, V2.B16], 32(R2)
	SUMS80(V1, V2, 0)
	ADD $8, R3
	SUB $1, R1
	CBNZ R1, iq4block

iq4done:
	RET

#define TRN1_2D(d, n, m) ENC3(0x4ec02800, d, n, m)
#define TRN2_2D(d, n, m) ENC3(0x4ec06800, d, n, m)

// func packChunks8NEON(src *byte, kc int, n16 int, dst *byte)
//
// pack8S8x8 for n16 steps of sixteen bytes: the eight-byte chunks q of
// eight rows (kc bytes each, kc apart) to dst[(q·16+r)·8:], as pairs of
// rows transposed by 64-bit lanes.
TEXT ·packChunks8NEON(SB), NOSPLIT, $0-32
	MOVD src+0(FP), R10
	MOVD kc+8(FP), R9
	MOVD n16+16(FP), R2
	MOVD dst+24(FP), R3
	ADD R9, R10, R11
	ADD R9, R11, R12
	ADD R9, R12, R13
	ADD R9, R13, R14
	ADD R9, R14, R15
	ADD R9, R15, R19
	ADD R9, R19, R20
	CBZ R2, p8done

p8loop:
	VLD1.P 16(R10), [V0.B16]
	VLD1.P 16(R11), [V1.B16]
	VLD1.P 16(R12), [V2.B16]
	VLD1.P 16(R13), [V3.B16]
	VLD1.P 16(R14), [V4.B16]
	VLD1.P 16(R15), [V5.B16]
	VLD1.P 16(R19), [V6.B16]
	VLD1.P 16(R20), [V7.B16]
	TRN1_2D(16, 0, 1)
	TRN1_2D(17, 2, 3)
	TRN1_2D(18, 4, 5)
	TRN1_2D(19, 6, 7)
	TRN2_2D(20, 0, 1)
	TRN2_2D(21, 2, 3)
	TRN2_2D(22, 4, 5)
	TRN2_2D(23, 6, 7)
	ADD $128, R3, R4
	VST1 [V16.B16, V17.B16, V18.B16, V19.B16], (R3)
	VST1 [V20.B16, V21.B16, V22.B16, V23.B16], (R4)
	ADD $256, R3
	SUB $1, R2
	CBNZ R2, p8loop

p8done:
	RET
