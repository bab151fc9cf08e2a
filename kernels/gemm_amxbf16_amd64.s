#include "textflag.h"
#include "amx_amd64.h"

// The amx-bf16 tier's microkernel: a 32x32 tile of float32 sums over k in
// pairs of bfloat16 values by AMX tiles, TDPBF16PS, on the pair layout of
// the avx512-bf16 tier (gemm_bf16.go): tmm0..tmm3 the four 16x16 float
// quarters of c, tmm4 and tmm5 rows 0..15 and 16..31 of a (16 pairs, 64
// bytes, per row), tmm6 and tmm7 columns 0..15 and 16..31 of 16 panel rows
// (the 32-wide panel's rows are 128 bytes apart). The Go assembler has no
// AMX mnemonics: the instructions are emitted as bytes (Intel SDM), each
// macro naming the instruction and operand form it encodes, checked with
// binutils' objdump. UNVERIFIED: no machine this was written on has AMX,
// and no emulator at hand runs it.
//
// Register numbers: AX 0, BX 3, DI 7, R8 8, R9 9, R10 10, R11 11.

// TDPBF16PS tmm(c), tmm(a), tmm(b): VEX.128.F3.0F38.W0 5C 11:c:a,
// vvvv = ~b: c[m][n] += Σ_p a[m].pair[p] · b[p].pair[n] in float32.
#define TDPBF16PS(c, a, b) \
	BYTE $0xC4 \
	BYTE $0xE2 \
	BYTE $(((15-b)<<3)|2) \
	BYTE $0x5C \
	BYTE $(0xC0|(c<<3)|a)

#define QUARTERS \
	TDPBF16PS(0, 4, 6) \
	TDPBF16PS(1, 4, 7) \
	TDPBF16PS(2, 5, 6) \
	TDPBF16PS(3, 5, 7)

// func kernelAMXBF16(n16 int, a *float32, lda int, b *float32, ta *float32, tb *float32, tail int, t *float32)
//
// n16 steps of 16 pairs from a (rows lda bytes apart) and b (panel rows
// 128 bytes apart), then, if tail is not zero, one step from the
// zero-padded tails ta (32 rows of 16 pairs, 64 bytes apart) and tb (16
// panel rows); the sums go to t (32 rows of 32 floats, 128 bytes apart),
// whose bytes 4096..4159 hold the tile configuration.
TEXT ·kernelAMXBF16(SB), NOSPLIT, $0-64
	MOVQ t+56(FP), DI
	LEAQ 4096(DI), R10
	LDTILECFG_R10
	TILEZERO(0)
	TILEZERO(1)
	TILEZERO(2)
	TILEZERO(3)
	MOVQ n16+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ lda+16(FP), R9
	MOVQ b+24(FP), BX
	MOVQ $128, R11
	MOVQ R9, DX
	SHLQ $4, DX
	TESTQ CX, CX
	JZ   tail

loop:
	TILELOADD(4, 0, 9)
	LEAQ (AX)(DX*1), R10
	TILELOADD(5, 10, 9)
	TILELOADD(6, 3, 11)
	LEAQ 64(BX), R10
	TILELOADD(7, 10, 11)
	QUARTERS
	ADDQ $64, AX
	ADDQ $2048, BX
	DECQ CX
	JNZ  loop

tail:
	MOVQ tail+48(FP), CX
	TESTQ CX, CX
	JZ   store
	MOVQ ta+32(FP), AX
	MOVQ $64, R8
	TILELOADD(4, 0, 8)
	LEAQ 1024(AX), R10
	TILELOADD(5, 10, 8)
	MOVQ tb+40(FP), BX
	TILELOADD(6, 3, 11)
	LEAQ 64(BX), R10
	TILELOADD(7, 10, 11)
	QUARTERS

store:
	TILESTORED(0, 7, 11)
	LEAQ 64(DI), R10
	TILESTORED(1, 10, 11)
	LEAQ 2048(DI), R10
	TILESTORED(2, 10, 11)
	LEAQ 2112(DI), R10
	TILESTORED(3, 10, 11)
	TILERELEASE
	RET

// func tileOut32(t *float32, c *float32, ldc int, acc int)
TEXT ·tileOut32(SB), NOSPLIT, $0-32
	MOVQ t+0(FP), SI
	MOVQ c+8(FP), DI
	MOVQ ldc+16(FP), DX
	SHLQ $2, DX
	MOVQ $32, CX
	TESTQ $1, acc+24(FP)
	JNZ  outadd

outcopy:
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	ADDQ $128, SI
	ADDQ DX, DI
	DECQ CX
	JNZ  outcopy
	VZEROUPPER
	RET

outadd:
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VADDPS (DI), Z0, Z0
	VADDPS 64(DI), Z1, Z1
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	ADDQ $128, SI
	ADDQ DX, DI
	DECQ CX
	JNZ  outadd
	VZEROUPPER
	RET
