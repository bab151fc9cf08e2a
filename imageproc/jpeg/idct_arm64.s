#include "textflag.h"

// idctIslow (idct.go) on NEON: the block's eight columns, then its eight
// rows, four to a register (the left and right halves of the block in two
// sets of eight), the products and sums of the AVX2 kernel
// (idct_amd64.s) in 32-bit lanes, which equal the portable 64-bit ones
// under the same bound on the values.

#define ENC2(op, d, n) WORD $((op) | ((n)<<5) | (d))
#define ENC3(op, d, n, m) WORD $((op) | ((m)<<16) | ((n)<<5) | (d))
#define ENCE(op, d, n, m, i) WORD $((op) | (((i)&1)<<21) | ((m)<<16) | (((i)>>1)<<11) | ((n)<<5) | (d))

#define ADD4S(d, n, m) ENC3(0x4ea08400, d, n, m)
#define SUB4S(d, n, m) ENC3(0x6ea08400, d, n, m)
#define MUL4S(d, n, m) ENC3(0x4ea09c00, d, n, m)
// mul vd.4s, vn.4s, vm.s[i]: by one of the constants.
#define MULE(d, n, m, i) ENCE(0x4f808000, d, n, m, i)
#define ABS4S(d, n) ENC2(0x4ea0b800, d, n)
#define UMAXV4S(d, n) ENC2(0x6eb0a800, d, n)
#define SHL4S_13(d, n) ENC2(0x4f2d5400, d, n)
#define SHL4S_22(d, n) ENC2(0x4f365400, d, n)
#define SSHR4S_11(d, n) ENC2(0x4f350400, d, n)
#define SSHR4S_18(d, n) ENC2(0x4f2e0400, d, n)
#define SSHR4S_22(d, n) ENC2(0x4f2a0400, d, n)
#define SXTL4S(d, n) ENC2(0x0f10a400, d, n)
#define SXTL24S(d, n) ENC2(0x4f10a400, d, n)
#define SQXTN4H(d, n) ENC2(0x0e614800, d, n)
#define SQXTN28H(d, n) ENC2(0x4e614800, d, n)
#define SQXTUN8B(d, n) ENC2(0x2e212800, d, n)
#define TRN1_4S(d, n, m) ENC3(0x4e802800, d, n, m)
#define TRN2_4S(d, n, m) ENC3(0x4e806800, d, n, m)
#define TRN1_2D(d, n, m) ENC3(0x4ec02800, d, n, m)
#define TRN2_2D(d, n, m) ENC3(0x4ec06800, d, n, m)

// The constants, four to a register (V24, V25, V26): the multipliers of
// the even part, then the odd part's.
DATA idctk<>+0(SB)/4, $4433
DATA idctk<>+4(SB)/4, $15137
DATA idctk<>+8(SB)/4, $6270
DATA idctk<>+12(SB)/4, $9633
DATA idctk<>+16(SB)/4, $-7373
DATA idctk<>+20(SB)/4, $-20995
DATA idctk<>+24(SB)/4, $-16069
DATA idctk<>+28(SB)/4, $-3196
DATA idctk<>+32(SB)/4, $2446
DATA idctk<>+36(SB)/4, $16819
DATA idctk<>+40(SB)/4, $25172
DATA idctk<>+44(SB)/4, $12299
GLOBL idctk<>(SB), RODATA|NOPTR, $48

