#include "textflag.h"
#include "amx_amd64.h"

// AMX peak probes: n iterations of four independent tile products, the
// 2x2 blocking of the tiers' kernels (tmm0..tmm3 accumulate, tmm4 and tmm5
// the A tiles, tmm6 and tmm7 the B tiles), on operands loaded once, so
// they time the tile unit alone. The instructions are emitted as bytes
// (amx_amd64.h; the products here), each macro naming what it encodes.
// Never run on the machines these were written on (no AMX): checked by
// binutils' objdump (TestAMXProbeEncoding) and run only where the CPU has
// AMX and the OS granted the tile state.
//
// Register numbers: DI 7, R10 10, R11 11.

// TDPBUSD tmm(c), tmm(a), tmm(b): VEX.128.66.0F38.W0 5E 11:c:a, vvvv = ~b.
#define TDPBUSD(c, a, b) \
	BYTE $0xC4 \
	BYTE $0xE2 \
	BYTE $(((15-b)<<3)|1) \
	BYTE $0x5E \
	BYTE $(0xC0|(c<<3)|a)

// TDPBF16PS tmm(c), tmm(a), tmm(b): VEX.128.F3.0F38.W0 5C 11:c:a, vvvv = ~b.
#define TDPBF16PS(c, a, b) \
	BYTE $0xC4 \
	BYTE $0xE2 \
	BYTE $(((15-b)<<3)|2) \
	BYTE $0x5C \
	BYTE $(0xC0|(c<<3)|a)

// PROBE_START loads the configuration at cfg, zeroes the accumulators and
// loads the A tiles from the 64 bytes at src, the B tiles from the 64
// after them (stride 0: every row of a tile the same bytes).
#define PROBE_START \
	MOVQ n+0(FP), CX \
	MOVQ cfg+8(FP), R10 \
	LDTILECFG_R10 \
	MOVQ src+16(FP), R10 \
	MOVQ dst+24(FP), DI \
	XORQ R11, R11 \
	TILEZERO(0) \
	TILEZERO(1) \
	TILEZERO(2) \
	TILEZERO(3) \
	TILELOADD(4, 10, 11) \
	TILELOADD(5, 10, 11) \
	ADDQ $64, R10 \
	TILELOADD(6, 10, 11) \
	TILELOADD(7, 10, 11)

// PROBE_END stores accumulator tmm0 at dst (stride 0: its rows overwrite
// the same 64 bytes) and releases the tiles.
#define PROBE_END \
	TILESTORED(0, 7, 11) \
	TILERELEASE \
	RET

// func peakAMXInt8(n int, cfg, src, dst *byte)
TEXT ·peakAMXInt8(SB), NOSPLIT, $0-32
	PROBE_START
	TESTQ CX, CX
	JZ int8done
int8loop:
	TDPBUSD(0, 4, 6)
	TDPBUSD(1, 4, 7)
	TDPBUSD(2, 5, 6)
	TDPBUSD(3, 5, 7)
	DECQ CX
	JNZ int8loop
int8done:
	PROBE_END

// func peakAMXBF16(n int, cfg, src, dst *byte)
TEXT ·peakAMXBF16(SB), NOSPLIT, $0-32
	PROBE_START
	TESTQ CX, CX
	JZ bf16done
bf16loop:
	TDPBF16PS(0, 4, 6)
	TDPBF16PS(1, 4, 7)
	TDPBF16PS(2, 5, 6)
	TDPBF16PS(3, 5, 7)
	DECQ CX
	JNZ bf16loop
bf16done:
	PROBE_END
