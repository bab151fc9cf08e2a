#include "textflag.h"
#include "gemm_int8_amd64.h"

// The integer GEMM microkernel of the avx2-int8 tier (see gemm_int8.go):
// a 6x16 tile, twelve int32 accumulators Y0..Y11 (row r in Y(2r), Y(2r+1)),
// weights as int16 pairs (k, k+1) per column, activations broadcast as
// int16 pairs. VPMADDWD multiplies sixteen int16 pairs and adds each pair
// into an int32 lane: two k steps of eight columns in one instruction.

// One step of two k values: two 16-byte-column vectors at boff(BX), one
// broadcast pair per row from the interleaved activations at aoff(AX)
// (row r at aoff+4r).
#define ISTEP(aoff, boff) \
	VMOVDQU boff(BX), Y12 \
	VMOVDQU boff+32(BX), Y13 \
	VPBROADCASTD aoff(AX), Y14 \
	VPMADDWD Y12, Y14, Y15 \
	VPADDD Y15, Y0, Y0 \
	VPMADDWD Y13, Y14, Y15 \
	VPADDD Y15, Y1, Y1 \
	VPBROADCASTD aoff+4(AX), Y14 \
	VPMADDWD Y12, Y14, Y15 \
	VPADDD Y15, Y2, Y2 \
	VPMADDWD Y13, Y14, Y15 \
	VPADDD Y15, Y3, Y3 \
	VPBROADCASTD aoff+8(AX), Y14 \
	VPMADDWD Y12, Y14, Y15 \
	VPADDD Y15, Y4, Y4 \
	VPMADDWD Y13, Y14, Y15 \
	VPADDD Y15, Y5, Y5 \
	VPBROADCASTD aoff+12(AX), Y14 \
	VPMADDWD Y12, Y14, Y15 \
	VPADDD Y15, Y6, Y6 \
	VPMADDWD Y13, Y14, Y15 \
	VPADDD Y15, Y7, Y7 \
	VPBROADCASTD aoff+16(AX), Y14 \
	VPMADDWD Y12, Y14, Y15 \
	VPADDD Y15, Y8, Y8 \
	VPMADDWD Y13, Y14, Y15 \
	VPADDD Y15, Y9, Y9 \
	VPBROADCASTD aoff+20(AX), Y14 \
	VPMADDWD Y12, Y14, Y15 \
	VPADDD Y15, Y10, Y10 \
	VPMADDWD Y13, Y14, Y15 \
	VPADDD Y15, Y11, Y11

#define IZERO12 \
	VPXOR Y0, Y0, Y0 \
	VPXOR Y1, Y1, Y1 \
	VPXOR Y2, Y2, Y2 \
	VPXOR Y3, Y3, Y3 \
	VPXOR Y4, Y4, Y4 \
	VPXOR Y5, Y5, Y5 \
	VPXOR Y6, Y6, Y6 \
	VPXOR Y7, Y7, Y7 \
	VPXOR Y8, Y8, Y8 \
	VPXOR Y9, Y9, Y9 \
	VPXOR Y10, Y10, Y10 \
	VPXOR Y11, Y11, Y11

// func kernelI16x6x16(ng int, nb int, a *int16, as int, ds *float32, dss int, b *int16, f *float32, t *float32, c *float32, ldc int, flags int)
//
// ng row groups of six rows: group g's activations at a+g·as int16, its
// scales at ds+g·dss floats, its output at c+6g·ldc floats. Per group, nb
// blocks of 32 k values. a: the six rows' activations interleaved by int16
// pairs (pair p of row r at a[(6p+r)*2]), 96 pairs per block. ds: per
// block the (dx, dx·Σq) of rows 0..5. b: the panel, 512 int16 per block.
// f: 32 floats per block (fd of the sixteen columns, then fm). t: a 6x16
// float32 scratch tile the blocks accumulate into: rows of c are usually a
// power of two apart and would share L1 sets with each other. c: the
// output tile, rows ldc apart, written (or, flags bit 0, added to) once at
// the end of a group. flags bit 1: apply fm.
TEXT ·kernelI16x6x16(SB), NOSPLIT, $0-96
	KERN6ARGS
	TESTQ R8, R8
	JZ   done

group:
	KERN6GROUP
	TESTQ CX, CX
	JZ   store

block:
	IZERO12
	ISTEP(0, 0)
	ISTEP(24, 64)
	ISTEP(48, 128)
	ISTEP(72, 192)
	ISTEP(96, 256)
	ISTEP(120, 320)
	ISTEP(144, 384)
	ISTEP(168, 448)
	ISTEP(192, 512)
	ISTEP(216, 576)
	ISTEP(240, 640)
	ISTEP(264, 704)
	ISTEP(288, 768)
	ISTEP(312, 832)
	ISTEP(336, 896)
	ISTEP(360, 960)
	ADDQ $384, AX
	ADDQ $1024, BX

	TESTQ $2, flags+88(FP)
	JNZ  withmin
	EPI6
	JMP  next

