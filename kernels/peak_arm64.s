#include "textflag.h"
#include "neon_arm64.h"

// Peak probes (peak.go): n iterations of 16 independent chains of one
// instruction on register operands, no memory traffic inside the loop.
// Neoverse V1/V2 issue four 128-bit SDOT, SMMLA or FMLA a cycle with
// latencies of 3 to 6 cycles (LLVM's scheduling models): 16 chains cover
// the longest. The operands are the first 16 bytes of src's two 64-byte
// operands (V28, V29); dst gets the 16-byte sum of the accumulators, so a
// test can check what the chains computed.

#define ZERO16 \
	VEOR V0.B16, V0.B16, V0.B16 \
	VEOR V1.B16, V1.B16, V1.B16 \
	VEOR V2.B16, V2.B16, V2.B16 \
	VEOR V3.B16, V3.B16, V3.B16 \
	VEOR V4.B16, V4.B16, V4.B16 \
	VEOR V5.B16, V5.B16, V5.B16 \
	VEOR V6.B16, V6.B16, V6.B16 \
	VEOR V7.B16, V7.B16, V7.B16 \
	VEOR V8.B16, V8.B16, V8.B16 \
	VEOR V9.B16, V9.B16, V9.B16 \
	VEOR V10.B16, V10.B16, V10.B16 \
	VEOR V11.B16, V11.B16, V11.B16 \
	VEOR V12.B16, V12.B16, V12.B16 \
	VEOR V13.B16, V13.B16, V13.B16 \
	VEOR V14.B16, V14.B16, V14.B16 \
	VEOR V15.B16, V15.B16, V15.B16

// OP16(op): the instruction into each of V0-V15 from V28 and V29.
#define OP16(op) \
	op(0, 28, 29)  \
	op(1, 28, 29)  \
	op(2, 28, 29)  \
	op(3, 28, 29)  \
	op(4, 28, 29)  \
	op(5, 28, 29)  \
	op(6, 28, 29)  \
	op(7, 28, 29)  \
	op(8, 28, 29)  \
	op(9, 28, 29)  \
	op(10, 28, 29) \
	op(11, 28, 29) \
	op(12, 28, 29) \
	op(13, 28, 29) \
	op(14, 28, 29) \
	op(15, 28, 29)

// SUM16(add): V0 += V1..V15, by the lane addition add.
#define SUM16(add) \
	add(0, 0, 1)  \
	add(0, 0, 2)  \
	add(0, 0, 3)  \
	add(0, 0, 4)  \
	add(0, 0, 5)  \
	add(0, 0, 6)  \
	add(0, 0, 7)  \
	add(0, 0, 8)  \
	add(0, 0, 9)  \
	add(0, 0, 10) \
	add(0, 0, 11) \
	add(0, 0, 12) \
	add(0, 0, 13) \
	add(0, 0, 14) \
	add(0, 0, 15)

// PROBE(op, add) is a probe's body: n iterations of OP16(op), then V0 +=
// V1..V15 by add, stored at dst. The branches count instructions: CBZ
// skips the 16 ops, SUBS and BNE; BNE goes back over SUBS and the 16 ops.
#define PROBE(op, add) \
	MOVD n+0(FP), R0     \
	MOVD src+8(FP), R1   \
	MOVD dst+16(FP), R2  \
	VLD1 (R1), [V28.B16] \
	ADD  $64, R1, R1     \
	VLD1 (R1), [V29.B16] \
	ZERO16               \
	CBZ  R0, 19(PC)      \
	OP16(op)             \
	SUBS $1, R0, R0      \
	BNE  -17(PC)         \
	SUM16(add)           \
	VST1 [V0.B16], (R2)  \
	RET

// func peakFMLA(n int, src, dst *byte)
TEXT ·peakFMLA(SB), NOSPLIT, $0-24
	PROBE(FMLA4S, FADD4S)

// func peakSDOT(n int, src, dst *byte)
TEXT ·peakSDOT(SB), NOSPLIT, $0-24
	PROBE(SDOT, ADD4S)

// func peakSMMLA(n int, src, dst *byte)
TEXT ·peakSMMLA(SB), NOSPLIT, $0-24
	PROBE(SMMLA, ADD4S)

// func peakBFDOT(n int, src, dst *byte)
TEXT ·peakBFDOT(SB), NOSPLIT, $0-24
	PROBE(BFDOT, FADD4S)

// func peakBFMMLA(n int, src, dst *byte)
TEXT ·peakBFMMLA(SB), NOSPLIT, $0-24
	PROBE(BFMMLA, FADD4S)
