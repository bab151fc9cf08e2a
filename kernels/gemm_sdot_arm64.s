#include "textflag.h"

// The SDOT kernels of the neon-dotprod tier (vnniKernel, gemm_vnni.go): per
// 32-value block the exact int32 sums of the signed activation codes q
// (the q+128 bytes with their top bit flipped: V31 holds 0x80 in every
// byte) by the signed weights, then the epilogue every integer tier does,
// in its order: t = fma(float(S), dx·fd, t), then t = fma(fm, dx·Σq, t)
// with i8FlagMin; per call c = t, or c += t with i8FlagAcc. The scratch
// tile t (rows x 16 floats) is cleared per group of rows.
//
// Registers: R0 groups left, R1 nb, R2 a, R3 as, R4 ds, R5 dss (bytes),
// R6 b, R7 aux, R8 f, R9 t, R10 c, R11 ldc (bytes), R12 flags; per group
// R13 activations, R14 weights, R15 factors, R20 ds, R21 aux, R22 blocks
// left, R19 the tile row, R23 the c row.

// Instructions the Go assembler lacks.
// sdot vd.4s, vn.16b, vm.4b[i]
#define SDOTE(d, n, m, i) WORD $(0x4F80E000 | ((i)&1)<<21 | (m)<<16 | ((i)>>1)<<11 | (n)<<5 | (d))
// fmul vd.4s, vn.4s, vm.s[i]
#define FMULE(d, n, m, i) WORD $(0x4F809000 | ((i)&1)<<21 | (m)<<16 | ((i)>>1)<<11 | (n)<<5 | (d))
// fmla vd.4s, vn.4s, vm.s[i]
#define FMLAE(d, n, m, i) WORD $(0x4F801000 | ((i)&1)<<21 | (m)<<16 | ((i)>>1)<<11 | (n)<<5 | (d))
// scvtf vd.4s, vd.4s
#define SCVTF4(d) WORD $(0x4E21D800 | (d)<<5 | (d))
// fadd vd.4s, vn.4s, vm.4s
#define FADD4(d, n, m) WORD $(0x4E20D400 | (m)<<16 | (n)<<5 | (d))
// mul vd.4s, vn.4s, vm.4s and mla vd.4s, vn.4s, vm.4s
#define MUL4(d, n, m) WORD $(0x4EA09C00 | (m)<<16 | (n)<<5 | (d))
#define MLA4(d, n, m) WORD $(0x4EA09400 | (m)<<16 | (n)<<5 | (d))

#define ARGS \
	MOVD ng+0(FP), R0    \
	MOVD nb+8(FP), R1    \
	MOVD a+16(FP), R2    \
	MOVD as+24(FP), R3   \
	MOVD ds+32(FP), R4   \
	MOVD dss+40(FP), R5  \
	LSL  $2, R5          \
	MOVD b+48(FP), R6    \
	MOVD aux+56(FP), R7  \
	MOVD f+64(FP), R8    \
	MOVD t+72(FP), R9    \
	MOVD c+80(FP), R10   \
	MOVD ldc+88(FP), R11 \
	LSL  $2, R11         \
	MOVD flags+96(FP), R12 \
	VMOVI $128, V31.B16

#define ZERO4(a, b, c, d) \
	VEOR a.B16, a.B16, a.B16 \
	VEOR b.B16, b.B16, b.B16 \
	VEOR c.B16, c.B16, c.B16 \
	VEOR d.B16, d.B16, d.B16

// Start a group: clear the tile's first row registers, reset the walkers.
#define GROUP \
	ZERO4(V26, V27, V28, V29) \
	MOVD R9, R19 \
	MOVD R2, R13 \
	MOVD R6, R14 \
	MOVD R8, R15 \
	MOVD R4, R20 \
	MOVD R7, R21 \
	MOVD R1, R22

#define CLEARROW VST1.P [V26.S4, V27.S4, V28.S4, V29.S4], 64(R19)

// One row's four SDOTs: weights w..w+3, the row's codes in lane i of V16,
// into accumulators d..d+3.
#define SDOTROW(d, w, i) \
	SDOTE(d, w, 16, i)     \
	SDOTE(d+1, w+1, 16, i) \
	SDOTE(d+2, w+2, 16, i) \
	SDOTE(d+3, w+3, 16, i)

// Load 16 bytes of codes into V16 as signed bytes.
#define CODES \
	VLD1.P 16(R13), [V16.B16] \
	VEOR   V31.B16, V16.B16, V16.B16

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

// The block's factors: fd in V16-V19, fm in V20-V23.
#define FACTORS \
	VLD1.P 64(R15), [V16.S4, V17.S4, V18.S4, V19.S4] \
	VLD1.P 64(R15), [V20.S4, V21.S4, V22.S4, V23.S4]

