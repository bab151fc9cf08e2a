#include "textflag.h"
#include "gemm_int8_amd64.h"

// The VNNI microkernels (see gemm_vnni.go). Activations are unsigned bytes
// q+128 broadcast four at a time, weights signed bytes in 16-column panels
// (four k per column), so one VPDPBUSD adds four products per column into
// its int32 lane: the int32 accumulators start at the columns' −128·Σ m·w
// and hold exact block sums.

// The avx512-vnni kernel: a 6x32 tile, two 16-column panels (one zmm
// each). Unit blocks sum in Z0..Z11 (row r, panel p in Z(2r+p)); blocks with
// multipliers sum the half blocks in Z0..Z11 and Z12..Z23 and combine them
// with VPMULLD. Z24, Z25 hold the step's weights, Z26..Z31 the broadcast
// activations and the epilogue's temporaries. SI is nb·64, so the second
// panel's weights are at (SI*8), its aux at (SI*4), its factors at (SI*2)
// from the first's.

// One k step of four values for the six rows into the accumulators c0..c11.
#define VSTEP(aoff, boff, c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11) \
	VMOVDQU32 boff(BX), Z24 \
	VMOVDQU32 boff(BX)(SI*8), Z25 \
	VPBROADCASTD aoff(AX), Z26 \
	VPBROADCASTD aoff+4(AX), Z27 \
	VPBROADCASTD aoff+8(AX), Z28 \
	VPDPBUSD Z24, Z26, c0 \
	VPDPBUSD Z25, Z26, c1 \
	VPDPBUSD Z24, Z27, c2 \
	VPDPBUSD Z25, Z27, c3 \
	VPBROADCASTD aoff+12(AX), Z29 \
	VPBROADCASTD aoff+16(AX), Z30 \
	VPBROADCASTD aoff+20(AX), Z31 \
	VPDPBUSD Z24, Z28, c4 \
	VPDPBUSD Z25, Z28, c5 \
	VPDPBUSD Z24, Z29, c6 \
	VPDPBUSD Z25, Z29, c7 \
	VPDPBUSD Z24, Z30, c8 \
	VPDPBUSD Z25, Z30, c9 \
	VPDPBUSD Z24, Z31, c10 \
	VPDPBUSD Z25, Z31, c11

#define VSTEPLO(aoff, boff) VSTEP(aoff, boff, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11)
#define VSTEPHI(aoff, boff) VSTEP(aoff, boff, Z12, Z13, Z14, Z15, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)

// Half sums a (k 0..15) and b (k 16..31) of the first (VCOMB0) or second
// (VCOMB1) panel into the block sum start + m0·a + m1·b, in a.
#define VCOMB0(za, zb) \
	VPMULLD 64(R12), za, za \
	VPMULLD 128(R12), zb, zb \
	VPADDD zb, za, za \
	VPADDD 0(R12), za, za

#define VCOMB1(za, zb) \
	VPMULLD 64(R12)(SI*4), za, za \
	VPMULLD 128(R12)(SI*4), zb, zb \
	VPADDD zb, za, za \
	VPADDD 0(R12)(SI*4), za, za

// EPISCALE of gemm_int8_amd64.h for a row of the 6x32 tile: the same
// operations in the same operand order, so the same roundings.
#define VEPI(za, zb, dxoff, toff) \
	VCVTDQ2PS za, za \
	VCVTDQ2PS zb, zb \
	VBROADCASTSS dxoff(R11), Z27 \
	VMULPS 0(R13), Z27, Z28 \
	VMULPS 0(R13)(SI*2), Z27, Z29 \
	VFMADD213PS toff(DI), Z28, za \
	VFMADD213PS toff+64(DI), Z29, zb

#define VMINTERM(za, zb, dsoff) \
	VBROADCASTSS dsoff(R11), Z30 \
	VFMADD231PS 64(R13), Z30, za \
	VFMADD231PS 64(R13)(SI*2), Z30, zb

#define VPUT(za, zb, toff) \
	VMOVUPS za, toff(DI) \
	VMOVUPS zb, toff+64(DI)

// ROWS6 applies row to the six rows of the 6x32 tile: row r's block sums
// za, zb (Z(2r), Z(2r+1)), its float tile registers ta, tb in
// kernelVNNIUnit6x32 (Z(12+2r), Z(13+2r)), and r. VROW and VROWMIN end a
// block for a row of kernelVNNI6x32's tile in memory (without and with
// the fm term); UROW and UROWMIN, defined with UEPI, the same for
// kernelVNNIUnit6x32.
#define ROWS6(row) \
	row(Z0, Z1, Z12, Z13, 0) \
	row(Z2, Z3, Z14, Z15, 1) \
	row(Z4, Z5, Z16, Z17, 2) \
	row(Z6, Z7, Z18, Z19, 3) \
	row(Z8, Z9, Z20, Z21, 4) \
	row(Z10, Z11, Z22, Z23, 5)

#define VROW(za, zb, ta, tb, r) \
	VEPI(za, zb, 8*r, 128*r) \
	VPUT(za, zb, 128*r)

#define VROWMIN(za, zb, ta, tb, r) \
	VEPI(za, zb, 8*r, 128*r) \
	VMINTERM(za, zb, 8*r+4) \
	VPUT(za, zb, 128*r)

// A 6x32 float tile in twelve zmm registers (row r in c(2r), c(2r+1)) added
// to c or written to it; rows at DX, DX+SI, DX+2SI, R12, R12+SI, R12+2SI.
#define TILE6X32_ADD(c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11) \
	VADDPS 0(DX), c0, c0 \
	VADDPS 64(DX), c1, c1 \
	VADDPS 0(DX)(SI*1), c2, c2 \
	VADDPS 64(DX)(SI*1), c3, c3 \
	VADDPS 0(DX)(SI*2), c4, c4 \
	VADDPS 64(DX)(SI*2), c5, c5 \
	VADDPS 0(R12), c6, c6 \
	VADDPS 64(R12), c7, c7 \
	VADDPS 0(R12)(SI*1), c8, c8 \
	VADDPS 64(R12)(SI*1), c9, c9 \
	VADDPS 0(R12)(SI*2), c10, c10 \
	VADDPS 64(R12)(SI*2), c11, c11

// TILE6X32_WRITE writes the tile to c and moves DX six rows on.
#define TILE6X32_WRITE(c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11) \
	VMOVUPS c0, 0(DX) \
	VMOVUPS c1, 64(DX) \
	VMOVUPS c2, 0(DX)(SI*1) \
	VMOVUPS c3, 64(DX)(SI*1) \
	VMOVUPS c4, 0(DX)(SI*2) \
	VMOVUPS c5, 64(DX)(SI*2) \
	VMOVUPS c6, 0(R12) \
	VMOVUPS c7, 64(R12) \
	VMOVUPS c8, 0(R12)(SI*1) \
	VMOVUPS c9, 64(R12)(SI*1) \
	VMOVUPS c10, 0(R12)(SI*2) \
	VMOVUPS c11, 64(R12)(SI*2) \
	LEAQ (R12)(SI*2), DX \
	ADDQ SI, DX

