#include "textflag.h"
#include "gemm_int8_amd64.h"

// The u8×s8 microkernel of the avx2-int8 tier (see gemm_int8_u8.go): a 3x16
// tile. Weights are signed bytes in groups of four k per column,
// activations unsigned bytes (q+128) broadcast four at a time. VPMADDUBSW
// multiplies 32 byte pairs and adds neighbours into int16; the int16
// results of two or four k steps are summed in int16 (Y6..Y11, row r in
// Y(6+2r), Y(7+2r)) before VPMADDWD by the columns' int16 multipliers (1,
// or a sub-block scale) adds them into the int32 accumulators Y0..Y5. The
// int16 sums are exact while steps·2·255·max|w| < 2¹⁵: four steps for
// |w| ≤ 16, two for |w| ≤ 32 (flags bit 2 selects four). Summing in int16
// with VPADDW, which any vector pipe runs, leaves the two multiply pipes
// 1.6× fewer instructions per MAC than one VPMADDWD per step.

// The first k step of a group writes the int16 sums.
#define UFIRST(aoff, boff) \
	VMOVDQU boff(BX), Y12 \
	VMOVDQU boff+32(BX), Y13 \
	VPBROADCASTD aoff(AX), Y14 \
	VPMADDUBSW Y12, Y14, Y6 \
	VPMADDUBSW Y13, Y14, Y7 \
	VPBROADCASTD aoff+4(AX), Y14 \
	VPMADDUBSW Y12, Y14, Y8 \
	VPMADDUBSW Y13, Y14, Y9 \
	VPBROADCASTD aoff+8(AX), Y14 \
	VPMADDUBSW Y12, Y14, Y10 \
	VPMADDUBSW Y13, Y14, Y11

#define UNEXT(aoff, boff) \
	VMOVDQU boff(BX), Y12 \
	VMOVDQU boff+32(BX), Y13 \
	VPBROADCASTD aoff(AX), Y14 \
	VPMADDUBSW Y12, Y14, Y15 \
	VPADDW Y15, Y6, Y6 \
	VPMADDUBSW Y13, Y14, Y15 \
	VPADDW Y15, Y7, Y7 \
	VPBROADCASTD aoff+4(AX), Y14 \
	VPMADDUBSW Y12, Y14, Y15 \
	VPADDW Y15, Y8, Y8 \
	VPMADDUBSW Y13, Y14, Y15 \
	VPADDW Y15, Y9, Y9 \
	VPBROADCASTD aoff+8(AX), Y14 \
	VPMADDUBSW Y12, Y14, Y15 \
	VPADDW Y15, Y10, Y10 \
	VPMADDUBSW Y13, Y14, Y15 \
	VPADDW Y15, Y11, Y11

// End of a group: int16 sums times the multipliers at moff(R12) into the
// int32 accumulators.
#define UFLUSH(moff) \
	VPMADDWD moff(R12), Y6, Y15 \
	VPADDD Y15, Y0, Y0 \
	VPMADDWD moff+32(R12), Y7, Y15 \
	VPADDD Y15, Y1, Y1 \
	VPMADDWD moff(R12), Y8, Y15 \
	VPADDD Y15, Y2, Y2 \
	VPMADDWD moff+32(R12), Y9, Y15 \
	VPADDD Y15, Y3, Y3 \
	VPMADDWD moff(R12), Y10, Y15 \
	VPADDD Y15, Y4, Y4 \
	VPMADDWD moff+32(R12), Y11, Y15 \
	VPADDD Y15, Y5, Y5

// func kernelU8x3x16(ng int, nb int, a *uint8, as int, ds *float32, dss int, b *int8, aux *int32, f *float32, t *float32, c *float32, ldc int, flags int)
//
// ng row groups, each of three rows: group g's activations at a+g·as
// bytes, its scales at ds+g·dss floats, its output at c+3g·ldc floats. Per
// group, nb blocks of 32 k values. a: the three rows' activations (q+128)
// interleaved by groups of four (group p of row r at a[(3p+r)*4]), 96
// bytes per block. ds: per block the (dx, dx·Σq) of rows 0..2. b: the
// weights, 512 bytes per block (step s, column j at s*64+j*4). aux: per
// block 48 int32: the sixteen columns' starting sums −128·Σ m·w, which
// remove the +128 of the activations, then the int16 multiplier pairs m of
// k 0..15 and of k 16..31. f: 32 floats per block (fd, fm). t: 3x16
// float32 scratch tile. c: the output, rows ldc apart, written (flags bit
// 0: added to) at the end. flags bit 1: apply fm; bit 2: four-step groups.
TEXT ·kernelU8x3x16(SB), NOSPLIT, $0-104
	KERNAUXARGS
	TESTQ R8, R8
	JZ   done

