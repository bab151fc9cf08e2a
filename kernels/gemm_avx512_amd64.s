#include "textflag.h"
#include "tile8x32_amd64.h"

// The avx512 tier's float32 microkernel: an 8x32 tile of c in 16 zmm
// accumulators (row r in Z(2r), Z(2r+1)), with the two 16-wide vectors of a
// packed 32-wide panel row in Z28, Z29 and the broadcast a values
// alternating in Z30 and Z31. Each k step loads 2 panel vectors and 8 a
// values for 16 FMAs. Taller tiles (10, 12 and 14 rows, up to all 32
// registers) load less per FMA but measured 3-6% slower on Zen 5 at the
// shapes that matter (512x2048x2048, 1024x1280x3420): their rows of a,
// often a multiple of 4 KiB apart, overflow the ways of one L1 set.
//
// Every output is accumulated in k order from zero by FMA, then added to c
// when acc is set, exactly as the avx2 6x16 kernel does: the two tiers give
// the same bits for the same panels.
//
// Rows of a: R8, R8+DX, R8+2DX, R9 = R8+3DX, ... (DX = lda in bytes).

#define KSTEP8(aoff, boff) \
	VMOVUPS boff(BX), Z28 \
	VMOVUPS boff+64(BX), Z29 \
	VBROADCASTSS aoff(R8), Z30 \
	VFMADD231PS Z28, Z30, Z0 \
	VFMADD231PS Z29, Z30, Z1 \
	VBROADCASTSS aoff(R8)(DX*1), Z31 \
	VFMADD231PS Z28, Z31, Z2 \
	VFMADD231PS Z29, Z31, Z3 \
	VBROADCASTSS aoff(R8)(DX*2), Z30 \
	VFMADD231PS Z28, Z30, Z4 \
	VFMADD231PS Z29, Z30, Z5 \
	VBROADCASTSS aoff(R9), Z31 \
	VFMADD231PS Z28, Z31, Z6 \
	VFMADD231PS Z29, Z31, Z7 \
	VBROADCASTSS aoff(R9)(DX*1), Z30 \
	VFMADD231PS Z28, Z30, Z8 \
	VFMADD231PS Z29, Z30, Z9 \
	VBROADCASTSS aoff(R9)(DX*2), Z31 \
	VFMADD231PS Z28, Z31, Z10 \
	VFMADD231PS Z29, Z31, Z11 \
	VBROADCASTSS aoff(R10), Z30 \
	VFMADD231PS Z28, Z30, Z12 \
	VFMADD231PS Z29, Z30, Z13 \
	VBROADCASTSS aoff(R10)(DX*1), Z31 \
	VFMADD231PS Z28, Z31, Z14 \
	VFMADD231PS Z29, Z31, Z15

// func kernel8x32AVX512(kc int, a *float32, lda int, b *float32, c *float32, ldc int, acc int)
TEXT ·kernel8x32AVX512(SB), NOSPLIT, $0-56
	MOVQ kc+0(FP), CX
	TILE8X32_ROWS
	ZERO16

	MOVQ CX, R13
	SHRQ $2, R13
	JZ   tail

loop4:
	KSTEP8(0, 0)
	KSTEP8(4, 128)
	KSTEP8(8, 256)
	KSTEP8(12, 384)
	ADDQ $16, R8
	ADDQ $16, R9
	ADDQ $16, R10
	ADDQ $512, BX
	DECQ R13
	JNZ  loop4

tail:
	ANDQ $3, CX
	JZ   store

loop1:
	KSTEP8(0, 0)
	ADDQ $4, R8
	ADDQ $4, R9
	ADDQ $4, R10
	ADDQ $128, BX
	DECQ CX
	JNZ  loop1

store:
	TILE8X32_ADD

write:
	TILE8X32_WRITE
	VZEROUPPER
	RET

