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

// func kernel6x16NEON(kc int, a *float32, lda int, b *float32, c *float32, ldc int, acc int)
// The 6x16 tile c (+)= a·b: row r in V(4r)..V(4r+3); each k step loads one
// 64-byte row of the packed panel (V24-V27) and one broadcast per row of
// a, and issues 24 FMLAs (24 independent chains: the FMLA latency of 4
// cycles on 2 pipes (Neoverse N1) or 4 (V1, V2) needs 8 or 16). Each
// output is a chain of fused multiply-adds in k order from zero, added to
// c at the end: kernel6x16AVX2's operations, so its bits.
TEXT ·kernel6x16NEON(SB), NOSPLIT, $0-56
	MOVD kc+0(FP), R0
	MOVD a+8(FP), R1
	MOVD lda+16(FP), R2
	LSL  $2, R2
	MOVD b+24(FP), R3
	ADD  R2, R1, R4
	ADD  R2, R4, R5
	ADD  R2, R5, R6
	ADD  R2, R6, R7
	ADD  R2, R7, R8
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	VEOR V4.B16, V4.B16, V4.B16
	VEOR V5.B16, V5.B16, V5.B16
	VEOR V6.B16, V6.B16, V6.B16
	VEOR V7.B16, V7.B16, V7.B16
	VEOR V8.B16, V8.B16, V8.B16
	VEOR V9.B16, V9.B16, V9.B16
	VEOR V10.B16, V10.B16, V10.B16
	VEOR V11.B16, V11.B16, V11.B16
	VEOR V12.B16, V12.B16, V12.B16
	VEOR V13.B16, V13.B16, V13.B16
	VEOR V14.B16, V14.B16, V14.B16
	VEOR V15.B16, V15.B16, V15.B16
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V18.B16, V18.B16, V18.B16
	VEOR V19.B16, V19.B16, V19.B16
	VEOR V20.B16, V20.B16, V20.B16
	VEOR V21.B16, V21.B16, V21.B16
	VEOR V22.B16, V22.B16, V22.B16
	VEOR V23.B16, V23.B16, V23.B16
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
	MOVD c+32(FP), R9
	MOVD ldc+40(FP), R10
	LSL  $2, R10
	MOVD acc+48(FP), R11
	CBZ  R11, write
	MOVD R9, R12
	ADDROW(R12, 0)
	ADD  R10, R12, R12
	ADDROW(R12, 4)
	ADD  R10, R12, R12
	ADDROW(R12, 8)
	ADD  R10, R12, R12
	ADDROW(R12, 12)
	ADD  R10, R12, R12
	ADDROW(R12, 16)
	ADD  R10, R12, R12
	ADDROW(R12, 20)

write:
	VST1 [V0.S4, V1.S4, V2.S4, V3.S4], (R9)
	ADD  R10, R9, R9
	VST1 [V4.S4, V5.S4, V6.S4, V7.S4], (R9)
	ADD  R10, R9, R9
	VST1 [V8.S4, V9.S4, V10.S4, V11.S4], (R9)
	ADD  R10, R9, R9
	VST1 [V12.S4, V13.S4, V14.S4, V15.S4], (R9)
	ADD  R10, R9, R9
	VST1 [V16.S4, V17.S4, V18.S4, V19.S4], (R9)
	ADD  R10, R9, R9
	VST1 [V20.S4, V21.S4, V22.S4, V23.S4], (R9)
	RET
