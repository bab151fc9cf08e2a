#include "textflag.h"

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

// End of a block for one row, as EPI of gemm_int8_amd64.s: c += float(isum)·
// (dx·fd) (+ fm·(dx·Σq) in UEPIMIN), fd at 0(R13), fm at 64(R13).
#define UEPI(ya, yb, dxa, lo, hi) \
	VCVTDQ2PS ya, ya \
	VCVTDQ2PS yb, yb \
	VBROADCASTSS dxa, Y14 \
	VMULPS 0(R13), Y14, Y12 \
	VMULPS 32(R13), Y14, Y13 \
	VFMADD213PS lo, Y12, ya \
	VFMADD213PS hi, Y13, yb \
	VMOVUPS ya, lo \
	VMOVUPS yb, hi

#define UEPIMIN(ya, yb, dxa, dsa, lo, hi) \
	VCVTDQ2PS ya, ya \
	VCVTDQ2PS yb, yb \
	VBROADCASTSS dxa, Y14 \
	VMULPS 0(R13), Y14, Y12 \
	VMULPS 32(R13), Y14, Y13 \
	VFMADD213PS lo, Y12, ya \
	VFMADD213PS hi, Y13, yb \
	VBROADCASTSS dsa, Y14 \
	VFMADD231PS 64(R13), Y14, ya \
	VFMADD231PS 96(R13), Y14, yb \
	VMOVUPS ya, lo \
	VMOVUPS yb, hi

// func kernelU8x3x16(nb int, a *uint8, ds *float32, b *int8, aux *int32, f *float32, t *float32, c *float32, ldc int, flags int)
//
// nb blocks of 32 k values. a: the three rows' activations (q+128)
// interleaved by groups of four (group p of row r at a[(3p+r)*4]), 96
// bytes per block. ds: per block the (dx, dx·Σq) of rows 0..2. b: the
// weights, 512 bytes per block (step s, column j at s*64+j*4). aux: per
// block 48 int32: the sixteen columns' starting sums −128·Σ m·w, which
// remove the +128 of the activations, then the int16 multiplier pairs m of
// k 0..15 and of k 16..31. f: 32 floats per block (fd, fm). t: 3x16
// float32 scratch tile. c: the output, rows ldc apart, written (flags bit
// 0: added to) at the end. flags bit 1: apply fm; bit 2: four-step groups.
TEXT ·kernelU8x3x16(SB), NOSPLIT, $0-80
	MOVQ a+8(FP), AX
	MOVQ ds+16(FP), R11
	MOVQ b+24(FP), BX
	MOVQ aux+32(FP), R12
	MOVQ f+40(FP), R13
	MOVQ t+48(FP), DI
	MOVQ nb+0(FP), CX

	VXORPS Y0, Y0, Y0
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y0, 32(DI)
	VMOVUPS Y0, 64(DI)
	VMOVUPS Y0, 96(DI)
	VMOVUPS Y0, 128(DI)
	VMOVUPS Y0, 160(DI)
	TESTQ CX, CX
	JZ   store

block:
	VMOVDQU 0(R12), Y0
	VMOVDQU 32(R12), Y1
	VMOVDQA Y0, Y2
	VMOVDQA Y1, Y3
	VMOVDQA Y0, Y4
	VMOVDQA Y1, Y5
	TESTQ $4, flags+72(FP)
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

	TESTQ $2, flags+72(FP)
	JNZ  withmin
	UEPI(Y0, Y1, 0(R11), 0(DI), 32(DI))
	UEPI(Y2, Y3, 8(R11), 64(DI), 96(DI))
	UEPI(Y4, Y5, 16(R11), 128(DI), 160(DI))
	JMP  next

withmin:
	UEPIMIN(Y0, Y1, 0(R11), 4(R11), 0(DI), 32(DI))
	UEPIMIN(Y2, Y3, 8(R11), 12(R11), 64(DI), 96(DI))
	UEPIMIN(Y4, Y5, 16(R11), 20(R11), 128(DI), 160(DI))

next:
	ADDQ $24, R11
	ADDQ $128, R13
	DECQ CX
	JNZ  block

store:
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	MOVQ c+56(FP), DI
	MOVQ ldc+64(FP), SI
	SHLQ $2, SI
	TESTQ $1, flags+72(FP)
	JZ   write
	VADDPS 0(DI), Y0, Y0
	VADDPS 32(DI), Y1, Y1
	VADDPS 0(DI)(SI*1), Y2, Y2
	VADDPS 32(DI)(SI*1), Y3, Y3
	VADDPS 0(DI)(SI*2), Y4, Y4
	VADDPS 32(DI)(SI*2), Y5, Y5

write:
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 0(DI)(SI*1)
	VMOVUPS Y3, 32(DI)(SI*1)
	VMOVUPS Y4, 0(DI)(SI*2)
	VMOVUPS Y5, 32(DI)(SI*2)
	VZEROUPPER
	RET
