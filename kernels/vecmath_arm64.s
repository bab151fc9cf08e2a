#include "textflag.h"
#include "neon_arm64.h"

// The elementwise kernels of vecmath_amd64.s on NEON. Each loop takes
// eight values per step as two four-lane halves, the two halves of one
// AVX2 register, and applies the same lane operations in the same order
// (the same exp approximation, fused where AVX2 fuses), so every value,
// and every lane sum and maximum, has the bits the AVX2 kernels give;
// the horizontal reductions pair the lanes as HMAX and HSUM do.

// The constants of ec<> in vecmath_amd64.s, four lanes each, loaded into
// V16..V28 by EXPCONST: −87, 88, log2 e, ln 2 in two parts, the six
// polynomial coefficients, 1 and the exponent bias 127.
DATA ne<>+0(SB)/4, $0xc2ae0000
DATA ne<>+4(SB)/4, $0xc2ae0000
DATA ne<>+8(SB)/4, $0xc2ae0000
DATA ne<>+12(SB)/4, $0xc2ae0000
DATA ne<>+16(SB)/4, $0x42b00000
DATA ne<>+20(SB)/4, $0x42b00000
DATA ne<>+24(SB)/4, $0x42b00000
DATA ne<>+28(SB)/4, $0x42b00000
DATA ne<>+32(SB)/4, $0x3fb8aa3b
DATA ne<>+36(SB)/4, $0x3fb8aa3b
DATA ne<>+40(SB)/4, $0x3fb8aa3b
DATA ne<>+44(SB)/4, $0x3fb8aa3b
DATA ne<>+48(SB)/4, $0x3f318000
DATA ne<>+52(SB)/4, $0x3f318000
DATA ne<>+56(SB)/4, $0x3f318000
DATA ne<>+60(SB)/4, $0x3f318000
DATA ne<>+64(SB)/4, $0xb95e8083
DATA ne<>+68(SB)/4, $0xb95e8083
DATA ne<>+72(SB)/4, $0xb95e8083
DATA ne<>+76(SB)/4, $0xb95e8083
DATA ne<>+80(SB)/4, $0x39506967
DATA ne<>+84(SB)/4, $0x39506967
DATA ne<>+88(SB)/4, $0x39506967
DATA ne<>+92(SB)/4, $0x39506967
DATA ne<>+96(SB)/4, $0x3ab743ce
DATA ne<>+100(SB)/4, $0x3ab743ce
DATA ne<>+104(SB)/4, $0x3ab743ce
DATA ne<>+108(SB)/4, $0x3ab743ce
DATA ne<>+112(SB)/4, $0x3c088908
DATA ne<>+116(SB)/4, $0x3c088908
DATA ne<>+120(SB)/4, $0x3c088908
DATA ne<>+124(SB)/4, $0x3c088908
DATA ne<>+128(SB)/4, $0x3d2aa9c1
DATA ne<>+132(SB)/4, $0x3d2aa9c1
DATA ne<>+136(SB)/4, $0x3d2aa9c1
DATA ne<>+140(SB)/4, $0x3d2aa9c1
DATA ne<>+144(SB)/4, $0x3e2aaaaa
DATA ne<>+148(SB)/4, $0x3e2aaaaa
DATA ne<>+152(SB)/4, $0x3e2aaaaa
DATA ne<>+156(SB)/4, $0x3e2aaaaa
DATA ne<>+160(SB)/4, $0x3f000000
DATA ne<>+164(SB)/4, $0x3f000000
DATA ne<>+168(SB)/4, $0x3f000000
DATA ne<>+172(SB)/4, $0x3f000000
DATA ne<>+176(SB)/4, $0x3f800000
DATA ne<>+180(SB)/4, $0x3f800000
DATA ne<>+184(SB)/4, $0x3f800000
DATA ne<>+188(SB)/4, $0x3f800000
DATA ne<>+192(SB)/4, $0x0000007f
DATA ne<>+196(SB)/4, $0x0000007f
DATA ne<>+200(SB)/4, $0x0000007f
DATA ne<>+204(SB)/4, $0x0000007f
GLOBL ne<>(SB), RODATA|NOPTR, $208

#define EXPCONST \
	MOVD $ne<>(SB), R8 \
	VLD1.P 64(R8), [V16.S4, V17.S4, V18.S4, V19.S4] \
	VLD1.P 64(R8), [V20.S4, V21.S4, V22.S4, V23.S4] \
	VLD1.P 64(R8), [V24.S4, V25.S4, V26.S4, V27.S4] \
	VLD1 (R8), [V28.S4]

