#include "textflag.h"
#include "neon_arm64.h"

// The float64 arithmetic of rmsNormRows and layerNormRows (elementwise.go)
// on NEON, in the same order and with every product rounded before it is
// added, as the Go code (which forbids fusion by conversions) and
// norm_amd64.s round them, so that every result has the same bits on both
// architectures. The row layout is that of norm_amd64.s.

// ROWS4 points R1..R3 at the rows after R0, R7 bytes apart, and zeroes
// the eight accumulators V0..V7 (two per row).
#define ROWS4 \
	ADD R7, R0, R1 \
	ADD R7, R1, R2 \
	ADD R7, R2, R3 \
	VEOR V0.B16, V0.B16, V0.B16 \
	VEOR V1.B16, V1.B16, V1.B16 \
	VEOR V2.B16, V2.B16, V2.B16 \
	VEOR V3.B16, V3.B16, V3.B16 \
	VEOR V4.B16, V4.B16, V4.B16 \
	VEOR V5.B16, V5.B16, V5.B16 \
	VEOR V6.B16, V6.B16, V6.B16 \
	VEOR V7.B16, V7.B16, V7.B16

// LOAD4 reads the next four values of each row and widens them to
// float64: row r's in V20/V21, V22/V23, V28/V29, V30/V31.
#define LOAD4 \
	VLD1.P 16(R0), [V16.S4] \
	VLD1.P 16(R1), [V17.S4] \
	VLD1.P 16(R2), [V18.S4] \
	VLD1.P 16(R3), [V19.S4] \
	FCVTL2D(20, 16) \
	FCVTL22D(21, 16) \
	FCVTL2D(22, 17) \
	FCVTL22D(23, 17) \
	FCVTL2D(28, 18) \
	FCVTL22D(29, 18) \
	FCVTL2D(30, 19) \
	FCVTL22D(31, 19)

// ACC4 adds the widened values LOAD4 left to the accumulators.
#define ACC4 \
	FADD2D(0, 0, 20) \
	FADD2D(1, 1, 21) \
	FADD2D(2, 2, 22) \
	FADD2D(3, 3, 23) \
	FADD2D(4, 4, 28) \
	FADD2D(5, 5, 29) \
	FADD2D(6, 6, 30) \
	FADD2D(7, 7, 31)

// STORE4 writes the accumulators to out (R6), row by row.
#define STORE4 \
	VST1.P [V0.D2, V1.D2, V2.D2, V3.D2], 64(R6) \
	VST1 [V4.D2, V5.D2, V6.D2, V7.D2], (R6)

// func sumSqRows4NEON(x *float32, stride int, n4 int, c *[4]float64, out *[16]float64)
// For each of four rows r (x, x+stride bytes, ...), the four partial sums
// of sumSq4(row, c[r]) over its first n4 groups of four values: lane j of
// a row adds (float64(v) − c[r])² of values 4i+j, i = 0, 1, ..., in order,
// the square rounded, as sumSq4's chain sj does. out[4r+j] is row r's lane j.
TEXT ·sumSqRows4NEON(SB), NOSPLIT, $0-40
	MOVD x+0(FP), R0
	MOVD stride+8(FP), R7
	MOVD n4+16(FP), R4
	MOVD c+24(FP), R5
	MOVD out+32(FP), R6
	ROWS4
	VLD1R.P 8(R5), [V24.D2]
	VLD1R.P 8(R5), [V25.D2]
	VLD1R.P 8(R5), [V26.D2]
	VLD1R (R5), [V27.D2]
	CBZ R4, store
loop:
	LOAD4
	FSUB2D(20, 20, 24)
	FSUB2D(21, 21, 24)
	FSUB2D(22, 22, 25)
	FSUB2D(23, 23, 25)
	FSUB2D(28, 28, 26)
	FSUB2D(29, 29, 26)
	FSUB2D(30, 30, 27)
	FSUB2D(31, 31, 27)
	FMUL2D(20, 20, 20)
	FMUL2D(21, 21, 21)
	FMUL2D(22, 22, 22)
	FMUL2D(23, 23, 23)
	FMUL2D(28, 28, 28)
	FMUL2D(29, 29, 29)
	FMUL2D(30, 30, 30)
	FMUL2D(31, 31, 31)
	ACC4
	SUB $1, R4
	CBNZ R4, loop
