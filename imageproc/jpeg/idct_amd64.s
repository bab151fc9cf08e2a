#include "textflag.h"

DATA idctc4433<>+0(SB)/8, $0x0000115100001151
DATA idctc4433<>+8(SB)/8, $0x0000115100001151
DATA idctc4433<>+16(SB)/8, $0x0000115100001151
DATA idctc4433<>+24(SB)/8, $0x0000115100001151
GLOBL idctc4433<>(SB), RODATA|NOPTR, $32
DATA idctc15137<>+0(SB)/8, $0x00003b2100003b21
DATA idctc15137<>+8(SB)/8, $0x00003b2100003b21
DATA idctc15137<>+16(SB)/8, $0x00003b2100003b21
DATA idctc15137<>+24(SB)/8, $0x00003b2100003b21
GLOBL idctc15137<>(SB), RODATA|NOPTR, $32
DATA idctc6270<>+0(SB)/8, $0x0000187e0000187e
DATA idctc6270<>+8(SB)/8, $0x0000187e0000187e
DATA idctc6270<>+16(SB)/8, $0x0000187e0000187e
DATA idctc6270<>+24(SB)/8, $0x0000187e0000187e
GLOBL idctc6270<>(SB), RODATA|NOPTR, $32
DATA idctc9633<>+0(SB)/8, $0x000025a1000025a1
DATA idctc9633<>+8(SB)/8, $0x000025a1000025a1
DATA idctc9633<>+16(SB)/8, $0x000025a1000025a1
DATA idctc9633<>+24(SB)/8, $0x000025a1000025a1
GLOBL idctc9633<>(SB), RODATA|NOPTR, $32
DATA idctcm7373<>+0(SB)/8, $0xffffe333ffffe333
DATA idctcm7373<>+8(SB)/8, $0xffffe333ffffe333
DATA idctcm7373<>+16(SB)/8, $0xffffe333ffffe333
DATA idctcm7373<>+24(SB)/8, $0xffffe333ffffe333
GLOBL idctcm7373<>(SB), RODATA|NOPTR, $32
DATA idctcm20995<>+0(SB)/8, $0xffffadfdffffadfd
DATA idctcm20995<>+8(SB)/8, $0xffffadfdffffadfd
DATA idctcm20995<>+16(SB)/8, $0xffffadfdffffadfd
DATA idctcm20995<>+24(SB)/8, $0xffffadfdffffadfd
GLOBL idctcm20995<>(SB), RODATA|NOPTR, $32
DATA idctcm16069<>+0(SB)/8, $0xffffc13bffffc13b
DATA idctcm16069<>+8(SB)/8, $0xffffc13bffffc13b
DATA idctcm16069<>+16(SB)/8, $0xffffc13bffffc13b
DATA idctcm16069<>+24(SB)/8, $0xffffc13bffffc13b
GLOBL idctcm16069<>(SB), RODATA|NOPTR, $32
DATA idctcm3196<>+0(SB)/8, $0xfffff384fffff384
DATA idctcm3196<>+8(SB)/8, $0xfffff384fffff384
DATA idctcm3196<>+16(SB)/8, $0xfffff384fffff384
DATA idctcm3196<>+24(SB)/8, $0xfffff384fffff384
GLOBL idctcm3196<>(SB), RODATA|NOPTR, $32
DATA idctc2446<>+0(SB)/8, $0x0000098e0000098e
DATA idctc2446<>+8(SB)/8, $0x0000098e0000098e
DATA idctc2446<>+16(SB)/8, $0x0000098e0000098e
DATA idctc2446<>+24(SB)/8, $0x0000098e0000098e
GLOBL idctc2446<>(SB), RODATA|NOPTR, $32
DATA idctc16819<>+0(SB)/8, $0x000041b3000041b3
DATA idctc16819<>+8(SB)/8, $0x000041b3000041b3
DATA idctc16819<>+16(SB)/8, $0x000041b3000041b3
DATA idctc16819<>+24(SB)/8, $0x000041b3000041b3
GLOBL idctc16819<>(SB), RODATA|NOPTR, $32
DATA idctc25172<>+0(SB)/8, $0x0000625400006254
DATA idctc25172<>+8(SB)/8, $0x0000625400006254
DATA idctc25172<>+16(SB)/8, $0x0000625400006254
DATA idctc25172<>+24(SB)/8, $0x0000625400006254
GLOBL idctc25172<>(SB), RODATA|NOPTR, $32
DATA idctc12299<>+0(SB)/8, $0x0000300b0000300b
DATA idctc12299<>+8(SB)/8, $0x0000300b0000300b
DATA idctc12299<>+16(SB)/8, $0x0000300b0000300b
DATA idctc12299<>+24(SB)/8, $0x0000300b0000300b
GLOBL idctc12299<>(SB), RODATA|NOPTR, $32
DATA idctrnd1<>+0(SB)/8, $0x0000040000000400
DATA idctrnd1<>+8(SB)/8, $0x0000040000000400
DATA idctrnd1<>+16(SB)/8, $0x0000040000000400
DATA idctrnd1<>+24(SB)/8, $0x0000040000000400
GLOBL idctrnd1<>(SB), RODATA|NOPTR, $32
DATA idctrnd2<>+0(SB)/8, $0x0002000000020000
DATA idctrnd2<>+8(SB)/8, $0x0002000000020000
DATA idctrnd2<>+16(SB)/8, $0x0002000000020000
DATA idctrnd2<>+24(SB)/8, $0x0002000000020000
GLOBL idctrnd2<>(SB), RODATA|NOPTR, $32
DATA idctc128<>+0(SB)/8, $0x0000008000000080
DATA idctc128<>+8(SB)/8, $0x0000008000000080
DATA idctc128<>+16(SB)/8, $0x0000008000000080
DATA idctc128<>+24(SB)/8, $0x0000008000000080
GLOBL idctc128<>(SB), RODATA|NOPTR, $32

