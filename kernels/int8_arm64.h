// The scaffolding shared by the integer kernels of the arm64 tiers
// (gemm_sdot_arm64.s, gemm_smmla_arm64.s): vnniKernels (gemm_vnni.go) that
// compute per 32-value block the exact int32 sums S of the signed
// activation codes q (the q+128 bytes with their top bit flipped: V31
// holds 0x80 in every byte) by the signed weights, then the epilogue every
// integer tier does, in its order: t = fma(float(S), dx·fd, t), then
// t = fma(fm, dx·Σq, t) with i8FlagMin; per call c = t, or c += t with
// i8FlagAcc. The scratch tile t (rows x 16 floats) is cleared per group.
//
// Registers: R0 groups left, R1 nb, R2 a, R3 as, R4 ds, R5 dss (bytes),
// R6 b, R7 aux, R8 f, R9 t, R10 c, R11 ldc (bytes), R12 flags; per group
// R13 activations, R14 weights, R15 factors, R20 ds, R21 aux, R22 blocks
// left, R19 the tile row, R23 the c row. The epilogue uses V16-V30.

#include "neon_arm64.h"

// Load 16 bytes of codes into V16 as signed bytes.
#define CODES \
	VLD1.P 16(R13), [V16.B16] \
	VEOR   V31.B16, V16.B16, V16.B16

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

// The block's factors: fd in V16-V19, fm in V20-V23.
#define FACTORS \
	VLD1.P 64(R15), [V16.S4, V17.S4, V18.S4, V19.S4] \
	VLD1.P 64(R15), [V20.S4, V21.S4, V22.S4, V23.S4]

// A tile row: the block sums of columns 0-3, 4-7, 8-11 and 12-15 in
// registers s0..s3 (converted in place) into the row of t at R19, dx in
// lane i of register dr, dx·Σq in lane i+1: per vector V30 = dx·fd, then
// t += float(S)·V30, fused.
#define EPIROW(s0, s1, s2, s3, dr, i) \
	VLD1 (R19), [V26.S4, V27.S4, V28.S4, V29.S4] \
	FMULE(30, 16, dr, i)  \
	SCVTF4S(s0, s0)       \
	FMLA4S(26, s0, 30)    \
	FMULE(30, 17, dr, i)  \
	SCVTF4S(s1, s1)       \
	FMLA4S(27, s1, 30)    \
	FMULE(30, 18, dr, i)  \
	SCVTF4S(s2, s2)       \
	FMLA4S(28, s2, 30)    \
	FMULE(30, 19, dr, i)  \
	SCVTF4S(s3, s3)       \
	FMLA4S(29, s3, 30)

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
	FADD4S(26, 0, 26) \
	FADD4S(27, 1, 27) \
	FADD4S(28, 2, 28) \
	FADD4S(29, 3, 29) \
	VST1   [V26.S4, V27.S4, V28.S4, V29.S4], (R23)   \
	ADD    R11, R23, R23

// Next group: step a, ds and c (by rows rows of ldc, as a shift).
#define NEXTGROUP(shift) \
	ADD  R3, R2, R2          \
	ADD  R5, R4, R4          \
	ADD  R11<<shift, R10, R10 \
	SUBS $1, R0, R0