// TILE6X32_ROWS points SI at ldc in bytes and R12 at c's fourth row.
#define TILE6X32_ROWS \
	MOVQ ldc+88(FP), SI \
	SHLQ $2, SI \
	LEAQ (DX)(SI*2), R12 \
	ADDQ SI, R12

// V6X32GROUP starts a group of the 6x32 kernels (KERNAUXGROUP, with the
// first panel) and sets SI = nb·64.
#define V6X32GROUP \
	KERNAUXGROUP \
	MOVQ CX, SI \
	SHLQ $6, SI

// V6X32STARTS sets the six rows' block sums Z0..Z11 to the columns'
// starts (the first panel's, in Z24, and the second's, in Z25).
#define V6X32STARTS \
	VMOVDQU32 0(R12), Z24 \
	VMOVDQU32 0(R12)(SI*4), Z25 \
	VMOVDQA32 Z24, Z0 \
	VMOVDQA32 Z25, Z1 \
	VMOVDQA32 Z24, Z2 \
	VMOVDQA32 Z25, Z3 \
	VMOVDQA32 Z24, Z4 \
	VMOVDQA32 Z25, Z5 \
	VMOVDQA32 Z24, Z6 \
	VMOVDQA32 Z25, Z7 \
	VMOVDQA32 Z24, Z8 \
	VMOVDQA32 Z25, Z9 \
	VMOVDQA32 Z24, Z10 \
	VMOVDQA32 Z25, Z11

// VZEROLO and VZEROHI clear Z0..Z11 and Z12..Z23.
#define VZEROLO \
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
	VPXORD Z11, Z11, Z11

#define VZEROHI \
	VPXORD Z12, Z12, Z12 \
	VPXORD Z13, Z13, Z13 \
	VPXORD Z14, Z14, Z14 \
	VPXORD Z15, Z15, Z15 \
	VPXORD Z16, Z16, Z16 \
	VPXORD Z17, Z17, Z17 \
	VPXORD Z18, Z18, Z18 \
	VPXORD Z19, Z19, Z19 \
	VPXORD Z20, Z20, Z20 \
	VPXORD Z21, Z21, Z21 \
	VPXORD Z22, Z22, Z22 \
	VPXORD Z23, Z23, Z23

// func kernelVNNI6x32(ng int, nb int, a *uint8, as int, ds *float32, dss int, b *int8, aux *int32, f *float32, t *float32, c *float32, ldc int, flags int)
//
// ng row groups of six rows: group g's activations at a+g·as bytes (four
// k of row r at 4r, 24 bytes per step, 192 per block), its (dx, dx·Σq)
// at ds+g·dss floats (48 bytes per block), its output at c+6g·ldc floats.
// b, aux, f: the first panel's weights (512 bytes per block), aux (256)
// and factors (128), the second panel's nb blocks further. t: 6x32 float32
// scratch tile (row r at 128r). flags bit 0: add into c; bit 1: apply fm;
// bit 3: multipliers.
TEXT ·kernelVNNI6x32(SB), NOSPLIT, $0-104
	KERNAUXARGS
	TESTQ R8, R8
	JZ   vdone

vgroup:
	V6X32GROUP
	VPXORD Z0, Z0, Z0
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z0, 64(DI)
	VMOVUPS Z0, 128(DI)
	VMOVUPS Z0, 192(DI)
	VMOVUPS Z0, 256(DI)
	VMOVUPS Z0, 320(DI)
	VMOVUPS Z0, 384(DI)
	VMOVUPS Z0, 448(DI)
	VMOVUPS Z0, 512(DI)
	VMOVUPS Z0, 576(DI)
	VMOVUPS Z0, 640(DI)
	VMOVUPS Z0, 704(DI)
	TESTQ CX, CX
	JZ   vstore

vblock:
	TESTQ $8, flags+96(FP)
	JNZ  vmul
	V6X32STARTS
	VSTEPLO(0, 0)
	VSTEPLO(24, 64)
	VSTEPLO(48, 128)
	VSTEPLO(72, 192)
	VSTEPLO(96, 256)
	VSTEPLO(120, 320)
	VSTEPLO(144, 384)
	VSTEPLO(168, 448)
	JMP  vepi

vmul:
	VZEROLO
	VZEROHI
	VSTEPLO(0, 0)
	VSTEPLO(24, 64)
	VSTEPLO(48, 128)
	VSTEPLO(72, 192)
	VSTEPHI(96, 256)
	VSTEPHI(120, 320)
	VSTEPHI(144, 384)
	VSTEPHI(168, 448)
	VCOMB0(Z0, Z12)
	VCOMB1(Z1, Z13)
	VCOMB0(Z2, Z14)
	VCOMB1(Z3, Z15)
	VCOMB0(Z4, Z16)
	VCOMB1(Z5, Z17)
	VCOMB0(Z6, Z18)
	VCOMB1(Z7, Z19)
	VCOMB0(Z8, Z20)
	VCOMB1(Z9, Z21)
	VCOMB0(Z10, Z22)
	VCOMB1(Z11, Z23)

vepi:
	ADDQ $192, AX
	ADDQ $512, BX
	ADDQ $256, R12
	TESTQ $2, flags+96(FP)
	JNZ  vwithmin
	ROWS6(VROW)
	JMP  vnext

vwithmin:
	ROWS6(VROWMIN)

vnext:
	ADDQ $48, R11
	ADDQ $128, R13
	DECQ CX
	JNZ  vblock

vstore:
	VMOVUPS 0(DI), Z0
	VMOVUPS 64(DI), Z1
	VMOVUPS 128(DI), Z2
	VMOVUPS 192(DI), Z3
	VMOVUPS 256(DI), Z4
	VMOVUPS 320(DI), Z5
	VMOVUPS 384(DI), Z6
	VMOVUPS 448(DI), Z7
	VMOVUPS 512(DI), Z8
	VMOVUPS 576(DI), Z9
	VMOVUPS 640(DI), Z10
	VMOVUPS 704(DI), Z11
	TILE6X32_ROWS
	TESTQ $1, flags+96(FP)
	JZ   vwrite
	TILE6X32_ADD(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11)

vwrite:
	TILE6X32_WRITE(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11)
	KERNNEXT
	DECQ R8
	JNZ  vgroup

vdone:
	VZEROUPPER
	RET

// VPDPBUSDY(d, u, s) is the AVX-VNNI (VEX.256.66.0F38.W0 50 /r) form of
// VPDPBUSD Yd, Yu, Ys (Intel order: Yd += Yu's unsigned bytes · Ys's
// signed bytes), which the Go assembler lacks: C4, then ~R X̄ ~B and the
// 0F38 map, then W0 ~vvvv L1 pp=66, the opcode 50, ModRM 11 d s.
#define VPDPBUSDY(d, u, s) \
	BYTE $0xC4 \
	BYTE $(0xE2^((d>>3)<<7)^((s>>3)<<5)) \
	BYTE $(((15-u)<<3)|5) \
	BYTE $0x50 \
	BYTE $(0xC0|((d&7)<<3)|(s&7))

