// Macros shared by the integer GEMM kernels (gemm_int8_amd64.s,
// gemm_int8_u8_amd64.s, gemm_vnni_amd64.s).

// End of a 32-value block for one row: c += float(isum)·(dx·fd), with the
// row's integer sums in ya, yb, its activation scale dx at dxa and the
// sixteen column factors fd at 0(R13), c in memory at lo, hi. The integer
// sums are exact, so this is the only rounding.
#define EPISCALE(ya, yb, dxa, lo, hi) \
	VCVTDQ2PS ya, ya \
	VCVTDQ2PS yb, yb \
	VBROADCASTSS dxa, Y14 \
	VMULPS 0(R13), Y14, Y12 \
	VMULPS 32(R13), Y14, Y13 \
	VFMADD213PS lo, Y12, ya \
	VFMADD213PS hi, Y13, yb

#define EPI(ya, yb, dxa, lo, hi) \
	EPISCALE(ya, yb, dxa, lo, hi) \
	VMOVUPS ya, lo \
	VMOVUPS yb, hi

// EPIMIN adds the offset term of the types with a per-block minimum:
// c += fm·(dx·Σq), the row's dx·Σq at dsa, the column offsets fm at
// 64(R13).
#define EPIMIN(ya, yb, dxa, dsa, lo, hi) \
	EPISCALE(ya, yb, dxa, lo, hi) \
	VBROADCASTSS dsa, Y14 \
	VFMADD231PS 64(R13), Y14, ya \
	VFMADD231PS 96(R13), Y14, yb \
	VMOVUPS ya, lo \
	VMOVUPS yb, hi

// KERNARGS loads what every group of a kernel starts from: the activations
// (R9), the scales (R10), c (DX), the tile (DI) and the group count (R8),
// the arguments before c and t being at the same offsets in every kernel.
#define KERNARGS(c, t) \
	MOVQ a+16(FP), R9 \
	MOVQ ds+32(FP), R10 \
	MOVQ c, DX \
	MOVQ t, DI \
	MOVQ ng+0(FP), R8

// KERNNEXT moves the activations (bytes) and the scales on to the next row
// group: every byte kernel takes a, as, ds, dss at the same offsets.
#define KERNNEXT \
	ADDQ as+24(FP), R9 \
	MOVQ dss+40(FP), CX \
	LEAQ (R10)(CX*4), R10

// The kernels of bytes with the columns' start sums (kernelU8x3x16 and
// those of gemm_vnni_amd64.s) take (ng, nb, a, as, ds, dss, b, aux, f, t,
// c, ldc, flags) at the same offsets (kernelVNNIUnit6x32, without a tile,
// loads its own arguments).
#define KERNAUXARGS KERNARGS(c+80(FP), t+72(FP))

// KERNAUXGROUP starts a group: its activations (AX) and scales (R11), the
// panel (BX), its starts and multipliers (R12) and factors (R13), the
// block count in CX.
#define KERNAUXGROUP \
	MOVQ R9, AX \
	MOVQ R10, R11 \
	MOVQ b+48(FP), BX \
	MOVQ aux+56(FP), R12 \
	MOVQ f+64(FP), R13 \
	MOVQ nb+8(FP), CX

// The 3x16 kernels (kernelU8x3x16, kernelAVXVNNI3x16) keep row r's two
// int32 sums in Y(2r), Y(2r+1), their scratch tile at DI (row r at 64r),
// the rows' (dx, dx·Σq) of the block at R11 (row r at 8r) and c's first
// row at DX.

// TILE3ZERO clears the scratch tile.
#define TILE3ZERO \
	VXORPS Y0, Y0, Y0 \
	VMOVUPS Y0, 0(DI) \
	VMOVUPS Y0, 32(DI) \
	VMOVUPS Y0, 64(DI) \
	VMOVUPS Y0, 96(DI) \
	VMOVUPS Y0, 128(DI) \
	VMOVUPS Y0, 160(DI)