// idctPermRows gathers the low and high halves of each packed row.
DATA idctPermRows<>+0(SB)/8, $0x0000000400000000
DATA idctPermRows<>+8(SB)/8, $0x0000000500000001
DATA idctPermRows<>+16(SB)/8, $0x0000000600000002
DATA idctPermRows<>+24(SB)/8, $0x0000000700000003
GLOBL idctPermRows<>(SB), RODATA|NOPTR, $32

// IDCT_PASS is one 1-D pass of idctIslow on eight vectors i0..i7 (input k
// in ik, one column or row per lane), using the free registers a, b, z3,
// z4, z5; rnd is the rounding constant and sh the descaling shift. Outputs
// 0..7 end in z3, z5, b, a, i0, i1, i6, z4.

#define IDCT_PASS(i0, i1, i2, i3, i4, i5, i6, i7, a, b, z3, z4, z5, rnd, sh) \
	VPADDD  i6, i2, a; \
	VPMULLD idctc4433<>(SB), a, a; \
	VPMULLD idctc15137<>(SB), i6, b; \
	VPSUBD  b, a, b; \
	VPMULLD idctc6270<>(SB), i2, i2; \
	VPADDD  a, i2, i2; \
	VPADDD  i4, i0, a; \
	VPSLLD  $13, a, a; \
	VPSUBD  i4, i0, i4; \
	VPSLLD  $13, i4, i4; \
	VPADDD  rnd, a, a; \
	VPADDD  rnd, i4, i4; \
	VPADDD  i2, a, i0; \
	VPSUBD  i2, a, i2; \
	VPADDD  b, i4, a; \
	VPSUBD  b, i4, i4; \
	VPADDD  i1, i7, i6; \
	VPADDD  i3, i5, b; \
	VPADDD  i3, i7, z3; \
	VPADDD  i1, i5, z4; \
	VPADDD  z4, z3, z5; \
	VPMULLD idctc9633<>(SB), z5, z5; \
	VPMULLD idctcm7373<>(SB), i6, i6; \
	VPMULLD idctcm20995<>(SB), b, b; \
	VPMULLD idctcm16069<>(SB), z3, z3; \
	VPADDD  z5, z3, z3; \
	VPMULLD idctcm3196<>(SB), z4, z4; \
	VPADDD  z5, z4, z4; \
	VPMULLD idctc2446<>(SB), i7, i7; \
	VPADDD  i6, i7, i7; \
	VPADDD  z3, i7, i7; \
	VPMULLD idctc16819<>(SB), i5, i5; \
	VPADDD  b, i5, i5; \
	VPADDD  z4, i5, i5; \
	VPMULLD idctc25172<>(SB), i3, i3; \
	VPADDD  b, i3, i3; \
	VPADDD  z3, i3, i3; \
	VPMULLD idctc12299<>(SB), i1, i1; \
	VPADDD  i6, i1, i1; \
	VPADDD  z4, i1, i1; \
	VPADDD  i1, i0, z3; \
	VPSUBD  i1, i0, z4; \
	VPADDD  i3, a, z5; \
	VPSUBD  i3, a, i6; \
	VPADDD  i5, i4, b; \
	VPSUBD  i5, i4, i1; \
	VPADDD  i7, i2, a; \
	VPSUBD  i7, i2, i0; \
	VPSRAD  sh, z3, z3; \
	VPSRAD  sh, z5, z5; \
	VPSRAD  sh, b, b; \
	VPSRAD  sh, a, a; \
	VPSRAD  sh, i0, i0; \
	VPSRAD  sh, i1, i1; \
	VPSRAD  sh, i6, i6; \
	VPSRAD  sh, z4, z4

