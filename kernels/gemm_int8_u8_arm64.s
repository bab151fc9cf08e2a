#include "textflag.h"
#include "neon_arm64.h"

// The value loops of the u8 path's decoders (gemm_int8_u8_amd64.s) on
// NEON, for the integer tiers' per-product panel decoding: the same bytes
// and the same half sums, integer work only. Each 32-value sub-block ends
// in SUMS2 and a store of its two 16-byte halves.

// SUMS2 stores the sums of the sixteen unsigned bytes of a and of b as
// two int32 at off(R3) (UADDLV zeroes the rest of its register). Clobbers
// V26, V27.
#define SUMS2(a, b, off) \
	VUADDLV a.B16, V26 \
	VUADDLV b.B16, V27 \
	FMOVS F26, off(R3) \
	FMOVS F27, off+4(R3)

// SUB16B(d, n, m): d = n − m, sixteen byte lanes.
#define SUB16B(d, n, m) ENC3(0x6e208400, d, n, m)

// SBARGS loads the super-block decoders' (p, nsb, q, sum) into R0..R3.
#define SBARGS(p) \
	MOVD p+0(FP), R0 \
	MOVD nsb+8(FP), R1 \
	MOVD q+16(FP), R2 \
	MOVD sum+24(FP), R3

// func decodeQ4KU8NEON(qs *byte, nsb int, q *int8, sum *int32)
//
// The values of nsb Q4_K super-blocks, qs at the first one's nibbles
// (super-blocks 144 bytes apart): for each 32-byte group c the low
// nibbles are sub-block 2c and the high ones 2c+1.
TEXT ·decodeQ4KU8NEON(SB), NOSPLIT, $0-32
	SBARGS(qs)
	VMOVI $15, V31.B16
	CBZ R1, q4done

q4sb:
	MOVD R0, R4
	MOVD $4, R5

q4c:
	VLD1.P 32(R4), [V0.B16, V1.B16]
	VAND V31.B16, V0.B16, V2.B16
	VAND V31.B16, V1.B16, V3.B16
	VUSHR $4, V0.B16, V4.B16
	VUSHR $4, V1.B16, V5.B16
	VST1.P [V2.B16, V3.B16, V4.B16, V5.B16], 64(R2)
	SUMS2(V2, V3, 0)
	SUMS2(V4, V5, 8)
	ADD $16, R3
	SUB $1, R5
	CBNZ R5, q4c
	ADD $144, R0
	SUB $1, R1
	CBNZ R1, q4sb

q4done:
	RET

// Sub-block j of a Q6_K half: the four low bits in V(l0), V(l1) (already
// in place), the two high bits of V4, V5 shifted to bits 4, 5 in V6, V7
// (masked here by V30 = 0x30); stored as u−32 (V29 = 32), the sums of u.
#define Q6SUB(l0, l1, qoff, soff) \
	VAND V30.B16, V6.B16, V6.B16 \
	VAND V30.B16, V7.B16, V7.B16 \
	VORR V6.B16, l0.B16, V8.B16 \
	VORR V7.B16, l1.B16, V9.B16 \
	SUMS2(V8, V9, soff) \
	SUB16B(8, 8, 29) \
	SUB16B(9, 9, 29) \
	FSTPQ (F8, F9), qoff(R2)

// func decodeQ6KU8NEON(blk *byte, nsb int, q *int8, sum *int32)
//
// The values q−32 of nsb Q6_K super-blocks (210 bytes apart) in order,
// with the sums of the unsigned q over each 16 values (the caller
// subtracts 32·16).
TEXT ·decodeQ6KU8NEON(SB), NOSPLIT, $0-32
	SBARGS(blk)
	VMOVI $15, V31.B16
	VMOVI $0x30, V30.B16
	VMOVI $32, V29.B16
	CBZ R1, q6done

q6sb:
	MOVD R0, R4
	ADD $128, R0, R5
	MOVD $2, R6

