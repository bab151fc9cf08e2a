#include "textflag.h"
#include "amx_amd64.h"
#include "tile8x32_amd64.h" // ZERO16: the accumulator rows Z0..Z15 zeroed

// The amx tier's int8 kernel (gemm_amxi8.go): per 32-value block one
// TDPBSSD per weight plane into a 16×16 int32 tile, the sums stored and
// scaled into sixteen zmm accumulator rows by the avx2-int8 tier's
// epilogue, the next block's tiles loaded and multiplied before the
// current block's sums are stored. The Go assembler has no AMX mnemonics:
// the instructions are bytes (amx_amd64.h, and TDPBSSD below).
//
// Tiles (palette 1, amxI8Config): tmm0, tmm1 the sums of blocks of even
// and odd index (plane H, or the only plane), tmm2, tmm3 those of plane L,
// tmm4, tmm5 the activations (16 rows of 32 bytes), tmm6, tmm7 the weights
// (8 rows of 64 bytes): of even and odd blocks with one plane, planes H
// and L with two.
//
// Registers: DI the scratch (configuration at 0, the sums of even blocks
// at 64, of odd ones at 2112, each plane H then L), AX the activations
// and BX the record of the block whose tiles are being loaded, R13 the
// record and R11 the (dx, dx·Σq) pairs of the block in the epilogue, SI
// its stored sums, CX the blocks left, R8 the groups left, R9 = 32 and
// R10 = 64 the tile strides, R12 the record size, R14 the group's
// activations; Z0..Z15 the accumulator rows, Z16 fd, Z17 fm, Z18..Z31
// temporaries.

// TDPBSSD tmm(c), tmm(a), tmm(b): VEX.128.F2.0F38.W0 5E 11:c:a,
// vvvv = ~b: c[m][n] += Σ a[m][4i+j]·b[i][4n+j], both signed bytes.
#define TDPBSSD(c, a, b) \
	BYTE $0xC4 \
	BYTE $0xE2 \
	BYTE $(((15-b)<<3)|3) \
	BYTE $0x5E \
	BYTE $(0xC0|(c<<3)|a)

// The epilogue of one row r of a block, accumulator zr, temporaries zt,
// zc: the avx2-int8 tier's c = fma(float(S), dx·fd, c), then with
// minimums c = fma(fm, dx·Σq, c). EPI1 reads the sums S of one plane at
// SI, EPI2 forms S = 64·S_H + S_L from the planes at SI and SI+1024
// (exact: |S| < 2³¹).
#define EPI1(zr, r, zt, zc) \
	VCVTDQ2PS (r*64)(SI), zt \
	VMULPS.BCST (r*8)(R11), Z16, zc \
	VFMADD231PS zt, zc, zr

#define EPI1M(zr, r, zt, zc) \
	EPI1(zr, r, zt, zc) \
	VFMADD231PS.BCST (r*8+4)(R11), Z17, zr

#define EPI2(zr, r, zt, zc) \
	VPSLLD $6, (r*64)(SI), zt \
	VPADDD (1024+r*64)(SI), zt, zt \
	VCVTDQ2PS zt, zt \
	VMULPS.BCST (r*8)(R11), Z16, zc \
	VFMADD231PS zt, zc, zr

#define EPI2M(zr, r, zt, zc) \
	EPI2(zr, r, zt, zc) \
	VFMADD231PS.BCST (r*8+4)(R11), Z17, zr

// EPIROWS runs epilogue E on the sixteen rows.
#define EPIROWS(E) \
	E(Z0, 0, Z18, Z19) \
	E(Z1, 1, Z20, Z21) \
	E(Z2, 2, Z22, Z23) \
	E(Z3, 3, Z24, Z25) \
	E(Z4, 4, Z26, Z27) \
	E(Z5, 5, Z28, Z29) \
	E(Z6, 6, Z30, Z31) \
	E(Z7, 7, Z18, Z19) \
	E(Z8, 8, Z20, Z21) \
	E(Z9, 9, Z22, Z23) \
	E(Z10, 10, Z24, Z25) \
	E(Z11, 11, Z26, Z27) \
	E(Z12, 12, Z28, Z29) \
	E(Z13, 13, Z30, Z31) \
	E(Z14, 14, Z18, Z19) \
	E(Z15, 15, Z20, Z21)


// The rows out to c at SI, DX bytes apart: written, or (ADD) added to
// (c + the tile, the avx2-int8 tier's c += t).
#define PUT(zr) \
	VMOVUPS zr, (SI) \
	ADDQ DX, SI

#define ADDPUT(zr) \
	VADDPS (SI), zr, zr \
	VMOVUPS zr, (SI) \
	ADDQ DX, SI

#define ROWS(P) \
	P(Z0) \
	P(Z1) \
	P(Z2) \
	P(Z3) \
	P(Z4) \
	P(Z5) \
	P(Z6) \
	P(Z7) \
	P(Z8) \
	P(Z9) \
	P(Z10) \
	P(Z11) \
	P(Z12) \
	P(Z13) \
	P(Z14) \
	P(Z15)


