// Shared by the 8x32 zmm microkernels of the avx512 tier
// (gemm_avx512_amd64.s) and the avx512-bf16 tier (gemm_bf16_amd64.s): the
// accumulators Z0..Z15 (row r in Z(2r), Z(2r+1)), the addressing of the
// eight rows of a (R8, R8+DX, R8+2DX, R9 = R8+3DX, R9+DX, R9+2DX,
// R10 = R9+3DX, R10+DX; DX = lda in bytes) and of c, and the store that
// adds the tile to c when acc is set (jumping to the function's write
// label when it is not).

#define ZERO16 \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z7, Z7, Z7 \
	VPXORD Z8, Z8, Z8 \
	VPXORD Z9, Z9, Z9 \
	VPXORD Z10, Z10, Z10 \
	VPXORD Z11, Z11, Z11 \
	VPXORD Z12, Z12, Z12 \
	VPXORD Z13, Z13, Z13 \
	VPXORD Z14, Z14, Z14 \
	VPXORD Z15, Z15, Z15

#define TILE8X32_ROWS \
	MOVQ a+8(FP), R8 \
	MOVQ lda+16(FP), DX \
	SHLQ $2, DX \
	MOVQ b+24(FP), BX \
	LEAQ (R8)(DX*2), R9 \
	ADDQ DX, R9 \
	LEAQ (R9)(DX*2), R10 \
	ADDQ DX, R10

#define TILE8X32_ADD \
	MOVQ c+32(FP), DI \
	MOVQ ldc+40(FP), SI \
	SHLQ $2, SI \
	LEAQ (DI)(SI*2), R8 \
	ADDQ SI, R8 \
	LEAQ (R8)(SI*2), R9 \
	ADDQ SI, R9 \
	MOVQ acc+48(FP), AX \
	TESTQ AX, AX \
	JZ   write \
	VADDPS 0(DI), Z0, Z0 \
	VADDPS 64(DI), Z1, Z1 \
	VADDPS 0(DI)(SI*1), Z2, Z2 \
	VADDPS 64(DI)(SI*1), Z3, Z3 \
	VADDPS 0(DI)(SI*2), Z4, Z4 \
	VADDPS 64(DI)(SI*2), Z5, Z5 \
	VADDPS 0(R8), Z6, Z6 \
	VADDPS 64(R8), Z7, Z7 \
	VADDPS 0(R8)(SI*1), Z8, Z8 \
	VADDPS 64(R8)(SI*1), Z9, Z9 \
	VADDPS 0(R8)(SI*2), Z10, Z10 \
	VADDPS 64(R8)(SI*2), Z11, Z11 \
	VADDPS 0(R9), Z12, Z12 \
	VADDPS 64(R9), Z13, Z13 \
	VADDPS 0(R9)(SI*1), Z14, Z14 \
	VADDPS 64(R9)(SI*1), Z15, Z15

#define TILE8X32_WRITE \
	VMOVUPS Z0, 0(DI) \
	VMOVUPS Z1, 64(DI) \
	VMOVUPS Z2, 0(DI)(SI*1) \
	VMOVUPS Z3, 64(DI)(SI*1) \
	VMOVUPS Z4, 0(DI)(SI*2) \
	VMOVUPS Z5, 64(DI)(SI*2) \
	VMOVUPS Z6, 0(R8) \
	VMOVUPS Z7, 64(R8) \
	VMOVUPS Z8, 0(R8)(SI*1) \
	VMOVUPS Z9, 64(R8)(SI*1) \
	VMOVUPS Z10, 0(R8)(SI*2) \
	VMOVUPS Z11, 64(R8)(SI*2) \
	VMOVUPS Z12, 0(R9) \
	VMOVUPS Z13, 64(R9) \
	VMOVUPS Z14, 0(R9)(SI*1) \
	VMOVUPS Z15, 64(R9)(SI*1)