// One k step for six rows into Y0..Y11 (row r in Y(2r), Y(2r+1)); Y12,
// Y13 the weights, Y14, Y15 the broadcast activations.
#define YSTEP6(aoff, boff) \
	VMOVDQU boff(BX), Y12 \
	VMOVDQU boff+32(BX), Y13 \
	VPBROADCASTD aoff(AX), Y14 \
	VPBROADCASTD aoff+4(AX), Y15 \
	VPDPBUSDY(0, 14, 12) \
	VPDPBUSDY(1, 14, 13) \
	VPDPBUSDY(2, 15, 12) \
	VPDPBUSDY(3, 15, 13) \
	VPBROADCASTD aoff+8(AX), Y14 \
	VPBROADCASTD aoff+12(AX), Y15 \
	VPDPBUSDY(4, 14, 12) \
	VPDPBUSDY(5, 14, 13) \
	VPDPBUSDY(6, 15, 12) \
	VPDPBUSDY(7, 15, 13) \
	VPBROADCASTD aoff+16(AX), Y14 \
	VPBROADCASTD aoff+20(AX), Y15 \
	VPDPBUSDY(8, 14, 12) \
	VPDPBUSDY(9, 14, 13) \
	VPDPBUSDY(10, 15, 12) \
	VPDPBUSDY(11, 15, 13)

// func kernelAVXVNNI6x16(ng int, nb int, a *uint8, as int, ds *float32, dss int, b *int8, aux *int32, f *float32, t *float32, c *float32, ldc int, flags int)
//
// The avx-vnni kernel of unit blocks: kernelVNNI6x32's layouts with one
// panel, a 6x16 tile (t row r at 64r), in ymm registers.
TEXT ·kernelAVXVNNI6x16(SB), NOSPLIT, $0-104
	KERNAUXARGS
	TESTQ R8, R8
	JZ   ydone

ygroup:
	KERNAUXGROUP
	TILE6ZERO
	TESTQ CX, CX
	JZ   ystore

yblock:
	VMOVDQU 0(R12), Y12
	VMOVDQU 32(R12), Y13
	VMOVDQA Y12, Y0
	VMOVDQA Y13, Y1
	VMOVDQA Y12, Y2
	VMOVDQA Y13, Y3
	VMOVDQA Y12, Y4
	VMOVDQA Y13, Y5
	VMOVDQA Y12, Y6
	VMOVDQA Y13, Y7
	VMOVDQA Y12, Y8
	VMOVDQA Y13, Y9
	VMOVDQA Y12, Y10
	VMOVDQA Y13, Y11
	YSTEP6(0, 0)
	YSTEP6(24, 64)
	YSTEP6(48, 128)
	YSTEP6(72, 192)
	YSTEP6(96, 256)
	YSTEP6(120, 320)
	YSTEP6(144, 384)
	YSTEP6(168, 448)
	ADDQ $192, AX
	ADDQ $512, BX
	ADDQ $256, R12
	TESTQ $2, flags+96(FP)
	JNZ  ywithmin
	EPI6
	JMP  ynext

ywithmin:
	EPIMIN6

ynext:
	ADDQ $48, R11
	ADDQ $128, R13
	DECQ CX
	JNZ  yblock

ystore:
	TILE6LOAD(ldc+88(FP))
	TESTQ $1, flags+96(FP)
	JZ   ywrite
	TILE6ADD

ywrite:
	TILE6WRITE
	KERNNEXT
	DECQ R8
	JNZ  ygroup

ydone:
	VZEROUPPER
	RET

// One k step for three rows into the accumulators c0..c5 (row r in c(2r),
// c(2r+1)), given as register numbers.
#define YSTEP3(aoff, boff, c0, c1, c2, c3, c4, c5) \
	VMOVDQU boff(BX), Y12 \
	VMOVDQU boff+32(BX), Y13 \
	VPBROADCASTD aoff(AX), Y14 \
	VPBROADCASTD aoff+4(AX), Y15 \
	VPDPBUSDY(c0, 14, 12) \
	VPDPBUSDY(c1, 14, 13) \
	VPDPBUSDY(c2, 15, 12) \
	VPDPBUSDY(c3, 15, 13) \
	VPBROADCASTD aoff+8(AX), Y14 \
	VPDPBUSDY(c4, 14, 12) \
	VPDPBUSDY(c5, 14, 13)

// Half sums a, b of columns 0..7 (off 0) or 8..15 (off 32) into the block
// sum start + m0·a + m1·b, in a.
#define YCOMB(ya, yb, off) \
	VPMULLD off+64(R12), ya, ya \
	VPMULLD off+128(R12), yb, yb \
	VPADDD yb, ya, ya \
	VPADDD off(R12), ya, ya

// func kernelAVXVNNI3x16(ng int, nb int, a *uint8, as int, ds *float32, dss int, b *int8, aux *int32, f *float32, t *float32, c *float32, ldc int, flags int)
//
// The avx-vnni kernel of blocks with multipliers: a 3x16 tile, the half
// block sums of row r in Y(2r), Y(2r+1) and Y(6+2r), Y(7+2r); activations
// 12 bytes per step (96 per block), scales 24 bytes per block, t row r at
// 64r; otherwise as kernelAVXVNNI6x16.
TEXT ·kernelAVXVNNI3x16(SB), NOSPLIT, $0-104
	KERNAUXARGS
	TESTQ R8, R8
	JZ   y3done

y3group:
	KERNAUXGROUP
	TILE3ZERO
	TESTQ CX, CX
	JZ   y3store

y3block:
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
	YSTEP3(0, 0, 0, 1, 2, 3, 4, 5)
	YSTEP3(12, 64, 0, 1, 2, 3, 4, 5)
	YSTEP3(24, 128, 0, 1, 2, 3, 4, 5)
	YSTEP3(36, 192, 0, 1, 2, 3, 4, 5)
	YSTEP3(48, 256, 6, 7, 8, 9, 10, 11)
	YSTEP3(60, 320, 6, 7, 8, 9, 10, 11)
	YSTEP3(72, 384, 6, 7, 8, 9, 10, 11)
	YSTEP3(84, 448, 6, 7, 8, 9, 10, 11)
	YCOMB(Y0, Y6, 0)
	YCOMB(Y1, Y7, 32)
	YCOMB(Y2, Y8, 0)
	YCOMB(Y3, Y9, 32)
	YCOMB(Y4, Y10, 0)
	YCOMB(Y5, Y11, 32)
	ADDQ $96, AX
	ADDQ $512, BX
	ADDQ $256, R12
	TESTQ $2, flags+96(FP)
	JNZ  y3withmin
	EPI3
	JMP  y3next

y3withmin:
	EPIMIN3

