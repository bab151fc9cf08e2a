#include "textflag.h"

// func hammingMinAVX512(q, blocks, out []uint64)
// For each query code (2 words), 8 lanes of running minima of the
// Hamming distance to the blocks' tokens (lane k: token k of each block).
TEXT ·hammingMinAVX512(SB), NOSPLIT, $0-72
	MOVQ q_base+0(FP), SI
	MOVQ q_len+8(FP), CX
	SHRQ $1, CX
	MOVQ blocks_base+24(FP), DI
	MOVQ blocks_len+32(FP), DX
	SHRQ $4, DX
	MOVQ out_base+48(FP), R8
	TESTQ CX, CX
	JZ done

qloop:
	VPBROADCASTQ (SI), Z0
	VPBROADCASTQ 8(SI), Z1
	VPTERNLOGQ $0xff, Z2, Z2, Z2
	MOVQ DI, R9
	MOVQ DX, R10
	TESTQ R10, R10
	JZ store

bloop:
	VPXORQ (R9), Z0, Z3
	VPXORQ 64(R9), Z1, Z4
	VPOPCNTQ Z3, Z3
	VPOPCNTQ Z4, Z4
	VPADDQ Z3, Z4, Z3
	VPMINUQ Z3, Z2, Z2
	ADDQ $128, R9
	DECQ R10
	JNZ bloop

store:
	VMOVDQU64 Z2, (R8)
	ADDQ $64, R8
	ADDQ $16, SI
	DECQ CX
	JNZ qloop

done:
	VZEROUPPER
	RET
