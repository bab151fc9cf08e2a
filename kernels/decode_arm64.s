#include "textflag.h"
#include "neon_arm64.h"

// Row decoders of decode_amd64.s on NEON: the same products, d·q with q
// converted exactly to float32, so the bits of the portable decoders.

// SCALE16 sets o, o+1, o+2, o+3 to the sixteen signed bytes of register
// v, widened to float32 and multiplied by V20. Clobbers V2, V3.
#define SCALE16(v, o0, o1, o2, o3) \
	SXTL8H(2, v) \
	SXTL28H(3, v) \
	SXTL4S(o0, 2) \
	SXTL24S(o1, 2) \
	SXTL4S(o2, 3) \
	SXTL24S(o3, 3) \
	SCVTF4S(o0, o0) \
	SCVTF4S(o1, o1) \
	SCVTF4S(o2, o2) \
	SCVTF4S(o3, o3) \
	FMUL4S(o0, o0, 20) \
	FMUL4S(o1, o1, 20) \
	FMUL4S(o2, o2, 20) \
	FMUL4S(o3, o3, 20)

// func decodeQ8_0NEON(src *byte, nb int, dst *float32)
// nb blocks of 34 bytes: f16 scale, 32 int8.
TEXT ·decodeQ8_0NEON(SB), NOSPLIT, $0-24
	MOVD src+0(FP), R0
	MOVD nb+8(FP), R1
	MOVD dst+16(FP), R2
	CBZ R1, done
loop:
	VLD1R.P 2(R0), [V20.H8]
	FCVTL4S(20, 20)
	VLD1.P 32(R0), [V0.B16, V1.B16]
	SCALE16(0, 4, 5, 6, 7)
	SCALE16(1, 8, 9, 10, 11)
	VST1.P [V4.S4, V5.S4, V6.S4, V7.S4], 64(R2)
	VST1.P [V8.S4, V9.S4, V10.S4, V11.S4], 64(R2)
	SUB $1, R1
	CBNZ R1, loop
done:
	RET

// func decodeNib4NEON(qs *byte, stride int, tab *byte, f *float32, nb int, dst *float32)
// nb 32-value blocks of 4-bit codes (16 bytes each, stride bytes apart;
// byte j holds value j in its low nibble and value j+16 in its high one),
// mapped through the 16-entry int8 table tab (TBL) and multiplied by
// f[block]: the layout of Q4_0 (table −8..7), IQ4_NL and IQ4_XS.
TEXT ·decodeNib4NEON(SB), NOSPLIT, $0-48
	MOVD qs+0(FP), R0
	MOVD stride+8(FP), R5
	MOVD tab+16(FP), R4
	MOVD f+24(FP), R3
	MOVD nb+32(FP), R1
	MOVD dst+40(FP), R2
	VLD1 (R4), [V30.B16]
	VMOVI $15, V31.B16
	CBZ R1, done
loop:
	VLD1 (R0), [V0.B16]
	ADD R5, R0
	VAND V31.B16, V0.B16, V1.B16
	VUSHR $4, V0.B16, V0.B16
	VTBL V1.B16, [V30.B16], V1.B16
	VTBL V0.B16, [V30.B16], V0.B16
	VLD1R.P 4(R3), [V20.S4]
	SCALE16(1, 4, 5, 6, 7)
	SCALE16(0, 8, 9, 10, 11)
	VST1.P [V4.S4, V5.S4, V6.S4, V7.S4], 64(R2)
	VST1.P [V8.S4, V9.S4, V10.S4, V11.S4], 64(R2)
	SUB $1, R1
	CBNZ R1, loop
done:
	RET

// FLOATS16 sets V4..V7 to the sixteen signed bytes of V0 as float32
// (exact). Clobbers V2, V3.
#define FLOATS16 \
	SXTL8H(2, 0) \
	SXTL28H(3, 0) \
	SXTL4S(4, 2) \
	SXTL24S(5, 2) \
	SXTL4S(6, 3) \
	SXTL24S(7, 3) \
	SCVTF4S(4, 4) \
	SCVTF4S(5, 5) \
	SCVTF4S(6, 6) \
	SCVTF4S(7, 7)

// func scaleBytesNEON(q *int8, f *float32, n16 int, dst *float32)
// dst[i] = f[i/16]·q[i] for n16 runs of 16 values: one rounding, as the
// portable decoders' d·q.
TEXT ·scaleBytesNEON(SB), NOSPLIT, $0-32
	MOVD q+0(FP), R0
	MOVD f+8(FP), R1
	MOVD n16+16(FP), R2
	MOVD dst+24(FP), R3
	CBZ R2, sbdone

sbloop:
	VLD1.P 16(R0), [V0.B16]
	VLD1R.P 4(R1), [V20.S4]
	FLOATS16
	FMUL4S(4, 4, 20)
	FMUL4S(5, 5, 20)
	FMUL4S(6, 6, 20)
	FMUL4S(7, 7, 20)
	VST1.P [V4.S4, V5.S4, V6.S4, V7.S4], 64(R3)
	SUB $1, R2
	CBNZ R2, sbloop

sbdone:
	RET

// func scaleAddBytesNEON(q *int8, f *float32, m *float32, n16 int, dst *float32)
// dst[i] = f[i/16]·q[i] + m[i/16], the product rounded before the sum
// (FMUL, FADD: no fused multiply-add, as the portable decoders'
// float32(d·q) + m).
TEXT ·scaleAddBytesNEON(SB), NOSPLIT, $0-40
	MOVD q+0(FP), R0
	MOVD f+8(FP), R1
	MOVD m+16(FP), R4
	MOVD n16+24(FP), R2
	MOVD dst+32(FP), R3
	CBZ R2, sadone

saloop:
	VLD1.P 16(R0), [V0.B16]
	VLD1R.P 4(R1), [V20.S4]
	VLD1R.P 4(R4), [V21.S4]
	FLOATS16
	FMUL4S(4, 4, 20)
	FMUL4S(5, 5, 20)
	FMUL4S(6, 6, 20)
	FMUL4S(7, 7, 20)
	FADD4S(4, 4, 21)
	FADD4S(5, 5, 21)
	FADD4S(6, 6, 21)
	FADD4S(7, 7, 21)
	VST1.P [V4.S4, V5.S4, V6.S4, V7.S4], 64(R3)
	SUB $1, R2
	CBNZ R2, saloop

sadone:
	RET