y3next:
	ADDQ $24, R11
	ADDQ $128, R13
	DECQ CX
	JNZ  y3block

y3store:
	TILE3LOAD(ldc+88(FP))
	TESTQ $1, flags+96(FP)
	JZ   y3write
	TILE3ADD

y3write:
	TILE3WRITE
	KERNNEXT
	LEAQ (DX)(SI*2), DX
	ADDQ SI, DX
	DECQ R8
	JNZ  y3group

y3done:
	VZEROUPPER
	RET

// func decodeQ8_0S8AVX2(src *byte, nb int, q *int8, sum *int32, fd *float32, fs int)
//
// The values of nb Q8_0 blocks (34 bytes apart, the f16 scale first) as
// bytes, with the sums of each block's halves plus 16·128 (the caller
// subtracts it): VPSADBW of the bytes with their top bit flipped; the
// scales as float32 (VCVTPH2PS: exact, as halfToFloat) fs floats apart.
TEXT ·decodeQ8_0S8AVX2(SB), NOSPLIT, $0-48
	MOVQ src+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ q+16(FP), DI
	MOVQ sum+24(FP), DX
	MOVQ fd+32(FP), R8
	MOVQ fs+40(FP), R9
	SHLQ $2, R9
	MOVL $0x80808080, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	VPXOR Y15, Y15, Y15
	TESTQ CX, CX
	JZ   q8done

q8block:
	MOVWLZX 0(SI), AX
	VMOVD AX, X5
	VCVTPH2PS X5, X5
	VMOVSS X5, 0(R8)
	ADDQ R9, R8
	VMOVDQU 2(SI), Y0
	VMOVDQU Y0, 0(DI)
	VPXOR Y14, Y0, Y0
	HALFSUMS(Y0, 0)
	ADDQ $34, SI
	ADDQ $32, DI
	ADDQ $8, DX
	DECQ CX
	JNZ  q8block

q8done:
	VZEROUPPER
	RET

// The IQ4_NL codebook (iq4nlValues) as signed bytes, the nibble mask and
// the top bits.
DATA vnniiq4<>+0(SB)/8, $0xF6EADDCFBFAD9881
DATA vnniiq4<>+8(SB)/8, $0x7159453526190D01
DATA vnniiq4<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA vnniiq4<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA vnniiq4<>+32(SB)/8, $0x8080808080808080
DATA vnniiq4<>+40(SB)/8, $0x8080808080808080
GLOBL vnniiq4<>(SB), RODATA|NOPTR, $48

// The sum of the 16 signed bytes of X(v) plus 16·128, as int32 at off(DX):
// VPSADBW of the bytes with their top bit flipped.
#define SUM16(v, off) \
	VPXOR X12, v, X3 \
	VPSADBW X15, X3, X3 \
	VPSHUFD $0x4E, X3, X4 \
	VPADDQ X4, X3, X3 \
	VMOVD X3, off(DX)

// func decodeIQ4S8AVX2(qs *byte, nb int, stride int, q *int8, sum *int32)
//
// The codebook values of nb blocks of 16 IQ4 nibble bytes (stride bytes
// apart) as signed bytes (the low nibbles' values, then the high ones'),
// with the sums of both halves plus 16·128 (the caller subtracts it).
TEXT ·decodeIQ4S8AVX2(SB), NOSPLIT, $0-40
	MOVQ qs+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ stride+16(FP), R8
	MOVQ q+24(FP), DI
	MOVQ sum+32(FP), DX
	VMOVDQU vnniiq4<>+0(SB), X13
	VMOVDQU vnniiq4<>+16(SB), X14
	VMOVDQU vnniiq4<>+32(SB), X12
	VPXOR X15, X15, X15
	TESTQ CX, CX
	JZ   iq4done

iq4block:
	VMOVDQU (SI), X0
	VPSRLW $4, X0, X1
	VPAND X14, X0, X0
	VPAND X14, X1, X1
	VPSHUFB X0, X13, X0
	VPSHUFB X1, X13, X1
	VMOVDQU X0, 0(DI)
	VMOVDQU X1, 16(DI)
	SUM16(X0, 0)
	SUM16(X1, 4)
	ADDQ R8, SI
	ADDQ $32, DI
	ADDQ $8, DX
	DECQ CX
	JNZ  iq4block

iq4done:
	RET

// One k step of four values for the six rows into Z0..Z11, broadcasting
// through Z26, Z27 (the unit kernel keeps its tile in Z12..Z23).
#define USTEP(aoff, boff) \
	VMOVDQU32 boff(BX), Z24 \
	VMOVDQU32 boff(BX)(SI*8), Z25 \
	VPBROADCASTD aoff(AX), Z26 \
	VPDPBUSD Z24, Z26, Z0 \
	VPDPBUSD Z25, Z26, Z1 \
	VPBROADCASTD aoff+4(AX), Z27 \
	VPDPBUSD Z24, Z27, Z2 \
	VPDPBUSD Z25, Z27, Z3 \
	VPBROADCASTD aoff+8(AX), Z26 \
	VPDPBUSD Z24, Z26, Z4 \
	VPDPBUSD Z25, Z26, Z5 \
	VPBROADCASTD aoff+12(AX), Z27 \
	VPDPBUSD Z24, Z27, Z6 \
	VPDPBUSD Z25, Z27, Z7 \
	VPBROADCASTD aoff+16(AX), Z26 \
	VPDPBUSD Z24, Z26, Z8 \
	VPDPBUSD Z25, Z26, Z9 \
	VPBROADCASTD aoff+20(AX), Z27 \
	VPDPBUSD Z24, Z27, Z10 \
	VPDPBUSD Z25, Z27, Z11

// VEPI with the tile row in registers ta, tb: the same operations and
// operand roles (the sum's register is the FMA's first source), then the
// result moved into the tile.
#define UEPI(za, zb, ta, tb, dxoff) \
	VCVTDQ2PS za, za \
	VCVTDQ2PS zb, zb \
	VBROADCASTSS dxoff(R11), Z28 \
	VMULPS 0(R13), Z28, Z29 \
	VMULPS 0(R13)(SI*2), Z28, Z30 \
	VFMADD213PS ta, Z29, za \
	VFMADD213PS tb, Z30, zb

#define UMIN(za, zb, dsoff) \
	VBROADCASTSS dsoff(R11), Z31 \
	VFMADD231PS 64(R13), Z31, za \
	VFMADD231PS 64(R13)(SI*2), Z31, zb

#define UPUT(za, zb, ta, tb) \
	VMOVAPS za, ta \
	VMOVAPS zb, tb

#define UROW(za, zb, ta, tb, r) \
	UEPI(za, zb, ta, tb, 8*r) \
	UPUT(za, zb, ta, tb)

#define UROWMIN(za, zb, ta, tb, r) \
	UEPI(za, zb, ta, tb, 8*r) \
	UMIN(za, zb, 8*r+4) \
	UPUT(za, zb, ta, tb)

