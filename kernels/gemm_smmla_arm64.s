#include "textflag.h"
#include "int8_arm64.h"

// The SMMLA kernels of the i8mm tier (int8_arm64.h). The activations of a
// group interleave its rows by eight bytes (vnniTier.chunk), so one 16-byte
// load is SMMLA's left operand: two rows of eight k. The weight panels hold
// column c's eight bytes of chunk q at (q·16+c)·8 (pack8S8x8), so one
// 16-byte load is its right operand: two columns of eight k. A result
// holds the 2x2 tile (r0c0, r0c1, r1c0, r1c1) of a row pair and column
// pair; ZIP1/ZIP2 of two such tiles' 64-bit halves give the four columns
// of each row.

// Row pair d's SMMLAs of one chunk: codes in Va, the eight column pairs in
// V20-V27, into the accumulators d..d+7 (column pair j in d+j).
#define SMMLA8(d, a) \
	SMMLA(d, a, 20)   \
	SMMLA(d+1, a, 21) \
	SMMLA(d+2, a, 22) \
	SMMLA(d+3, a, 23) \
	SMMLA(d+4, a, 24) \
	SMMLA(d+5, a, 25) \
	SMMLA(d+6, a, 26) \
	SMMLA(d+7, a, 27)

// A chunk's 128 bytes of weights: sixteen columns by eight k.
#define WEIGHTS8 \
	VLD1.P 64(R14), [V20.B16, V21.B16, V22.B16, V23.B16] \
	VLD1.P 64(R14), [V24.B16, V25.B16, V26.B16, V27.B16]

// Two 2x2 tiles (a: columns 4j, 4j+1; b: 4j+2, 4j+3) to rows: a gets the
// first row's four columns, b the second's (V30 the temporary).
#define UNTILE(a, b) \
	VZIP1 b.D2, a.D2, V30.D2 \
	VZIP2 b.D2, a.D2, b.D2   \
	VORR  V30.B16, V30.B16, a.B16

// The tiles of a row pair's accumulators V(d)..V(d+7) to rows: the first
// row in d, d+2, d+4, d+6, the second in d+1, d+3, d+5, d+7.
#define UNTILE8(v0, v1, v2, v3, v4, v5, v6, v7) \
	UNTILE(v0, v1) \
	UNTILE(v2, v3) \
	UNTILE(v4, v5) \
	UNTILE(v6, v7)

// func kernelSMMLAUnit4x16(ng int, nb int, a *uint8, as int, ds *float32, dss int, b *int8, aux *int32, f *float32, t *float32, c *float32, ldc int, flags int)
// Four rows (two pairs) by sixteen columns, for blocks without
// multipliers: the tiles in V0-V15 (pair i, column pair j in V(8i+j)).
// A chunk of eight k is one 32-byte load of the codes and 128 bytes of
// weights for 16 SMMLAs (512 multiply-adds): 10 loads and 2 EORs.
TEXT ·kernelSMMLAUnit4x16(SB), NOSPLIT, $0-104
	ARGS

sugroup:
	GROUP
	CLEARROW
	CLEARROW
	CLEARROW
	CLEARROW

sublock:
	ZERO4(V0, V1, V2, V3)
	ZERO4(V4, V5, V6, V7)
	ZERO4(V8, V9, V10, V11)
	ZERO4(V12, V13, V14, V15)
	MOVD $4, R24

suchunk:
	VLD1.P 32(R13), [V16.B16, V17.B16]
	VEOR   V31.B16, V16.B16, V16.B16
	VEOR   V31.B16, V17.B16, V17.B16
	WEIGHTS8
	SMMLA8(0, 16)
	SMMLA8(8, 17)
	SUBS   $1, R24, R24
	BNE    suchunk
	UNTILE8(V0, V1, V2, V3, V4, V5, V6, V7)
	UNTILE8(V8, V9, V10, V11, V12, V13, V14, V15)
	FACTORS
	VLD1.P 32(R20), [V24.S4, V25.S4] // (dx, dx·Σq) of rows 0, 1; 2, 3
	MOVD   R9, R19
	TBNZ   $1, R12, sumin
	EPIROW(0, 2, 4, 6, 24, 0)
	PUTROW
	EPIROW(1, 3, 5, 7, 24, 2)
	PUTROW
	EPIROW(8, 10, 12, 14, 25, 0)
	PUTROW
	EPIROW(9, 11, 13, 15, 25, 2)
	PUTROW
	JMP    sunext

