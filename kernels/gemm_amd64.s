#include "textflag.h"

// One k step of the 6x16 kernel: two 8-wide B vectors at boff(BX), one
// broadcast per A row at aoff from the six row pointers, twelve FMAs into
// the accumulators Y0..Y11 (row r in Y(2r), Y(2r+1)).
#define KSTEP(aoff, boff) \
	VMOVUPS boff(BX), Y12 \
	VMOVUPS boff+32(BX), Y13 \
	VBROADCASTSS aoff(AX), Y14 \
	VFMADD231PS Y12, Y14, Y0 \
	VFMADD231PS Y13, Y14, Y1 \
	VBROADCASTSS aoff(AX)(DX*1), Y15 \
	VFMADD231PS Y12, Y15, Y2 \
	VFMADD231PS Y13, Y15, Y3 \
	VBROADCASTSS aoff(AX)(DX*2), Y14 \
	VFMADD231PS Y12, Y14, Y4 \
	VFMADD231PS Y13, Y14, Y5 \
	VBROADCASTSS aoff(R8), Y15 \
	VFMADD231PS Y12, Y15, Y6 \
	VFMADD231PS Y13, Y15, Y7 \
	VBROADCASTSS aoff(R8)(DX*1), Y14 \
	VFMADD231PS Y12, Y14, Y8 \
	VFMADD231PS Y13, Y14, Y9 \
	VBROADCASTSS aoff(R8)(DX*2), Y15 \
	VFMADD231PS Y12, Y15, Y10 \
	VFMADD231PS Y13, Y15, Y11

// Clear the twelve accumulators.
#define ZERO12 \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
	VXORPS Y4, Y4, Y4 \
	VXORPS Y5, Y5, Y5 \
	VXORPS Y6, Y6, Y6 \
	VXORPS Y7, Y7, Y7 \
	VXORPS Y8, Y8, Y8 \
	VXORPS Y9, Y9, Y9 \
	VXORPS Y10, Y10, Y10 \
	VXORPS Y11, Y11, Y11

// Store (or add into) one row of C from two accumulators.
#define STOREROW(lo, hi, ya, yb) \
	VMOVUPS ya, lo \
	VMOVUPS yb, hi

#define ADDROW(lo, hi, ya, yb) \
	VADDPS lo, ya, ya \
	VADDPS hi, yb, yb

// func kernel6x16AVX2(kc int, a *float32, lda int, b *float32, c *float32, ldc int, acc int)
TEXT ·kernel6x16AVX2(SB), NOSPLIT, $0-56
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ lda+16(FP), DX
	SHLQ $2, DX
	MOVQ b+24(FP), BX
	LEAQ (AX)(DX*2), R8
	ADDQ DX, R8

	ZERO12

	MOVQ CX, R9
	SHRQ $2, R9
	JZ   tail

loop4:
	KSTEP(0, 0)
	KSTEP(4, 64)
	KSTEP(8, 128)
	KSTEP(12, 192)
	ADDQ $16, AX
	ADDQ $16, R8
	ADDQ $256, BX
	DECQ R9
	JNZ  loop4

tail:
	ANDQ $3, CX
	JZ   store

loop1:
	KSTEP(0, 0)
	ADDQ $4, AX
	ADDQ $4, R8
	ADDQ $64, BX
	DECQ CX
	JNZ  loop1

store:
	MOVQ c+32(FP), DI
	MOVQ ldc+40(FP), SI
	SHLQ $2, SI
	LEAQ (DI)(SI*2), R10
	ADDQ SI, R10
	MOVQ acc+48(FP), R11
	TESTQ R11, R11
	JZ   write
	ADDROW(0(DI), 32(DI), Y0, Y1)
	ADDROW(0(DI)(SI*1), 32(DI)(SI*1), Y2, Y3)
	ADDROW(0(DI)(SI*2), 32(DI)(SI*2), Y4, Y5)
	ADDROW(0(R10), 32(R10), Y6, Y7)
	ADDROW(0(R10)(SI*1), 32(R10)(SI*1), Y8, Y9)
	ADDROW(0(R10)(SI*2), 32(R10)(SI*2), Y10, Y11)

write:
	STOREROW(0(DI), 32(DI), Y0, Y1)
	STOREROW(0(DI)(SI*1), 32(DI)(SI*1), Y2, Y3)
	STOREROW(0(DI)(SI*2), 32(DI)(SI*2), Y4, Y5)
	STOREROW(0(R10), 32(R10), Y6, Y7)
	STOREROW(0(R10)(SI*1), 32(R10)(SI*1), Y8, Y9)
	STOREROW(0(R10)(SI*2), 32(R10)(SI*2), Y10, Y11)
	VZEROUPPER
	RET

// func fmaLoopAVX2(n int)
// n iterations of 12 independent 8-wide FMA chains (192 flops each): enough
// chains to cover the FMA latency on both FMA pipes, no memory traffic.
TEXT ·fmaLoopAVX2(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	ZERO12
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	TESTQ CX, CX
	JZ   done

fmaloop:
	VFMADD231PS Y12, Y13, Y0
	VFMADD231PS Y12, Y13, Y1
	VFMADD231PS Y12, Y13, Y2
	VFMADD231PS Y12, Y13, Y3
	VFMADD231PS Y12, Y13, Y4
	VFMADD231PS Y12, Y13, Y5
	VFMADD231PS Y12, Y13, Y6
	VFMADD231PS Y12, Y13, Y7
	VFMADD231PS Y12, Y13, Y8
	VFMADD231PS Y12, Y13, Y9
	VFMADD231PS Y12, Y13, Y10
	VFMADD231PS Y12, Y13, Y11
	DECQ CX
	JNZ  fmaloop

done:
	VZEROUPPER
	RET
