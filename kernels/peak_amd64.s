#include "textflag.h"

// Peak probes: n iterations of independent chains of one arithmetic
// instruction on register operands, no memory traffic inside the loop, so
// they time the execution units alone. Each takes src, two 64-byte
// operands (the ymm forms read the first 32 bytes of each), and stores at
// dst the sum of its accumulators, so that a test can check that every
// chain computed what the instruction should.

// Zen 5 runs two 512-bit FMA, VNNI or BF16 dot products a cycle, each with
// a latency of 4 to 6 cycles: 16 chains keep both pipes busy.
#define ZERO16Z \
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

// SUM16PS adds Z1..Z15 into Z0 as float32; SUM16D as int32.
#define SUM16PS \
	VADDPS Z1, Z0, Z0 \
	VADDPS Z2, Z0, Z0 \
	VADDPS Z3, Z0, Z0 \
	VADDPS Z4, Z0, Z0 \
	VADDPS Z5, Z0, Z0 \
	VADDPS Z6, Z0, Z0 \
	VADDPS Z7, Z0, Z0 \
	VADDPS Z8, Z0, Z0 \
	VADDPS Z9, Z0, Z0 \
	VADDPS Z10, Z0, Z0 \
	VADDPS Z11, Z0, Z0 \
	VADDPS Z12, Z0, Z0 \
	VADDPS Z13, Z0, Z0 \
	VADDPS Z14, Z0, Z0 \
	VADDPS Z15, Z0, Z0

#define SUM16D \
	VPADDD Z1, Z0, Z0 \
	VPADDD Z2, Z0, Z0 \
	VPADDD Z3, Z0, Z0 \
	VPADDD Z4, Z0, Z0 \
	VPADDD Z5, Z0, Z0 \
	VPADDD Z6, Z0, Z0 \
	VPADDD Z7, Z0, Z0 \
	VPADDD Z8, Z0, Z0 \
	VPADDD Z9, Z0, Z0 \
	VPADDD Z10, Z0, Z0 \
	VPADDD Z11, Z0, Z0 \
	VPADDD Z12, Z0, Z0 \
	VPADDD Z13, Z0, Z0 \
	VPADDD Z14, Z0, Z0 \
	VPADDD Z15, Z0, Z0

// func peakFMA512(n int, src *byte, dst *byte)
// VFMADD231PS zmm: 16 lanes x 2 flops per instruction, 16 chains.
TEXT ·peakFMA512(SB), NOSPLIT, $0-24
	MOVQ n+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ dst+16(FP), DI
	VMOVUPS 0(SI), Z16
	VMOVUPS 64(SI), Z17
	ZERO16Z
	TESTQ CX, CX
	JZ fmadone
fmaloop:
	VFMADD231PS Z17, Z16, Z0
	VFMADD231PS Z17, Z16, Z1
	VFMADD231PS Z17, Z16, Z2
	VFMADD231PS Z17, Z16, Z3
	VFMADD231PS Z17, Z16, Z4
	VFMADD231PS Z17, Z16, Z5
	VFMADD231PS Z17, Z16, Z6
	VFMADD231PS Z17, Z16, Z7
	VFMADD231PS Z17, Z16, Z8
	VFMADD231PS Z17, Z16, Z9
	VFMADD231PS Z17, Z16, Z10
	VFMADD231PS Z17, Z16, Z11
	VFMADD231PS Z17, Z16, Z12
	VFMADD231PS Z17, Z16, Z13
	VFMADD231PS Z17, Z16, Z14
	VFMADD231PS Z17, Z16, Z15
	DECQ CX
	JNZ fmaloop
fmadone:
	SUM16PS
	VMOVUPS Z0, 0(DI)
	VZEROUPPER
	RET

// func peakVNNI512(n int, src *byte, dst *byte)
// VPDPBUSD zmm: 64 unsigned x signed byte products summed by fours into
// 16 int32 lanes, 128 operations per instruction, 16 chains. src holds
// the unsigned bytes, then the signed ones.
TEXT ·peakVNNI512(SB), NOSPLIT, $0-24
	MOVQ n+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ dst+16(FP), DI
	VMOVDQU32 0(SI), Z16
	VMOVDQU32 64(SI), Z17
	ZERO16Z
	TESTQ CX, CX
	JZ vnnidone
vnniloop:
	VPDPBUSD Z17, Z16, Z0
	VPDPBUSD Z17, Z16, Z1
	VPDPBUSD Z17, Z16, Z2
	VPDPBUSD Z17, Z16, Z3
	VPDPBUSD Z17, Z16, Z4
	VPDPBUSD Z17, Z16, Z5
	VPDPBUSD Z17, Z16, Z6
	VPDPBUSD Z17, Z16, Z7
	VPDPBUSD Z17, Z16, Z8
	VPDPBUSD Z17, Z16, Z9
	VPDPBUSD Z17, Z16, Z10
	VPDPBUSD Z17, Z16, Z11
	VPDPBUSD Z17, Z16, Z12
	VPDPBUSD Z17, Z16, Z13
	VPDPBUSD Z17, Z16, Z14
	VPDPBUSD Z17, Z16, Z15
	DECQ CX
	JNZ vnniloop
vnnidone:
	SUM16D
	VMOVDQU32 Z0, 0(DI)
	VZEROUPPER
	RET