group:
	KERNAUXGROUP
	TILE3ZERO
	TESTQ CX, CX
	JZ   store

block:
	VMOVDQU 0(R12), Y0
	VMOVDQU 32(R12), Y1
	VMOVDQA Y0, Y2
	VMOVDQA Y1, Y3
	VMOVDQA Y0, Y4
	VMOVDQA Y1, Y5
	TESTQ $4, flags+96(FP)
	JZ   pairs
	UFIRST(0, 0)
	UNEXT(12, 64)
	UNEXT(24, 128)
	UNEXT(36, 192)
	UFLUSH(64)
	UFIRST(48, 256)
	UNEXT(60, 320)
	UNEXT(72, 384)
	UNEXT(84, 448)
	UFLUSH(128)
	JMP  summed

pairs:
	UFIRST(0, 0)
	UNEXT(12, 64)
	UFLUSH(64)
	UFIRST(24, 128)
	UNEXT(36, 192)
	UFLUSH(64)
	UFIRST(48, 256)
	UNEXT(60, 320)
	UFLUSH(128)
	UFIRST(72, 384)
	UNEXT(84, 448)
	UFLUSH(128)

summed:
	ADDQ $96, AX
	ADDQ $512, BX
	ADDQ $192, R12

	TESTQ $2, flags+96(FP)
	JNZ  withmin
	EPI3
	JMP  next

withmin:
	EPIMIN3

next:
	ADDQ $24, R11
	ADDQ $128, R13
	DECQ CX
	JNZ  block

store:
	TILE3LOAD(ldc+88(FP))
	TESTQ $1, flags+96(FP)
	JZ   write
	TILE3ADD

write:
	TILE3WRITE

	// Next group: activations and scales, three rows of c further.
	KERNNEXT
	LEAQ (DX)(SI*2), DX
	ADDQ SI, DX
	DECQ R8
	JNZ  group

done:
	VZEROUPPER
	RET

QUANTTABLE(u8quant)

// func quantizeU8AVX2(x *float32, nb int, q *uint8, ds *float32)
//
// quantizeRowI8 for the u8 path, bit for bit: per block of 32 values the
// largest magnitude (as integer bits, so NaN > Inf as in the Go code),
// d = amax/127, q = round-half-even(x·(1/d)) by VCVTPS2DQ (the default
// rounding mode), stored as q+128; ds gets (d, d·Σq). Blocks whose amax is
// below 2⁻¹⁰⁰ get q = 0 and (0, 0), those whose amax is not finite q = 0
// and (amax, 0).
TEXT ·quantizeU8AVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ q+16(FP), DI
	MOVQ ds+24(FP), DX
	QUANTCONSTS(u8quant)
	TESTQ CX, CX
	JZ   qdone

qblock:
	QUANT32
	VMOVDQU Y0, 0(DI)
	QUANTSUMS
	JMP  qnext

tiny:
	XORL AX, AX

special:
	VMOVDQU Y14, 0(DI)
	MOVL AX, 0(DX)
	MOVL $0, 4(DX)

qnext:
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $8, DX
	DECQ CX
	JNZ  qblock

qdone:
	VZEROUPPER
	RET

DATA u8nib<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA u8nib<>+8(SB)/8, $0x0303030303030303
DATA u8nib<>+16(SB)/8, $0x2020202020202020
GLOBL u8nib<>(SB), RODATA|NOPTR, $24

// The super-block decoders take (p, nsb, q, sum): SBARGS loads them into
// SI, CX, DI and DX.
#define SBARGS(p) \
	MOVQ p+0(FP), SI \
	MOVQ nsb+8(FP), CX \
	MOVQ q+16(FP), DI \
	MOVQ sum+24(FP), DX

