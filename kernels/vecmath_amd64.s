#include "textflag.h"

// Vectorized float32 elementwise kernels built on one exp approximation.

// Constants, each replicated across the eight lanes of a YMM register.
DATA ec<>+0(SB)/4, $0xc2ae0000
DATA ec<>+4(SB)/4, $0xc2ae0000
DATA ec<>+8(SB)/4, $0xc2ae0000
DATA ec<>+12(SB)/4, $0xc2ae0000
DATA ec<>+16(SB)/4, $0xc2ae0000
DATA ec<>+20(SB)/4, $0xc2ae0000
DATA ec<>+24(SB)/4, $0xc2ae0000
DATA ec<>+28(SB)/4, $0xc2ae0000
DATA ec<>+32(SB)/4, $0x42b00000
DATA ec<>+36(SB)/4, $0x42b00000
DATA ec<>+40(SB)/4, $0x42b00000
DATA ec<>+44(SB)/4, $0x42b00000
DATA ec<>+48(SB)/4, $0x42b00000
DATA ec<>+52(SB)/4, $0x42b00000
DATA ec<>+56(SB)/4, $0x42b00000
DATA ec<>+60(SB)/4, $0x42b00000
DATA ec<>+64(SB)/4, $0x3fb8aa3b
DATA ec<>+68(SB)/4, $0x3fb8aa3b
DATA ec<>+72(SB)/4, $0x3fb8aa3b
DATA ec<>+76(SB)/4, $0x3fb8aa3b
DATA ec<>+80(SB)/4, $0x3fb8aa3b
DATA ec<>+84(SB)/4, $0x3fb8aa3b
DATA ec<>+88(SB)/4, $0x3fb8aa3b
DATA ec<>+92(SB)/4, $0x3fb8aa3b
DATA ec<>+96(SB)/4, $0x3f318000
DATA ec<>+100(SB)/4, $0x3f318000
DATA ec<>+104(SB)/4, $0x3f318000
DATA ec<>+108(SB)/4, $0x3f318000
DATA ec<>+112(SB)/4, $0x3f318000
DATA ec<>+116(SB)/4, $0x3f318000
DATA ec<>+120(SB)/4, $0x3f318000
DATA ec<>+124(SB)/4, $0x3f318000
DATA ec<>+128(SB)/4, $0xb95e8083
DATA ec<>+132(SB)/4, $0xb95e8083
DATA ec<>+136(SB)/4, $0xb95e8083
DATA ec<>+140(SB)/4, $0xb95e8083
DATA ec<>+144(SB)/4, $0xb95e8083
DATA ec<>+148(SB)/4, $0xb95e8083
DATA ec<>+152(SB)/4, $0xb95e8083
DATA ec<>+156(SB)/4, $0xb95e8083
DATA ec<>+160(SB)/4, $0x39506967
DATA ec<>+164(SB)/4, $0x39506967
DATA ec<>+168(SB)/4, $0x39506967
DATA ec<>+172(SB)/4, $0x39506967
DATA ec<>+176(SB)/4, $0x39506967
DATA ec<>+180(SB)/4, $0x39506967
DATA ec<>+184(SB)/4, $0x39506967
DATA ec<>+188(SB)/4, $0x39506967
DATA ec<>+192(SB)/4, $0x3ab743ce
DATA ec<>+196(SB)/4, $0x3ab743ce
DATA ec<>+200(SB)/4, $0x3ab743ce
DATA ec<>+204(SB)/4, $0x3ab743ce
DATA ec<>+208(SB)/4, $0x3ab743ce
DATA ec<>+212(SB)/4, $0x3ab743ce
DATA ec<>+216(SB)/4, $0x3ab743ce
DATA ec<>+220(SB)/4, $0x3ab743ce
DATA ec<>+224(SB)/4, $0x3c088908
DATA ec<>+228(SB)/4, $0x3c088908
DATA ec<>+232(SB)/4, $0x3c088908
DATA ec<>+236(SB)/4, $0x3c088908
DATA ec<>+240(SB)/4, $0x3c088908
DATA ec<>+244(SB)/4, $0x3c088908
DATA ec<>+248(SB)/4, $0x3c088908
DATA ec<>+252(SB)/4, $0x3c088908
DATA ec<>+256(SB)/4, $0x3d2aa9c1
DATA ec<>+260(SB)/4, $0x3d2aa9c1
DATA ec<>+264(SB)/4, $0x3d2aa9c1
DATA ec<>+268(SB)/4, $0x3d2aa9c1
DATA ec<>+272(SB)/4, $0x3d2aa9c1
DATA ec<>+276(SB)/4, $0x3d2aa9c1
DATA ec<>+280(SB)/4, $0x3d2aa9c1
DATA ec<>+284(SB)/4, $0x3d2aa9c1
DATA ec<>+288(SB)/4, $0x3e2aaaaa
DATA ec<>+292(SB)/4, $0x3e2aaaaa
DATA ec<>+296(SB)/4, $0x3e2aaaaa
DATA ec<>+300(SB)/4, $0x3e2aaaaa
DATA ec<>+304(SB)/4, $0x3e2aaaaa
DATA ec<>+308(SB)/4, $0x3e2aaaaa
DATA ec<>+312(SB)/4, $0x3e2aaaaa
DATA ec<>+316(SB)/4, $0x3e2aaaaa
DATA ec<>+320(SB)/4, $0x3f000000
DATA ec<>+324(SB)/4, $0x3f000000
DATA ec<>+328(SB)/4, $0x3f000000
DATA ec<>+332(SB)/4, $0x3f000000
DATA ec<>+336(SB)/4, $0x3f000000
DATA ec<>+340(SB)/4, $0x3f000000
DATA ec<>+344(SB)/4, $0x3f000000
DATA ec<>+348(SB)/4, $0x3f000000
DATA ec<>+352(SB)/4, $0x3f800000
DATA ec<>+356(SB)/4, $0x3f800000
DATA ec<>+360(SB)/4, $0x3f800000
DATA ec<>+364(SB)/4, $0x3f800000
DATA ec<>+368(SB)/4, $0x3f800000
DATA ec<>+372(SB)/4, $0x3f800000
DATA ec<>+376(SB)/4, $0x3f800000
DATA ec<>+380(SB)/4, $0x3f800000
DATA ec<>+384(SB)/4, $0x0000007f
DATA ec<>+388(SB)/4, $0x0000007f
DATA ec<>+392(SB)/4, $0x0000007f
DATA ec<>+396(SB)/4, $0x0000007f
DATA ec<>+400(SB)/4, $0x0000007f
DATA ec<>+404(SB)/4, $0x0000007f
DATA ec<>+408(SB)/4, $0x0000007f
DATA ec<>+412(SB)/4, $0x0000007f
DATA ec<>+416(SB)/4, $0x80000000
DATA ec<>+420(SB)/4, $0x80000000
DATA ec<>+424(SB)/4, $0x80000000
DATA ec<>+428(SB)/4, $0x80000000
DATA ec<>+432(SB)/4, $0x80000000
DATA ec<>+436(SB)/4, $0x80000000
DATA ec<>+440(SB)/4, $0x80000000
DATA ec<>+444(SB)/4, $0x80000000
DATA ec<>+448(SB)/4, $0xbfd9db23
DATA ec<>+452(SB)/4, $0xbfd9db23
DATA ec<>+456(SB)/4, $0xbfd9db23
DATA ec<>+460(SB)/4, $0xbfd9db23
DATA ec<>+464(SB)/4, $0xbfd9db23
DATA ec<>+468(SB)/4, $0xbfd9db23
DATA ec<>+472(SB)/4, $0xbfd9db23
DATA ec<>+476(SB)/4, $0xbfd9db23
DATA ec<>+480(SB)/4, $0xff800000
DATA ec<>+484(SB)/4, $0xff800000
DATA ec<>+488(SB)/4, $0xff800000
DATA ec<>+492(SB)/4, $0xff800000
DATA ec<>+496(SB)/4, $0xff800000
DATA ec<>+500(SB)/4, $0xff800000
DATA ec<>+504(SB)/4, $0xff800000
DATA ec<>+508(SB)/4, $0xff800000
GLOBL ec<>(SB), RODATA|NOPTR, $512

