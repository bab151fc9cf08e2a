#include "textflag.h"
#include "neon_arm64.h"

// One row's part of a k step of the 6x16 kernel: the row's a value
// broadcast to bc (advancing its pointer), four FMLAs by the panel row in
// V24-V27 into the row's accumulators.
#define FROW(rowp, bc, c0, c1, c2, c3) \
	VLD1R.P 4(rowp), [bc.S4]     \
	VFMLA   V24.S4, bc.S4, c0.S4 \
	VFMLA   V25.S4, bc.S4, c1.S4 \
	VFMLA   V26.S4, bc.S4, c2.S4 \
	VFMLA   V27.S4, bc.S4, c3.S4

// Add one row of c (at p) into four accumulators, c + acc as avx2's
// VADDPS does.
#define ADDROW(p, d0) \
	VLD1 (p), [V24.S4, V25.S4, V26.S4, V27.S4] \
	FADD4S(d0, d0, 24)                          \
	FADD4S(d0+1, d0+1, 25)                      \
	FADD4S(d0+2, d0+2, 26)                      \
	FADD4S(d0+3, d0+3, 27)

// One row's part of a k-pair step of the 6x16 bfloat16 kernel: the row's
// pair of activations broadcast to bc, four BFDOTs (each lane: the two
// products of a column's pair added to its float32 sum) by the panel's
// pair row in V24-V27.
#define BROW(rowp, bc, nbc, c0) \
	VLD1R.P 4(rowp), [bc.S4] \
	BFDOT(c0, 24, nbc)       \
	BFDOT(c0+1, 25, nbc)     \
	BFDOT(c0+2, 26, nbc)     \
	BFDOT(c0+3, 27, nbc)

// Load the arguments: R0 kc, R1 and R4-R8 the six rows of a, R3 b.
#define ARGS6 \
	MOVD kc+0(FP), R0  \
	MOVD a+8(FP), R1   \
	MOVD lda+16(FP), R2 \
	LSL  $2, R2        \
	MOVD b+24(FP), R3  \
	ADD  R2, R1, R4    \
	ADD  R2, R4, R5    \
	ADD  R2, R5, R6    \
	ADD  R2, R6, R7    \
	ADD  R2, R7, R8

#define ZERO4(a, b, c, d) \
	VEOR a.B16, a.B16, a.B16 \
	VEOR b.B16, b.B16, b.B16 \
	VEOR c.B16, c.B16, c.B16 \
	VEOR d.B16, d.B16, d.B16

#define ZERO24 \
	ZERO4(V0, V1, V2, V3)     \
	ZERO4(V4, V5, V6, V7)     \
	ZERO4(V8, V9, V10, V11)   \
	ZERO4(V12, V13, V14, V15) \
	ZERO4(V16, V17, V18, V19) \
	ZERO4(V20, V21, V22, V23)

// c += the accumulators (R12 walks the rows, R10 their stride).
#define ADDC \
	MOVD R9, R12     \
	ADDROW(R12, 0)   \
	ADD  R10, R12, R12 \
	ADDROW(R12, 4)   \
	ADD  R10, R12, R12 \
	ADDROW(R12, 8)   \
	ADD  R10, R12, R12 \
	ADDROW(R12, 12)  \
	ADD  R10, R12, R12 \
	ADDROW(R12, 16)  \
	ADD  R10, R12, R12 \
	ADDROW(R12, 20)

// c = the accumulators.
#define PUTC \
	VST1 [V0.S4, V1.S4, V2.S4, V3.S4], (R9)     \
	ADD  R10, R9, R9                            \
	VST1 [V4.S4, V5.S4, V6.S4, V7.S4], (R9)     \
	ADD  R10, R9, R9                            \
	VST1 [V8.S4, V9.S4, V10.S4, V11.S4], (R9)   \
	ADD  R10, R9, R9                            \
	VST1 [V12.S4, V13.S4, V14.S4, V15.S4], (R9) \
	ADD  R10, R9, R9                            \
	VST1 [V16.S4, V17.S4, V18.S4, V19.S4], (R9) \
	ADD  R10, R9, R9                            \
	VST1 [V20.S4, V21.S4, V22.S4, V23.S4], (R9)

// R9 c, R10 ldc in bytes, R11 acc.
#define CARGS \
	MOVD c+32(FP), R9   \
	MOVD ldc+40(FP), R10 \
	LSL  $2, R10        \
	MOVD acc+48(FP), R11

// func kernel6x16NEON(kc int, a *float32, lda int, b *float32, c *float32, ldc int, acc int)
// The 6x16 tile c (+)= a·b: row r in V(4r)..V(4r+3); each k step loads one
// 64-byte row of the packed panel (V24-V27) and one broadcast per row of
// a, and issues 24 FMLAs (24 independent chains: the FMLA latency of 4
// cycles on 2 pipes (Neoverse N1) or 4 (V1, V2) needs 8 or 16). Each
// output is a chain of fused multiply-adds in k order from zero, added to
// c at the end: kernel6x16AVX2's operations, so its bits.
TEXT ·kernel6x16NEON(SB), NOSPLIT, $0-56
	ARGS6
	ZERO24
	CBZ  R0, store

loop:
	VLD1.P 64(R3), [V24.S4, V25.S4, V26.S4, V27.S4]
	FROW(R1, V28, V0, V1, V2, V3)
	FROW(R4, V29, V4, V5, V6, V7)
	FROW(R5, V30, V8, V9, V10, V11)
	FROW(R6, V28, V12, V13, V14, V15)
	FROW(R7, V29, V16, V17, V18, V19)
	FROW(R8, V30, V20, V21, V22, V23)
	SUBS   $1, R0, R0
	BNE    loop

store:
	CARGS
	CBZ R11, write
	ADDC

write:
	PUTC
	RET

// func kernelBF16x6x16NEON(kp int, a *float32, lda int, b *float32, c *float32, ldc int, acc int)
// The 6x16 tile of the neon-bf16 tier on the pair layout (narrower,
// gemm.go): kp pairs of k, a's rows of lda words (bfloat16 pairs, value 2p
// in the low half), the panel's rows of 16 pair words. Each k-pair step:
// one 64-byte panel row, one broadcast pair per row, 24 BFDOTs (8
// multiply-adds each, twice FMLA's). BFDOT adds a lane's two products and
// then that to the sum with round-to-odd and denormals flushed (Arm's
// BFDotAdd without FPCR.EBF), within the bfloat16 tiers' bound.
TEXT ·kernelBF16x6x16NEON(SB), NOSPLIT, $0-56
	ARGS6
	ZERO24
	CBZ  R0, bstore

bloop:
	VLD1.P 64(R3), [V24.S4, V25.S4, V26.S4, V27.S4]
	BROW(R1, V28, 28, 0)
	BROW(R4, V29, 29, 4)
	BROW(R5, V30, 30, 8)
	BROW(R6, V28, 28, 12)
	BROW(R7, V29, 29, 16)
	BROW(R8, V30, 30, 20)
	SUBS   $1, R0, R0
	BNE    bloop

bstore:
	CARGS
	CBZ R11, bwrite
	ADDC

bwrite:
	PUTC
	RET