// A tile row: the block sums s..s+3 (Vs0..Vs3 their names) into the row of
// t at R19 (advanced), dx in lane i of register dr, dx·Σq in lane i+1.
#define EPIROW(s, vs0, vs1, vs2, vs3, dr, i) \
	VLD1 (R19), [V26.S4, V27.S4, V28.S4, V29.S4] \
	FMULE(30, 16, dr, i) \
	SCVTF4(s)            \
	VFMLA V30.S4, vs0.S4, V26.S4 \
	FMULE(30, 17, dr, i) \
	SCVTF4(s+1)          \
	VFMLA V30.S4, vs1.S4, V27.S4 \
	FMULE(30, 18, dr, i) \
	SCVTF4(s+2)          \
	VFMLA V30.S4, vs2.S4, V28.S4 \
	FMULE(30, 19, dr, i) \
	SCVTF4(s+3)          \
	VFMLA V30.S4, vs3.S4, V29.S4

// EPIROW's offsets: t += fm·(dx·Σq), fused, after the products.
#define MINROW(dr, i) \
	FMLAE(26, 20, dr, i+1) \
	FMLAE(27, 21, dr, i+1) \
	FMLAE(28, 22, dr, i+1) \
	FMLAE(29, 23, dr, i+1)

#define PUTROW VST1.P [V26.S4, V27.S4, V28.S4, V29.S4], 64(R19)

// Write one row of c from the tile (SETROW), or add the tile into it
// (ADDROW: c + t), then step to the next.
#define SETROW \
	VLD1.P 64(R19), [V26.S4, V27.S4, V28.S4, V29.S4] \
	VST1   [V26.S4, V27.S4, V28.S4, V29.S4], (R23)   \
	ADD    R11, R23, R23

#define ADDROW \
	VLD1.P 64(R19), [V26.S4, V27.S4, V28.S4, V29.S4] \
	VLD1   (R23), [V0.S4, V1.S4, V2.S4, V3.S4]       \
	FADD4(26, 0, 26) \
	FADD4(27, 1, 27) \
	FADD4(28, 2, 28) \
	FADD4(29, 3, 29) \
	VST1   [V26.S4, V27.S4, V28.S4, V29.S4], (R23)   \
	ADD    R11, R23, R23

// Next group: step a, ds and c (by rows rows of ldc, as a shift).
#define NEXTGROUP(shift) \
	ADD  R3, R2, R2          \
	ADD  R5, R4, R4          \
	ADD  R11<<shift, R10, R10 \
	SUBS $1, R0, R0

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
	EPIROW(0, V0, V1, V2, V3, 24, 0)
	PUTROW
	EPIROW(4, V4, V5, V6, V7, 24, 2)
	PUTROW
	EPIROW(8, V8, V9, V10, V11, 25, 0)
	PUTROW
	EPIROW(12, V12, V13, V14, V15, 25, 2)
	PUTROW
	JMP    unext

umin:
	EPIROW(0, V0, V1, V2, V3, 24, 0)
	MINROW(24, 0)
	PUTROW
	EPIROW(4, V4, V5, V6, V7, 24, 2)
	MINROW(24, 2)
	PUTROW
	EPIROW(8, V8, V9, V10, V11, 25, 0)
	MINROW(25, 0)
	PUTROW
	EPIROW(12, V12, V13, V14, V15, 25, 2)
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
	MUL4(8, 0, 20)
	MUL4(9, 1, 21)
	MUL4(10, 2, 22)
	MUL4(11, 3, 23)
	MUL4(12, 4, 20)
	MUL4(13, 5, 21)
	MUL4(14, 6, 22)
	MUL4(15, 7, 23)
	ZERO4(V0, V1, V2, V3)
	ZERO4(V4, V5, V6, V7)
	KPAIR2
	KPAIR2
	ADD  $128, R21, R24
	VLD1 (R24), [V20.S4, V21.S4, V22.S4, V23.S4] // m1
	MLA4(8, 0, 20)
	MLA4(9, 1, 21)
	MLA4(10, 2, 22)
	MLA4(11, 3, 23)
	MLA4(12, 4, 20)
	MLA4(13, 5, 21)
	MLA4(14, 6, 22)
	MLA4(15, 7, 23)
	ADD  $256, R21, R21
	FACTORS
	VLD1.P 16(R20), [V24.S4] // (dx, dx·Σq) of rows 0, 1
	MOVD   R9, R19
	TBNZ   $1, R12, mmin
	EPIROW(8, V8, V9, V10, V11, 24, 0)
	PUTROW
	EPIROW(12, V12, V13, V14, V15, 24, 2)
	PUTROW
	JMP    mnext

mmin:
	EPIROW(8, V8, V9, V10, V11, 24, 0)
	MINROW(24, 0)
	PUTROW
	EPIROW(12, V12, V13, V14, V15, 24, 2)
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