// EXP sets Y0 = exp(Y0) in every lane, clobbering Y1..Y4. It is the Cephes
// expf scheme: n = round(x·log2 e), r = x − n·ln 2 in two parts (exact for
// |n| < 2^9), exp(r) by a degree-6 polynomial on |r| ≤ ln2/2, then scaled by
// 2^n through the exponent bits. The error is within 2 ulp over the whole
// range. Inputs are clamped to [−87, 88] so that 2^n stays a normal float;
// results for x < −87 (below 1.7e−38) are flushed to zero, which also maps
// −Inf to 0.
#define EXP \
	VCMPPS $0x1d, ec<>+0(SB), Y0, Y4 \
	VMAXPS ec<>+0(SB), Y0, Y0 \
	VMINPS ec<>+32(SB), Y0, Y0 \
	VMULPS ec<>+64(SB), Y0, Y1 \
	VROUNDPS $0, Y1, Y1 \
	VFNMADD231PS ec<>+96(SB), Y1, Y0 \
	VFNMADD231PS ec<>+128(SB), Y1, Y0 \
	VMOVUPS ec<>+160(SB), Y3 \
	VFMADD213PS ec<>+192(SB), Y0, Y3 \
	VFMADD213PS ec<>+224(SB), Y0, Y3 \
	VFMADD213PS ec<>+256(SB), Y0, Y3 \
	VFMADD213PS ec<>+288(SB), Y0, Y3 \
	VFMADD213PS ec<>+320(SB), Y0, Y3 \
	VMULPS Y0, Y0, Y2 \
	VFMADD213PS Y0, Y2, Y3 \
	VADDPS ec<>+352(SB), Y3, Y3 \
	VCVTPS2DQ Y1, Y1 \
	VPADDD ec<>+384(SB), Y1, Y1 \
	VPSLLD $23, Y1, Y1 \
	VMULPS Y1, Y3, Y0 \
	VANDPS Y4, Y0, Y0