// func decodeQ4KU8AVX2(qs *byte, nsb int, q *int8, sum *int32)
//
// The values of nsb Q4_K super-blocks, qs pointing at the first one's
// nibbles (super-blocks 144 bytes apart): for each 32-byte group c the low
// nibbles are sub-block 2c and the high ones 2c+1, stored as bytes, with
// the sums of each sub-block's halves.
TEXT ·decodeQ4KU8AVX2(SB), NOSPLIT, $0-32
	SBARGS(qs)
	VPBROADCASTQ u8nib<>+0(SB), Y14
	VPXOR Y15, Y15, Y15
	TESTQ CX, CX
	JZ   q4done

q4sb:
	MOVQ $4, R8
	MOVQ SI, R9

q4c:
	VMOVDQU (R9), Y0
	VPAND Y14, Y0, Y1
	VPSRLW $4, Y0, Y2
	VPAND Y14, Y2, Y2
	VMOVDQU Y1, 0(DI)
	VMOVDQU Y2, 32(DI)
	HALFSUMS(Y1, 0)
	HALFSUMS(Y2, 8)
	ADDQ $32, R9
	ADDQ $64, DI
	ADDQ $16, DX
	DECQ R8
	JNZ  q4c
	ADDQ $144, SI
	DECQ CX
	JNZ  q4sb

q4done:
	VZEROUPPER
	RET

// ORHIGH puts the bits of src at sh under the mask Y13 above the four low
// bits of v (t is clobbered).
#define ORHIGH(src, sh, t, v) \
	VPSRLW $sh, src, t \
	VPAND Y13, t, t \
	VPSLLW $4, t, t \
	VPOR t, v, v

// One 32-value sub-block j of a Q6_K half: low nibbles of Y(lq) shifted
// right by sh, the two bits of Y4 (qh) at 2j, as q−32.
#define Q6SUB(lq, sh, hsh, qoff, soff) \
	VPSRLW $sh, lq, Y5 \
	VPAND Y14, Y5, Y5 \
	ORHIGH(Y4, hsh, Y6, Y5) \
	HALFSUMS(Y5, soff) \
	VPSUBB Y9, Y5, Y5 \
	VMOVDQU Y5, qoff(DI)

// func decodeQ6KU8AVX2(blk *byte, nsb int, q *int8, sum *int32)
//
// The values q−32 of nsb Q6_K super-blocks (210 bytes apart) in order, with
// the sums of the unsigned q over each 16 values (the caller subtracts
// 32·16).
TEXT ·decodeQ6KU8AVX2(SB), NOSPLIT, $0-32
	SBARGS(blk)
	VPBROADCASTQ u8nib<>+0(SB), Y14
	VPBROADCASTQ u8nib<>+8(SB), Y13
	VPBROADCASTQ u8nib<>+16(SB), Y9
	VPXOR Y15, Y15, Y15
	TESTQ CX, CX
	JZ   q6done

q6sb:
	MOVQ SI, R9
	LEAQ 128(SI), R10
	MOVQ $2, R8

q6half:
	VMOVDQU 0(R9), Y0
	VMOVDQU 32(R9), Y1
	VMOVDQU 0(R10), Y4
	Q6SUB(Y0, 0, 0, 0, 0)
	Q6SUB(Y1, 0, 2, 32, 8)
	Q6SUB(Y0, 4, 4, 64, 16)
	Q6SUB(Y1, 4, 6, 96, 24)
	ADDQ $64, R9
	ADDQ $32, R10
	ADDQ $128, DI
	ADDQ $32, DX
	DECQ R8
	JNZ  q6half
	ADDQ $210, SI
	DECQ CX
	JNZ  q6sb

q6done:
	VZEROUPPER
	RET

DATA u8one<>+0(SB)/8, $0x0101010101010101
GLOBL u8one<>(SB), RODATA|NOPTR, $8

