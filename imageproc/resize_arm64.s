#include "textflag.h"

// The resampling passes' widening loops of resize_amd64.s on NEON: the
// same int32 products and sums (exact, wrapping as Go's int32), so the
// same results as the portable loops.

#define ENC2(op, d, n) WORD $((op) | ((n)<<5) | (d))
#define ENC3(op, d, n, m) WORD $((op) | ((m)<<16) | ((n)<<5) | (d))
// uxtl/uxtl2: zero-extend the low/high half of vn to twice the width.
#define UXTL8H(d, n) ENC2(0x2f08a400, d, n)
#define UXTL28H(d, n) ENC2(0x6f08a400, d, n)
#define UXTL4S(d, n) ENC2(0x2f10a400, d, n)
#define UXTL24S(d, n) ENC2(0x6f10a400, d, n)
// mla vd.4s, vn.4s, vm.4s: vd += vn·vm in int32 lanes.
#define MLA4S(d, n, m) ENC3(0x4ea09400, d, n, m)

// WIDEN16 sets o0..o3 to the sixteen bytes of v as int32. Clobbers V26,
// V27.
#define WIDEN16(v, o0, o1, o2, o3) \
	UXTL8H(26, v) \
	UXTL28H(27, v) \
	UXTL4S(o0, 26) \
	UXTL24S(o1, 26) \
	UXTL4S(o2, 27) \
	UXTL24S(o3, 27)

// func vertAccNEON(acc *int32, src *uint8, n int, w int32)
// acc[i] += int32(src[i]) * w for i < n; n is a multiple of 8.
TEXT ·vertAccNEON(SB), NOSPLIT, $0-28
	MOVD acc+0(FP), R0
	MOVD src+8(FP), R1
	MOVD n+16(FP), R2
	MOVW w+24(FP), R3
	VDUP R3, V0.S4
	CMP $16, R2
	BLT tail8
loop16:
	VLD1.P 16(R1), [V1.B16]
	WIDEN16(1, 4, 5, 6, 7)
	VLD1 (R0), [V16.S4, V17.S4, V18.S4, V19.S4]
	MLA4S(16, 4, 0)
	MLA4S(17, 5, 0)
	MLA4S(18, 6, 0)
	MLA4S(19, 7, 0)
	VST1.P [V16.S4, V17.S4, V18.S4, V19.S4], 64(R0)
	SUB $16, R2
	CMP $16, R2
	BGE loop16
tail8:
	CBZ R2, done
	VLD1 (R1), [V1.B8]
	UXTL8H(2, 1)
	UXTL4S(4, 2)
	UXTL24S(5, 2)
	VLD1 (R0), [V16.S4, V17.S4]
	MLA4S(16, 4, 0)
	MLA4S(17, 5, 0)
	VST1 [V16.S4, V17.S4], (R0)
done:
	RET

// func splitNEON(pr, pg, pb *int32, src *uint8, n int)
// Widens n RGB pixels (n a multiple of 16) into the three int32 planes:
// LD3 deinterleaves sixteen pixels into one register per channel.
TEXT ·splitNEON(SB), NOSPLIT, $0-40
	MOVD pr+0(FP), R0
	MOVD pg+8(FP), R1
	MOVD pb+16(FP), R2
	MOVD src+24(FP), R3
	MOVD n+32(FP), R4
	LSR $4, R4
	CBZ R4, done
loop:
	VLD3.P 48(R3), [V0.B16, V1.B16, V2.B16]
	WIDEN16(0, 4, 5, 6, 7)
	WIDEN16(1, 8, 9, 10, 11)
	WIDEN16(2, 12, 13, 14, 15)
	VST1.P [V4.S4, V5.S4, V6.S4, V7.S4], 64(R0)
	VST1.P [V8.S4, V9.S4, V10.S4, V11.S4], 64(R1)
	VST1.P [V12.S4, V13.S4, V14.S4, V15.S4], 64(R2)
	SUB $1, R4
	CBNZ R4, loop
done:
	RET

// addp vd.4s, vn.4s, vm.4s: pairwise sums, vn's pairs then vm's.
#define ADDP4S(d, n, m) ENC3(0x4ea0bc00, d, n, m)
#define ADD4S(d, n, m) ENC3(0x4ea08400, d, n, m)
// sshr vd.4s, vn.4s, #22: arithmetic shift right.
#define SSHR4S_22(d, n) ENC2(0x4f2a0400, d, n)
// sqxtn vd.4h, vn.4s and sqxtun vd.8b, vn.8h: narrow with signed
// saturation, then to unsigned bytes with saturation (VPACKSSDW,
// VPACKUSWB).
#define SQXTN4H(d, n) ENC2(0x0e614800, d, n)
#define SQXTUN8B(d, n) ENC2(0x2e212800, d, n)

// func horizNEON(dst *uint8, pr, pg, pb *int32, first *int32, w *int32, taps int, nout int)
// For each output x < nout and channel c: the sum over t < taps of
// plane_c[first[x]+t] * w[x*taps+t] in wrapping int32 arithmetic (like the
// reference's int accumulators), plus 2^21, shifted right by 22 and
// clamped to 0..255, is stored at dst[3x+c]. taps is a multiple of 8.
TEXT ·horizNEON(SB), NOSPLIT, $0-64
	MOVD dst+0(FP), R0
	MOVD pr+8(FP), R1
	MOVD pg+16(FP), R2
	MOVD pb+24(FP), R3
	MOVD first+32(FP), R4
	MOVD w+40(FP), R5
	MOVD taps+48(FP), R6
	MOVD nout+56(FP), R7
	MOVW $0x200000, R8
	VDUP R8, V31.S4
	CBZ R7, hdone

hloop:
	MOVW.P 4(R4), R8
	LSL $2, R8
	ADD R1, R8, R9
	ADD R2, R8, R10
	ADD R3, R8, R11
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	MOVD R6, R12

tloop:
	VLD1.P 32(R5), [V3.S4, V4.S4]
	VLD1.P 32(R9), [V5.S4, V6.S4]
	VLD1.P 32(R10), [V16.S4, V17.S4]
	VLD1.P 32(R11), [V18.S4, V19.S4]
	MLA4S(0, 5, 3)
	MLA4S(1, 16, 3)
	MLA4S(2, 18, 3)
	MLA4S(0, 6, 4)
	MLA4S(1, 17, 4)
	MLA4S(2, 19, 4)
	SUB $8, R12
	CBNZ R12, tloop

	// The three sums in V0 = r g b b, rounded, scaled and clamped.
	ADDP4S(0, 0, 1)
	ADDP4S(2, 2, 2)
	ADDP4S(0, 0, 2)
	ADD4S(0, 0, 31)
	SSHR4S_22(0, 0)
	SQXTN4H(0, 0)
	SQXTUN8B(0, 0)
	VMOV V0.S[0], R8
	MOVH R8, (R0)
	LSR $16, R8
	MOVB R8, 2(R0)
	ADD $3, R0
	SUB $1, R7
	CBNZ R7, hloop

hdone:
	RET