// XOVER1PEXP is Y0 = Y5/(1+exp(Y0)), the sigmoid-weighted tail that SiLU,
// quick GELU and tanh GELU share (each puts its own argument in Y0).
#define XOVER1PEXP \
	EXP \
	VADDPS ec<>+352(SB), Y0, Y0 \
	VDIVPS Y0, Y5, Y0

// HMAX and HSUM reduce Y6 to its lane maximum or sum in X6.
#define HMAX \
	VEXTRACTF128 $1, Y6, X7 \
	VMAXPS X7, X6, X6 \
	VPERMILPS $0x4e, X6, X7 \
	VMAXPS X7, X6, X6 \
	VPERMILPS $0xb1, X6, X7 \
	VMAXPS X7, X6, X6

#define HSUM \
	VEXTRACTF128 $1, Y6, X7 \
	VADDPS X7, X6, X6 \
	VPERMILPS $0x4e, X6, X7 \
	VADDPS X7, X6, X6 \
	VPERMILPS $0xb1, X6, X7 \
	VADDPS X7, X6, X6

// func scaleMaxAVX2(x *float32, n8 int, s float32) float32
TEXT ·scaleMaxAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), DI
	MOVQ n8+8(FP), CX
	VBROADCASTSS s+16(FP), Y5
	VMOVUPS ec<>+480(SB), Y6
	TESTQ CX, CX
	JZ   done
loop:
	VMULPS (DI), Y5, Y0
	VMOVUPS Y0, (DI)
	VMAXPS Y0, Y6, Y6
	ADDQ $32, DI
	DECQ CX
	JNZ  loop
done:
	HMAX
	VMOVSS X6, ret+24(FP)
	VZEROUPPER
	RET

// func expSumAVX2(x *float32, n8 int, sub float32) float32
TEXT ·expSumAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), DI
	MOVQ n8+8(FP), CX
	VBROADCASTSS sub+16(FP), Y5
	VXORPS Y6, Y6, Y6
	TESTQ CX, CX
	JZ   done
loop:
	VMOVUPS (DI), Y0
	VSUBPS Y5, Y0, Y0
	EXP
	VMOVUPS Y0, (DI)
	VADDPS Y0, Y6, Y6
	ADDQ $32, DI
	DECQ CX
	JNZ  loop
done:
	HSUM
	VMOVSS X6, ret+24(FP)
	VZEROUPPER
	RET

// func siluMulAVX2(dst, gate, up *float32, n8 int)
// dst = gate/(1+exp(−gate))·up.
TEXT ·siluMulAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ gate+8(FP), SI
	MOVQ up+16(FP), DX
	MOVQ n8+24(FP), CX
	TESTQ CX, CX
	JZ   done