// GUARD jumps to fallback unless every lane of r0..r7 is below 2^14 in
// magnitude; acc and t are scratch.
#define GUARD(r0, r1, r2, r3, r4, r5, r6, r7, acc, t) \
	VPABSD  r0, acc; \
	VPABSD  r1, t; \
	VPMAXUD t, acc, acc; \
	VPABSD  r2, t; \
	VPMAXUD t, acc, acc; \
	VPABSD  r3, t; \
	VPMAXUD t, acc, acc; \
	VPABSD  r4, t; \
	VPMAXUD t, acc, acc; \
	VPABSD  r5, t; \
	VPMAXUD t, acc, acc; \
	VPABSD  r6, t; \
	VPMAXUD t, acc, acc; \
	VPABSD  r7, t; \
	VPMAXUD t, acc, acc; \
	VPSRLD  $14, acc, acc; \
	VPTEST  acc, acc; \
	JNZ     fallback

// TRANSPOSE transposes the 8x8 matrix of 32-bit elements in r0..r7 (row k
// in rk) into v0..v7 through t0..t7 and u0..u7; the four sets are distinct
// except that v may reuse t and u may reuse r.
#define TRANSPOSE(r0, r1, r2, r3, r4, r5, r6, r7, t0, t1, t2, t3, t4, t5, t6, t7, u0, u1, u2, u3, u4, u5, u6, u7, v0, v1, v2, v3, v4, v5, v6, v7) \
	VPUNPCKLDQ r1, r0, t0; \
	VPUNPCKHDQ r1, r0, t1; \
	VPUNPCKLDQ r3, r2, t2; \
	VPUNPCKHDQ r3, r2, t3; \
	VPUNPCKLDQ r5, r4, t4; \
	VPUNPCKHDQ r5, r4, t5; \
	VPUNPCKLDQ r7, r6, t6; \
	VPUNPCKHDQ r7, r6, t7; \
	VPUNPCKLQDQ t2, t0, u0; \
	VPUNPCKHQDQ t2, t0, u1; \
	VPUNPCKLQDQ t3, t1, u2; \
	VPUNPCKHQDQ t3, t1, u3; \
	VPUNPCKLQDQ t6, t4, u4; \
	VPUNPCKHQDQ t6, t4, u5; \
	VPUNPCKLQDQ t7, t5, u6; \
	VPUNPCKHQDQ t7, t5, u7; \
	VPERM2I128 $0x20, u4, u0, v0; \
	VPERM2I128 $0x31, u4, u0, v4; \
	VPERM2I128 $0x20, u5, u1, v1; \
	VPERM2I128 $0x31, u5, u1, v5; \
	VPERM2I128 $0x20, u6, u2, v2; \
	VPERM2I128 $0x31, u6, u2, v6; \
	VPERM2I128 $0x20, u7, u3, v3; \
	VPERM2I128 $0x31, u7, u3, v7

// CLAMP takes a descaled output modulo 1024, sign-extends it from 10 bits
// as the range-limit table does, and adds 128 (the packs then clamp).
#define CLAMP(r) \
	VPSLLD  $22, r, r; \
	VPSRAD  $22, r, r; \
	VPADDD  idctc128<>(SB), r, r