q6half:
	VLD1.P 64(R4), [V0.B16, V1.B16, V2.B16, V3.B16]
	VLD1.P 32(R5), [V4.B16, V5.B16]
	// j = 0: ql[0:32] low nibbles, qh bits 0, 1.
	VAND V31.B16, V0.B16, V10.B16
	VAND V31.B16, V1.B16, V11.B16
	VSHL $4, V4.B16, V6.B16
	VSHL $4, V5.B16, V7.B16
	Q6SUB(V10, V11, 0, 0)
	// j = 1: ql[32:64] low nibbles, qh bits 2, 3.
	VAND V31.B16, V2.B16, V10.B16
	VAND V31.B16, V3.B16, V11.B16
	VSHL $2, V4.B16, V6.B16
	VSHL $2, V5.B16, V7.B16
	Q6SUB(V10, V11, 32, 8)
	// j = 2: ql[0:32] high nibbles, qh bits 4, 5.
	VUSHR $4, V0.B16, V10.B16
	VUSHR $4, V1.B16, V11.B16
	VORR V4.B16, V4.B16, V6.B16
	VORR V5.B16, V5.B16, V7.B16
	Q6SUB(V10, V11, 64, 16)
	// j = 3: ql[32:64] high nibbles, qh bits 6, 7.
	VUSHR $4, V2.B16, V10.B16
	VUSHR $4, V3.B16, V11.B16
	VUSHR $2, V4.B16, V6.B16
	VUSHR $2, V5.B16, V7.B16
	Q6SUB(V10, V11, 96, 24)
	ADD $128, R2
	ADD $32, R3
	SUB $1, R6
	CBNZ R6, q6half
	ADD $210, R0
	SUB $1, R1
	CBNZ R1, q6sb

q6done:
	RET

// FIFTH puts bit 0 of each byte of V12, V13 at bit 4 of V(a), V(b) and
// shifts V12, V13 on to their next bit (V28 = 0x10). Clobbers V14, V15.
#define FIFTH(a, b) \
	VSHL $4, V12.B16, V14.B16 \
	VSHL $4, V13.B16, V15.B16 \
	VAND V28.B16, V14.B16, V14.B16 \
	VAND V28.B16, V15.B16, V15.B16 \
	VORR V14.B16, a.B16, a.B16 \
	VORR V15.B16, b.B16, b.B16 \
	VUSHR $1, V12.B16, V12.B16 \
	VUSHR $1, V13.B16, V13.B16

// func decodeQ5KU8NEON(blk *byte, nsb int, q *int8, sum *int32)
//
// The values of nsb Q5_K super-blocks (176 bytes apart) as bytes, in
// order, with the sums of each sub-block's halves: sub-block 2c takes the
// low nibbles of the 32-byte group c and bit 2c of the qh bytes, 2c+1 the
// high nibbles and bit 2c+1.
TEXT ·decodeQ5KU8NEON(SB), NOSPLIT, $0-32
	SBARGS(blk)
	VMOVI $15, V31.B16
	VMOVI $0x10, V28.B16
	CBZ R1, q5done

q5sb:
	ADD $16, R0, R4
	VLD1.P 32(R4), [V12.B16, V13.B16]
	MOVD $4, R5

q5c:
	VLD1.P 32(R4), [V0.B16, V1.B16]
	VAND V31.B16, V0.B16, V2.B16
	VAND V31.B16, V1.B16, V3.B16
	VUSHR $4, V0.B16, V4.B16
	VUSHR $4, V1.B16, V5.B16
	FIFTH(V2, V3)
	FIFTH(V4, V5)
	VST1.P [V2.B16, V3.B16, V4.B16, V5.B16], 64(R2)
	SUMS2(V2, V3, 0)
	SUMS2(V4, V5, 8)
	ADD $16, R3
	SUB $1, R5
	CBNZ R5, q5c
	ADD $176, R0
	SUB $1, R1
	CBNZ R1, q5sb

q5done:
	RET

// Sub-block of a Q3_K half: the two bits at the bottom of V(l0), V(l1)
// (which move on to their next two bits), bit 0 of V16, V17 (the hmask,
// moved on to its next bit) as bit 2; stored as u−4 (V30 = 4), the sums
// of u.
#define Q3SUB(l0, l1, qoff, soff) \
	VAND V31.B16, l0.B16, V8.B16 \
	VAND V31.B16, l1.B16, V9.B16 \
	VUSHR $2, l0.B16, l0.B16 \
	VUSHR $2, l1.B16, l1.B16 \
	VSHL $2, V16.B16, V14.B16 \
	VSHL $2, V17.B16, V15.B16 \
	VAND V30.B16, V14.B16, V14.B16 \
	VAND V30.B16, V15.B16, V15.B16 \
	VORR V14.B16, V8.B16, V8.B16 \
	VORR V15.B16, V9.B16, V9.B16 \
	VUSHR $1, V16.B16, V16.B16 \
	VUSHR $1, V17.B16, V17.B16 \
	SUMS2(V8, V9, soff) \
	SUB16B(8, 8, 30) \
	SUB16B(9, 9, 30) \
	FSTPQ (F8, F9), qoff(R2)

// func decodeQ3KU8NEON(blk *byte, nsb int, q *int8, sum *int32)
//
// The signed 3-bit values of nsb Q3_K super-blocks (110 bytes apart:
// hmask, then the low bits) in order, with the sums of the values plus 4
// over each 16 (the caller subtracts 4·16).
TEXT ·decodeQ3KU8NEON(SB), NOSPLIT, $0-32
	SBARGS(blk)
	VMOVI $3, V31.B16
	VMOVI $4, V30.B16
	CBZ R1, q3done

