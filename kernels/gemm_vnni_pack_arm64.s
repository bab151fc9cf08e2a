#include "textflag.h"
#include "neon_arm64.h"

// The side copies of packed matrices (gemm_vnni_pack_amd64.s) on NEON: a
// packed matrix's per-block factors and aux into the kernels' layout, on
// every product by a packed weight. All exact: copies, sign extension, a
// shift, FCVTL.

#define SARGS \
	MOVD dst+0(FP), R0 \
	MOVD dstStride+8(FP), R1 \
	MOVD src+16(FP), R2 \
	MOVD n+24(FP), R3

// func copy64StridedNEON(dst *byte, dstStride int, src *byte, n int)
TEXT ·copy64StridedNEON(SB), NOSPLIT, $0-32
	SARGS
	CBZ R3, cdone

cloop:
	VLD1.P 64(R2), [V0.B16, V1.B16, V2.B16, V3.B16]
	VST1 [V0.B16, V1.B16, V2.B16, V3.B16], (R0)
	ADD R1, R0
	SUB $1, R3
	CBNZ R3, cloop

cdone:
	RET

// func widen32StridedNEON(dst *int32, dstStride int, src *int16, n int)
TEXT ·widen32StridedNEON(SB), NOSPLIT, $0-32
	SARGS
	CBZ R3, wdone

wloop:
	VLD1.P 64(R2), [V0.H8, V1.H8, V2.H8, V3.H8]
	SXTL4S(4, 0)
	SXTL24S(5, 0)
	SXTL4S(6, 1)
	SXTL24S(7, 1)
	SXTL4S(16, 2)
	SXTL24S(17, 2)
	SXTL4S(18, 3)
	SXTL24S(19, 3)
	ADD $64, R0, R4
	VST1 [V4.S4, V5.S4, V6.S4, V7.S4], (R0)
	VST1 [V16.S4, V17.S4, V18.S4, V19.S4], (R4)
	ADD R1, R0
	SUB $1, R3
	CBNZ R3, wloop

wdone:
	RET

// func halvesStridedNEON(dst *float32, dstStride int, src *uint16, n int)
TEXT ·halvesStridedNEON(SB), NOSPLIT, $0-32
	SARGS
	CBZ R3, hdone

hloop:
	VLD1.P 32(R2), [V0.H8, V1.H8]
	FCVTL4S(4, 0)
	FCVTL24S(5, 0)
	FCVTL4S(6, 1)
	FCVTL24S(7, 1)
	VST1 [V4.S4, V5.S4, V6.S4, V7.S4], (R0)
	ADD R1, R0
	SUB $1, R3
	CBNZ R3, hloop

hdone:
	RET

// sshll vd.4s, vn.4h, #7 and sshll2 vd.4s, vn.8h, #7: sign-extended and
// times 128.
#define SSHLL4S_7(d, n) ENC2(0x0f17a400, d, n)
#define SSHLL24S_7(d, n) ENC2(0x4f17a400, d, n)

// func startsStridedNEON(dst *int32, dstStride int, src *int16, n int)
TEXT ·startsStridedNEON(SB), NOSPLIT, $0-32
	SARGS
	CBZ R3, sdone

sloop:
	VLD1.P 32(R2), [V0.H8, V1.H8]
	SSHLL4S_7(4, 0)
	SSHLL24S_7(5, 0)
	SSHLL4S_7(6, 1)
	SSHLL24S_7(7, 1)
	VST1 [V4.S4, V5.S4, V6.S4, V7.S4], (R0)
	ADD R1, R0
	SUB $1, R3
	CBNZ R3, sloop

sdone:
	RET