// EPI3 and EPIMIN3 are EPI and EPIMIN for the three rows.
#define EPI3 \
	EPI(Y0, Y1, 0(R11), 0(DI), 32(DI)) \
	EPI(Y2, Y3, 8(R11), 64(DI), 96(DI)) \
	EPI(Y4, Y5, 16(R11), 128(DI), 160(DI))

#define EPIMIN3 \
	EPIMIN(Y0, Y1, 0(R11), 4(R11), 0(DI), 32(DI)) \
	EPIMIN(Y2, Y3, 8(R11), 12(R11), 64(DI), 96(DI)) \
	EPIMIN(Y4, Y5, 16(R11), 20(R11), 128(DI), 160(DI))

// TILE3LOAD loads the tile into Y0..Y5 and points SI at ldc in bytes.
#define TILE3LOAD(ldc) \
	VMOVUPS 0(DI), Y0 \
	VMOVUPS 32(DI), Y1 \
	VMOVUPS 64(DI), Y2 \
	VMOVUPS 96(DI), Y3 \
	VMOVUPS 128(DI), Y4 \
	VMOVUPS 160(DI), Y5 \
	MOVQ ldc, SI \
	SHLQ $2, SI

// TILE3ADD adds c to the loaded tile.
#define TILE3ADD \
	VADDPS 0(DX), Y0, Y0 \
	VADDPS 32(DX), Y1, Y1 \
	VADDPS 0(DX)(SI*1), Y2, Y2 \
	VADDPS 32(DX)(SI*1), Y3, Y3 \
	VADDPS 0(DX)(SI*2), Y4, Y4 \
	VADDPS 32(DX)(SI*2), Y5, Y5

// TILE3WRITE writes the tile to c.
#define TILE3WRITE \
	VMOVUPS Y0, 0(DX) \
	VMOVUPS Y1, 32(DX) \
	VMOVUPS Y2, 0(DX)(SI*1) \
	VMOVUPS Y3, 32(DX)(SI*1) \
	VMOVUPS Y4, 0(DX)(SI*2) \
	VMOVUPS Y5, 32(DX)(SI*2)

// The 6x16 kernels (kernelI16x6x16, kernelS8x6x16) keep row r's two
// accumulators in Y(2r), Y(2r+1), their scratch tile at DI (row r at
// 64r), the rows' (dx, dx·Σq) of the block at R11 (row r at 8r) and c's
// first row at DX.

// Both 6x16 kernels take (ng, nb, a, as, ds, dss, b, f, t, c, ldc, flags).
#define KERN6ARGS KERNARGS(c+72(FP), t+64(FP))

// KERN6GROUP starts a group: its activations and scales, the panel and
// its factors, the block count in CX, a cleared tile.
#define KERN6GROUP \
	MOVQ R9, AX \
	MOVQ R10, R11 \
	MOVQ b+48(FP), BX \
	MOVQ f+56(FP), R13 \
	MOVQ nb+8(FP), CX \
	TILE6ZERO

// TILE6ZERO clears the scratch tile.
#define TILE6ZERO \
	VXORPS Y0, Y0, Y0 \
	VMOVUPS Y0, 0(DI) \
	VMOVUPS Y0, 32(DI) \
	VMOVUPS Y0, 64(DI) \
	VMOVUPS Y0, 96(DI) \
	VMOVUPS Y0, 128(DI) \
	VMOVUPS Y0, 160(DI) \
	VMOVUPS Y0, 192(DI) \
	VMOVUPS Y0, 224(DI) \
	VMOVUPS Y0, 256(DI) \
	VMOVUPS Y0, 288(DI) \
	VMOVUPS Y0, 320(DI) \
	VMOVUPS Y0, 352(DI)

// EPI6 and EPIMIN6 are EPI and EPIMIN for the six rows.
#define EPI6 \
	EPI(Y0, Y1, 0(R11), 0(DI), 32(DI)) \
	EPI(Y2, Y3, 8(R11), 64(DI), 96(DI)) \
	EPI(Y4, Y5, 16(R11), 128(DI), 160(DI)) \
	EPI(Y6, Y7, 24(R11), 192(DI), 224(DI)) \
	EPI(Y8, Y9, 32(R11), 256(DI), 288(DI)) \
	EPI(Y10, Y11, 40(R11), 320(DI), 352(DI))