// VDPBF16PS(d) is VDPBF16PS Zd, Z16, Z17 (Intel order: Zd += the sums of
// the pairwise products of Z16's and Z17's bf16 pairs, as float32), for
// d in 0..15, which the Go assembler lacks: EVEX.512.F3.0F38.W0 52 /r.
// The EVEX prefix 62, then P0 = ~R X̄ B̄ ~R' 0 0 mm: R̄ is the inverted
// bit 3 of d (bit 4 is 0, so R̄' = 1), X̄ = 0 and B̄ = 1 give the r/m
// operand bits 4 and 3 of 17 (10001b), mm = 10 the 0F38 map; P1 = W0,
// vvvv = ~0000 (16 with V̄' below), 1, pp = 10 (F3): 7E; P2 = z0, L'L = 10
// (512 bits), b0, V̄' = 0 (bit 4 of 16 inverted), aaa = 000 (no mask):
// 40; the opcode 52; ModRM 11 d&7 001 (r/m 17 & 7).
#define VDPBF16PS(d) \
	BYTE $0x62 \
	BYTE $(0x32 | ((1-((d>>3)&1))<<7)) \
	BYTE $0x7E \
	BYTE $0x40 \
	BYTE $0x52 \
	BYTE $(0xC1 | ((d&7)<<3))

// func peakBF16(n int, src *byte, dst *byte)
// VDPBF16PS zmm: 32 bf16 products summed by pairs into 16 float32 lanes,
// 64 flops per instruction, 16 chains.
TEXT ·peakBF16(SB), NOSPLIT, $0-24
	MOVQ n+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ dst+16(FP), DI
	VMOVDQU32 0(SI), Z16
	VMOVDQU32 64(SI), Z17
	ZERO16Z
	TESTQ CX, CX
	JZ bf16done
bf16loop:
	VDPBF16PS(0)
	VDPBF16PS(1)
	VDPBF16PS(2)
	VDPBF16PS(3)
	VDPBF16PS(4)
	VDPBF16PS(5)
	VDPBF16PS(6)
	VDPBF16PS(7)
	VDPBF16PS(8)
	VDPBF16PS(9)
	VDPBF16PS(10)
	VDPBF16PS(11)
	VDPBF16PS(12)
	VDPBF16PS(13)
	VDPBF16PS(14)
	VDPBF16PS(15)
	DECQ CX
	JNZ bf16loop
bf16done:
	SUM16PS
	VMOVUPS Z0, 0(DI)
	VZEROUPPER
	RET

// VPDPBUSDV(d) is the AVX-VNNI form VPDPBUSD Yd, Y12, Y13 (Intel order:
// Yd += Y12's unsigned bytes · Y13's signed bytes), which the Go
// assembler lacks (it encodes only the EVEX form, which faults on CPUs
// with AVX-VNNI and no AVX-512): VEX.256.66.0F38.W0 50 /r. C4, then
// ~R X̄ ~B and the 0F38 map (~B = 0: r/m 13 >= 8), then W0 ~vvvv (12) L1
// pp=01 (66): 1D, the opcode 50, ModRM 11 d&7 101.
#define VPDPBUSDV(d) \
	BYTE $0xC4 \
	BYTE $(0x42 | ((1-((d>>3)&1))<<7)) \
	BYTE $0x1D \
	BYTE $0x50 \
	BYTE $(0xC5 | ((d&7)<<3))

// func peakVNNI256(n int, src *byte, dst *byte)
// AVX-VNNI VPDPBUSD ymm: 32 byte products into 8 int32 lanes, 64
// operations per instruction, 12 chains (Y0..Y11; VEX reaches 16
// registers).
TEXT ·peakVNNI256(SB), NOSPLIT, $0-24
	MOVQ n+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ dst+16(FP), DI
	VMOVDQU 0(SI), Y12
	VMOVDQU 64(SI), Y13
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	VPXOR Y8, Y8, Y8
	VPXOR Y9, Y9, Y9
	VPXOR Y10, Y10, Y10
	VPXOR Y11, Y11, Y11
	TESTQ CX, CX
	JZ avxvnnidone
avxvnniloop:
	VPDPBUSDV(0)
	VPDPBUSDV(1)
	VPDPBUSDV(2)
	VPDPBUSDV(3)
	VPDPBUSDV(4)
	VPDPBUSDV(5)
	VPDPBUSDV(6)
	VPDPBUSDV(7)
	VPDPBUSDV(8)
	VPDPBUSDV(9)
	VPDPBUSDV(10)
	VPDPBUSDV(11)
	DECQ CX
	JNZ avxvnniloop
avxvnnidone:
	VPADDD Y1, Y0, Y0
	VPADDD Y2, Y0, Y0
	VPADDD Y3, Y0, Y0
	VPADDD Y4, Y0, Y0
	VPADDD Y5, Y0, Y0
	VPADDD Y6, Y0, Y0
	VPADDD Y7, Y0, Y0
	VPADDD Y8, Y0, Y0
	VPADDD Y9, Y0, Y0
	VPADDD Y10, Y0, Y0
	VPADDD Y11, Y0, Y0
	VMOVDQU Y0, 0(DI)
	VZEROUPPER
	RET
