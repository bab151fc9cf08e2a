#include "textflag.h"
#include "neon_arm64.h"

// SETUP sets the constants of QUANT32: V31 the magnitude mask, V30 the
// bytes 128, F29 127, F28 1, R5 2⁻¹⁰⁰'s bits, R6 +Inf's.
#define SETUP \
	MOVW  $0x7fffffff, R4 \
	VDUP  R4, V31.S4 \
	VMOVI $128, V30.B16 \
	MOVW  $0x42fe0000, R4 \
	FMOVS R4, F29 \
	FMOVS $1.0, F28 \
	MOVW  $0x0d800000, R5 \
	MOVW  $0x7f800000, R6

// QUANT32 quantizes the 32 values at R0 (moving R0 past them): the codes
// q+128 in V24, V25, d in F10 and Σq in F16; a block whose amax (bits in
// R7) is below 2⁻¹⁰⁰ or not finite branches to special.
#define QUANT32 \
	VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4] \
	VLD1.P 64(R0), [V4.S4, V5.S4, V6.S4, V7.S4] \
	VAND   V31.B16, V0.B16, V8.B16 \
	VAND   V31.B16, V1.B16, V9.B16 \
	VAND   V31.B16, V2.B16, V10.B16 \
	VAND   V31.B16, V3.B16, V11.B16 \
	VAND   V31.B16, V4.B16, V12.B16 \
	VAND   V31.B16, V5.B16, V13.B16 \
	VAND   V31.B16, V6.B16, V14.B16 \
	VAND   V31.B16, V7.B16, V15.B16 \
	VUMAX  V9.S4, V8.S4, V8.S4 \
	VUMAX  V11.S4, V10.S4, V10.S4 \
	VUMAX  V13.S4, V12.S4, V12.S4 \
	VUMAX  V15.S4, V14.S4, V14.S4 \
	VUMAX  V10.S4, V8.S4, V8.S4 \
	VUMAX  V14.S4, V12.S4, V12.S4 \
	VUMAX  V12.S4, V8.S4, V8.S4 \
	UMAXV4S(8, 8) \
	FMOVS  F8, R7 \
	CMPW   R5, R7 \
	BLO    special \
	CMPW   R6, R7 \
	BHS    special \
	FMOVS  R7, F9 \
	FDIVS  F29, F9, F10 \
	FDIVS  F10, F28, F11 \
	FMULE(0, 0, 11, 0) \
	FMULE(1, 1, 11, 0) \
	FMULE(2, 2, 11, 0) \
	FMULE(3, 3, 11, 0) \
	FMULE(4, 4, 11, 0) \
	FMULE(5, 5, 11, 0) \
	FMULE(6, 6, 11, 0) \
	FMULE(7, 7, 11, 0) \
	FCVTNS4S(0, 0) \
	FCVTNS4S(1, 1) \
	FCVTNS4S(2, 2) \
	FCVTNS4S(3, 3) \
	FCVTNS4S(4, 4) \
	FCVTNS4S(5, 5) \
	FCVTNS4S(6, 6) \
	FCVTNS4S(7, 7) \
	ADD4S(16, 0, 1) \
	ADD4S(17, 2, 3) \
	ADD4S(18, 4, 5) \
	ADD4S(19, 6, 7) \
	ADD4S(16, 16, 17) \
	ADD4S(18, 18, 19) \
	ADD4S(16, 16, 18) \
	ADDV4S(16, 16) \
	VUZP1  V1.H8, V0.H8, V20.H8 \
	VUZP1  V3.H8, V2.H8, V21.H8 \
	VUZP1  V5.H8, V4.H8, V22.H8 \
	VUZP1  V7.H8, V6.H8, V23.H8 \
	VUZP1  V21.B16, V20.B16, V24.B16 \
	VUZP1  V23.B16, V22.B16, V25.B16 \
	VEOR   V30.B16, V24.B16, V24.B16 \
	VEOR   V30.B16, V25.B16, V25.B16

// SCALES stores the block's pair (d, d·Σq) at R3 and moves R3 on.
#define SCALES \
	FMOVS  F16, R8 \
	SCVTFWS R8, F17 \
	FMULS  F10, F17, F17 \
	FMOVS  F10, (R3) \
	FMOVS  F17, 4(R3) \
	ADD    $8, R3, R3