// EXP sets register x to exp(x) in four lanes, clobbering a, b, c and m:
// vecmath_amd64.s's EXP step by step (FMLS for VFNMADD231PS, FMLA with
// the addend copied into the accumulator for VFMADD213PS, FRINTN for
// VROUNDPS $0, FCVTZS on the already integral n for VCVTPS2DQ), with the
// same clamp to [−87, 88] and the same flush to zero below −87. A NaN
// lane gives 0 on both.
#define EXP(x, a, b, c, m) \
	FCMGE4S(m, x, 16) \
	FMAX4S(x, x, 16) \
	FMIN4S(x, x, 17) \
	FMUL4S(a, x, 18) \
	FRINTN4S(a, a) \
	FMLS4S(x, a, 19) \
	FMLS4S(x, a, 20) \
	MOV16B(c, 22) \
	FMLA4S(c, 21, x) \
	MOV16B(b, 23) \
	FMLA4S(b, c, x) \
	MOV16B(c, 24) \
	FMLA4S(c, b, x) \
	MOV16B(b, 25) \
	FMLA4S(b, c, x) \
	MOV16B(c, 26) \
	FMLA4S(c, b, x) \
	FMUL4S(b, x, x) \
	FMLA4S(x, b, c) \
	FADD4S(x, x, 27) \
	FCVTZS4S(a, a) \
	ADD4S(a, a, 28) \
	SHL4S_23(a, a) \
	FMUL4S(x, x, a) \
	AND16B(x, x, m)

// EXP8 is EXP on eight lanes, V0 (the low four) and V1, clobbering V2..V5
// and V8..V11.
#define EXP8 \
	EXP(0, 2, 3, 4, 5) \
	EXP(1, 8, 9, 10, 11)

// XOVER1PEXP8 is XOVER1PEXP on eight lanes: V0 = V14/(1+exp(V0)) and
// V1 = V15/(1+exp(V1)).
#define XOVER1PEXP8 \
	EXP8 \
	FADD4S(0, 0, 27) \
	FADD4S(1, 1, 27) \
	FDIV4S(0, 14, 0) \
	FDIV4S(1, 15, 1)

// func scaleMaxNEON(x *float32, n8 int, s float32) float32
TEXT ·scaleMaxNEON(SB), NOSPLIT, $0-28
	MOVD x+0(FP), R0
	MOVD n8+8(FP), R1
	FMOVS s+16(FP), F5
	VDUP V5.S[0], V5.S4
	MOVD $0xff800000, R2
	VDUP R2, V6.S4
	VMOV V6.B16, V7.B16
	CBZ R1, done
loop:
	VLD1 (R0), [V0.S4, V1.S4]
	FMUL4S(0, 0, 5)
	FMUL4S(1, 1, 5)
	VST1.P [V0.S4, V1.S4], 32(R0)
	FMAX4S(6, 6, 0)
	FMAX4S(7, 7, 1)
	SUB $1, R1
	CBNZ R1, loop
done:
	FMAX4S(6, 6, 7)
	FMAXV4S(6, 6)
	FMOVS F6, ret+24(FP)
	RET

// HSUM8 leaves in F6 the sum of the eight lanes of V6 (low) and V7
// (high), paired as HSUM pairs them: (s0+s2)+(s1+s3) of s = low+high.
#define HSUM8 \
	FADD4S(6, 6, 7) \
	EXT16B_8(7, 6, 6) \
	FADD4S(6, 6, 7) \
	FADDP4S(6, 6, 6)

// func expSumNEON(x *float32, n8 int, sub float32) float32
TEXT ·expSumNEON(SB), NOSPLIT, $0-28
	MOVD x+0(FP), R0
	MOVD n8+8(FP), R1
	FMOVS sub+16(FP), F29
	VDUP V29.S[0], V29.S4
	VEOR V6.B16, V6.B16, V6.B16
	VEOR V7.B16, V7.B16, V7.B16
	EXPCONST
	CBZ R1, done
loop:
	VLD1 (R0), [V0.S4, V1.S4]
	FSUB4S(0, 0, 29)
	FSUB4S(1, 1, 29)
	EXP8
	VST1.P [V0.S4, V1.S4], 32(R0)
	FADD4S(6, 6, 0)
	FADD4S(7, 7, 1)
	SUB $1, R1
	CBNZ R1, loop
done:
	HSUM8
	FMOVS F6, ret+24(FP)
	RET

// func siluMulNEON(dst, gate, up *float32, n8 int)
// dst = gate/(1+exp(−gate))·up.
TEXT ·siluMulNEON(SB), NOSPLIT, $0-32
	MOVD dst+0(FP), R0
	MOVD gate+8(FP), R1
	MOVD up+16(FP), R2
	MOVD n8+24(FP), R3
	EXPCONST
	CBZ R3, done
loop:
	VLD1.P 32(R1), [V14.S4, V15.S4]
	FNEG4S(0, 14)
	FNEG4S(1, 15)
	XOVER1PEXP8
	VLD1.P 32(R2), [V12.S4, V13.S4]
	FMUL4S(0, 0, 12)
	FMUL4S(1, 1, 13)
	VST1.P [V0.S4, V1.S4], 32(R0)
	SUB $1, R3
	CBNZ R3, loop
