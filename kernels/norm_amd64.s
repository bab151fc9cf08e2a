#include "textflag.h"

// The float64 arithmetic of rmsNormRows (elementwise.go) on vectors, in
// the same order, so that every result has the same bits.

// func sumSqRows4AVX2(x *float32, stride int, n4 int, c *[4]float64, out *[16]float64)
// For each of four rows r (x, x+stride bytes, ...), the four partial sums
// of sumSq4(row, c[r]) over its first n4 groups of four values: lane j of
// a row adds (float64(v) − c[r])² of values 4i+j, i = 0, 1, ..., in order,
// exactly as sumSq4's chain sj does. The four rows are four independent
// chains of additions, which hides their latency; one row alone would
// wait on every addition. out[4r+j] is row r's lane j.
TEXT ·sumSqRows4AVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ stride+8(FP), DX
	MOVQ n4+16(FP), CX
	MOVQ c+24(FP), AX
	MOVQ out+32(FP), DI
	LEAQ (SI)(DX*2), R8
	VBROADCASTSD 0(AX), Y8
	VBROADCASTSD 8(AX), Y9
	VBROADCASTSD 16(AX), Y10
	VBROADCASTSD 24(AX), Y11
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	TESTQ CX, CX
	JZ   store

loop:
	VCVTPS2PD (SI), Y4
	VCVTPS2PD (SI)(DX*1), Y5
	VCVTPS2PD (R8), Y6
	VCVTPS2PD (R8)(DX*1), Y7
	VSUBPD    Y8, Y4, Y4
	VSUBPD    Y9, Y5, Y5
	VSUBPD    Y10, Y6, Y6
	VSUBPD    Y11, Y7, Y7
	VMULPD    Y4, Y4, Y4
	VMULPD    Y5, Y5, Y5
	VMULPD    Y6, Y6, Y6
	VMULPD    Y7, Y7, Y7
	VADDPD    Y4, Y0, Y0
	VADDPD    Y5, Y1, Y1
	VADDPD    Y6, Y2, Y2
	VADDPD    Y7, Y3, Y3
	ADDQ $16, SI
	ADDQ $16, R8
	DECQ CX
	JNZ  loop

store:
	VMOVUPD Y0, 0(DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VZEROUPPER
	RET

// func rmsScaleAVX2(dst, x, w *float32, n4 int, inv float64)
// dst[i] = float32(float64(x[i])·inv)·w[i] for the first 4·n4 values:
// the product rounded to float64, then to float32 (to nearest even, as
// Go's conversion), then multiplied in float32. dst may be x.
TEXT ·rmsScaleAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ w+16(FP), DX
	MOVQ n4+24(FP), CX
	VBROADCASTSD inv+32(FP), Y2
	CMPQ CX, $2
	JB   one

two:
	VCVTPS2PD  (SI), Y0
	VCVTPS2PD  16(SI), Y1
	VMULPD     Y2, Y0, Y0
	VMULPD     Y2, Y1, Y1
	VCVTPD2PSY Y0, X0
	VCVTPD2PSY Y1, X1
	VMULPS     (DX), X0, X0
	VMULPS     16(DX), X1, X1
	VMOVUPS    X0, (DI)
	VMOVUPS    X1, 16(DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $2, CX
	CMPQ CX, $2
	JAE  two

one:
	TESTQ CX, CX
	JZ   done
	VCVTPS2PD  (SI), Y0
	VMULPD     Y2, Y0, Y0
	VCVTPD2PSY Y0, X0
	VMULPS     (DX), X0, X0
	VMOVUPS    X0, (DI)

done:
	VZEROUPPER
	RET

// func sumRows4AVX2(x *float32, stride int, n4 int, out *[16]float64)
// The partial sums of sum4 for four rows, as sumSqRows4AVX2 lays them out:
// lane j of row r adds float64(v) of values 4i+j in order.
TEXT ·sumRows4AVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ stride+8(FP), DX
	MOVQ n4+16(FP), CX
	MOVQ out+24(FP), DI
	LEAQ (SI)(DX*2), R8
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	TESTQ CX, CX
	JZ   sstore

sloop:
	VCVTPS2PD (SI), Y4
	VCVTPS2PD (SI)(DX*1), Y5
	VCVTPS2PD (R8), Y6
	VCVTPS2PD (R8)(DX*1), Y7
	VADDPD    Y4, Y0, Y0
	VADDPD    Y5, Y1, Y1
	VADDPD    Y6, Y2, Y2
	VADDPD    Y7, Y3, Y3
	ADDQ $16, SI
	ADDQ $16, R8
	DECQ CX
	JNZ  sloop

sstore:
	VMOVUPD Y0, 0(DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VZEROUPPER
	RET

// func layerScaleAVX2(dst, x, w, b *float32, n4 int, mean, inv float64)
// dst[i] = float32((float64(x[i])−mean)·inv)·w[i] (+ b[i] unless b is
// nil) for the first 4·n4 values, each operation rounded as Go rounds it
// in layerNormRows. dst may be x.
TEXT ·layerScaleAVX2(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ w+16(FP), DX
	MOVQ b+24(FP), BX
	MOVQ n4+32(FP), CX
	VBROADCASTSD mean+40(FP), Y2
	VBROADCASTSD inv+48(FP), Y3
	TESTQ CX, CX
	JZ   ldone
	TESTQ BX, BX
	JZ   nobias

bias:
	VCVTPS2PD  (SI), Y0
	VSUBPD     Y2, Y0, Y0
	VMULPD     Y3, Y0, Y0
	VCVTPD2PSY Y0, X0
	VMULPS     (DX), X0, X0
	VADDPS     (BX), X0, X0
	VMOVUPS    X0, (DI)
	ADDQ $16, SI
	ADDQ $16, DX
	ADDQ $16, BX
	ADDQ $16, DI
	DECQ CX
	JNZ  bias
	JMP  ldone

nobias:
	VCVTPS2PD  (SI), Y0
	VSUBPD     Y2, Y0, Y0
	VMULPD     Y3, Y0, Y0
	VCVTPD2PSY Y0, X0
	VMULPS     (DX), X0, X0
	VMOVUPS    X0, (DI)
	ADDQ $16, SI
	ADDQ $16, DX
	ADDQ $16, DI
	DECQ CX
	JNZ  nobias

ldone:
	VZEROUPPER
	RET