withmin:
	EPIMIN6

next:
	ADDQ $48, R11
	ADDQ $128, R13
	DECQ CX
	JNZ  block

store:
	TILE6LOAD(ldc+80(FP))
	TESTQ $1, flags+88(FP)
	JZ   write
	TILE6ADD

write:
	TILE6WRITE

	// Next group: activations (int16) and scales; TILE6WRITE moved c on.
	MOVQ as+24(FP), CX
	LEAQ (R9)(CX*2), R9
	MOVQ dss+40(FP), CX
	LEAQ (R10)(CX*4), R10
	DECQ R8
	JNZ  group

done:
	VZEROUPPER
	RET

// func decodeQ8_0I16AVX2(src *byte, nb int, q *int16)
// The 32 signed bytes of each of nb Q8_0 blocks (34 bytes apart, after the
// 2-byte scale) widened to int16.
TEXT ·decodeQ8_0I16AVX2(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ q+16(FP), DI
	TESTQ CX, CX
	JZ   q8done

q8block:
	VPMOVSXBW 2(SI), Y0
	VPMOVSXBW 18(SI), Y1
	VMOVDQU Y0, 0(DI)
	VMOVDQU Y1, 32(DI)
	ADDQ $34, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  q8block

q8done:
	VZEROUPPER
	RET

// The IQ4_NL codebook (iq4nlValues) as signed bytes, and the nibble mask.
DATA iq4tab<>+0(SB)/8, $0xF6EADDCFBFAD9881
DATA iq4tab<>+8(SB)/8, $0x7159453526190D01
DATA iq4tab<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA iq4tab<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL iq4tab<>(SB), RODATA|NOPTR, $32

// IQ4LOOKUP turns the 16 nibble bytes at src into the 32 codebook values
// of a block as int16 in Y0 (values 0..15, the low nibbles) and Y1
// (16..31, the high ones): VPSHUFB looks the nibbles up in X15, the table.
#define IQ4LOOKUP(src) \
	VMOVDQU src, X0 \
	VPSRLW $4, X0, X1 \
	VPAND X14, X0, X0 \
	VPAND X14, X1, X1 \
	VPSHUFB X0, X15, X0 \
	VPSHUFB X1, X15, X1 \
	VPMOVSXBW X0, Y0 \
	VPMOVSXBW X1, Y1

// func decodeIQ4NLI16AVX2(src *byte, nb int, q *int16)
//
// The codebook values of nb IQ4_NL blocks (18 bytes apart, nibbles after
// the 2-byte scale) as int16.
TEXT ·decodeIQ4NLI16AVX2(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ q+16(FP), DI
	VMOVDQU iq4tab<>+0(SB), X15
	VMOVDQU iq4tab<>+16(SB), X14
	TESTQ CX, CX
	JZ   nldone

nlblock:
	IQ4LOOKUP(2(SI))
	VMOVDQU Y0, 0(DI)
	VMOVDQU Y1, 32(DI)
	ADDQ $18, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  nlblock

nldone:
	VZEROUPPER
	RET

// func decodeIQ4XSI16AVX2(src *byte, nsb int, sc *int16, q *int16)
//
// The values of nsb IQ4_XS super-blocks (136 bytes apart, 128 nibble
// bytes at offset 8): each 32-value sub-block's codebook values times its
// scale from sc (eight per super-block, already ls−32), as int16
// (|113·32| < 2¹⁵, so VPMULLW's low half is the product).
TEXT ·decodeIQ4XSI16AVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ nsb+8(FP), CX
	MOVQ sc+16(FP), BX
	MOVQ q+24(FP), DI
	VMOVDQU iq4tab<>+0(SB), X15
	VMOVDQU iq4tab<>+16(SB), X14
	TESTQ CX, CX
	JZ   xsdone

xssb:
	LEAQ 8(SI), R9
	MOVQ $8, R8

xssub:
	IQ4LOOKUP((R9))
	VPBROADCASTW (BX), Y2
	VPMULLW Y2, Y0, Y0
	VPMULLW Y2, Y1, Y1
	VMOVDQU Y0, 0(DI)
	VMOVDQU Y1, 32(DI)
	ADDQ $16, R9
	ADDQ $2, BX
	ADDQ $64, DI
	DECQ R8
	JNZ  xssub
	ADDQ $136, SI
	DECQ CX
	JNZ  xssb

xsdone:
	VZEROUPPER
	RET
