#include "textflag.h"

// The u8×s8 microkernel of the avx2-int8 tier (see gemm_int8_u8.go): a 4x16
// tile, eight int32 accumulators Y0..Y7 (row r in Y(2r), Y(2r+1)). Weights
// are signed bytes in groups of four k per column, activations unsigned
// bytes (q+128) broadcast four at a time. VPMADDUBSW multiplies 32 byte
// pairs and adds neighbours into int16 (|w| ≤ 64 keeps 2·255·64 below
// 2¹⁵), VPMADDWD by the columns' int16 multipliers Y13/Y14 (1, or a
// sub-block scale) adds those into int32.

// One step of four k values for one row: activations at aoff(AX).
#define UROW(aoff, acc0, acc1) \
	VPBROADCASTD aoff(AX), Y10 \
	VPMADDUBSW Y8, Y10, Y11 \
	VPMADDWD Y13, Y11, Y11 \
	VPADDD Y11, acc0, acc0 \
	VPMADDUBSW Y9, Y10, Y12 \
	VPMADDWD Y14, Y12, Y12 \
	VPADDD Y12, acc1, acc1

// One step of four k values: sixteen columns at boff(BX), four rows.
#define USTEP(aoff, boff) \
	VMOVDQU boff(BX), Y8 \
	VMOVDQU boff+32(BX), Y9 \
	UROW(aoff, Y0, Y1) \
	UROW(aoff+4, Y2, Y3) \
	UROW(aoff+8, Y4, Y5) \
	UROW(aoff+12, Y6, Y7)

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

// func kernelU8x4x16(nb int, a *uint8, ds *float32, b *int8, aux *int32, f *float32, t *float32, c *float32, ldc int, flags int)
//
// nb blocks of 32 k values. a: the four rows' activations (q+128)
// interleaved by groups of four (group p of row r at a[(4p+r)*4]), 128
// bytes per block. ds: per block the (dx, dx·Σq) of rows 0..3. b: the
// weights, 512 bytes per block (step s, column j at s*64+j*4). aux: per
// block 48 int32: the sixteen columns' starting sums −128·Σ m·w, which
// remove the +128 of the activations, then the int16 multiplier pairs m of
// k 0..15 and of k 16..31. f: 32 floats per block (fd, fm). t: 4x16 float32
// scratch tile. c: the output, rows ldc apart, written (flags bit 0: added
// to) at the end. flags bit 1: apply fm.
TEXT ·kernelU8x4x16(SB), NOSPLIT, $0-80
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
	VMOVUPS Y0, 192(DI)
	VMOVUPS Y0, 224(DI)
	TESTQ CX, CX
	JZ   store

block:
	VMOVDQU 0(R12), Y0
	VMOVDQU 32(R12), Y1
	VMOVDQA Y0, Y2
	VMOVDQA Y1, Y3
	VMOVDQA Y0, Y4
	VMOVDQA Y1, Y5
	VMOVDQA Y0, Y6
	VMOVDQA Y1, Y7
	VMOVDQU 64(R12), Y13
	VMOVDQU 96(R12), Y14
	USTEP(0, 0)
	USTEP(16, 64)
	USTEP(32, 128)
	USTEP(48, 192)
	VMOVDQU 128(R12), Y13
	VMOVDQU 160(R12), Y14
	USTEP(64, 256)
	USTEP(80, 320)
	USTEP(96, 384)
	USTEP(112, 448)
	ADDQ $128, AX
	ADDQ $512, BX
	ADDQ $192, R12

	TESTQ $2, flags+72(FP)
	JNZ  withmin
	UEPI(Y0, Y1, 0(R11), 0(DI), 32(DI))
	UEPI(Y2, Y3, 8(R11), 64(DI), 96(DI))
	UEPI(Y4, Y5, 16(R11), 128(DI), 160(DI))
	UEPI(Y6, Y7, 24(R11), 192(DI), 224(DI))
	JMP  next

withmin:
	UEPIMIN(Y0, Y1, 0(R11), 4(R11), 0(DI), 32(DI))
	UEPIMIN(Y2, Y3, 8(R11), 12(R11), 64(DI), 96(DI))
	UEPIMIN(Y4, Y5, 16(R11), 20(R11), 128(DI), 160(DI))
	UEPIMIN(Y6, Y7, 24(R11), 28(R11), 192(DI), 224(DI))

next:
	ADDQ $32, R11
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
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	MOVQ c+56(FP), DI
	MOVQ ldc+64(FP), SI
	SHLQ $2, SI
	LEAQ (DI)(SI*2), R10
	TESTQ $1, flags+72(FP)
	JZ   write
	VADDPS 0(DI), Y0, Y0
	VADDPS 32(DI), Y1, Y1
	VADDPS 0(DI)(SI*1), Y2, Y2
	VADDPS 32(DI)(SI*1), Y3, Y3
	VADDPS 0(R10), Y4, Y4
	VADDPS 32(R10), Y5, Y5
	VADDPS 0(R10)(SI*1), Y6, Y6
	VADDPS 32(R10)(SI*1), Y7, Y7

write:
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 0(DI)(SI*1)
	VMOVUPS Y3, 32(DI)(SI*1)
	VMOVUPS Y4, 0(R10)
	VMOVUPS Y5, 32(R10)
	VMOVUPS Y6, 0(R10)(SI*1)
	VMOVUPS Y7, 32(R10)(SI*1)
	VZEROUPPER
	RET