q3sb:
	MOVD R0, R4
	VLD1.P 64(R4), [V16.B16, V17.B16, V18.B16, V19.B16]
	VLD1 (R4), [V20.B16, V21.B16]
	Q3SUB(V18, V19, 0, 0)
	Q3SUB(V18, V19, 32, 8)
	Q3SUB(V18, V19, 64, 16)
	Q3SUB(V18, V19, 96, 24)
	Q3SUB(V20, V21, 128, 32)
	Q3SUB(V20, V21, 160, 40)
	Q3SUB(V20, V21, 192, 48)
	Q3SUB(V20, V21, 224, 56)
	ADD $256, R2
	ADD $64, R3
	ADD $110, R0
	SUB $1, R1
	CBNZ R1, q3sb

q3done:
	RET

// NIBSTORE stores the sums of the unsigned values in V2 (0..15) and V3
// (16..31), then the values minus the bias V29, and moves on to the next
// block.
#define NIBSTORE \
	SUMS2(V2, V3, 0) \
	SUB16B(2, 2, 29) \
	SUB16B(3, 3, 29) \
	VST1.P [V2.B16, V3.B16], 32(R2) \
	ADD $8, R3

// func decodeNib4U8NEON(qs *byte, nb int, stride int, bias int, q *int8, sum *int32)
//
// The 32 four-bit values of each of nb blocks (stride bytes apart, qs at
// the first block's 16 nibble bytes): low nibbles are values 0..15, high
// ones 16..31, stored as bytes minus bias, with the sums of the unsigned
// nibbles over each half (the caller subtracts 16·bias).
TEXT ·decodeNib4U8NEON(SB), NOSPLIT, $0-48
	MOVD qs+0(FP), R0
	MOVD nb+8(FP), R1
	MOVD stride+16(FP), R5
	MOVD bias+24(FP), R6
	MOVD q+32(FP), R2
	MOVD sum+40(FP), R3
	VMOVI $15, V31.B16
	VDUP R6, V29.B16
	CBZ R1, n4done

n4block:
	VLD1 (R0), [V0.B16]
	ADD R5, R0
	VAND V31.B16, V0.B16, V2.B16
	VUSHR $4, V0.B16, V3.B16
	NIBSTORE
	SUB $1, R1
	CBNZ R1, n4block

n4done:
	RET

// The fifth bits of a Q5_0/Q5_1 block: TBL spreads byte p/8 of the qh
// word over byte p of each half, CMTST tests bit p%8.
DATA nib5idx<>+0(SB)/8, $0x0000000000000000
DATA nib5idx<>+8(SB)/8, $0x0101010101010101
DATA nib5idx<>+16(SB)/8, $0x0202020202020202
DATA nib5idx<>+24(SB)/8, $0x0303030303030303
DATA nib5idx<>+32(SB)/8, $0x8040201008040201
DATA nib5idx<>+40(SB)/8, $0x8040201008040201
GLOBL nib5idx<>(SB), RODATA|NOPTR, $48

// func decodeNib5U8NEON(qs *byte, qh *byte, nb int, stride int, bias int, q *int8, sum *int32)
//
// decodeNib4U8NEON for the five-bit blocks of Q5_0 and Q5_1: value p of a
// block also takes bit p of its 32-bit qh word as bit 4.
TEXT ·decodeNib5U8NEON(SB), NOSPLIT, $0-56
	MOVD qs+0(FP), R0
	MOVD qh+8(FP), R7
	MOVD nb+16(FP), R1
	MOVD stride+24(FP), R5
	MOVD bias+32(FP), R6
	MOVD q+40(FP), R2
	MOVD sum+48(FP), R3
	VMOVI $15, V31.B16
	VMOVI $0x10, V28.B16
	VDUP R6, V29.B16
	MOVD $nib5idx<>(SB), R8
	VLD1 (R8), [V22.B16, V23.B16, V24.B16]
	CBZ R1, n5done

n5block:
	VLD1 (R0), [V0.B16]
	ADD R5, R0
	FMOVS (R7), F1
	ADD R5, R7
	VAND V31.B16, V0.B16, V2.B16
	VUSHR $4, V0.B16, V3.B16
	VTBL V22.B16, [V1.B16], V4.B16
	VTBL V23.B16, [V1.B16], V5.B16
	VCMTST V24.B16, V4.B16, V4.B16
	VCMTST V24.B16, V5.B16, V5.B16
	VAND V28.B16, V4.B16, V4.B16
	VAND V28.B16, V5.B16, V5.B16
	VORR V4.B16, V2.B16, V2.B16
	VORR V5.B16, V3.B16, V3.B16
	NIBSTORE
	SUB $1, R1
	CBNZ R1, n5block