// func kernelVNNIUnit6x32(ng int, nb int, a *uint8, as int, ds *float32, dss int, b *int8, aux *int32, f *float32, t *float32, c *float32, ldc int, flags int)
//
// kernelVNNI6x32 for unit blocks (flags bit 3 clear) with the float tile
// in Z12..Z23 instead of memory; t is not used.
TEXT ·kernelVNNIUnit6x32(SB), NOSPLIT, $0-104
	MOVQ a+16(FP), R9
	MOVQ ds+32(FP), R10
	MOVQ c+80(FP), DX
	MOVQ ng+0(FP), R8
	TESTQ R8, R8
	JZ   udone

ugroup:
	V6X32GROUP
	VZEROHI
	TESTQ CX, CX
	JZ   ustore

ublock:
	V6X32STARTS
	USTEP(0, 0)
	USTEP(24, 64)
	USTEP(48, 128)
	USTEP(72, 192)
	USTEP(96, 256)
	USTEP(120, 320)
	USTEP(144, 384)
	USTEP(168, 448)
	ADDQ $192, AX
	ADDQ $512, BX
	ADDQ $256, R12
	TESTQ $2, flags+96(FP)
	JNZ  uwithmin
	ROWS6(UROW)
	JMP  unext

uwithmin:
	ROWS6(UROWMIN)

unext:
	ADDQ $48, R11
	ADDQ $128, R13
	DECQ CX
	JNZ  ublock

ustore:
	TILE6X32_ROWS
	TESTQ $1, flags+96(FP)
	JZ   uwrite
	TILE6X32_ADD(Z12, Z13, Z14, Z15, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)

uwrite:
	TILE6X32_WRITE(Z12, Z13, Z14, Z15, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)
	KERNNEXT
	DECQ R8
	JNZ  ugroup

udone:
	VZEROUPPER
	RET

QUANTTABLE(vnniquant)

// STRIDED8 stores the eight dwords of y (x its low half) R8 bytes apart
// from DI (R9 = 3·R8); X4 is clobbered.
#define STRIDED8(y, x) \
	VMOVD x, 0(DI) \
	VPEXTRD $1, x, 0(DI)(R8*1) \
	VPEXTRD $2, x, 0(DI)(R8*2) \
	VPEXTRD $3, x, 0(DI)(R9*1) \
	VEXTRACTI128 $1, y, X4 \
	LEAQ (DI)(R8*4), R10 \
	VMOVD X4, 0(R10) \
	VPEXTRD $1, X4, 0(R10)(R8*1) \
	VPEXTRD $2, X4, 0(R10)(R8*2) \
	VPEXTRD $3, X4, 0(R10)(R9*1)

// func quantizeU8StridedAVX2(x *float32, nb int, q *uint8, stride int, ds *float32)
//
// quantizeU8AVX2 with the four-byte groups of q stride bytes apart (group
// p of the row at q+p·stride): the activations go straight into the VNNI
// kernels' interleaved layout. The same instructions otherwise, so the same
// bytes and scales.
TEXT ·quantizeU8StridedAVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ q+16(FP), DI
	MOVQ stride+24(FP), R8
	MOVQ ds+32(FP), DX
	LEAQ (R8)(R8*2), R9
	QUANTCONSTS(vnniquant)
	TESTQ CX, CX
	JZ   vqqdone

vqqblock:
	QUANT32
	STRIDED8(Y0, X0)
	QUANTSUMS
	JMP  vqqnext

tiny:
	XORL AX, AX

special:
	STRIDED8(Y14, X14)
	MOVL AX, 0(DX)
	MOVL $0, 4(DX)

vqqnext:
	ADDQ $128, SI
	LEAQ (DI)(R8*8), DI
	ADDQ $8, DX
	DECQ CX
	JNZ  vqqblock

vqqdone:
	VZEROUPPER
	RET

DATA vnniiota<>+0(SB)/4, $0
DATA vnniiota<>+4(SB)/4, $1
DATA vnniiota<>+8(SB)/4, $2
DATA vnniiota<>+12(SB)/4, $3
DATA vnniiota<>+16(SB)/4, $4
DATA vnniiota<>+20(SB)/4, $5
DATA vnniiota<>+24(SB)/4, $6
DATA vnniiota<>+28(SB)/4, $7
DATA vnniiota<>+32(SB)/4, $8
DATA vnniiota<>+36(SB)/4, $9
DATA vnniiota<>+40(SB)/4, $10
DATA vnniiota<>+44(SB)/4, $11
DATA vnniiota<>+48(SB)/4, $12
DATA vnniiota<>+52(SB)/4, $13
DATA vnniiota<>+56(SB)/4, $14
DATA vnniiota<>+60(SB)/4, $15
GLOBL vnniiota<>(SB), RODATA|NOPTR, $64

// The panel decoders below gather from the sixteen rows at once. PANEL16
// sets them up from AX = rowBytes and CX = nrows: K1 the rows present,
// Z15 the rows' offsets r·rowBytes (the gathers' index), Z28 bytes of ones
// (VPDPBUSD by them sums four bytes); BX, Z13 and Z14 are clobbered.
#define PANEL16 \
	MOVL $1, BX \
	SHLL CX, BX \
	DECL BX \
	KMOVW BX, K1 \
	VPBROADCASTD AX, Z14 \
	VMOVDQU32 vnniiota<>+0(SB), Z13 \
	VPMULLD Z13, Z14, Z15 \
	MOVL $0x01010101, BX \
	VPBROADCASTD BX, Z28

// GATHER loads the dword at byte off of each present row's data (SI) into
// z, zeros for the rows not present.
#define GATHER(off, z) \
	VPXORD z, z, z \
	KMOVW K1, K2 \
	VPGATHERDD off(SI)(Z15*1), K2, z

// SPLATD sets every dword of z to the constant v (through BX).
#define SPLATD(v, z) \
	MOVL $v, BX \
	VPBROADCASTD BX, z

// PSTART stores the columns' starts −128·Σ from their sums in z (Z27 is
// zero) at off(R9).
#define PSTART(z, off) \
	VPSLLD $7, z, z \
	VPSUBD z, Z27, z \
	VMOVDQU32 z, off(R9)

// Q8GROUP gathers four quant bytes of each of the panel's rows at byte
// off of their blocks (Z15 the rows' offsets, K1 the rows present) into z,
// stores them at dst(DI) and adds their sum to Z2 (VPDPBUSD by the ones of
// Z28): one of the eight groups of a Q8_0 block.
#define Q8GROUP(off, z, dst) \
	GATHER(off, z) \
	VMOVDQU32 z, dst(DI) \
	VPDPBUSD z, Z28, Z2