// One 32-byte nibble group c of a Q5_K super-block: low nibbles with bit
// 2c of the qh bytes (Y3) as sub-block 2c, high nibbles with bit 2c+1 as
// sub-block 2c+1.
#define Q5C(lsh, hsh, qoff, ooff, soff) \
	VMOVDQU qoff(R9), Y0 \
	VPAND Y14, Y0, Y1 \
	VPSRLW $4, Y0, Y2 \
	VPAND Y14, Y2, Y2 \
	ORHIGH(Y3, lsh, Y4, Y1) \
	ORHIGH(Y3, hsh, Y4, Y2) \
	VMOVDQU Y1, ooff(DI) \
	VMOVDQU Y2, ooff+32(DI) \
	HALFSUMS(Y1, soff) \
	HALFSUMS(Y2, soff+8)

// func decodeQ5KU8AVX2(blk *byte, nsb int, q *int8, sum *int32)
//
// The values of nsb Q5_K super-blocks (176 bytes apart) as bytes, in
// order, with the sums of each sub-block's halves.
TEXT ·decodeQ5KU8AVX2(SB), NOSPLIT, $0-32
	SBARGS(blk)
	VPBROADCASTQ u8nib<>+0(SB), Y14
	VPBROADCASTQ u8one<>+0(SB), Y13
	VPXOR Y15, Y15, Y15
	TESTQ CX, CX
	JZ   q5done

q5sb:
	VMOVDQU 16(SI), Y3
	LEAQ 48(SI), R9
	Q5C(0, 1, 0, 0, 0)
	Q5C(2, 3, 32, 64, 16)
	Q5C(4, 5, 64, 128, 32)
	Q5C(6, 7, 96, 192, 48)
	ADDQ $256, DI
	ADDQ $64, DX
	ADDQ $176, SI
	DECQ CX
	JNZ  q5sb

q5done:
	VZEROUPPER
	RET

// The blocks of 32 four-bit values (decodeNib4U8AVX2, decodeNib5U8AVX2):
// NIBBIAS sets the nibble mask Y14 and the bias, from the argument at
// bias, in every byte of Y13; NIB32 unpacks the block's 16 nibble bytes at
// SI into Y0, low nibbles first; NIBPUT stores the sums of its halves and
// its bytes minus the bias.
#define NIBBIAS(bias) \
	VPBROADCASTQ u8nib<>+0(SB), Y14 \
	MOVQ bias, AX \
	VMOVD AX, X13 \
	VPBROADCASTB X13, Y13

#define NIB32 \
	VMOVDQU (SI), X0 \
	VPSRLW $4, X0, X1 \
	VINSERTI128 $1, X1, Y0, Y0 \
	VPAND Y14, Y0, Y0

#define NIBPUT \
	HALFSUMS(Y0, 0) \
	VPSUBB Y13, Y0, Y0 \
	VMOVDQU Y0, 0(DI)

// func decodeNib4U8AVX2(qs *byte, nb int, stride int, bias int, q *int8, sum *int32)
//
// The 32 four-bit values of each of nb blocks (stride bytes apart, qs at
// the first block's 16 nibble bytes): low nibbles are values 0..15, high
// ones 16..31, stored as bytes minus bias, with the sums of the unsigned
// nibbles over each half (the caller subtracts 16·bias).
TEXT ·decodeNib4U8AVX2(SB), NOSPLIT, $0-48
	MOVQ qs+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ stride+16(FP), R8
	MOVQ q+32(FP), DI
	MOVQ sum+40(FP), DX
	NIBBIAS(bias+24(FP))
	VPXOR Y15, Y15, Y15
	TESTQ CX, CX
	JZ   n4done

n4block:
	NIB32
	NIBPUT
	ADDQ R8, SI
	ADDQ $32, DI
	ADDQ $8, DX
	DECQ CX
	JNZ  n4block

n4done:
	VZEROUPPER
	RET

DATA u8h5<>+0(SB)/8, $0x0000000000000000
DATA u8h5<>+8(SB)/8, $0x0101010101010101
DATA u8h5<>+16(SB)/8, $0x0202020202020202
DATA u8h5<>+24(SB)/8, $0x0303030303030303
DATA u8h5<>+32(SB)/8, $0x8040201008040201
DATA u8h5<>+40(SB)/8, $0x1010101010101010
GLOBL u8h5<>(SB), RODATA|NOPTR, $48