// The steps of the block loops. Each block's record at BX holds the
// weight tile (with two planes H, then L at +512), fd and, with minimums,
// fm after them.
//
// ONEMUL(s, a, w) loads the block's activations at AX into tmm(a) and its
// weights at BX into tmm(w), and puts their product into tmm(s).
#define ONEMUL(s, a, w) \
	TILELOADD(a, 0, 9) \
	TILELOADD(w, 3, 10) \
	TILEZERO(s) \
	TDPBSSD(s, a, w)

// TWOMUL(h, l, a) loads the activations into tmm(a) and the planes into
// tmm6 (H) and tmm7 (L), and puts their products into tmm(h) and tmm(l).
#define TWOMUL(h, l, a) \
	TILELOADD(a, 0, 9) \
	TILELOADD(6, 3, 10) \
	LEAQ 512(BX), DX \
	TILELOADD(7, 2, 10) \
	TILEZERO(h) \
	TILEZERO(l) \
	TDPBSSD(h, a, 6) \
	TDPBSSD(l, a, 7)

// ONESUMS(t, off) stores the sums of tmm(t) at off(DI) and points SI at
// them; TWOSUMS(h, l, off) those of tmm(h) there and of tmm(l) 1024 bytes
// on.
#define ONESUMS(t, off) \
	LEAQ off(DI), SI \
	TILESTORED(t, 6, 10)

#define TWOSUMS(h, l, off) \
	ONESUMS(h, off) \
	LEAQ (off+1024)(DI), DX \
	TILESTORED(l, 2, 10)

// The epilogue of the block at R13 with its sums at SI, per variant: fd
// (and fm) from the record, then the sixteen rows.
#define EPIONE \
	VMOVUPS 512(R13), Z16 \
	EPIROWS(EPI1)

#define EPIONEMIN \
	VMOVUPS 512(R13), Z16 \
	VMOVUPS 576(R13), Z17 \
	EPIROWS(EPI1M)

#define EPITWO \
	VMOVUPS 1024(R13), Z16 \
	EPIROWS(EPI2)

#define EPITWOMIN \
	VMOVUPS 1024(R13), Z16 \
	VMOVUPS 1088(R13), Z17 \
	EPIROWS(EPI2M)

// NEXTBLOCK moves the (dx, dx·Σq) pairs (R11) on to the next block and
// counts the block done (the callers move R13); it ends with the DECQ,
// so a JNZ may follow.
#define NEXTBLOCK \
	ADDQ $128, R11 \
	DECQ CX

// ONESTEP(s, a, w, t, off, E): one step of the one-plane loop: the next
// block's tiles loaded and multiplied into tmm(s) (ONEMUL(s, a, w)), then
// the current block's sums (tmm(t)) stored at off(DI) and its epilogue E.
// TWOSTEP(h, l, a, sh, sl, off, E) is that of the two-plane loop.
#define ONESTEP(s, a, w, t, off, E) \
	ADDQ $512, AX \
	ADDQ R12, BX \
	ONEMUL(s, a, w) \
	ONESUMS(t, off) \
	E \
	MOVQ BX, R13 \
	NEXTBLOCK

#define TWOSTEP(h, l, a, sh, sl, off, E) \
	ADDQ $512, AX \
	ADDQ R12, BX \
	TWOMUL(h, l, a) \
	TWOSUMS(sh, sl, off) \
	E \
	MOVQ BX, R13 \
	NEXTBLOCK

// func kernelAMXI8(np, ng, nb int, a *int8, as int, ds *float32, dss int, b *byte, rec, pstride, flags int, t *byte, c *float32, ldc int)
//
// amxI8Kernel's arguments as pointers (as and pstride in bytes, dss in
// floats), nb ≥ 1, np ≥ 1, ng ≥ 1; t is the 64-byte aligned scratch with
// the configuration written (amxI8Config). Per panel, per group: the
// block loop of the variant the flags select, then the rows out to c.
TEXT ·kernelAMXI8(SB), NOSPLIT, $16-112
	MOVQ t+88(FP), DI
	MOVQ DI, R10
	LDTILECFG_R10
	MOVQ $32, R9
	MOVQ $64, R10
	MOVQ rec+64(FP), R12

panel:
	MOVQ a+24(FP), R14
	MOVQ ds+40(FP), AX
	MOVQ AX, dsg-8(SP)
	MOVQ c+96(FP), AX
	MOVQ AX, cg-16(SP)
	MOVQ ng+8(FP), R8

group:
	ZERO16
	MOVQ R14, AX
	MOVQ dsg-8(SP), R11
	MOVQ b+56(FP), BX
	MOVQ BX, R13
	MOVQ nb+16(FP), CX
	MOVQ flags+80(FP), DX
	TESTQ $4, DX
	JNZ  two
	TESTQ $2, DX
	JNZ  onemin
	JMP  one

two:
	TESTQ $2, DX
	JNZ  twomin
	JMP  twoplain

// Each loop runs two blocks a turn, their sums in alternate tiles and
// scratch halves (even blocks at 64(DI), odd ones at 2112(DI)).
one:
	ONEMUL(0, 4, 6)