// The avx512 tier's narrow float32 microkernel, for the last value panel of
// an attention head whose size leaves 16 columns or fewer past the 32-wide
// panels (80 = 2·32 + 16, the Qwen2-VL vision head): an 8x16 tile in
// Z0..Z7 (row r in Zr), the panel row in Z28 and the broadcast a values in
// Z16..Z23. Eight independent accumulators keep both FMA pipes busy; each k
// step loads one panel vector and 8 a values for 8 FMAs. Every output is
// accumulated in k order from zero by FMA, then added to c when acc is set,
// as in the 8x32 kernel: the same bits as a 32-wide panel's first 16
// columns.

#define KSTEP16(aoff, boff) \
	VMOVUPS boff(BX), Z28 \
	VBROADCASTSS aoff(R8), Z16 \
	VBROADCASTSS aoff(R8)(DX*1), Z17 \
	VBROADCASTSS aoff(R8)(DX*2), Z18 \
	VBROADCASTSS aoff(R9), Z19 \
	VBROADCASTSS aoff(R9)(DX*1), Z20 \
	VBROADCASTSS aoff(R9)(DX*2), Z21 \
	VBROADCASTSS aoff(R10), Z22 \
	VBROADCASTSS aoff(R10)(DX*1), Z23 \
	VFMADD231PS Z28, Z16, Z0 \
	VFMADD231PS Z28, Z17, Z1 \
	VFMADD231PS Z28, Z18, Z2 \
	VFMADD231PS Z28, Z19, Z3 \
	VFMADD231PS Z28, Z20, Z4 \
	VFMADD231PS Z28, Z21, Z5 \
	VFMADD231PS Z28, Z22, Z6 \
	VFMADD231PS Z28, Z23, Z7

// func kernel8x16AVX512(kc int, a *float32, lda int, b *float32, c *float32, ldc int, acc int)
TEXT ·kernel8x16AVX512(SB), NOSPLIT, $0-56
	MOVQ kc+0(FP), CX
	TILE8X32_ROWS
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7

	MOVQ CX, R13
	SHRQ $2, R13
	JZ   tail

loop4:
	KSTEP16(0, 0)
	KSTEP16(4, 64)
	KSTEP16(8, 128)
	KSTEP16(12, 192)
	ADDQ $16, R8
	ADDQ $16, R9
	ADDQ $16, R10
	ADDQ $256, BX
	DECQ R13
	JNZ  loop4

tail:
	ANDQ $3, CX
	JZ   store

loop1:
	KSTEP16(0, 0)
	ADDQ $4, R8
	ADDQ $4, R9
	ADDQ $4, R10
	ADDQ $64, BX
	DECQ CX
	JNZ  loop1

store:
	MOVQ c+32(FP), DI
	MOVQ ldc+40(FP), SI
	SHLQ $2, SI
	LEAQ (DI)(SI*2), R8
	ADDQ SI, R8
	LEAQ (R8)(SI*2), R9
	ADDQ SI, R9
	MOVQ acc+48(FP), AX
	TESTQ AX, AX
	JZ   write
	VADDPS 0(DI), Z0, Z0
	VADDPS 0(DI)(SI*1), Z1, Z1
	VADDPS 0(DI)(SI*2), Z2, Z2
	VADDPS 0(R8), Z3, Z3
	VADDPS 0(R8)(SI*1), Z4, Z4
	VADDPS 0(R8)(SI*2), Z5, Z5
	VADDPS 0(R9), Z6, Z6
	VADDPS 0(R9)(SI*1), Z7, Z7

write:
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 0(DI)(SI*1)
	VMOVUPS Z2, 0(DI)(SI*2)
	VMOVUPS Z3, 0(R8)
	VMOVUPS Z4, 0(R8)(SI*1)
	VMOVUPS Z5, 0(R8)(SI*2)
	VMOVUPS Z6, 0(R9)
	VMOVUPS Z7, 0(R9)(SI*1)
	VZEROUPPER
	RET