// func decodeNib5U8AVX2(qs *byte, qh *byte, nb int, stride int, bias int, q *int8, sum *int32)
//
// decodeNib4U8AVX2 for the five-bit blocks of Q5_0 and Q5_1: value p of a
// block also takes bit p of its 32-bit qh word as bit 4 (the word is
// spread over the bytes by VPSHUFB, the bit isolated by a per-byte mask).
TEXT ·decodeNib5U8AVX2(SB), NOSPLIT, $0-56
	MOVQ qs+0(FP), SI
	MOVQ qh+8(FP), R9
	MOVQ nb+16(FP), CX
	MOVQ stride+24(FP), R8
	MOVQ q+40(FP), DI
	MOVQ sum+48(FP), DX
	NIBBIAS(bias+32(FP))
	VMOVDQU u8h5<>+0(SB), Y9
	VPBROADCASTQ u8h5<>+32(SB), Y8
	VPBROADCASTQ u8h5<>+40(SB), Y7
	VPXOR Y15, Y15, Y15
	TESTQ CX, CX
	JZ   n5done

n5block:
	NIB32
	VPBROADCASTD (R9), Y1
	VPSHUFB Y9, Y1, Y1
	VPAND Y8, Y1, Y1
	VPCMPEQB Y8, Y1, Y1
	VPAND Y7, Y1, Y1
	VPOR Y1, Y0, Y0
	NIBPUT
	ADDQ R8, SI
	ADDQ R8, R9
	ADDQ $32, DI
	ADDQ $8, DX
	DECQ CX
	JNZ  n5block

n5done:
	VZEROUPPER
	RET

DATA u8q3<>+0(SB)/8, $0x0404040404040404
GLOBL u8q3<>(SB), RODATA|NOPTR, $8

// One 32-value sub-block of a Q3_K super-block: the two bits of Y(qy) at
// qsh, and as bit 2 the hmask bit of the sub-block, brought there from Y8
// by hop $hsh (a word shift that keeps every byte's bit 2 within the
// byte); stored as u−4, the sums of the unsigned u (0..7) per half.
#define Q3SUB(qy, hop, hsh, qsh, qoff, soff) \
	VPSRLW $qsh, qy, Y5 \
	VPAND Y13, Y5, Y5 \
	hop $hsh, Y8, Y6 \
	VPAND Y14, Y6, Y6 \
	VPOR Y6, Y5, Y5 \
	HALFSUMS(Y5, soff) \
	VPSUBB Y14, Y5, Y5 \
	VMOVDQU Y5, qoff(DI)

// func decodeQ3KU8AVX2(blk *byte, nsb int, q *int8, sum *int32)
//
// The signed 3-bit values of nsb Q3_K super-blocks (110 bytes apart:
// hmask, then the low bits) in order, with the sums of the values plus 4
// over each 16 (the caller subtracts 4·16).
TEXT ·decodeQ3KU8AVX2(SB), NOSPLIT, $0-32
	SBARGS(blk)
	VPBROADCASTQ u8nib<>+8(SB), Y13
	VPBROADCASTQ u8q3<>+0(SB), Y14
	VPXOR Y15, Y15, Y15
	TESTQ CX, CX
	JZ   q3done

q3sb:
	VMOVDQU 0(SI), Y8
	VMOVDQU 32(SI), Y7
	VMOVDQU 64(SI), Y9
	Q3SUB(Y7, VPSLLW, 2, 0, 0, 0)
	Q3SUB(Y7, VPSLLW, 1, 2, 32, 8)
	Q3SUB(Y7, VPSRLW, 0, 4, 64, 16)
	Q3SUB(Y7, VPSRLW, 1, 6, 96, 24)
	Q3SUB(Y9, VPSRLW, 2, 0, 128, 32)
	Q3SUB(Y9, VPSRLW, 3, 2, 160, 40)
	Q3SUB(Y9, VPSRLW, 4, 4, 192, 48)
	Q3SUB(Y9, VPSRLW, 5, 6, 224, 56)
	ADDQ $110, SI
	ADDQ $256, DI
	ADDQ $64, DX
	DECQ CX
	JNZ  q3sb

q3done:
	VZEROUPPER
	RET