// PASS is one 1-D pass of idctIslow on i0..i7 (input k in ik, one column
// or row per lane) with the free registers a, b, z3, z4, z5, the rounding
// constant in rnd and the descaling shift sh; as IDCT_PASS of
// idct_amd64.s, outputs 0..7 end in z3, z5, b, a, i0, i1, i6, z4, and i2,
// i3, i4, i5, i7 are free afterwards.
#define PASS(i0, i1, i2, i3, i4, i5, i6, i7, a, b, z3, z4, z5, rnd, sh) \
	ADD4S(a, i2, i6) \
	MULE(a, a, 24, 0) \
	MULE(b, i6, 24, 1) \
	SUB4S(b, a, b) \
	MULE(i2, i2, 24, 2) \
	ADD4S(i2, i2, a) \
	ADD4S(a, i0, i4) \
	SHL4S_13(a, a) \
	SUB4S(i4, i0, i4) \
	SHL4S_13(i4, i4) \
	ADD4S(a, a, rnd) \
	ADD4S(i4, i4, rnd) \
	ADD4S(i0, a, i2) \
	SUB4S(i2, a, i2) \
	ADD4S(a, i4, b) \
	SUB4S(i4, i4, b) \
	ADD4S(i6, i7, i1) \
	ADD4S(b, i5, i3) \
	ADD4S(z3, i7, i3) \
	ADD4S(z4, i5, i1) \
	ADD4S(z5, z3, z4) \
	MULE(z5, z5, 24, 3) \
	MULE(i6, i6, 25, 0) \
	MULE(b, b, 25, 1) \
	MULE(z3, z3, 25, 2) \
	ADD4S(z3, z3, z5) \
	MULE(z4, z4, 25, 3) \
	ADD4S(z4, z4, z5) \
	MULE(i7, i7, 26, 0) \
	ADD4S(i7, i7, i6) \
	ADD4S(i7, i7, z3) \
	MULE(i5, i5, 26, 1) \
	ADD4S(i5, i5, b) \
	ADD4S(i5, i5, z4) \
	MULE(i3, i3, 26, 2) \
	ADD4S(i3, i3, b) \
	ADD4S(i3, i3, z3) \
	MULE(i1, i1, 26, 3) \
	ADD4S(i1, i1, i6) \
	ADD4S(i1, i1, z4) \
	ADD4S(z3, i0, i1) \
	SUB4S(z4, i0, i1) \
	ADD4S(z5, a, i3) \
	SUB4S(i6, a, i3) \
	ADD4S(b, i4, i5) \
	SUB4S(i1, i4, i5) \
	ADD4S(a, i2, i7) \
	SUB4S(i0, i2, i7) \
	sh(z3, z3) \
	sh(z5, z5) \
	sh(b, b) \
	sh(a, a) \
	sh(i0, i0) \
	sh(i1, i1) \
	sh(i6, i6) \
	sh(z4, z4)

// TR4 transposes the 4×4 block of rows a, b, c, d in place (through the
// scratch registers t0..t3): afterwards a holds column 0, b column 1, c
// column 2, d column 3.
#define TR4(a, b, c, d, t0, t1, t2, t3) \
	TRN1_4S(t0, a, b) \
	TRN2_4S(t1, a, b) \
	TRN1_4S(t2, c, d) \
	TRN2_4S(t3, c, d) \
	TRN1_2D(a, t0, t2) \
	TRN2_2D(c, t0, t2) \
	TRN1_2D(b, t1, t3) \
	TRN2_2D(d, t1, t3)

// GUARD4 ORs the magnitudes of four registers into V21 (V22 scratch).
#define GUARD4(r0, r1, r2, r3) \
	ABS4S(22, r0) \
	VORR V22.B16, V21.B16, V21.B16 \
	ABS4S(22, r1) \
	VORR V22.B16, V21.B16, V21.B16 \
	ABS4S(22, r2) \
	VORR V22.B16, V21.B16, V21.B16 \
	ABS4S(22, r3) \
	VORR V22.B16, V21.B16, V21.B16

// GUARDED jumps to fallback when some value ORed into V21 reaches 2^14
// in magnitude (the OR of magnitudes is below 2^14 exactly when each is),
// and clears V21.
#define GUARDED \
	UMAXV4S(22, 21) \
	VMOV V22.S[0], R6 \
	CMP $16384, R6 \
	BHS fallback \
	VEOR V21.B16, V21.B16, V21.B16

// LOADROW dequantizes row r of the coefficients into l (columns 0..3)
// and r (4..7): in (R0) and q (R1) move to the next row.
#define LOADROW(l, r) \
	VLD1.P 16(R0), [V16.H8] \
	VLD1.P 32(R1), [V17.S4, V18.S4] \
	SXTL4S(l, 16) \
	SXTL24S(r, 16) \
	MUL4S(l, l, 17) \
	MUL4S(r, r, 18)

// CLAMP takes a descaled output modulo 1024, sign-extends it from 10 bits
// as the range-limit table does, and adds 128 (V28); the narrowing then
// clamps.
#define CLAMP(r) \
	SHL4S_22(r, r) \
	SSHR4S_22(r, r) \
	ADD4S(r, r, 28)

// STOREROW narrows a row's halves l, r to bytes with saturation and
// stores them at R2, moving R2 on by the stride R3.
#define STOREROW(l, r) \
	SQXTN4H(5, l) \
	SQXTN28H(5, r) \
	SQXTUN8B(5, 5) \
	FMOVD F5, (R2) \
	ADD R3, R2