// func decodePanelQ8_0AVX512(src *byte, rowBytes int, nrows int, nb int, pan *int8, fs *float32, aux *int32)
//
// One 16-column panel of nb Q8_0 blocks straight from the stored rows (row
// r's block b at src + r·rowBytes + 34b; rows nrows..15 are zeros): per
// block, VPGATHERDD collects each k step's four bytes of the sixteen rows
// into the panel's 64-byte row (the layout pack8U8AVX2 writes), the
// scales into fd (VCVTPH2PS, fs[b·32 + r]) and, by VPDPBUSD of the weights
// with ones, the columns' sums into the starts −128·Σw (aux[b·64 + r]).
// The gathers' index is Z15: Bochs 2.7 (the AVX-512 emulator the tests
// also run under) raises #UD for a VSIB index in Z16..Z31.
TEXT ·decodePanelQ8_0AVX512(SB), NOSPLIT, $0-56
	MOVQ src+0(FP), SI
	MOVQ rowBytes+8(FP), AX
	MOVQ nrows+16(FP), CX
	MOVQ nb+24(FP), DX
	MOVQ pan+32(FP), DI
	MOVQ fs+40(FP), R8
	MOVQ aux+48(FP), R9
	PANEL16
	VPXORD Z27, Z27, Z27
	TESTQ DX, DX
	JZ   pq8done

pq8block:
	GATHER(0, Z0)
	VPMOVDW Z0, Y1
	VCVTPH2PS Y1, Z1
	VMOVUPS Z1, 0(R8)
	VPXORD Z2, Z2, Z2
	Q8GROUP(2, Z16, 0)
	Q8GROUP(6, Z17, 64)
	Q8GROUP(10, Z18, 128)
	Q8GROUP(14, Z19, 192)
	Q8GROUP(18, Z20, 256)
	Q8GROUP(22, Z21, 320)
	Q8GROUP(26, Z22, 384)
	Q8GROUP(30, Z23, 448)
	VPSLLD $7, Z2, Z2
	VPSUBD Z2, Z27, Z3
	VMOVDQU32 Z3, 0(R9)
	ADDQ $34, SI
	ADDQ $512, DI
	ADDQ $128, R8
	ADDQ $256, R9
	DECQ DX
	JNZ  pq8block

pq8done:
	VZEROUPPER
	RET

// Q4KSCALES makes the factors of sub-blocks j and j+4 from the gathered
// scale dwords (Z3: sc 0..3 and the high bits of sc 4..7, Z4: m 0..3
// and those of m 4..7, Z5: the low bits of sc 4..7 and m 4..7), byte j of
// each at bit sh = 8j: fd = d·sc (Z1 = d) at off(R8), fm = −(dmin·m)
// (Z2 = dmin) at off+64(R8), those of j+4 at off+512(R8) and off+576(R8).
#define Q4KSCALES(sh, off) \
	VPSRLD $sh, Z3, Z6 \
	VPANDD Z13, Z6, Z6 \
	VCVTDQ2PS Z6, Z6 \
	VMULPS Z6, Z1, Z6 \
	VMOVUPS Z6, off(R8) \
	VPSRLD $sh, Z4, Z7 \
	VPANDD Z13, Z7, Z7 \
	VCVTDQ2PS Z7, Z7 \
	VMULPS Z7, Z2, Z7 \
	VPXORD Z10, Z7, Z7 \
	VMOVUPS Z7, off+64(R8) \
	VPSRLD $sh, Z5, Z6 \
	VPANDD Z12, Z6, Z6 \
	VPSRLD $(sh+6), Z3, Z8 \
	VPANDD Z11, Z8, Z8 \
	VPSLLD $4, Z8, Z8 \
	VPORD Z8, Z6, Z6 \
	VCVTDQ2PS Z6, Z6 \
	VMULPS Z6, Z1, Z6 \
	VMOVUPS Z6, off+512(R8) \
	VPSRLD $(sh+4), Z5, Z7 \
	VPANDD Z12, Z7, Z7 \
	VPSRLD $(sh+6), Z4, Z8 \
	VPANDD Z11, Z8, Z8 \
	VPSLLD $4, Z8, Z8 \
	VPORD Z8, Z7, Z7 \
	VCVTDQ2PS Z7, Z7 \
	VMULPS Z7, Z2, Z7 \
	VPXORD Z10, Z7, Z7 \
	VMOVUPS Z7, off+576(R8)

// Q4KSTEP gathers the four nibble bytes at byte off of the rows: the low
// nibbles are a k step of one sub-block (stored at lo(DI), summed into
// Z20), the high ones the same step of the next (hi(DI), Z21).
#define Q4KSTEP(off, lo, hi) \
	GATHER(off, Z16) \
	VPANDD Z14, Z16, Z17 \
	VPSRLD $4, Z16, Z18 \
	VPANDD Z14, Z18, Z18 \
	VMOVDQU32 Z17, lo(DI) \
	VMOVDQU32 Z18, hi(DI) \
	VPDPBUSD Z17, Z28, Z20 \
	VPDPBUSD Z18, Z28, Z21

// Q4KPAIR decodes the 32-byte nibble group at byte off of the rows: two
// sub-blocks, their panel rows from dst(DI) and dst+512(DI), their starts
// at aux(R9) and aux+256(R9).
#define Q4KPAIR(off, dst, aux) \
	VPXORD Z20, Z20, Z20 \
	VPXORD Z21, Z21, Z21 \
	Q4KSTEP(off, dst, dst+512) \
	Q4KSTEP(off+4, dst+64, dst+576) \
	Q4KSTEP(off+8, dst+128, dst+640) \
	Q4KSTEP(off+12, dst+192, dst+704) \
	Q4KSTEP(off+16, dst+256, dst+768) \
	Q4KSTEP(off+20, dst+320, dst+832) \
	Q4KSTEP(off+24, dst+384, dst+896) \
	Q4KSTEP(off+28, dst+448, dst+960) \
	PSTART(Z20, aux) \
	PSTART(Z21, aux+256)

// func decodePanelQ4KAVX512(src *byte, rowBytes int, nrows int, pan *int8, fs *float32, aux *int32)
//
// One 16-column panel of one Q4_K super-block (eight 32-value blocks) from
// the stored rows (row r's super-block at src + r·rowBytes; rows nrows..15
// zero), kMinScales and the u8 path's Q4_K decoder across the sixteen rows
// at once: the scale and minimum fields gathered as dwords and unpacked
// with shifts and masks, fd = d·sc and fm = −(dmin·m) as float32 products
// (the Go code's roundings), the nibbles of each k step gathered for both
// sub-blocks of a 32-byte group, the starts −128·Σq by VPDPBUSD with ones.
// Index in Z15 (see decodePanelQ8_0AVX512).
TEXT ·decodePanelQ4KAVX512(SB), NOSPLIT, $0-48
	MOVQ src+0(FP), SI
	MOVQ rowBytes+8(FP), AX
	MOVQ nrows+16(FP), CX
	MOVQ pan+24(FP), DI
	MOVQ fs+32(FP), R8
	MOVQ aux+40(FP), R9
	PANEL16
	SPLATD(0x0f0f0f0f, Z14)
	SPLATD(63, Z13)
	SPLATD(15, Z12)
	SPLATD(3, Z11)
	SPLATD(0x80000000, Z10)
	VPXORD Z27, Z27, Z27
	GATHER(0, Z0)
	VPMOVDW Z0, Y1
	VCVTPH2PS Y1, Z1
	VPSRLD $16, Z0, Z2
	VPMOVDW Z2, Y2
	VCVTPH2PS Y2, Z2
	GATHER(4, Z3)
	GATHER(8, Z4)
	GATHER(12, Z5)
	Q4KSCALES(0, 0)
	Q4KSCALES(8, 128)
	Q4KSCALES(16, 256)
	Q4KSCALES(24, 384)
	Q4KPAIR(16, 0, 0)
	Q4KPAIR(48, 1024, 512)
	Q4KPAIR(80, 2048, 1024)
	Q4KPAIR(112, 3072, 1536)
	VZEROUPPER
	RET