// STORE4 packs rows a..d (8 int32 each; ax is a as X) to bytes with
// saturation and stores them at DI, DI+DX, DI+2*DX and DI+CX; xx is
// scratch and perm holds idctPermRows.
#define STORE4(a, b, c, d, ax, xx, perm) \
	VPACKSSDW b, a, a; \
	VPACKSSDW d, c, c; \
	VPACKUSWB c, a, a; \
	VPERMD    a, perm, a; \
	VMOVQ     ax, (DI); \
	VPEXTRQ   $1, ax, (DI)(DX*1); \
	VEXTRACTI128 $1, a, xx; \
	VMOVQ     xx, (DI)(DX*2); \
	VPEXTRQ   $1, xx, (DI)(CX*1)

// func idctIslowAVX2(in *[64]int16, q *[64]int32, dst *uint8, stride int) bool
// idctIslow with the eight columns (then rows) of a block in the lanes of
// 32-bit vectors. The products and sums equal the portable 64-bit ones
// while no dequantized coefficient and no workspace value reaches 2^14 in
// magnitude (the largest intermediate is then below 112356*2^14 + 2^17 <
// 2^31); otherwise it returns false before storing anything and the caller
// uses the portable code.
TEXT ·idctIslowAVX2(SB), NOSPLIT, $0-33
	MOVQ in+0(FP), SI
	MOVQ q+8(FP), BX
	MOVQ dst+16(FP), DI
	MOVQ stride+24(FP), DX
	VPMOVSXWD 0(SI), Y0
	VPMULLD   0(BX), Y0, Y0
	VPMOVSXWD 16(SI), Y1
	VPMULLD   32(BX), Y1, Y1
	VPMOVSXWD 32(SI), Y2
	VPMULLD   64(BX), Y2, Y2
	VPMOVSXWD 48(SI), Y3
	VPMULLD   96(BX), Y3, Y3
	VPMOVSXWD 64(SI), Y4
	VPMULLD   128(BX), Y4, Y4
	VPMOVSXWD 80(SI), Y5
	VPMULLD   160(BX), Y5, Y5
	VPMOVSXWD 96(SI), Y6
	VPMULLD   192(BX), Y6, Y6
	VPMOVSXWD 112(SI), Y7
	VPMULLD   224(BX), Y7, Y7
	GUARD(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9)
	IDCT_PASS(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, idctrnd1<>(SB), $11)
	GUARD(Y10, Y12, Y9, Y8, Y0, Y1, Y6, Y11, Y2, Y3)
	TRANSPOSE(Y10, Y12, Y9, Y8, Y0, Y1, Y6, Y11, Y2, Y3, Y4, Y5, Y7, Y13, Y14, Y15, Y10, Y12, Y9, Y8, Y0, Y1, Y6, Y11, Y2, Y3, Y4, Y5, Y7, Y13, Y14, Y15)
	IDCT_PASS(Y2, Y3, Y4, Y5, Y7, Y13, Y14, Y15, Y0, Y1, Y6, Y8, Y9, idctrnd2<>(SB), $18)
	CLAMP(Y6)
	CLAMP(Y9)
	CLAMP(Y1)
	CLAMP(Y0)
	CLAMP(Y2)
	CLAMP(Y3)
	CLAMP(Y14)
	CLAMP(Y8)
	TRANSPOSE(Y6, Y9, Y1, Y0, Y2, Y3, Y14, Y8, Y4, Y5, Y7, Y10, Y11, Y12, Y13, Y15, Y6, Y9, Y1, Y0, Y2, Y3, Y14, Y8, Y4, Y5, Y7, Y10, Y11, Y12, Y13, Y15)
	VMOVDQU idctPermRows<>(SB), Y6
	LEAQ    (DX)(DX*2), CX
	STORE4(Y4, Y5, Y7, Y10, X4, X9, Y6)
	LEAQ    (DI)(DX*4), DI
	STORE4(Y11, Y12, Y13, Y15, X11, X9, Y6)
	VZEROUPPER
	MOVB $1, ret+32(FP)
	RET

fallback:
	VZEROUPPER
	MOVB $0, ret+32(FP)
	RET

