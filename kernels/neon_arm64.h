// Encodings of the AArch64 SIMD instructions the Go assembler has no
// mnemonic for (vector floating point, conversions, shifts by immediate),
// as WORD directives. Operands are register numbers 0..31 in the ARM
// order, destination first: FMUL4S(3, 2, 1) is fmul v3.4s, v2.4s, v1.4s.
// The objdump tests decode every kernel that uses them.

#define ENC3(op, d, n, m) WORD $((op) | ((m)<<16) | ((n)<<5) | (d))
#define ENC2(op, d, n) WORD $((op) | ((n)<<5) | (d))

// Single precision, four lanes.
#define FADD4S(d, n, m) ENC3(0x4e20d400, d, n, m)
#define FSUB4S(d, n, m) ENC3(0x4ea0d400, d, n, m)
#define FMUL4S(d, n, m) ENC3(0x6e20dc00, d, n, m)
#define FDIV4S(d, n, m) ENC3(0x6e20fc00, d, n, m)
#define FMAX4S(d, n, m) ENC3(0x4e20f400, d, n, m)
#define FMIN4S(d, n, m) ENC3(0x4ea0f400, d, n, m)
#define FMLA4S(d, n, m) ENC3(0x4e20cc00, d, n, m)
#define FMLS4S(d, n, m) ENC3(0x4ea0cc00, d, n, m)
#define FCMGE4S(d, n, m) ENC3(0x6e20e400, d, n, m)
#define FADDP4S(d, n, m) ENC3(0x6e20d400, d, n, m)
#define FNEG4S(d, n) ENC2(0x6ea0f800, d, n)
#define FRINTN4S(d, n) ENC2(0x4e218800, d, n)
#define FCVTZS4S(d, n) ENC2(0x4ea1b800, d, n)
// fmaxv sd, vn.4s
#define FMAXV4S(d, n) ENC2(0x6e30f800, d, n)

// Integer lanes.
#define ADD4S(d, n, m) ENC3(0x4ea08400, d, n, m)
#define AND16B(d, n, m) ENC3(0x4e201c00, d, n, m)
#define MOV16B(d, n) ENC3(0x4ea01c00, d, n, n)
#define SHL4S_23(d, n) ENC2(0x4f375400, d, n)
#define EXT16B_8(d, n, m) ENC3(0x6e004000, d, n, m)

// Double precision, two lanes, and the conversions between the widths:
// FCVTL/FCVTL2 widen the low/high two singles to doubles, FCVTN/FCVTN2
// narrow two doubles into the low/high half (rounding to nearest even).
#define FADD2D(d, n, m) ENC3(0x4e60d400, d, n, m)
#define FSUB2D(d, n, m) ENC3(0x4ee0d400, d, n, m)
#define FMUL2D(d, n, m) ENC3(0x6e60dc00, d, n, m)
#define FMLA2D(d, n, m) ENC3(0x4e60cc00, d, n, m)
#define FCVTL2D(d, n) ENC2(0x0e617800, d, n)
#define FCVTL22D(d, n) ENC2(0x4e617800, d, n)
#define FCVTN2S(d, n) ENC2(0x0e616800, d, n)
#define FCVTN24S(d, n) ENC2(0x4e616800, d, n)
// fcvtl vd.4s, vn.4h and fcvtl2 vd.4s, vn.8h: binary16 to float32, exactly.
#define FCVTL4S(d, n) ENC2(0x0e217800, d, n)
#define FCVTL24S(d, n) ENC2(0x4e217800, d, n)

// The products' instructions. By element: lane i of vm (ENCE places the
// index's two bits).
#define ENCE(op, d, n, m, i) WORD $((op) | (((i)&1)<<21) | ((m)<<16) | (((i)>>1)<<11) | ((n)<<5) | (d))
// sdot vd.4s, vn.16b, vm.4b[i]: four 4-byte dot products (FEAT_DotProd).
#define SDOTE(d, n, m, i) ENCE(0x4f80e000, d, n, m, i)
// smmla vd.4s, vn.16b, vm.16b: the 2x2 int32 tile of two rows of eight
// (vn) by two columns of eight (vm) (FEAT_I8MM).
#define SMMLA(d, n, m) ENC3(0x4e80a400, d, n, m)
// fmul vd.4s, vn.4s, vm.s[i] and fmla vd.4s, vn.4s, vm.s[i].
#define FMULE(d, n, m, i) ENCE(0x4f809000, d, n, m, i)
#define FMLAE(d, n, m, i) ENCE(0x4f801000, d, n, m, i)
// scvtf vd.4s, vn.4s: int32 to float32, rounding to nearest even.
#define SCVTF4S(d, n) ENC2(0x4e21d800, d, n)
// mul vd.4s, vn.4s, vm.4s and mla vd.4s, vn.4s, vm.4s (int32 lanes).
#define MUL4S(d, n, m) ENC3(0x4ea09c00, d, n, m)
#define MLA4S(d, n, m) ENC3(0x4ea09400, d, n, m)
// bfdot vd.4s, vn.8h, vm.8h: per lane, the two bfloat16 products of a
// pair added to the float32 sum (FEAT_BF16).
#define BFDOT(d, n, m) ENC3(0x6e40fc00, d, n, m)
// sdot vd.4s, vn.16b, vm.16b (vector form) and bfmmla vd.4s, vn.8h, vm.8h
// (the 2x2 float32 tile of two rows by two columns of four bfloat16).
#define SDOT(d, n, m) ENC3(0x4e809400, d, n, m)
#define BFMMLA(d, n, m) ENC3(0x6e40ec00, d, n, m)
// umaxv sd, vn.4s and addv sd, vn.4s: the largest (unsigned) and the sum
// of the four lanes.
#define UMAXV4S(d, n) ENC2(0x6eb0a800, d, n)
#define ADDV4S(d, n) ENC2(0x4eb1b800, d, n)
// fcvtns vd.4s, vn.4s: float32 to int32, rounding to nearest even.
#define FCVTNS4S(d, n) ENC2(0x4e21a800, d, n)
// sxtl/sxtl2: sign-extend the low/high half's lanes to twice their width
// (.8b to .8h, .4h to .4s).
#define SXTL8H(d, n) ENC2(0x0f08a400, d, n)
#define SXTL28H(d, n) ENC2(0x4f08a400, d, n)
#define SXTL4S(d, n) ENC2(0x0f10a400, d, n)
#define SXTL24S(d, n) ENC2(0x4f10a400, d, n)