// Q6KQL gathers the 32 low-bit bytes at byte off of the rows, a dword a k
// step, into Z6..Z11, Z24, Z25; Q6KQH the 32 high-bit bytes into
// Z16..Z23.
#define Q6KQL(off) \
	GATHER(off, Z6) \
	GATHER(off+4, Z7) \
	GATHER(off+8, Z8) \
	GATHER(off+12, Z9) \
	GATHER(off+16, Z10) \
	GATHER(off+20, Z11) \
	GATHER(off+24, Z24) \
	GATHER(off+28, Z25)

#define Q6KQH(off) \
	GATHER(off, Z16) \
	GATHER(off+4, Z17) \
	GATHER(off+8, Z18) \
	GATHER(off+12, Z19) \
	GATHER(off+16, Z20) \
	GATHER(off+20, Z21) \
	GATHER(off+24, Z22) \
	GATHER(off+28, Z23)

// Q6KBITS sets d = (q >> sh) & m; Q6KBITS0 is its form for sh = 0, which
// leaves the shift out (sh is not used).
#define Q6KBITS(q, sh, m, d) \
	VPSRLD $sh, q, d \
	VPANDD m, d, d

#define Q6KBITS0(q, sh, m, d) \
	VPANDD m, q, d

// Q6KSTEP makes a k step's values of the sixteen rows: four low bits
// from ql by lo (Q6KBITS or Q6KBITS0: the high nibbles or the low ones),
// two high bits from qh at bit hsh by hi; q = low | high<<4 is summed into
// acc, q−32 stored at dst(DI).
#define Q6KSTEP(lo, hi, hsh, ql, qh, acc, dst) \
	lo(ql, 4, Z14, Z26) \
	hi(qh, hsh, Z13, Z31) \
	VPSLLD $4, Z31, Z31 \
	VPORD Z31, Z26, Z26 \
	VPDPBUSD Z26, Z28, acc \
	VPSUBB Z12, Z26, Z26 \
	VMOVDQU32 Z26, dst(DI)

// Q6KSUB decodes a 32-value sub-block from the gathered ql and qh into
// the panel rows from dst(DI), the sums of its two 16-value halves (the
// first four steps and the last four) in Z29 and Z30.
#define Q6KSUB(lo, hi, hsh, dst) \
	VPXORD Z29, Z29, Z29 \
	VPXORD Z30, Z30, Z30 \
	Q6KSTEP(lo, hi, hsh, Z6, Z16, Z29, dst) \
	Q6KSTEP(lo, hi, hsh, Z7, Z17, Z29, dst+64) \
	Q6KSTEP(lo, hi, hsh, Z8, Z18, Z29, dst+128) \
	Q6KSTEP(lo, hi, hsh, Z9, Z19, Z29, dst+192) \
	Q6KSTEP(lo, hi, hsh, Z10, Z20, Z30, dst+256) \
	Q6KSTEP(lo, hi, hsh, Z11, Z21, Z30, dst+320) \
	Q6KSTEP(lo, hi, hsh, Z24, Z22, Z30, dst+384) \
	Q6KSTEP(lo, hi, hsh, Z25, Z23, Z30, dst+448)

// Q6KMUL finishes the sub-block: its multipliers m0, m1, the signed scale
// bytes i and i+1 of the gathered dword sc, at aux+64(R9) and
// aux+128(R9), and its start −128·(m0·Σ₀q + m1·Σ₁q) at aux(R9), the sums
// taken back to the values q−32.
#define Q6KMUL(sc, i, aux) \
	SPLATD(512, Z26) \
	VPSUBD Z26, Z29, Z29 \
	VPSUBD Z26, Z30, Z30 \
	VPSLLD $(24-8*i), sc, Z26 \
	VPSRAD $24, Z26, Z26 \
	VPSLLD $(16-8*i), sc, Z31 \
	VPSRAD $24, Z31, Z31 \
	VMOVDQU32 Z26, aux+64(R9) \
	VMOVDQU32 Z31, aux+128(R9) \
	VPMULLD Z26, Z29, Z29 \
	VPMULLD Z31, Z30, Z30 \
	VPADDD Z30, Z29, Z29 \
	PSTART(Z29, aux)

// func decodePanelQ6KAVX512(src *byte, rowBytes int, nrows int, pan *int8, fs *float32, aux *int32)
//
// One 16-column panel of one Q6_K super-block (eight 32-value blocks, each
// with two signed 16-value scales as multipliers) from the stored rows, as
// decodePanelQ4KAVX512 does for Q4_K: the values q−32 from the gathered
// low-nibble and high-bit dwords (u8RowQ6K's arithmetic per byte), fd = d,
// the multipliers m0, m1 sign-extended from the gathered scale bytes, and
// the starts −128·(m0·Σ₀q + m1·Σ₁q) from the half sums (VPDPBUSD with
// ones). Index in Z15.
TEXT ·decodePanelQ6KAVX512(SB), NOSPLIT, $0-48
	MOVQ src+0(FP), SI
	MOVQ rowBytes+8(FP), AX
	MOVQ nrows+16(FP), CX
	MOVQ pan+24(FP), DI
	MOVQ fs+32(FP), R8
	MOVQ aux+40(FP), R9
	PANEL16
	SPLATD(0x0f0f0f0f, Z14)
	SPLATD(0x03030303, Z13)
	SPLATD(0x20202020, Z12)
	VPXORD Z27, Z27, Z27
	GATHER(206, Z0)
	VPSRLD $16, Z0, Z0
	VPMOVDW Z0, Y1
	VCVTPH2PS Y1, Z1
	VMOVUPS Z1, 0(R8)
	VMOVUPS Z1, 128(R8)
	VMOVUPS Z1, 256(R8)
	VMOVUPS Z1, 384(R8)
	VMOVUPS Z1, 512(R8)
	VMOVUPS Z1, 640(R8)
	VMOVUPS Z1, 768(R8)
	VMOVUPS Z1, 896(R8)
	GATHER(192, Z2)
	GATHER(196, Z3)
	GATHER(200, Z4)
	GATHER(204, Z5)

	// ql bytes 0..63 and qh bytes 0..31 make sub-blocks 0 to 3,
	Q6KQH(128)
	Q6KQL(0)
	Q6KSUB(Q6KBITS0, Q6KBITS0, 0, 0)
	Q6KMUL(Z2, 0, 0)
	Q6KSUB(Q6KBITS, Q6KBITS, 4, 1024)
	Q6KMUL(Z3, 0, 512)
	Q6KQL(32)
	Q6KSUB(Q6KBITS0, Q6KBITS, 2, 512)
	Q6KMUL(Z2, 2, 256)
	Q6KSUB(Q6KBITS, Q6KBITS, 6, 1536)
	Q6KMUL(Z3, 2, 768)

	// ql bytes 64..127 and qh bytes 32..63 sub-blocks 4 to 7.
	Q6KQH(160)
	Q6KQL(64)
	Q6KSUB(Q6KBITS0, Q6KBITS0, 0, 2048)
	Q6KMUL(Z4, 0, 1024)
	Q6KSUB(Q6KBITS, Q6KBITS, 4, 3072)
	Q6KMUL(Z5, 0, 1536)
	Q6KQL(96)
	Q6KSUB(Q6KBITS0, Q6KBITS, 2, 2560)
	Q6KMUL(Z4, 2, 1280)
	Q6KSUB(Q6KBITS, Q6KBITS, 6, 3584)
	Q6KMUL(Z5, 2, 1792)
	VZEROUPPER
	RET

