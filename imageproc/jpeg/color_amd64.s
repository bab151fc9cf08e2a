#include "textflag.h"

// The kernels below compute exactly the integer expressions of their
// portable counterparts in color.go; the tests run both on every input
// they can form.

DATA shufR0<>+0(SB)/8, $0x8002808001808000
DATA shufR0<>+8(SB)/8, $0x0580800480800380
GLOBL shufR0<>(SB), RODATA|NOPTR, $16
DATA shufG0<>+0(SB)/8, $0x0280800180800080
DATA shufG0<>+8(SB)/8, $0x8080048080038080
GLOBL shufG0<>(SB), RODATA|NOPTR, $16
DATA shufB0<>+0(SB)/8, $0x8080018080008080
DATA shufB0<>+8(SB)/8, $0x8004808003808002
GLOBL shufB0<>(SB), RODATA|NOPTR, $16
DATA shufR1<>+0(SB)/8, $0x8080078080068080
DATA shufR1<>+8(SB)/8, $0x800a808009808008
GLOBL shufR1<>(SB), RODATA|NOPTR, $16
DATA shufG1<>+0(SB)/8, $0x8007808006808005
DATA shufG1<>+8(SB)/8, $0x0a80800980800880
GLOBL shufG1<>(SB), RODATA|NOPTR, $16
DATA shufB1<>+0(SB)/8, $0x0780800680800580
DATA shufB1<>+8(SB)/8, $0x8080098080088080
GLOBL shufB1<>(SB), RODATA|NOPTR, $16
DATA shufR2<>+0(SB)/8, $0x0d80800c80800b80
DATA shufR2<>+8(SB)/8, $0x80800f80800e8080
GLOBL shufR2<>(SB), RODATA|NOPTR, $16
DATA shufG2<>+0(SB)/8, $0x80800c80800b8080
DATA shufG2<>+8(SB)/8, $0x800f80800e80800d
GLOBL shufG2<>(SB), RODATA|NOPTR, $16
DATA shufB2<>+0(SB)/8, $0x800c80800b80800a
DATA shufB2<>+8(SB)/8, $0x0f80800e80800d80
GLOBL shufB2<>(SB), RODATA|NOPTR, $16

// YCC8 converts the 8 pixels at offset off of the Y (SI), Cb (BX) and Cr
// (DX) rows to int32 R, G and B in r, g and b, with Y10..Y15 holding the
// constants set up below.
#define YCC8(off, r, g, b) \
	VPMOVZXBD off(SI), Y0; \
	VPMOVZXBD off(BX), Y1; \
	VPMOVZXBD off(DX), Y2; \
	VPSUBD    Y15, Y1, Y1; \
	VPSUBD    Y15, Y2, Y2; \
	VPMULLD   Y14, Y2, r; \
	VPADDD    Y10, r, r; \
	VPSRAD    $16, r, r; \
	VPADDD    Y0, r, r; \
	VPMULLD   Y13, Y1, b; \
	VPADDD    Y10, b, b; \
	VPSRAD    $16, b, b; \
	VPADDD    Y0, b, b; \
	VPMULLD   Y12, Y1, g; \
	VPMULLD   Y11, Y2, Y1; \
	VPADDD    Y1, g, g; \
	VPADDD    Y10, g, g; \
	VPSRAD    $16, g, g; \
	VPADDD    Y0, g, g

// PACK16 clamps the 16 int32 values of lo and hi to bytes, in order, in
// the low lane of lo (lx is lo as X).
#define PACK16(lo, hi, lx) \
	VPACKSSDW    hi, lo, lo; \
	VPERMQ       $0xD8, lo, lo; \
	VEXTRACTI128 $1, lo, X9; \
	VPACKUSWB    X9, lx, lx

// STORE16 interleaves bytes k*16/3.. of R (X3), G (X4) and B (X5) into
// output bytes 16k..16k+15 at off(DI).
#define STORE16(mr, mg, mb, off) \
	VPSHUFB mr, X3, X0; \
	VPSHUFB mg, X4, X1; \
	VPSHUFB mb, X5, X2; \
	VPOR    X1, X0, X0; \
	VPOR    X2, X0, X0; \
	VMOVDQU X0, off(DI)

#define BROADCAST(v, reg, xreg) \
	MOVL $v, AX; \
	VMOVD AX, xreg; \
	VPBROADCASTD xreg, reg

// func yccAVX2(out *uint8, y, cb, cr *uint8, n int)
// Converts n pixels (a multiple of 16) as yccRow does: libjpeg's
// fixed-point products computed in 32-bit lanes, then clamped by the
// saturating packs (every sum lies in [-227, 482], inside int16).
TEXT ·yccAVX2(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), DI
	MOVQ y+8(FP), SI
	MOVQ cb+16(FP), BX
	MOVQ cr+24(FP), DX
	MOVQ n+32(FP), CX
	BROADCAST(128, Y15, X15)
	BROADCAST(91881, Y14, X14)
	BROADCAST(116130, Y13, X13)
	BROADCAST(-22554, Y12, X12)
	BROADCAST(-46802, Y11, X11)
	BROADCAST(32768, Y10, X10)