// The nibble kernel of the avx2-int8 tier (u8Tier.nib): a 6x16 tile for
// weights 0..15, which are VPMADDUBSW's unsigned operand, with the
// activations q as its signed one. A pair's sum is at most 2·15·127, so
// the int16 sums (Y0..Y11, row r in Y(2r), Y(2r+1)) hold a whole 32-value
// block, eight k steps, exactly; one VPMADDWD by ones per block widens
// them. Against kernelU8x3x16 that is half the multiplier instructions
// after the products, and twice the rows per weight load.

// The first k step of a block writes the int16 sums.
#define SROW0(aoff, ya, yb) \
	VPBROADCASTD aoff(AX), Y14 \
	VPMADDUBSW Y14, Y12, ya \
	VPMADDUBSW Y14, Y13, yb

#define SFIRST(aoff, boff) \
	VMOVDQU boff(BX), Y12 \
	VMOVDQU boff+32(BX), Y13 \
	SROW0(aoff, Y0, Y1) \
	SROW0(aoff+4, Y2, Y3) \
	SROW0(aoff+8, Y4, Y5) \
	SROW0(aoff+12, Y6, Y7) \
	SROW0(aoff+16, Y8, Y9) \
	SROW0(aoff+20, Y10, Y11)

#define SROW(aoff, ya, yb) \
	VPBROADCASTD aoff(AX), Y14 \
	VPMADDUBSW Y14, Y12, Y15 \
	VPADDW Y15, ya, ya \
	VPMADDUBSW Y14, Y13, Y15 \
	VPADDW Y15, yb, yb

#define SNEXT(aoff, boff) \
	VMOVDQU boff(BX), Y12 \
	VMOVDQU boff+32(BX), Y13 \
	SROW(aoff, Y0, Y1) \
	SROW(aoff+4, Y2, Y3) \
	SROW(aoff+8, Y4, Y5) \
	SROW(aoff+12, Y6, Y7) \
	SROW(aoff+16, Y8, Y9) \
	SROW(aoff+20, Y10, Y11)

// End of a block for row r: int16 sums to int32 (Y15 holds ones), then
// the float epilogue of kernelU8x3x16.
#define SWIDEN(ya, yb) \
	VPMADDWD Y15, ya, ya \
	VPMADDWD Y15, yb, yb

// func kernelS8x6x16(ng int, nb int, a *uint8, as int, ds *float32, dss int, b *int8, f *float32, t *float32, c *float32, ldc int, flags int)
//
// Layouts as kernelU8x3x16 with six rows: a group's activations are 24
// bytes per four k (row r at 4r), its scales (dx, dx·Σq) 48 bytes per
// block (row r at 8r), its tile t 96 floats. flags bit 0: add into c;
// bit 1: apply fm.
TEXT ·kernelS8x6x16(SB), NOSPLIT, $0-96
	KERN6ARGS
	TESTQ R8, R8
	JZ   sdone

sgroup:
	KERN6GROUP
	TESTQ CX, CX
	JZ   sstore

sblock:
	SFIRST(0, 0)
	SNEXT(24, 64)
	SNEXT(48, 128)
	SNEXT(72, 192)
	SNEXT(96, 256)
	SNEXT(120, 320)
	SNEXT(144, 384)
	SNEXT(168, 448)
	VPCMPEQW Y15, Y15, Y15
	VPSRLW $15, Y15, Y15
	SWIDEN(Y0, Y1)
	SWIDEN(Y2, Y3)
	SWIDEN(Y4, Y5)
	SWIDEN(Y6, Y7)
	SWIDEN(Y8, Y9)
	SWIDEN(Y10, Y11)
	ADDQ $192, AX
	ADDQ $512, BX

	TESTQ $2, flags+88(FP)
	JNZ  swithmin
	EPI6
	JMP  snext

swithmin:
	EPIMIN6

snext:
	ADDQ $48, R11
	ADDQ $128, R13
	DECQ CX
	JNZ  sblock

sstore:
	TILE6LOAD(ldc+80(FP))
	TESTQ $1, flags+88(FP)
	JZ   swrite
	TILE6ADD

swrite:
	TILE6WRITE

	// Next group: activations and scales; TILE6WRITE moved c on.
	KERNNEXT
	DECQ R8
	JNZ  sgroup

sdone:
	VZEROUPPER
	RET