loop:
	VMOVUPS (SI), Y5
	VXORPS ec<>+416(SB), Y5, Y0
	XOVER1PEXP
	VMULPS (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	DECQ CX
	JNZ  loop
done:
	VZEROUPPER
	RET

// func quickGELUAVX2(x *float32, n8 int)
// x = x/(1+exp(−1.702·x)).
TEXT ·quickGELUAVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n8+8(FP), CX
	TESTQ CX, CX
	JZ   done
loop:
	VMOVUPS (DI), Y5
	VMULPS ec<>+448(SB), Y5, Y0
	XOVER1PEXP
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	DECQ CX
	JNZ  loop
done:
	VZEROUPPER
	RET

DATA gt<>+0(SB)/4, $0.044715
DATA gt<>+4(SB)/4, $-1.5957691216057308
GLOBL gt<>(SB), RODATA|NOPTR, $8

// func geluTanhAVX2(x *float32, n8 int)
// x = x/(1+exp(−2·√(2/π)·(x+0.044715·x³))), which is the tanh GELU
// 0.5·x·(1+tanh(√(2/π)·(x+0.044715·x³))), in geluTanhGo's order.
TEXT ·geluTanhAVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n8+8(FP), CX
	VBROADCASTSS gt<>+0(SB), Y6
	VBROADCASTSS gt<>+4(SB), Y7
	TESTQ CX, CX
	JZ   done
loop:
	VMOVUPS (DI), Y5
	VMULPS Y6, Y5, Y0
	VMULPS Y5, Y0, Y0
	VMULPS Y5, Y0, Y0
	VADDPS Y5, Y0, Y0
	VMULPS Y7, Y0, Y0
	XOVER1PEXP
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	DECQ CX
	JNZ  loop
done:
	VZEROUPPER
	RET

// func addAVX2(dst, a, b *float32, n int)
// dst[i] = a[i] + b[i] for n a multiple of 8; dst may be a or b.
TEXT ·addAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	CMPQ CX, $32
	JB   add8

add32:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VADDPS  (DX), Y0, Y0
	VADDPS  32(DX), Y1, Y1
	VADDPS  64(DX), Y2, Y2
	VADDPS  96(DX), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DX
	ADDQ $128, DI
	SUBQ $32, CX
	CMPQ CX, $32
	JAE  add32

add8:
	CMPQ CX, $8
	JB   adddone
	VMOVUPS (SI), Y0
	VADDPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  add8

adddone:
	VZEROUPPER
	RET

// func ropeAVX2(lo, hi, c, s *float32, n int)
// Rotates n values (a multiple of 8) of a head's halves lo and hi:
// lo[d], hi[d] = lo[d]·c[d] − hi[d]·s[d], hi[d]·c[d] + lo[d]·s[d], each
// product rounded before the sum, as RoPERef computes them.
TEXT ·ropeAVX2(SB), NOSPLIT, $0-40
	MOVQ lo+0(FP), DI
	MOVQ hi+8(FP), BX
	MOVQ c+16(FP), SI
	MOVQ s+24(FP), DX
	MOVQ n+32(FP), CX
	SHRQ $3, CX
	JZ   ropedone

rope8:
	VMOVUPS (DI), Y0
	VMOVUPS (BX), Y1
	VMOVUPS (SI), Y2
	VMOVUPS (DX), Y3
	VMULPS  Y2, Y0, Y4
	VMULPS  Y3, Y1, Y5
	VSUBPS  Y5, Y4, Y4
	VMULPS  Y2, Y1, Y6
	VMULPS  Y3, Y0, Y7
	VADDPS  Y7, Y6, Y6
	VMOVUPS Y4, (DI)
	VMOVUPS Y6, (BX)
	ADDQ $32, DI
	ADDQ $32, BX
	ADDQ $32, SI
	ADDQ $32, DX
	DECQ CX
	JNZ  rope8

ropedone:
	VZEROUPPER
	RET

// The zmm forms of scaleMax and expSum for the avx512 tier. Each computes
// sixteen values per instruction with the lane operations of the AVX2
// loops above (EXP512 is EXP with its constants in registers, VRNDSCALEPS
// $0 for VROUNDPS $0 and a zero-masking multiply for the final AND), and
// folds the two halves of each 16-value vector into the eight-lane maximum
// or sum one after the other, in the order the AVX2 loop takes them: the
// results are bit for bit the AVX2 functions'. Only AVX-512 F instructions
// (VEXTRACTF64X4 moves the upper eight floats, not DQ's VEXTRACTF32X8), as
// the avx512 tier requires no more.

// EXP512 sets Z0 = exp(Z0), clobbering Z1..Z3 and K1, with the constants
// of ec<> broadcast in Z16..Z28 (EXPCONST512).
#define EXP512 \
	VCMPPS $0x1d, Z16, Z0, K1 \
	VMAXPS Z16, Z0, Z0 \
	VMINPS Z17, Z0, Z0 \
	VMULPS Z18, Z0, Z1 \
	VRNDSCALEPS $0, Z1, Z1 \
	VFNMADD231PS Z19, Z1, Z0 \
	VFNMADD231PS Z20, Z1, Z0 \
	VMOVAPS Z21, Z3 \
	VFMADD213PS Z22, Z0, Z3 \
	VFMADD213PS Z23, Z0, Z3 \
	VFMADD213PS Z24, Z0, Z3 \
	VFMADD213PS Z25, Z0, Z3 \
	VFMADD213PS Z26, Z0, Z3 \
	VMULPS Z0, Z0, Z2 \
	VFMADD213PS Z0, Z2, Z3 \
	VADDPS Z27, Z3, Z3 \
	VCVTPS2DQ Z1, Z1 \
	VPADDD Z28, Z1, Z1 \
	VPSLLD $23, Z1, Z1 \
	VMULPS.Z Z1, Z3, K1, Z0

#define EXPCONST512 \
	VBROADCASTSS ec<>+0(SB), Z16 \
	VBROADCASTSS ec<>+32(SB), Z17 \
	VBROADCASTSS ec<>+64(SB), Z18 \
	VBROADCASTSS ec<>+96(SB), Z19 \
	VBROADCASTSS ec<>+128(SB), Z20 \
	VBROADCASTSS ec<>+160(SB), Z21 \
	VBROADCASTSS ec<>+192(SB), Z22 \
	VBROADCASTSS ec<>+224(SB), Z23 \
	VBROADCASTSS ec<>+256(SB), Z24 \
	VBROADCASTSS ec<>+288(SB), Z25 \
	VBROADCASTSS ec<>+320(SB), Z26 \
	VBROADCASTSS ec<>+352(SB), Z27 \
	VBROADCASTSS ec<>+384(SB), Z28

// func scaleMaxRowsAVX512(x *float32, ld int, rows int, n8 int, s float32, maxes *float32)
//
// scaleMaxAVX2's arithmetic, sixteen values per instruction (the halves
// folded in its order), on each of rows rows of n8·8 values, ld floats
// apart, maxes[r] the result for row r: one call for a block of scores.
TEXT ·scaleMaxRowsAVX512(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ ld+8(FP), DX
	SHLQ $2, DX
	MOVQ rows+16(FP), R9
	MOVQ n8+24(FP), R10
	VBROADCASTSS s+32(FP), Z5
	MOVQ maxes+40(FP), R11
	TESTQ R9, R9
	JZ   end
row:
	MOVQ SI, DI
	VMOVUPS ec<>+480(SB), Y6
	MOVQ R10, R8
	SHRQ $1, R8
	JZ   odd
loop:
	VMULPS (DI), Z5, Z0
	VMOVUPS Z0, (DI)
	VEXTRACTF64X4 $1, Z0, Y1
	VMAXPS Y0, Y6, Y6
	VMAXPS Y1, Y6, Y6
	ADDQ $64, DI
	DECQ R8
	JNZ  loop
odd:
	TESTQ $1, R10
	JZ   done
	VMULPS (DI), Y5, Y0
	VMOVUPS Y0, (DI)
	VMAXPS Y0, Y6, Y6
done:
	HMAX
	VMOVSS X6, (R11)
	ADDQ $4, R11
	ADDQ DX, SI
	DECQ R9
	JNZ  row
end:
	VZEROUPPER
	RET

// func expSumRowsAVX512(x *float32, ld int, rows int, n8 int, subs *float32, sums *float32)
//
// expSumAVX2's arithmetic, sixteen values per instruction (the halves
// summed in its order), on each of rows rows of n8·8 values, ld floats
// apart, with subs[r] subtracted in row r and sums[r] its sum.
TEXT ·expSumRowsAVX512(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ ld+8(FP), DX
	SHLQ $2, DX
	MOVQ rows+16(FP), R9
	MOVQ n8+24(FP), R10
	MOVQ subs+32(FP), R12
	MOVQ sums+40(FP), R11
	EXPCONST512
	TESTQ R9, R9
	JZ   end
row:
	MOVQ SI, DI
	VBROADCASTSS (R12), Z29
	VXORPS Y6, Y6, Y6
	MOVQ R10, R8
	SHRQ $1, R8
	JZ   odd
loop:
	VMOVUPS (DI), Z0
	VSUBPS Z29, Z0, Z0
	EXP512
	VMOVUPS Z0, (DI)
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y0, Y6, Y6
	VADDPS Y1, Y6, Y6
	ADDQ $64, DI
	DECQ R8
	JNZ  loop
odd:
	TESTQ $1, R10
	JZ   done
	VMOVUPS (DI), Y0
	VSUBPS Z29, Z0, Z0
	EXP512
	VMOVUPS Y0, (DI)
	VADDPS Y0, Y6, Y6
done:
	HSUM
	VMOVSS X6, (R11)
	ADDQ $4, R11
	ADDQ $4, R12
	ADDQ DX, SI
	DECQ R9
	JNZ  row
end:
	VZEROUPPER
	RET