done:
	RET

// func quickGELUNEON(x *float32, n8 int)
// x = x/(1+exp(−1.702·x)).
TEXT ·quickGELUNEON(SB), NOSPLIT, $0-16
	MOVD x+0(FP), R0
	MOVD n8+8(FP), R1
	EXPCONST
	MOVD $0xbfd9db23, R2
	VDUP R2, V29.S4
	CBZ R1, done
loop:
	VLD1 (R0), [V14.S4, V15.S4]
	FMUL4S(0, 14, 29)
	FMUL4S(1, 15, 29)
	XOVER1PEXP8
	VST1.P [V0.S4, V1.S4], 32(R0)
	SUB $1, R1
	CBNZ R1, loop
done:
	RET

DATA gtn<>+0(SB)/4, $0.044715
DATA gtn<>+4(SB)/4, $-1.5957691216057308
GLOBL gtn<>(SB), RODATA|NOPTR, $8

// func geluTanhNEON(x *float32, n8 int)
// x = x/(1+exp(−2·√(2/π)·(x+0.044715·x³))), geluTanhAVX2's operations.
TEXT ·geluTanhNEON(SB), NOSPLIT, $0-16
	MOVD x+0(FP), R0
	MOVD n8+8(FP), R1
	EXPCONST
	MOVD $gtn<>(SB), R2
	VLD1R.P 4(R2), [V29.S4]
	VLD1R (R2), [V30.S4]
	CBZ R1, done
loop:
	VLD1 (R0), [V14.S4, V15.S4]
	FMUL4S(0, 14, 29)
	FMUL4S(1, 15, 29)
	FMUL4S(0, 0, 14)
	FMUL4S(1, 1, 15)
	FMUL4S(0, 0, 14)
	FMUL4S(1, 1, 15)
	FADD4S(0, 0, 14)
	FADD4S(1, 1, 15)
	FMUL4S(0, 0, 30)
	FMUL4S(1, 1, 30)
	XOVER1PEXP8
	VST1.P [V0.S4, V1.S4], 32(R0)
	SUB $1, R1
	CBNZ R1, loop
done:
	RET

// func addNEON(dst, a, b *float32, n int)
// dst[i] = a[i] + b[i] for n a multiple of 8; dst may be a or b.
TEXT ·addNEON(SB), NOSPLIT, $0-32
	MOVD dst+0(FP), R0
	MOVD a+8(FP), R1
	MOVD b+16(FP), R2
	MOVD n+24(FP), R3
	CMP $16, R3
	BLT add8
add16:
	VLD1.P 64(R1), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R2), [V4.S4, V5.S4, V6.S4, V7.S4]
	FADD4S(0, 0, 4)
	FADD4S(1, 1, 5)
	FADD4S(2, 2, 6)
	FADD4S(3, 3, 7)
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R0)
	SUB $16, R3
	CMP $16, R3
	BGE add16
add8:
	CBZ R3, done
	VLD1.P 32(R1), [V0.S4, V1.S4]
	VLD1.P 32(R2), [V4.S4, V5.S4]
	FADD4S(0, 0, 4)
	FADD4S(1, 1, 5)
	VST1.P [V0.S4, V1.S4], 32(R0)
done:
	RET

// func ropeNEON(lo, hi, c, s *float32, n int)
// Rotates n values (a multiple of 8) of a head's halves lo and hi:
// lo[d], hi[d] = lo[d]·c[d] − hi[d]·s[d], hi[d]·c[d] + lo[d]·s[d], each
// product rounded before the sum, as RoPERef computes them.
TEXT ·ropeNEON(SB), NOSPLIT, $0-40
	MOVD lo+0(FP), R0
	MOVD hi+8(FP), R1
	MOVD c+16(FP), R2
	MOVD s+24(FP), R3
	MOVD n+32(FP), R4
	LSR $3, R4
	CBZ R4, done
loop:
	VLD1 (R0), [V0.S4, V1.S4]
	VLD1 (R1), [V2.S4, V3.S4]
	VLD1.P 32(R2), [V4.S4, V5.S4]
	VLD1.P 32(R3), [V6.S4, V7.S4]
	FMUL4S(16, 0, 4)
	FMUL4S(17, 1, 5)
	FMUL4S(18, 2, 6)
	FMUL4S(19, 3, 7)
	FSUB4S(16, 16, 18)
	FSUB4S(17, 17, 19)
	FMUL4S(20, 2, 4)
	FMUL4S(21, 3, 5)
	FMUL4S(22, 0, 6)
	FMUL4S(23, 1, 7)
	FADD4S(20, 20, 22)
	FADD4S(21, 21, 23)
	VST1.P [V16.S4, V17.S4], 32(R0)
	VST1.P [V20.S4, V21.S4], 32(R1)
	SUB $1, R4
	CBNZ R4, loop
done:
	RET
