#include "textflag.h"
#include "int8_arm64.h"

// The SDOT kernels of the neon-dotprod tier (int8_arm64.h).

// One row's four SDOTs: weights w..w+3, the row's codes in lane i of V16,
// into accumulators d..d+3.
#define SDOTROW(d, w, i) \
	SDOTE(d, w, 16, i)     \
	SDOTE(d+1, w+1, 16, i) \
	SDOTE(d+2, w+2, 16, i) \
	SDOTE(d+3, w+3, 16, i)

// The unit kernel's k group of four: the four rows' codes (one per lane),
// 64 bytes of weights, 16 SDOTs.
#define KGROUP4 \
	CODES \
	VLD1.P 64(R14), [V20.B16, V21.B16, V22.B16, V23.B16] \
	SDOTROW(0, 20, 0)  \
	SDOTROW(4, 20, 1)  \
	SDOTROW(8, 20, 2)  \
	SDOTROW(12, 20, 3)

// The multiplier kernel's two k groups: the two rows' codes of each (lanes
// 0, 1, then 2, 3), 128 bytes of weights, 16 SDOTs.
#define KPAIR2 \
	CODES \
	VLD1.P 64(R14), [V20.B16, V21.B16, V22.B16, V23.B16] \
	VLD1.P 64(R14), [V24.B16, V25.B16, V26.B16, V27.B16] \
	SDOTROW(0, 20, 0) \
	SDOTROW(4, 20, 1) \
	SDOTROW(0, 24, 2) \
	SDOTROW(4, 24, 3)

// func kernelSDOTUnit4x16(ng int, nb int, a *uint8, as int, ds *float32, dss int, b *int8, aux *int32, f *float32, t *float32, c *float32, ldc int, flags int)
// Four rows by sixteen columns, for blocks without multipliers: the block
// sums in V0-V15 (row r, columns 4j..4j+3 in V(4r+j)). A k group of four
// is one 16-byte load of the four rows' codes, which SDOT by element
// broadcasts lane by lane, and four weight vectors: 16 SDOTs (256
// multiply-adds) per 5 loads and one EOR.
TEXT ·kernelSDOTUnit4x16(SB), NOSPLIT, $0-104
	ARGS

ugroup:
	GROUP
	CLEARROW
	CLEARROW
	CLEARROW
	CLEARROW

ublock:
	ZERO4(V0, V1, V2, V3)
	ZERO4(V4, V5, V6, V7)
	ZERO4(V8, V9, V10, V11)
	ZERO4(V12, V13, V14, V15)
	KGROUP4
	KGROUP4
	KGROUP4
	KGROUP4
	KGROUP4
	KGROUP4
	KGROUP4
	KGROUP4
	FACTORS
	VLD1.P 32(R20), [V24.S4, V25.S4] // (dx, dx·Σq) of rows 0, 1; 2, 3
	MOVD   R9, R19
	TBNZ   $1, R12, umin
	EPIROW(0, 1, 2, 3, 24, 0)
	PUTROW
	EPIROW(4, 5, 6, 7, 24, 2)
	PUTROW
	EPIROW(8, 9, 10, 11, 25, 0)
	PUTROW
	EPIROW(12, 13, 14, 15, 25, 2)
	PUTROW
	JMP    unext

umin:
	EPIROW(0, 1, 2, 3, 24, 0)
	MINROW(24, 0)
	PUTROW
	EPIROW(4, 5, 6, 7, 24, 2)
	MINROW(24, 2)
	PUTROW
	EPIROW(8, 9, 10, 11, 25, 0)
	MINROW(25, 0)
	PUTROW
	EPIROW(12, 13, 14, 15, 25, 2)
	MINROW(25, 2)
	PUTROW

unext:
	SUBS $1, R22, R22
	BNE  ublock
	MOVD R9, R19
	MOVD R10, R23
	TBNZ $0, R12, uadd
	SETROW
	SETROW
	SETROW
	SETROW
	JMP  uout

uadd:
	ADDROW
	ADDROW
	ADDROW
	ADDROW

uout:
	NEXTGROUP(2)
	BNE ugroup
	RET

// func kernelSDOTMul2x16(ng int, nb int, a *uint8, as int, ds *float32, dss int, b *int8, aux *int32, f *float32, t *float32, c *float32, ldc int, flags int)
// Two rows by sixteen columns, for blocks with a multiplier per half
// (vnniFlagMul): each half's sums in V0-V7, the block sum S = m0·A + m1·B
// in V8-V15 (MUL, then MLA, by the multipliers of aux); a 16-byte
// activation load holds two k groups of both rows.
TEXT ·kernelSDOTMul2x16(SB), NOSPLIT, $0-104
	ARGS

mgroup:
	GROUP
	CLEARROW
	CLEARROW

mblock:
	ZERO4(V0, V1, V2, V3)
	ZERO4(V4, V5, V6, V7)
	KPAIR2
	KPAIR2
	ADD  $64, R21, R24
	VLD1 (R24), [V20.S4, V21.S4, V22.S4, V23.S4] // m0 of the 16 columns
	MUL4S(8, 0, 20)
	MUL4S(9, 1, 21)
	MUL4S(10, 2, 22)
	MUL4S(11, 3, 23)
	MUL4S(12, 4, 20)
	MUL4S(13, 5, 21)
	MUL4S(14, 6, 22)
	MUL4S(15, 7, 23)
	ZERO4(V0, V1, V2, V3)
	ZERO4(V4, V5, V6, V7)
	KPAIR2
	KPAIR2
	ADD  $128, R21, R24
	VLD1 (R24), [V20.S4, V21.S4, V22.S4, V23.S4] // m1
	MLA4S(8, 0, 20)
	MLA4S(9, 1, 21)
	MLA4S(10, 2, 22)
	MLA4S(11, 3, 23)
	MLA4S(12, 4, 20)
	MLA4S(13, 5, 21)
	MLA4S(14, 6, 22)
	MLA4S(15, 7, 23)
	ADD  $256, R21, R21
	FACTORS
	VLD1.P 16(R20), [V24.S4] // (dx, dx·Σq) of rows 0, 1
	MOVD   R9, R19
	TBNZ   $1, R12, mmin
	EPIROW(8, 9, 10, 11, 24, 0)
	PUTROW
	EPIROW(12, 13, 14, 15, 24, 2)
	PUTROW
	JMP    mnext

mmin:
	EPIROW(8, 9, 10, 11, 24, 0)
	MINROW(24, 0)
	PUTROW
	EPIROW(12, 13, 14, 15, 24, 2)
	MINROW(24, 2)
	PUTROW

mnext:
	SUBS $1, R22, R22
	BNE  mblock
	MOVD R9, R19
	MOVD R10, R23
	TBNZ $0, R12, madd
	SETROW
	SETROW
	JMP  mout

madd:
	ADDROW
	ADDROW

mout:
	NEXTGROUP(1)
	BNE mgroup
	RET