ycc16:
	CMPQ CX, $16
	JLT  yccdone
	YCC8(0, Y3, Y4, Y5)
	YCC8(8, Y6, Y7, Y8)
	PACK16(Y3, Y6, X3)
	PACK16(Y4, Y7, X4)
	PACK16(Y5, Y8, X5)
	STORE16(shufR0<>(SB), shufG0<>(SB), shufB0<>(SB), 0)
	STORE16(shufR1<>(SB), shufG1<>(SB), shufB1<>(SB), 16)
	STORE16(shufR2<>(SB), shufG2<>(SB), shufB2<>(SB), 32)
	ADDQ $16, SI
	ADDQ $16, BX
	ADDQ $16, DX
	ADDQ $48, DI
	SUBQ $16, CX
	JMP  ycc16

yccdone:
	VZEROUPPER
	RET

// COLSUM sets the 16 words of dst to 3*near+far for the samples at offset
// off of near (SI) and far (BX).
#define COLSUM(off, dst) \
	VPMOVZXBW off(SI), Y0; \
	VPMOVZXBW off(BX), Y1; \
	VPSLLW    $1, Y0, dst; \
	VPADDW    Y0, dst, dst; \
	VPADDW    Y1, dst, dst

// func h2v2FancyAVX2(out *uint8, near, far *uint8, n int)
// Computes outputs 2i and 2i+1 of h2v2FancyRow for n inputs i (a multiple
// of 16) starting at near, reading near[-1] through near[n] (and far
// likewise). Column sums stay below 1021 and the weighted sums below 4096,
// so 16-bit lanes are exact.
TEXT ·h2v2FancyAVX2(SB), NOSPLIT, $0-32
	MOVQ out+0(FP), DI
	MOVQ near+8(FP), SI
	MOVQ far+16(FP), BX
	MOVQ n+24(FP), CX
	MOVL $8, AX
	VMOVD AX, X15
	VPBROADCASTW X15, Y15
	MOVL $7, AX
	VMOVD AX, X14
	VPBROADCASTW X14, Y14

h2v2loop:
	CMPQ CX, $16
	JLT  h2v2done
	COLSUM(-1, Y2)
	COLSUM(0, Y3)
	COLSUM(1, Y4)
	VPSLLW    $1, Y3, Y5
	VPADDW    Y3, Y5, Y5
	VPADDW    Y5, Y2, Y2
	VPADDW    Y15, Y2, Y2
	VPSRLW    $4, Y2, Y2
	VPADDW    Y5, Y4, Y4
	VPADDW    Y14, Y4, Y4
	VPSRLW    $4, Y4, Y4
	VPSLLW    $8, Y4, Y4
	VPOR      Y2, Y4, Y4
	VMOVDQU   Y4, (DI)
	ADDQ $16, SI
	ADDQ $16, BX
	ADDQ $32, DI
	SUBQ $16, CX
	JMP  h2v2loop

h2v2done:
	VZEROUPPER
	RET

// func h2FancyAVX2(out *uint8, in *uint8, n int)
// Computes outputs 2i and 2i+1 of h2FancyRow for n inputs i (a multiple of
// 16) starting at in, reading in[-1] through in[n]: (3*in[i] + in[i-1] +
// 1) >> 2 and (3*in[i] + in[i+1] + 2) >> 2, exact in 16-bit lanes.
TEXT ·h2FancyAVX2(SB), NOSPLIT, $0-24
	MOVQ out+0(FP), DI
	MOVQ in+8(FP), SI
	MOVQ n+16(FP), CX
	MOVL $1, AX
	VMOVD AX, X15
	VPBROADCASTW X15, Y15
	MOVL $2, AX
	VMOVD AX, X14
	VPBROADCASTW X14, Y14

h2loop:
	CMPQ CX, $16
	JLT  h2done
	VPMOVZXBW -1(SI), Y2
	VPMOVZXBW (SI), Y3
	VPMOVZXBW 1(SI), Y4
	VPSLLW    $1, Y3, Y5
	VPADDW    Y3, Y5, Y5
	VPADDW    Y5, Y2, Y2
	VPADDW    Y15, Y2, Y2
	VPSRLW    $2, Y2, Y2
	VPADDW    Y5, Y4, Y4
	VPADDW    Y14, Y4, Y4
	VPSRLW    $2, Y4, Y4
	VPSLLW    $8, Y4, Y4
	VPOR      Y2, Y4, Y4
	VMOVDQU   Y4, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $16, CX
	JMP  h2loop

h2done:
	VZEROUPPER
	RET
