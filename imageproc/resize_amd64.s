#include "textflag.h"

// func vertAccAVX2(acc *int32, src *uint8, n int, w int32)
// acc[i] += int32(src[i]) * w for i < n; n is a multiple of 8.
TEXT ·vertAccAVX2(SB), NOSPLIT, $0-28
	MOVQ acc+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVL w+24(FP), AX
	VMOVD AX, X0
	VPBROADCASTD X0, Y0
	CMPQ CX, $16
	JLT  tail8

loop16:
	VPMOVZXBD (SI), Y1
	VPMOVZXBD 8(SI), Y2
	VPMULLD   Y0, Y1, Y1
	VPMULLD   Y0, Y2, Y2
	VPADDD    (DI), Y1, Y1
	VPADDD    32(DI), Y2, Y2
	VMOVDQU   Y1, (DI)
	VMOVDQU   Y2, 32(DI)
	ADDQ      $16, SI
	ADDQ      $64, DI
	SUBQ      $16, CX
	CMPQ      CX, $16
	JGE       loop16

tail8:
	CMPQ CX, $8
	JLT  done
	VPMOVZXBD (SI), Y1
	VPMULLD   Y0, Y1, Y1
	VPADDD    (DI), Y1, Y1
	VMOVDQU   Y1, (DI)

done:
	VZEROUPPER
	RET

// func horizAVX2(dst *uint8, pr, pg, pb *int32, first *int32, w *int32, taps int, nout int)
// For each output x < nout and channel c: the sum over t < taps of
// plane_c[first[x]+t] * w[x*taps+t] in wrapping int32 arithmetic (like the
// reference's int accumulators), plus 2^21, shifted right by 22 and
// clamped to 0..255, is stored at dst[3x+c]. taps is a multiple of 8.
TEXT ·horizAVX2(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), DI
	MOVQ pr+8(FP), R8
	MOVQ pg+16(FP), R9
	MOVQ pb+24(FP), R10
	MOVQ first+32(FP), R11
	MOVQ w+40(FP), SI
	MOVQ taps+48(FP), R12
	MOVQ nout+56(FP), R13
	MOVL $0x200000, AX
	VMOVD AX, X7
	VPBROADCASTD X7, X7
	TESTQ R13, R13
	JEQ   hdone

hloop:
	MOVLQSX (R11), AX
	SHLQ    $2, AX
	LEAQ    (R8)(AX*1), BX
	LEAQ    (R9)(AX*1), CX
	LEAQ    (R10)(AX*1), DX
	VPXOR   Y0, Y0, Y0
	VPXOR   Y1, Y1, Y1
	VPXOR   Y2, Y2, Y2
	MOVQ    R12, R14

tloop:
	VMOVDQU (SI), Y3
	VPMULLD (BX), Y3, Y4
	VPMULLD (CX), Y3, Y5
	VPMULLD (DX), Y3, Y6
	VPADDD  Y4, Y0, Y0
	VPADDD  Y5, Y1, Y1
	VPADDD  Y6, Y2, Y2
	ADDQ    $32, SI
	ADDQ    $32, BX
	ADDQ    $32, CX
	ADDQ    $32, DX
	SUBQ    $8, R14
	JNE     tloop

	// Horizontal sums of the three accumulators: X0 = r g b b.
	VEXTRACTI128 $1, Y0, X4
	VPADDD       X4, X0, X0
	VEXTRACTI128 $1, Y1, X5
	VPADDD       X5, X1, X1
	VEXTRACTI128 $1, Y2, X6
	VPADDD       X6, X2, X2
	VPHADDD      X1, X0, X0
	VPHADDD      X2, X2, X2
	VPHADDD      X2, X0, X0

	// Round, scale and clamp: the saturating packs clamp to 0..255
	// because the shifted sums lie well inside int16.
	VPADDD    X7, X0, X0
	VPSRAD    $22, X0, X0
	VPACKSSDW X0, X0, X0
	VPACKUSWB X0, X0, X0
	VMOVD     X0, AX
	MOVW      AX, (DI)
	SHRL      $16, AX
	MOVB      AX, 2(DI)
	ADDQ      $3, DI
	ADDQ      $4, R11
	DECQ      R13
	JNE       hloop