store:
	STORE4
	RET

// func sumRows4NEON(x *float32, stride int, n4 int, out *[16]float64)
// The partial sums of sum4 for four rows, laid out as sumSqRows4NEON's.
TEXT ·sumRows4NEON(SB), NOSPLIT, $0-32
	MOVD x+0(FP), R0
	MOVD stride+8(FP), R7
	MOVD n4+16(FP), R4
	MOVD out+24(FP), R6
	ROWS4
	CBZ R4, store
loop:
	LOAD4
	ACC4
	SUB $1, R4
	CBNZ R4, loop
store:
	STORE4
	RET

// func rmsScaleNEON(dst, x, w *float32, n4 int, inv float64)
// dst[i] = float32(float64(x[i])·inv)·w[i] for the first 4·n4 values:
// the product rounded to float64, then to float32 (to nearest even, as
// Go's conversion), then multiplied in float32. dst may be x.
TEXT ·rmsScaleNEON(SB), NOSPLIT, $0-40
	MOVD dst+0(FP), R0
	MOVD x+8(FP), R1
	MOVD w+16(FP), R2
	MOVD n4+24(FP), R3
	FMOVD inv+32(FP), F2
	VDUP V2.D[0], V2.D2
	CBZ R3, done
loop:
	VLD1.P 16(R1), [V0.S4]
	VLD1.P 16(R2), [V5.S4]
	FCVTL2D(1, 0)
	FCVTL22D(3, 0)
	FMUL2D(1, 1, 2)
	FMUL2D(3, 3, 2)
	FCVTN2S(4, 1)
	FCVTN24S(4, 3)
	FMUL4S(4, 4, 5)
	VST1.P [V4.S4], 16(R0)
	SUB $1, R3
	CBNZ R3, loop
done:
	RET

// CENTER sets V4 to float32((float64(V0)−mean)·inv), mean and inv in
// both lanes of V2 and V3.
#define CENTER \
	FCVTL2D(1, 0) \
	FCVTL22D(7, 0) \
	FSUB2D(1, 1, 2) \
	FSUB2D(7, 7, 2) \
	FMUL2D(1, 1, 3) \
	FMUL2D(7, 7, 3) \
	FCVTN2S(4, 1) \
	FCVTN24S(4, 7)

// func layerScaleNEON(dst, x, w, b *float32, n4 int, mean, inv float64)
// dst[i] = float32((float64(x[i])−mean)·inv)·w[i] (+ b[i] unless b is
// nil, the product rounded before the add) for the first 4·n4 values.
// dst may be x.
TEXT ·layerScaleNEON(SB), NOSPLIT, $0-56
	MOVD dst+0(FP), R0
	MOVD x+8(FP), R1
	MOVD w+16(FP), R2
	MOVD b+24(FP), R3
	MOVD n4+32(FP), R4
	FMOVD mean+40(FP), F2
	VDUP V2.D[0], V2.D2
	FMOVD inv+48(FP), F3
	VDUP V3.D[0], V3.D2
	CBZ R4, done
	CBZ R3, nobias
bias:
	VLD1.P 16(R1), [V0.S4]
	VLD1.P 16(R2), [V5.S4]
	VLD1.P 16(R3), [V6.S4]
	CENTER
	FMUL4S(4, 4, 5)
	FADD4S(4, 4, 6)
	VST1.P [V4.S4], 16(R0)
	SUB $1, R4
	CBNZ R4, bias
	RET
nobias:
	VLD1.P 16(R1), [V0.S4]
	VLD1.P 16(R2), [V5.S4]
	CENTER
	FMUL4S(4, 4, 5)
	VST1.P [V4.S4], 16(R0)
	SUB $1, R4
	CBNZ R4, nobias
done:
	RET