// SPECIAL stores a special block's pair: q = 0 (the caller stores the
// bytes 128); d = amax when not finite, else 0; d·Σq = 0.
#define SPECIAL \
	MOVW   $0, R8 \
	CMPW   R6, R7 \
	CSELW  HS, R7, R8, R11 \
	MOVW   R11, (R3) \
	MOVW   ZR, 4(R3) \
	ADD    $8, R3, R3

// func quantizeU8NEON(x *float32, nb int, q *uint8, ds *float32)
// quantizeRowU8 for nb blocks of 32 values: per block the largest
// magnitude's bits (UMAXV of the values' bits without sign), d = amax/127
// and 1/d in float32, q = x·(1/d) rounded (FMUL) then converted rounding to
// nearest even (FCVTNS: roundHalfEven's result for |x·(1/d)| ≤ 127), stored
// as q+128 (the int32 lanes narrowed to their low bytes by UZP1, flipped),
// and the pair (d, d·Σq). A block whose amax is below 2⁻¹⁰⁰ or not finite
// gets q = 0 and (0 or amax, 0), as quantizeRowI8 does.
TEXT ·quantizeU8NEON(SB), NOSPLIT, $0-32
	MOVD  x+0(FP), R0
	MOVD  nb+8(FP), R1
	MOVD  q+16(FP), R2
	MOVD  ds+24(FP), R3
	SETUP

block:
	QUANT32
	VST1.P [V24.B16, V25.B16], 32(R2)
	SCALES
	SUBS   $1, R1, R1
	BNE    block
	RET

special:
	VST1.P [V30.B16], 16(R2)
	VST1.P [V30.B16], 16(R2)
	SPECIAL
	SUBS   $1, R1, R1
	BNE    block
	RET

// STRIDED stores the 32 bytes of V24, V25 as groups of chunk (R10: 4 or
// 8) bytes at R2, R2+stride (R9), ..., moving R2 past the last.
#define STRIDED \
	CMP    $8, R10 \
	BEQ    by8 \
	VMOV   V24.S[0], R8 \
	MOVW   R8, (R2) \
	ADD    R9, R2 \
	VMOV   V24.S[1], R8 \
	MOVW   R8, (R2) \
	ADD    R9, R2 \
	VMOV   V24.S[2], R8 \
	MOVW   R8, (R2) \
	ADD    R9, R2 \
	VMOV   V24.S[3], R8 \
	MOVW   R8, (R2) \
	ADD    R9, R2 \
	VMOV   V25.S[0], R8 \
	MOVW   R8, (R2) \
	ADD    R9, R2 \
	VMOV   V25.S[1], R8 \
	MOVW   R8, (R2) \
	ADD    R9, R2 \
	VMOV   V25.S[2], R8 \
	MOVW   R8, (R2) \
	ADD    R9, R2 \
	VMOV   V25.S[3], R8 \
	MOVW   R8, (R2) \
	ADD    R9, R2 \
	B      stored \
by8: \
	VMOV   V24.D[0], R8 \
	MOVD   R8, (R2) \
	ADD    R9, R2 \
	VMOV   V24.D[1], R8 \
	MOVD   R8, (R2) \
	ADD    R9, R2 \
	VMOV   V25.D[0], R8 \
	MOVD   R8, (R2) \
	ADD    R9, R2 \
	VMOV   V25.D[1], R8 \
	MOVD   R8, (R2) \
	ADD    R9, R2 \
stored:

// func quantizeU8StridedNEON(x *float32, nb int, q *uint8, stride int, chunk int, ds *float32)
// quantizeU8NEON with the codes stored in groups of chunk bytes (4 or 8),
// stride bytes apart: straight into the interleaved activations of a
// group of rows.
TEXT ·quantizeU8StridedNEON(SB), NOSPLIT, $0-48
	MOVD  x+0(FP), R0
	MOVD  nb+8(FP), R1
	MOVD  q+16(FP), R2
	MOVD  stride+24(FP), R9
	MOVD  chunk+32(FP), R10
	MOVD  ds+40(FP), R3
	SETUP

sblock:
	QUANT32
	SCALES

strided:
	STRIDED
	SUBS   $1, R1, R1
	BNE    sblock
	RET

special:
	VORR   V30.B16, V30.B16, V24.B16
	VORR   V30.B16, V30.B16, V25.B16
	SPECIAL
	B      strided