#define EPIMIN6 \
	EPIMIN(Y0, Y1, 0(R11), 4(R11), 0(DI), 32(DI)) \
	EPIMIN(Y2, Y3, 8(R11), 12(R11), 64(DI), 96(DI)) \
	EPIMIN(Y4, Y5, 16(R11), 20(R11), 128(DI), 160(DI)) \
	EPIMIN(Y6, Y7, 24(R11), 28(R11), 192(DI), 224(DI)) \
	EPIMIN(Y8, Y9, 32(R11), 36(R11), 256(DI), 288(DI)) \
	EPIMIN(Y10, Y11, 40(R11), 44(R11), 320(DI), 352(DI))

// TILE6LOAD loads the tile into Y0..Y11 (reloaded: with no blocks they
// were never set) and points SI at ldc in bytes, R12 at c's fourth row.
#define TILE6LOAD(ldc) \
	VMOVUPS 0(DI), Y0 \
	VMOVUPS 32(DI), Y1 \
	VMOVUPS 64(DI), Y2 \
	VMOVUPS 96(DI), Y3 \
	VMOVUPS 128(DI), Y4 \
	VMOVUPS 160(DI), Y5 \
	VMOVUPS 192(DI), Y6 \
	VMOVUPS 224(DI), Y7 \
	VMOVUPS 256(DI), Y8 \
	VMOVUPS 288(DI), Y9 \
	VMOVUPS 320(DI), Y10 \
	VMOVUPS 352(DI), Y11 \
	MOVQ ldc, SI \
	SHLQ $2, SI \
	LEAQ (DX)(SI*2), R12 \
	ADDQ SI, R12

// TILE6ADD adds c to the loaded tile.
#define TILE6ADD \
	TILE3ADD \
	VADDPS 0(R12), Y6, Y6 \
	VADDPS 32(R12), Y7, Y7 \
	VADDPS 0(R12)(SI*1), Y8, Y8 \
	VADDPS 32(R12)(SI*1), Y9, Y9 \
	VADDPS 0(R12)(SI*2), Y10, Y10 \
	VADDPS 32(R12)(SI*2), Y11, Y11

// TILE6WRITE writes the tile to c and moves DX six rows on.
#define TILE6WRITE \
	TILE3WRITE \
	VMOVUPS Y6, 0(R12) \
	VMOVUPS Y7, 32(R12) \
	VMOVUPS Y8, 0(R12)(SI*1) \
	VMOVUPS Y9, 32(R12)(SI*1) \
	VMOVUPS Y10, 0(R12)(SI*2) \
	VMOVUPS Y11, 32(R12)(SI*2) \
	LEAQ (R12)(SI*2), DX \
	ADDQ SI, DX

// The quantizers of a row's activations to bytes q+128 (quantizeU8AVX2,
// quantizeU8StridedAVX2), a block of 32 floats at SI at a time.
// QUANTTABLE defines their constants as the file's table t: the magnitude
// mask, 127, 1, the bytes 0x80, then the VPERMD order that undoes the lane
// interleaving of the packs.
#define QUANTTABLE(t) \
	DATA t<>+0(SB)/4, $0x7fffffff \
	DATA t<>+4(SB)/4, $127.0 \
	DATA t<>+8(SB)/4, $1.0 \
	DATA t<>+12(SB)/4, $0x80808080 \
	DATA t<>+16(SB)/4, $0 \
	DATA t<>+20(SB)/4, $4 \
	DATA t<>+24(SB)/4, $1 \
	DATA t<>+28(SB)/4, $5 \
	DATA t<>+32(SB)/4, $2 \
	DATA t<>+36(SB)/4, $6 \
	DATA t<>+40(SB)/4, $3 \
	DATA t<>+44(SB)/4, $7 \
	GLOBL t<>(SB), RODATA|NOPTR, $48