n5done:
	RET

// Sub-block of a Q2_K half: the two bits at the bottom of V(l0), V(l1)
// (which move on to their next two bits, V31 = 3), stored with the sums
// of each 16.
#define Q2SUB(l0, l1, qoff, soff) \
	VAND V31.B16, l0.B16, V8.B16 \
	VAND V31.B16, l1.B16, V9.B16 \
	VUSHR $2, l0.B16, l0.B16 \
	VUSHR $2, l1.B16, l1.B16 \
	SUMS2(V8, V9, soff) \
	FSTPQ (F8, F9), qoff(R2)

// func decodeQ2KU8NEON(blk *byte, nsb int, q *int8, sum *int32, mul *int16, fd *float32, fs int)
//
// The 2-bit values of nsb Q2_K super-blocks (84 bytes apart, the values'
// 64 bytes from byte 16) in order, with their sums over each 16, the low
// nibbles of the 16 scale bytes as int16 multipliers, and d (the
// binary16 at byte 80) as the factor of each of the eight 32-value blocks,
// fs floats apart.
TEXT ·decodeQ2KU8NEON(SB), NOSPLIT, $0-56
	MOVD blk+0(FP), R0
	MOVD nsb+8(FP), R1
	MOVD q+16(FP), R2
	MOVD sum+24(FP), R3
	MOVD mul+32(FP), R4
	MOVD fd+40(FP), R5
	MOVD fs+48(FP), R6
	LSL $2, R6
	VMOVI $3, V31.B16
	VMOVI $15, V30.B16
	CBZ R1, q2done

q2sb:
	MOVD R0, R7
	VLD1.P 16(R7), [V16.B16]
	VLD1.P 64(R7), [V18.B16, V19.B16, V20.B16, V21.B16]
	VAND V30.B16, V16.B16, V16.B16
	VUXTL V16.B8, V22.H8
	VUXTL2 V16.B16, V23.H8
	VST1.P [V22.H8, V23.H8], 32(R4)
	VLD1R (R7), [V24.H8]
	FCVTL4S(24, 24)
	MOVD $8, R8

q2fd:
	FMOVS F24, (R5)
	ADD R6, R5
	SUB $1, R8
	CBNZ R8, q2fd
	Q2SUB(V18, V19, 0, 0)
	Q2SUB(V18, V19, 32, 8)
	Q2SUB(V18, V19, 64, 16)
	Q2SUB(V18, V19, 96, 24)
	Q2SUB(V20, V21, 128, 32)
	Q2SUB(V20, V21, 160, 40)
	Q2SUB(V20, V21, 192, 48)
	Q2SUB(V20, V21, 224, 56)
	ADD $256, R2
	ADD $64, R3
	ADD $84, R0
	SUB $1, R1
	CBNZ R1, q2sb

q2done:
	RET

// func q2kMinsNEON(blk *byte, nsb int, dst *float32)
//
// The sixteen offsets −dmin·m of each of nsb Q2_K super-blocks (84 bytes
// apart: m the high nibbles of the first 16 bytes, dmin the binary16 at
// byte 82), 16 float32 per super-block. −dmin·m is −(dmin·m) exactly
// (rounding is symmetric), and both factors are exact in float32.
TEXT ·q2kMinsNEON(SB), NOSPLIT, $0-24
	MOVD blk+0(FP), R0
	MOVD nsb+8(FP), R1
	MOVD dst+16(FP), R2
	CBZ R1, minsdone

minssb:
	VLD1 (R0), [V0.B16]
	ADD $82, R0, R4
	VLD1R (R4), [V20.H8]
	FCVTL4S(20, 20)
	FNEG4S(20, 20)
	VUSHR $4, V0.B16, V0.B16
	VUXTL V0.B8, V1.H8
	VUXTL2 V0.B16, V2.H8
	VUXTL V1.H4, V4.S4
	VUXTL2 V1.H8, V5.S4
	VUXTL V2.H4, V6.S4
	VUXTL2 V2.H8, V7.S4
	SCVTF4S(4, 4)
	SCVTF4S(5, 5)
	SCVTF4S(6, 6)
	SCVTF4S(7, 7)
	FMUL4S(4, 4, 20)
	FMUL4S(5, 5, 20)
	FMUL4S(6, 6, 20)
	FMUL4S(7, 7, 20)
	VST1.P [V4.S4, V5.S4, V6.S4, V7.S4], 64(R2)
	ADD $84, R0
	SUB $1, R1
	CBNZ R1, minssb

minsdone:
	RET