// func idctIslowNEON(in *[64]int16, q *[64]int32, dst *uint8, stride int) bool
// idctIslow with the columns (then rows) of a block in the lanes of
// 32-bit vectors. The products and sums equal the portable 64-bit ones
// while no dequantized coefficient and no workspace value reaches 2^14 in
// magnitude (the largest intermediate is then below 112356·2^14 + 2^17 <
// 2^31); otherwise it returns false before storing anything and the
// caller uses the portable code.
TEXT ·idctIslowNEON(SB), NOSPLIT, $0-33
	MOVD in+0(FP), R0
	MOVD q+8(FP), R1
	MOVD dst+16(FP), R2
	MOVD stride+24(FP), R3
	MOVD $idctk<>(SB), R4
	VLD1 (R4), [V24.S4, V25.S4, V26.S4]
	MOVW $1024, R4
	VDUP R4, V27.S4
	MOVW $128, R4
	VDUP R4, V28.S4
	VEOR V21.B16, V21.B16, V21.B16

	// V0..V7: columns 0..3 of rows 0..7; V8..V15 columns 4..7.
	LOADROW(0, 8)
	LOADROW(1, 9)
	LOADROW(2, 10)
	LOADROW(3, 11)
	LOADROW(4, 12)
	LOADROW(5, 13)
	LOADROW(6, 14)
	LOADROW(7, 15)
	GUARD4(0, 1, 2, 3)
	GUARD4(4, 5, 6, 7)
	GUARD4(8, 9, 10, 11)
	GUARD4(12, 13, 14, 15)
	GUARDED

	// The column pass, left then right half. Workspace row k: left half
	// in V18 V20 V17 V16 V0 V1 V6 V19, right half in V4 V7 V3 V2 V8 V9
	// V14 V5.
	PASS(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 27, SSHR4S_11)
	PASS(8, 9, 10, 11, 12, 13, 14, 15, 2, 3, 4, 5, 7, 27, SSHR4S_11)
	GUARD4(18, 20, 17, 16)
	GUARD4(0, 1, 6, 19)
	GUARD4(4, 7, 3, 2)
	GUARD4(8, 9, 14, 5)
	GUARDED

	// Rows 0..3 and 4..7 of the workspace into lanes: the left row pass's
	// inputs 0..7 in V18 V20 V17 V16 V4 V7 V3 V2, the right one's in V0
	// V1 V6 V19 V8 V9 V14 V5.
	TR4(18, 20, 17, 16, 10, 11, 12, 13)
	TR4(4, 7, 3, 2, 10, 11, 12, 13)
	TR4(0, 1, 6, 19, 10, 11, 12, 13)
	TR4(8, 9, 14, 5, 10, 11, 12, 13)

	// The row pass (rounding 2^17, descaling by 18): outputs 0..7 of rows
	// 0..3 in V12 V15 V11 V10 V18 V20 V3 V13, of rows 4..7 in V4 V2 V16
	// V17 V0 V1 V14 V7.
	MOVW $0x20000, R4
	VDUP R4, V27.S4
	PASS(18, 20, 17, 16, 4, 7, 3, 2, 10, 11, 12, 13, 15, 27, SSHR4S_18)
	PASS(0, 1, 6, 19, 8, 9, 14, 5, 17, 16, 4, 7, 2, 27, SSHR4S_18)
	CLAMP(12)
	CLAMP(15)
	CLAMP(11)
	CLAMP(10)
	CLAMP(18)
	CLAMP(20)
	CLAMP(3)
	CLAMP(13)
	CLAMP(4)
	CLAMP(2)
	CLAMP(16)
	CLAMP(17)
	CLAMP(0)
	CLAMP(1)
	CLAMP(14)
	CLAMP(7)

	// Back to rows, stored as bytes.
	TR4(12, 15, 11, 10, 6, 19, 8, 9)
	TR4(18, 20, 3, 13, 6, 19, 8, 9)
	TR4(4, 2, 16, 17, 6, 19, 8, 9)
	TR4(0, 1, 14, 7, 6, 19, 8, 9)
	STOREROW(12, 18)
	STOREROW(15, 20)
	STOREROW(11, 3)
	STOREROW(10, 13)
	STOREROW(4, 0)
	STOREROW(2, 1)
	STOREROW(16, 14)
	STOREROW(17, 7)
	MOVD $1, R4
	MOVB R4, ret+32(FP)
	RET

fallback:
	MOVB ZR, ret+32(FP)
	RET
