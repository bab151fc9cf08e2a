// The AMX instructions both AMX tiers use, emitted as bytes (the Go
// assembler has no AMX mnemonics; Intel SDM, AMX chapter), each macro
// naming the instruction and operand form it encodes. Register numbers:
// AX 0, CX 1, DX 2, BX 3, SI 6, DI 7, R8..R15 8..15.

// LDTILECFG (R10): VEX.128.NP.0F38.W0 49 /0, ModRM 00 000 010 with VEX.B̄
// clear for R10.
#define LDTILECFG_R10 \
	BYTE $0xC4; BYTE $0xC2; BYTE $0x78; BYTE $0x49; BYTE $0x02

// TILERELEASE: VEX.128.NP.0F38.W0 49 C0.
#define TILERELEASE \
	BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0xC0

// TILEZERO tmm(t): VEX.128.F2.0F38.W0 49 11:t:000.
#define TILEZERO(t) \
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $(0xC0|(t<<3))

// TILELOADD tmm(t), (base)(index*1): VEX.128.F2.0F38.W0 4B, ModRM 00:t:100,
// SIB 00:index:base; VEX.X̄ and B̄ carry the high bits of index and base
// (base must not be 5 or 13, index not 4 or 12).
#define TILELOADD(t, base, index) \
	BYTE $0xC4 \
	BYTE $(0xE2^((index>>3)<<6)^((base>>3)<<5)) \
	BYTE $0x7B \
	BYTE $0x4B \
	BYTE $(((t&7)<<3)|4) \
	BYTE $(((index&7)<<3)|(base&7))

// TILESTORED (base)(index*1), tmm(t): VEX.128.F3.0F38.W0 4B, as TILELOADD.
#define TILESTORED(t, base, index) \
	BYTE $0xC4 \
	BYTE $(0xE2^((index>>3)<<6)^((base>>3)<<5)) \
	BYTE $0x7A \
	BYTE $0x4B \
	BYTE $(((t&7)<<3)|4) \
	BYTE $(((index&7)<<3)|(base&7))