hdone:
	VZEROUPPER
	RET

DATA splitR0<>+0(SB)/8, $0x80800f0c09060300
DATA splitR0<>+8(SB)/8, $0x8080808080808080
GLOBL splitR0<>(SB), RODATA|NOPTR, $16
DATA splitR1<>+0(SB)/8, $0x0502808080808080
DATA splitR1<>+8(SB)/8, $0x80808080800e0b08
GLOBL splitR1<>(SB), RODATA|NOPTR, $16
DATA splitR2<>+0(SB)/8, $0x8080808080808080
DATA splitR2<>+8(SB)/8, $0x0d0a070401808080
GLOBL splitR2<>(SB), RODATA|NOPTR, $16
DATA splitG0<>+0(SB)/8, $0x8080800d0a070401
DATA splitG0<>+8(SB)/8, $0x8080808080808080
GLOBL splitG0<>(SB), RODATA|NOPTR, $16
DATA splitG1<>+0(SB)/8, $0x0603008080808080
DATA splitG1<>+8(SB)/8, $0x80808080800f0c09
GLOBL splitG1<>(SB), RODATA|NOPTR, $16
DATA splitG2<>+0(SB)/8, $0x8080808080808080
DATA splitG2<>+8(SB)/8, $0x0e0b080502808080
GLOBL splitG2<>(SB), RODATA|NOPTR, $16
DATA splitB0<>+0(SB)/8, $0x8080800e0b080502
DATA splitB0<>+8(SB)/8, $0x8080808080808080
GLOBL splitB0<>(SB), RODATA|NOPTR, $16
DATA splitB1<>+0(SB)/8, $0x0704018080808080
DATA splitB1<>+8(SB)/8, $0x8080808080800d0a
GLOBL splitB1<>(SB), RODATA|NOPTR, $16
DATA splitB2<>+0(SB)/8, $0x8080808080808080
DATA splitB2<>+8(SB)/8, $0x0f0c090603008080
GLOBL splitB2<>(SB), RODATA|NOPTR, $16

// SPLIT gathers one channel of the 16 pixels in X0..X2 with the shuffles
// m0..m2 and stores it widened to int32 at dst.
#define SPLIT(m0, m1, m2, dst) \
	VPSHUFB m0, X0, X3; \
	VPSHUFB m1, X1, X6; \
	VPOR    X6, X3, X3; \
	VPSHUFB m2, X2, X6; \
	VPOR    X6, X3, X3; \
	VPMOVZXBD X3, Y6; \
	VMOVDQU Y6, (dst); \
	VPSRLDQ $8, X3, X3; \
	VPMOVZXBD X3, Y6; \
	VMOVDQU Y6, 32(dst)

// func splitAVX2(pr, pg, pb *int32, src *uint8, n int)
// Widens n interleaved RGB pixels (a multiple of 16) into three int32
// planes.
TEXT ·splitAVX2(SB), NOSPLIT, $0-40
	MOVQ pr+0(FP), DI
	MOVQ pg+8(FP), BX
	MOVQ pb+16(FP), DX
	MOVQ src+24(FP), SI
	MOVQ n+32(FP), CX

split16:
	CMPQ CX, $16
	JLT  splitdone
	VMOVDQU (SI), X0
	VMOVDQU 16(SI), X1
	VMOVDQU 32(SI), X2
	SPLIT(splitR0<>(SB), splitR1<>(SB), splitR2<>(SB), DI)
	SPLIT(splitG0<>(SB), splitG1<>(SB), splitG2<>(SB), BX)
	SPLIT(splitB0<>(SB), splitB1<>(SB), splitB2<>(SB), DX)
	ADDQ $48, SI
	ADDQ $64, DI
	ADDQ $64, BX
	ADDQ $64, DX
	SUBQ $16, CX
	JMP  split16

splitdone:
	VZEROUPPER
	RET