sumin:
	EPIROW(0, 2, 4, 6, 24, 0)
	MINROW(24, 0)
	PUTROW
	EPIROW(1, 3, 5, 7, 24, 2)
	MINROW(24, 2)
	PUTROW
	EPIROW(8, 10, 12, 14, 25, 0)
	MINROW(25, 0)
	PUTROW
	EPIROW(9, 11, 13, 15, 25, 2)
	MINROW(25, 2)
	PUTROW

sunext:
	SUBS $1, R22, R22
	BNE  sublock
	MOVD R9, R19
	MOVD R10, R23
	TBNZ $0, R12, suadd
	SETROW
	SETROW
	SETROW
	SETROW
	JMP  suout

suadd:
	ADDROW
	ADDROW
	ADDROW
	ADDROW

suout:
	NEXTGROUP(2)
	BNE sugroup
	RET

// One half block (two chunks) of the multiplier kernel into V0-V7.
#define HALF2 \
	CODES \
	WEIGHTS8 \
	SMMLA8(0, 16) \
	CODES \
	WEIGHTS8 \
	SMMLA8(0, 16)

// The multipliers of column pair j in both halves of V24 (the tiles'
// column order: c, c+1, c, c+1), from the sixteen in V20-V23.
#define MPAIR(src, lane) VDUP src.D[lane], V24.D2

// func kernelSMMLAMul2x16(ng int, nb int, a *uint8, as int, ds *float32, dss int, b *int8, aux *int32, f *float32, t *float32, c *float32, ldc int, flags int)
// Two rows (one pair) by sixteen columns, for blocks with a multiplier per
// half (vnniFlagMul): each half's tiles in V0-V7, the block's S = m0·A +
// m1·B in V8-V15 (MUL, then MLA, by the multipliers laid out as the tiles'
// columns).
TEXT ·kernelSMMLAMul2x16(SB), NOSPLIT, $0-104
	ARGS

smgroup:
	GROUP
	CLEARROW
	CLEARROW

smblock:
	ZERO4(V0, V1, V2, V3)
	ZERO4(V4, V5, V6, V7)
	HALF2
	ADD  $64, R21, R24
	VLD1 (R24), [V20.S4, V21.S4, V22.S4, V23.S4] // m0 of the 16 columns
	MPAIR(V20, 0)
	MUL4S(8, 0, 24)
	MPAIR(V20, 1)
	MUL4S(9, 1, 24)
	MPAIR(V21, 0)
	MUL4S(10, 2, 24)
	MPAIR(V21, 1)
	MUL4S(11, 3, 24)
	MPAIR(V22, 0)
	MUL4S(12, 4, 24)
	MPAIR(V22, 1)
	MUL4S(13, 5, 24)
	MPAIR(V23, 0)
	MUL4S(14, 6, 24)
	MPAIR(V23, 1)
	MUL4S(15, 7, 24)
	ZERO4(V0, V1, V2, V3)
	ZERO4(V4, V5, V6, V7)
	HALF2
	ADD  $128, R21, R24
	VLD1 (R24), [V20.S4, V21.S4, V22.S4, V23.S4] // m1
	MPAIR(V20, 0)
	MLA4S(8, 0, 24)
	MPAIR(V20, 1)
	MLA4S(9, 1, 24)
	MPAIR(V21, 0)
	MLA4S(10, 2, 24)
	MPAIR(V21, 1)
	MLA4S(11, 3, 24)
	MPAIR(V22, 0)
	MLA4S(12, 4, 24)
	MPAIR(V22, 1)
	MLA4S(13, 5, 24)
	MPAIR(V23, 0)
	MLA4S(14, 6, 24)
	MPAIR(V23, 1)
	MLA4S(15, 7, 24)
	ADD  $256, R21, R21
	UNTILE8(V8, V9, V10, V11, V12, V13, V14, V15)
	FACTORS
	VLD1.P 16(R20), [V24.S4] // (dx, dx·Σq) of rows 0, 1
	MOVD   R9, R19
	TBNZ   $1, R12, smmin
	EPIROW(8, 10, 12, 14, 24, 0)
	PUTROW
	EPIROW(9, 11, 13, 15, 24, 2)
	PUTROW
	JMP    smnext

smmin:
	EPIROW(8, 10, 12, 14, 24, 0)
	MINROW(24, 0)
	PUTROW
	EPIROW(9, 11, 13, 15, 24, 2)
	MINROW(24, 2)
	PUTROW

smnext:
	SUBS $1, R22, R22
	BNE  smblock
	MOVD R9, R19
	MOVD R10, R23
	TBNZ $0, R12, smadd
	SETROW
	SETROW
	JMP  smout

smadd:
	ADDROW
	ADDROW

smout:
	NEXTGROUP(1)
	BNE smgroup
	RET