// Q2KSTEP makes a k step of one Q2_K block of the sixteen rows: the two
// bits of each byte of the gathered dword q that bits (Q6KBITS, or
// Q6KBITS0 for sh = 0) takes at bit sh, stored at dst(DI) and summed into
// acc (VPDPBUSD with the ones of Z28).
#define Q2KSTEP(bits, sh, q, acc, dst) \
	bits(q, sh, Z14, Z26) \
	VMOVDQU32 Z26, dst(DI) \
	VPDPBUSD Z26, Z28, acc

// Q2KSUB decodes the 32-value block at bits sh of the gathered half
// (Z16..Z23, a k step each) into the panel rows from dst(DI), the sums of
// its two 16-value halves (the first four steps and the last four) in Z29
// and Z30.
#define Q2KSUB(bits, sh, dst) \
	VPXORD Z29, Z29, Z29 \
	VPXORD Z30, Z30, Z30 \
	Q2KSTEP(bits, sh, Z16, Z29, dst) \
	Q2KSTEP(bits, sh, Z17, Z29, dst+64) \
	Q2KSTEP(bits, sh, Z18, Z29, dst+128) \
	Q2KSTEP(bits, sh, Z19, Z29, dst+192) \
	Q2KSTEP(bits, sh, Z20, Z30, dst+256) \
	Q2KSTEP(bits, sh, Z21, Z30, dst+320) \
	Q2KSTEP(bits, sh, Z22, Z30, dst+384) \
	Q2KSTEP(bits, sh, Z23, Z30, dst+448)

// Q2KMUL finishes the block: its multipliers m0, m1, the low nibbles of
// scale bytes i and i+1 of the gathered dword sc (Z13 = 15), at
// aux+64(R9) and aux+128(R9), and its start −128·(m0·Σ₀q + m1·Σ₁q) at
// aux(R9).
#define Q2KMUL(sc, i, aux) \
	Q6KBITS(sc, (8*i), Z13, Z26) \
	Q6KBITS(sc, (8*i+8), Z13, Z31) \
	VMOVDQU32 Z26, aux+64(R9) \
	VMOVDQU32 Z31, aux+128(R9) \
	VPMULLD Z26, Z29, Z29 \
	VPMULLD Z31, Z30, Z30 \
	VPADDD Z30, Z29, Z29 \
	PSTART(Z29, aux)

// func decodePanelQ2KAVX512(src *byte, rowBytes int, nrows int, pan *int8, fs *float32, aux *int32)
//
// One 16-column panel of one Q2_K super-block (eight 32-value blocks, two
// 4-bit scales each as the multipliers of its 16-value halves) from the
// stored rows (row r's super-block at src + r·rowBytes; rows nrows..15
// zero), as u8RowQ2K decodes a row: fd = d (VCVTPH2PS of the binary16 at
// byte 80) for every block, the multipliers the low nibbles of the scale
// bytes 0..15 (gathered as four dwords), and the values, bits 2j..2j+1 of
// each byte of a 32-byte half for its block j, from the half's eight
// gathered dwords (one k step each, for the half's four blocks at once),
// with the starts −128·(m0·Σ₀q + m1·Σ₁q) from the half sums (VPDPBUSD
// with ones). The minimums are not read: their float32 product is
// separate (halfMins). Index in Z15 (see decodePanelQ8_0AVX512).
TEXT ·decodePanelQ2KAVX512(SB), NOSPLIT, $0-48
	MOVQ src+0(FP), SI
	MOVQ rowBytes+8(FP), AX
	MOVQ nrows+16(FP), CX
	MOVQ pan+24(FP), DI
	MOVQ fs+32(FP), R8
	MOVQ aux+40(FP), R9
	PANEL16
	SPLATD(0x03030303, Z14)
	SPLATD(15, Z13)
	VPXORD Z27, Z27, Z27
	GATHER(80, Z0)
	VPMOVDW Z0, Y1
	VCVTPH2PS Y1, Z1
	VMOVUPS Z1, 0(R8)
	VMOVUPS Z1, 128(R8)
	VMOVUPS Z1, 256(R8)
	VMOVUPS Z1, 384(R8)
	VMOVUPS Z1, 512(R8)
	VMOVUPS Z1, 640(R8)
	VMOVUPS Z1, 768(R8)
	VMOVUPS Z1, 896(R8)
	GATHER(0, Z2)
	GATHER(4, Z3)
	GATHER(8, Z4)
	GATHER(12, Z5)

	// Value bytes 0..31 make blocks 0 to 3 (scales 0..7),
	Q6KQH(16)
	Q2KSUB(Q6KBITS0, 0, 0)
	Q2KMUL(Z2, 0, 0)
	Q2KSUB(Q6KBITS, 2, 512)
	Q2KMUL(Z2, 2, 256)
	Q2KSUB(Q6KBITS, 4, 1024)
	Q2KMUL(Z3, 0, 512)
	Q2KSUB(Q6KBITS, 6, 1536)
	Q2KMUL(Z3, 2, 768)

	// value bytes 32..63 blocks 4 to 7 (scales 8..15).
	Q6KQH(48)
	Q2KSUB(Q6KBITS0, 0, 2048)
	Q2KMUL(Z4, 0, 1024)
	Q2KSUB(Q6KBITS, 2, 2560)
	Q2KMUL(Z4, 2, 1280)
	Q2KSUB(Q6KBITS, 4, 3072)
	Q2KMUL(Z5, 0, 1536)
	Q2KSUB(Q6KBITS, 6, 3584)
	Q2KMUL(Z5, 2, 1792)
	VZEROUPPER
	RET
