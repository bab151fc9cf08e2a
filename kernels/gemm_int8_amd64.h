// Macros shared by the integer GEMM kernels (gemm_int8_amd64.s,
// gemm_int8_u8_amd64.s).

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