oneloop:
	CMPQ CX, $1
	JEQ onelast0
	ONESTEP(1, 5, 7, 0, 64, EPIONE)
	CMPQ CX, $1
	JEQ onelast1
	ONESTEP(0, 4, 6, 1, 2112, EPIONE)
	JMP oneloop
onelast0:
	ONESUMS(0, 64)
	EPIONE
	JMP flush
onelast1:
	ONESUMS(1, 2112)
	EPIONE
	JMP flush

onemin:
	ONEMUL(0, 4, 6)
oneminloop:
	CMPQ CX, $1
	JEQ oneminlast0
	ONESTEP(1, 5, 7, 0, 64, EPIONEMIN)
	CMPQ CX, $1
	JEQ oneminlast1
	ONESTEP(0, 4, 6, 1, 2112, EPIONEMIN)
	JMP oneminloop
oneminlast0:
	ONESUMS(0, 64)
	EPIONEMIN
	JMP flush
oneminlast1:
	ONESUMS(1, 2112)
	EPIONEMIN
	JMP flush

twoplain:
	TWOMUL(0, 2, 4)
twoplainloop:
	CMPQ CX, $1
	JEQ twoplainlast0
	TWOSTEP(1, 3, 5, 0, 2, 64, EPITWO)
	CMPQ CX, $1
	JEQ twoplainlast1
	TWOSTEP(0, 2, 4, 1, 3, 2112, EPITWO)
	JMP twoplainloop
twoplainlast0:
	TWOSUMS(0, 2, 64)
	EPITWO
	JMP flush
twoplainlast1:
	TWOSUMS(1, 3, 2112)
	EPITWO
	JMP flush

twomin:
	TWOMUL(0, 2, 4)
twominloop:
	CMPQ CX, $1
	JEQ twominlast0
	TWOSTEP(1, 3, 5, 0, 2, 64, EPITWOMIN)
	CMPQ CX, $1
	JEQ twominlast1
	TWOSTEP(0, 2, 4, 1, 3, 2112, EPITWOMIN)
	JMP twominloop
twominlast0:
	TWOSUMS(0, 2, 64)
	EPITWOMIN
	JMP flush
twominlast1:
	TWOSUMS(1, 3, 2112)
	EPITWOMIN
	JMP flush

flush:
	MOVQ cg-16(SP), SI
	MOVQ ldc+104(FP), DX
	SHLQ $2, DX
	TESTQ $1, flags+80(FP)
	JNZ  flushadd
	ROWS(PUT)
	JMP  nextgroup

flushadd:
	ROWS(ADDPUT)

nextgroup:
	MOVQ SI, cg-16(SP)
	ADDQ as+32(FP), R14
	MOVQ dss+48(FP), DX
	SHLQ $2, DX
	ADDQ DX, dsg-8(SP)
	DECQ R8
	JNZ  group

	MOVQ pstride+72(FP), DX
	ADDQ DX, b+56(FP)
	ADDQ $64, c+96(FP)
	DECQ np+0(FP)
	JNZ  panel

	TILERELEASE
	VZEROUPPER
	RET

// func amxI8Epilogue(nb int, sums *int32, ds *float32, b *byte, rec, flags int, c *float32, ldc int)
//
// The kernel's epilogue and output for one group and panel, with the
// blocks' sums read from sums (per block the planes' 16×16 int32, H then
// L) instead of the tiles: the same macros, so the tests run the
// epilogue on any AVX-512 CPU while a Go model of the tiles computes the
// sums (amxtile_test.go).
TEXT ·amxI8Epilogue(SB), NOSPLIT, $0-64
	MOVQ sums+8(FP), SI
	MOVQ ds+16(FP), R11
	MOVQ b+24(FP), R13
	MOVQ rec+32(FP), R12
	MOVQ nb+0(FP), CX
	ZERO16
	MOVQ flags+40(FP), DX
	TESTQ $4, DX
	JNZ  etwo
	TESTQ $2, DX
	JNZ  eonemin
	JMP  eone

etwo:
	TESTQ $2, DX
	JNZ  etwomin
	JMP  etwoplain

eone:
	EPIONE
	ADDQ $1024, SI
	ADDQ R12, R13
	NEXTBLOCK
	JNZ eone
	JMP eflush

eonemin:
	EPIONEMIN
	ADDQ $1024, SI
	ADDQ R12, R13
	NEXTBLOCK
	JNZ eonemin
	JMP eflush

etwoplain:
	EPITWO
	ADDQ $2048, SI
	ADDQ R12, R13
	NEXTBLOCK
	JNZ etwoplain
	JMP eflush

etwomin:
	EPITWOMIN
	ADDQ $2048, SI
	ADDQ R12, R13
	NEXTBLOCK
	JNZ etwomin
	JMP eflush

eflush:
	MOVQ c+48(FP), SI
	MOVQ ldc+56(FP), DX
	SHLQ $2, DX
	TESTQ $1, flags+40(FP)
	JNZ  eflushadd
	ROWS(PUT)
	VZEROUPPER
	RET

eflushadd:
	ROWS(ADDPUT)
	VZEROUPPER
	RET