// QUANTCONSTS loads them from t: the magnitude mask in Y15, the bytes 0x80
// in Y14, the order in Y13, 127 in X12, 1 in X11, zero in Y10.
#define QUANTCONSTS(t) \
	VPBROADCASTD t<>+0(SB), Y15 \
	VPBROADCASTD t<>+12(SB), Y14 \
	VMOVDQU t<>+16(SB), Y13 \
	VMOVSS t<>+4(SB), X12 \
	VMOVSS t<>+8(SB), X11 \
	VPXOR Y10, Y10, Y10

// QUANT32 quantizes the block at SI: its largest magnitude as integer bits
// in AX (so NaN > Inf, as in the Go code), jumping to tiny when it is
// below 2⁻¹⁰⁰ and to special when it is not finite; otherwise d = amax/127
// in X8 and the 32 bytes q+128 in Y0, in order (q = round-half-even(x·(1/d))
// by VCVTPS2DQ, packed with saturation, the lanes put back by VPERMD).
#define QUANT32 \
	VMOVUPS 0(SI), Y0 \
	VMOVUPS 32(SI), Y1 \
	VMOVUPS 64(SI), Y2 \
	VMOVUPS 96(SI), Y3 \
	VPAND Y15, Y0, Y4 \
	VPAND Y15, Y1, Y5 \
	VPAND Y15, Y2, Y6 \
	VPAND Y15, Y3, Y7 \
	VPMAXUD Y5, Y4, Y4 \
	VPMAXUD Y7, Y6, Y6 \
	VPMAXUD Y6, Y4, Y4 \
	VEXTRACTI128 $1, Y4, X5 \
	VPMAXUD X5, X4, X4 \
	VPSHUFD $0x4E, X4, X5 \
	VPMAXUD X5, X4, X4 \
	VPSHUFD $0xB1, X4, X5 \
	VPMAXUD X5, X4, X4 \
	VMOVD X4, AX \
	CMPL AX, $0x0d800000 \
	JB   tiny \
	CMPL AX, $0x7f800000 \
	JAE  special \
	VDIVSS X12, X4, X8 \
	VDIVSS X8, X11, X9 \
	VBROADCASTSS X9, Y9 \
	VMULPS Y9, Y0, Y0 \
	VMULPS Y9, Y1, Y1 \
	VMULPS Y9, Y2, Y2 \
	VMULPS Y9, Y3, Y3 \
	VCVTPS2DQ Y0, Y0 \
	VCVTPS2DQ Y1, Y1 \
	VCVTPS2DQ Y2, Y2 \
	VCVTPS2DQ Y3, Y3 \
	VPACKSSDW Y1, Y0, Y0 \
	VPACKSSDW Y3, Y2, Y2 \
	VPACKSSWB Y2, Y0, Y0 \
	VPERMD Y0, Y13, Y0 \
	VPXOR Y14, Y0, Y0

// QUANTSUMS stores (d, d·Σq) of the block at DX: Σ(q+128) by VPSADBW of Y0
// against zero (four 64-bit partial sums), less 32·128.
#define QUANTSUMS \
	VPSADBW Y10, Y0, Y1 \
	VEXTRACTI128 $1, Y1, X2 \
	VPADDQ X2, X1, X1 \
	VPSHUFD $0x4E, X1, X2 \
	VPADDQ X2, X1, X1 \
	VMOVQ X1, AX \
	SUBQ $4096, AX \
	VCVTSI2SSQ AX, X9, X9 \
	VMULSS X8, X9, X9 \
	VMOVSS X8, 0(DX) \
	VMOVSS X9, 4(DX)

// HALFSUMS stores the sums of the two halves of the 32 bytes in Y(v) as
// int32 at off(DX) and off+4(DX): VPSADBW against zero (Y15) gives four
// 64-bit sums of eight; the first two and the last two make the halves'.
// Y10, Y11, Y12 are clobbered.
#define HALFSUMS(v, off) \
	VPSADBW Y15, v, Y10 \
	VEXTRACTI128 $1, Y10, X11 \
	VPSHUFD $0x4E, X10, X12 \
	VPADDQ X12, X10, X10 \
	VPSHUFD $0x4E, X11, X12 \
	VPADDQ X12, X11, X11 \
	VMOVD X10, off(DX) \
	VMOVD X11, off+4(DX)
