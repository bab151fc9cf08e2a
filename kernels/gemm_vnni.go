package kernels

import (
	"encoding/binary"
	"unsafe"

	"github.com/vembed/vembed/gguf"
)

// The integer GEMM of the VNNI tiers (avx512-vnni, avx-vnni): the integer
// GEMM of the avx2-int8 tier (gemm_int8.go, gemm_int8_u8.go) with its
// inner products done by VPDPBUSD, which multiplies four unsigned bytes by
// four signed bytes and adds the four products into an int32 lane in one
// instruction, without the int16 intermediate sums of VPMADDUBSW (so no
// saturation and no limit on the weights' range).
//
// Operands are those of the u8 path: activations as unsigned bytes q+128,
// broadcast four at a time, weights as signed bytes in panels of vnniNR
// columns by groups of four k (the u8 path's decoders and panel layout),
// and per column and block a starting sum −128·Σ m·w that removes the
// +128. Since VPDPBUSD does not saturate, every type the avx2-int8 tier
// multiplies in integers goes through this one layout, the int16 path's
// types too: Q8_0 and IQ4_NL as bytes, IQ4_XS as its codebook values with
// the sub-block scale as a multiplier. Q2_K's minimums take the same
// float32 product first as on the avx2-int8 tier (gemm_int8_q2k.go).
//
// Multipliers m (Q6_K, Q3_K, Q2_K: one per 16 values; IQ4_XS: one per
// 32) take a second set of accumulators: each half block is summed alone,
// and the block sum is start + m₀·A + m₁·B (VPMULLD). Types without them
// (unit decoders) sum a whole block from the start value.
//
// Every block sum is the same exact integer the avx2-int8 tier computes,
// and the float epilogue is the same operations in the same order (per
// 32-value block c += float(S)·(dx·fd), then fm·(dx·Σq); per gemmKC slice
// the tile written or added to c), so the results are bit-identical to
// that tier's: TestVNNIMatchesAVX2Int8 checks exactly that.
//
// Geometry belongs to the tier: a tile is rows activation rows by span
// panels of vnniNR columns (avx512-vnni: 6×32, one zmm of sixteen int32
// lanes per panel; avx-vnni: 6×16 in ymm halves). A worker decodes its
// column block into whole tiles (panels rounded up to span, the extra
// columns zero).

const (
	// vnniNR is the width of a weight panel: sixteen columns, the int32
	// lanes of a zmm register (two ymm). The panels are the u8 path's
	// (pack8U8AVX2 writes them), which has the same width.
	vnniNR = 16
	// vnniPanel is the byte size of a panel's block: four k per column
	// in eight groups.
	vnniPanel = i8Block * vnniNR
	// vnniPanelF is the float count of a panel's block: fd, then fm.
	vnniPanelF = 2 * vnniNR
	// vnniAux is the int32 count per block of a panel's auxiliary data:
	// sixteen starting sums, the multipliers of k 0..15, those of k
	// 16..31, and sixteen unused, so that the next panel's entries are
	// nb·256 bytes on (an address the kernels form with a scaled index).
	vnniAux = 4 * vnniNR
	// vnniFlagMul tells a kernel that the block has multipliers.
	vnniFlagMul = 8
)

var vnniPanels = bytePanels{vnniNR, vnniPanel, vnniAux, vnniPanelF}

// vnniKernel computes, for ng row groups of rows rows, the rows×(span·
// vnniNR) tiles c (+)= a·bᵀ over nb blocks: group g's activations (q+128,
// interleaved by groups of four, group p of row r at a[(p*rows+r)*4]) at
// a[g*as], its (dx, dx·Σq) pairs at ds[g*dss] (row r of block b at
// ds[(b*rows+r)*2]), its output at c[g*rows*ldc]. Panel j of the tile has
// its weights at b[j*nb*vnniPanel], its aux (vnniAux int32 per block) at
// aux[j*nb*vnniAux] and its factors (vnniPanelF per block) at
// f[j*nb*vnniPanelF]. t is a scratch tile of rows×span·vnniNR floats. flags:
// i8FlagAcc, i8FlagMin, vnniFlagMul.
type vnniKernel func(ng, nb int, a []uint8, as int, ds []float32, dss int, b []int8, aux []int32, f []float32, t []float32, c []float32, ldc int, flags int)

// vnniDecoders are the decoders of the VNNI tiers: the u8 path's, and the
// int16 path's types as signed bytes.
var vnniDecoders = func() map[gguf.Type]u8Decoder {
	m := map[gguf.Type]u8Decoder{
		gguf.TypeQ8_0:   {32, 34, false, false, true, false, vnniRowQ8_0},
		gguf.TypeIQ4_NL: {32, 18, false, false, true, false, vnniRowIQ4NL},
		gguf.TypeIQ4_XS: {256, 136, false, false, false, false, vnniRowIQ4XS},
	}
	for t, d := range u8Decoders {
		m[t] = d
	}
	return m
}()

func vnniRowQ8_0(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
	for b := 0; b < n/32; b++ {
		blk := src[34*b : 34*b+34]
		fd[b*fs] = f16(blk)
		o := bytesOf(q[32*b : 32*b+32])
		copy(o, blk[2:34])
		for h := 0; h < 2; h++ {
			var s int32
			for i := 16 * h; i < 16*h+16; i += 8 {
				// Signed bytes summed as unsigned ones with the top bit
				// flipped (+128 each).
				s += int32(byteSum16(binary.LittleEndian.Uint64(o[i:])^0x8080808080808080)) - 8*128
			}
			sum[2*b+h] = s
		}
	}
}

// iq4Half writes the codebook values of 16 bytes of IQ4 nibbles (low
// nibbles first, then high) and the sums of both halves.
func iq4Half(o []int8, qs []byte, sum []int32) {
	var s0, s1 int32
	for j, c := range qs[:16] {
		lo, hi := iq4nlValues[c&15], iq4nlValues[c>>4]
		o[j], o[j+16] = lo, hi
		s0 += int32(lo)
		s1 += int32(hi)
	}
	sum[0], sum[1] = s0, s1
}

func vnniRowIQ4NL(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
	for b := 0; b < n/32; b++ {
		blk := src[18*b : 18*b+18]
		fd[b*fs] = f16(blk)
		iq4Half(q[32*b:32*b+32], blk[2:18], sum[2*b:])
	}
}

// vnniRowIQ4XS keeps the codebook value and the sub-block scale ls−32 as
// the multiplier of both halves: ls·value is the int16 path's value.
func vnniRowIQ4XS(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
	for b := 0; b < n/256; b++ {
		blk := src[136*b : 136*b+136]
		iq4xsFactors(blk, b, fd, fs, mul)
		for ib := 0; ib < 8; ib++ {
			s := 8*b + ib
			iq4Half(q[32*s:32*s+32], blk[8+16*ib:24+16*ib], sum[2*s:])
		}
	}
}

// iq4xsFactors writes the factor d and the multipliers ls−32 of the
// eight blocks of IQ4_XS super-block b (its bytes blk): fd[s*fs] and
// mul[2s], mul[2s+1] of block s.
func iq4xsFactors(blk []byte, b int, fd []float32, fs int, mul []int16) {
	d := f16(blk)
	sh := uint16(blk[2]) | uint16(blk[3])<<8
	for ib := 0; ib < 8; ib++ {
		s := 8*b + ib
		fd[s*fs] = d
		ls := (int16(blk[4+ib/2]>>(4*(ib%2))&15) | int16(sh>>(2*ib)&3)<<4) - 32
		mul[2*s], mul[2*s+1] = ls, ls
	}
}

// vnniAuxCol writes column col's entries of nb blocks of a panel's aux:
// the start −128·Σ m·q and, unless unit (the kernel then reads none), the
// multipliers of the two halves.
func vnniAuxCol(mul []int16, sum []int32, nb int, aux []int32, col int, unit bool) {
	if nb <= 0 {
		return
	}
	sum, aux = sum[:2*nb], aux[col:(nb-1)*vnniAux+2*vnniNR+col+1]
	if unit {
		for b := 0; b < nb; b++ {
			aux[b*vnniAux] = -128 * (sum[2*b] + sum[2*b+1])
		}
		return
	}
	mul = mul[:2*nb]
	for b := 0; b < nb; b++ {
		m0, m1 := int32(mul[2*b]), int32(mul[2*b+1])
		aux[b*vnniAux] = -128 * (m0*sum[2*b] + m1*sum[2*b+1])
		aux[b*vnniAux+vnniNR], aux[b*vnniAux+2*vnniNR] = m0, m1
	}
}

// vnniTier is what a tier plugs into the VNNI GEMM.
type vnniTier struct {
	// kern multiplies the blocks of unit decoders, rows rows by span
	// panels per tile; kernMul, rowsMul and spanMul those with multipliers.
	kern, kernMul vnniKernel
	rows, span    int
	rowsMul       int
	spanMul       int
	pack8         func(src []int8, kc int, dst []int8)
	quant         func(x []float32, q []uint8, ds []float32)
	// chunk, when set, is the number of a row's bytes the activations of a
	// group interleave by (chunk p of row r at (p·rows+r)·chunk): eight
	// for SMMLA, whose operands are two rows of eight. Unset, four.
	chunk int
	// signed is set when the kernels flip the activations back to the
	// signed codes q and multiply signed by signed (SDOT, SMMLA): the
	// block sums Σ m·w·q need no start, which they do not read.
	signed bool
	// quantStrided, optional, is quant writing the groups of q (of
	// chunkBytes) stride bytes apart: straight into the interleaved layout.
	quantStrided func(x []float32, q []uint8, stride int, ds []float32)
	// panel, optional by type, decodes a whole panel of a k slice
	// straight into the kernel's layout: weights, factors fd and fm (fm
	// for types with a minimum), and starts (and multipliers, for types
	// with them) of nb blocks of nrows ≤ vnniNR rows rowBytes apart from
	// src; the other rows' factors fd are zero (their columns are never
	// written out).
	panel map[gguf.Type]func(src []byte, rowBytes, nrows, nb int, pan []int8, fs []float32, aux []int32)
	// dec, optional by type, replace vnniDecoders' rows with faster
	// equals.
	dec map[gguf.Type]func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32)
}

// gemmVNNI is MatMul through the VNNI kernels; w's type must be in
// vnniDecoders and w.Cols > 0.
func gemmVNNI(dst, x []float32, m int, w *Matrix, bias []float32, g *vnniTier) {
	dec := vnniDecoders[w.Type]
	if row := g.dec[w.Type]; row != nil {
		dec.row = row
	}
	n, k := w.Rows, w.Cols
	if m <= 0 || n <= 0 {
		return
	}
	rows, span, kern, flagMul := g.rows, g.span, g.kern, 0
	if !dec.unit {
		rows, span, kern, flagMul = g.rowsMul, g.spanMul, g.kernMul, vnniFlagMul
	}
	width := span * vnniNR
	nbRow := k / i8Block
	groups := (m + rows - 1) / rows
	xap, dsp := byteScratch.get(groups*rows*k), getScratch(groups*rows*2*nbRow)
	defer byteScratch.put(xap)
	defer putScratch(dsp)
	xa, ds := *xap, *dsp
	chunk := g.chunkBytes()
	switch {
	case g.quantStrided != nil:
		quantizeInterleaved(x, m, k, rows, chunk, xa, ds, g.quantStrided)
	case chunk == 8:
		quantizeGroups(x, m, k, rows, ds, g.quant, func(gi, r int, q []uint8) {
			xg := uint64s(xa[gi*rows*k : (gi+1)*rows*k])
			for p, v := range uint64s(q[:k]) {
				xg[p*rows+r] = v
			}
		})
	default:
		quantizeGroups(x, m, k, rows, ds, g.quant, func(gi, r int, q []uint8) {
			xg := uint32s(xa[gi*rows*k : (gi+1)*rows*k])
			for p, v := range uint32s(q[:k]) {
				xg[p*rows+r] = v
			}
		})
	}

	// The per-16 minimums (halfMins): as in gemmU8, written to dst first.
	preset := false
	if mins, ok := halfMins[w.Type]; ok {
		halfMinProduct(dst, m, w, bias, mins, xa, ds, rows, chunk)
		bias, preset = nil, true
	}

	pk := w.vnniPacked(g)
	mc, mBlocks, nBlocks := int8Blocking(m, n, rows)
	flags0 := flagMul
	if dec.hasMin {
		flags0 |= i8FlagMin
	}
	const kb = gemmKC / i8Block

	parallelFor(mBlocks*nBlocks, func(item int) {
		m0, m1, n0, n1, _ := gemmTile(item, nBlocks, mc, m, n, vnniNR)
		panels := roundUp((n1-n0+vnniNR-1)/vnniNR, span)

		sc := getByteTile(vnniPanels, panels, rows*width)
		defer sc.put()
		pan, rowBuf, aux, mul, sum := sc.pan, sc.rowBuf, sc.aux, sc.mul, sc.sum
		fac, tile, edge := sc.fac, sc.tile, sc.edge

		for k0 := 0; k0 < k; k0 += gemmKC {
			kc := min(gemmKC, k-k0)
			nb := kc / i8Block
			pan, fac, aux := pan, fac, aux
			if pk != nil {
				// The panels were decoded at load (vnniPacked): the
				// weights are read in place, the factors and starts
				// copied into the kernel's layout.
				pan = pk.panels(k0, n0/vnniNR, panels)
				pk.side(k0, n0/vnniNR, panels, fac, aux)
				if k0+gemmKC < k {
					pk.prefetch(k0+gemmKC, n0/vnniNR, panels)
				}
			} else {
				for p := 0; p < panels; p++ {
					pp := pan[p*nb*vnniPanel : (p+1)*nb*vnniPanel]
					fs := fac[p*nb*vnniPanelF : (p+1)*nb*vnniPanelF]
					as := aux[p*nb*vnniAux : (p+1)*nb*vnniAux]
					g.decodePanel(w, dec, n0+p*vnniNR, n1, k0, pp, fs, as, rowBuf, mul, sum)
				}
			}
			flags, acc := flags0, k0 > 0 || preset
			if acc {
				flags |= i8FlagAcc
			}
			for p := 0; p < panels; p += span {
				j0 := p * vnniNR
				nr := min(width, n1-n0-j0)
				pp := pan[p*nb*vnniPanel:]
				fs := fac[p*nb*vnniPanelF:]
				as8 := aux[p*nb*vnniAux:]
				as, dss := rows*k, rows*2*nbRow
				vnniTileRows(dst[n0+j0:], n, m0, m1, rows, width, nr, acc, edge, func(groups, i0 int, out []float32, ldo int) {
					a := xa[i0*k+k0*rows:]
					dsa := ds[(i0*nbRow+k0/i8Block*rows)*2:]
					kern(groups, nb, a, as, dsa, dss, pp, as8, fs, tile, out, ldo, flags)
				})
			}
		}
		addBias(dst, n, bias, m0, m1, n0, n1)
	})
	pk.keepAlive()
}

// decodePanel decodes the panel of vnniNR weight rows from row0 (rows
// from n1 on are zeros) over the k slice from k0 into the kernel's
// layout: weights pp, factors fs, aux as (nb blocks each), by the tier's
// panel decoder for w's type or else row by row (rowBuf, mul and sum are
// scratch of vnniNR·gemmKC, 2·gemmKC/i8Block and the same).
func (g *vnniTier) decodePanel(w *Matrix, dec u8Decoder, row0, n1, k0 int, pp []int8, fs []float32, as []int32, rowBuf []int8, mul []int16, sum []int32) {
	k, rowBytes := w.Cols, w.RowBytes()
	kc := min(gemmKC, k-k0)
	nb := kc / i8Block
	koff := k0 / dec.blockSize * dec.typeSize
	if pd := g.panel[w.Type]; pd != nil {
		nr := min(vnniNR, n1-row0)
		if nr <= 0 {
			clear(pp)
			clear(fs)
			clear(as)
			return
		}
		for r := 0; r < nr; r++ {
			prefetchSlice(w.Data[(row0+r)*rowBytes+koff:], k-k0, kc, dec.blockSize, dec.typeSize)
		}
		pd(w.Data[row0*rowBytes+koff:], rowBytes, nr, nb, pp, fs, as)
		return
	}
	for r := 0; r < vnniNR; r++ {
		rb := rowBuf[r*kc : (r+1)*kc]
		if row := row0 + r; row < n1 {
			src := w.Data[row*rowBytes+koff:]
			prefetchSlice(src, k-k0, kc, dec.blockSize, dec.typeSize)
			dec.row(src, kc, rb, fs[r:], fs[vnniNR+r:], vnniPanelF, mul, sum)
		} else {
			clear(rb)
			clear(mul)
			clear(sum)
			for b := 0; b < nb; b++ {
				fs[b*vnniPanelF+r], fs[b*vnniPanelF+vnniNR+r] = 0, 0
			}
		}
		vnniAuxCol(mul, sum, nb, as, r, dec.unit)
	}
	g.pack8(rowBuf, kc, pp)
	g.pack8(rowBuf[8*kc:], kc, pp[8*g.chunkBytes():])
}

// chunkBytes is g.chunk, or four when unset.
func (g *vnniTier) chunkBytes() int {
	if g.chunk == 0 {
		return 4
	}
	return g.chunk
}

// quantizeInterleaved is quantizeGroups for the interleaved layout with a
// quantizer that writes it directly: the m rows of x (k values each) in
// groups of rows rows into xa (group g at xa[g*rows*k:], row r's group p
// of chunk bytes at (p*rows+r)*chunk), the (d, d·Σq) pairs into ds as
// [group][block][row][2]; rows past m are zeros (the bytes 128).
func quantizeInterleaved(x []float32, m, k, rows, chunk int, xa []uint8, ds []float32, quant func(x []float32, q []uint8, stride int, ds []float32)) {
	nb := k / i8Block
	parallelFor((m+rows-1)/rows, func(gi int) {
		dp := getScratch(2 * nb)
		defer putScratch(dp)
		dr := *dp
		xg := xa[gi*rows*k : (gi+1)*rows*k]
		dg := ds[gi*rows*2*nb : (gi+1)*rows*2*nb]
		for r := 0; r < rows; r++ {
			if i := gi*rows + r; i < m {
				quant(x[i*k:(i+1)*k], xg[r*chunk:], rows*chunk, dr)
			} else {
				for p := 0; p < k/chunk; p++ {
					o := (p*rows + r) * chunk
					for j := range xg[o : o+chunk] {
						xg[o+j] = 128
					}
				}
				clear(dr)
			}
			for b := 0; b < nb; b++ {
				o := (b*rows + r) * 2
				dg[o], dg[o+1] = dr[2*b], dr[2*b+1]
			}
		}
	})
}

// uint32s views bytes (a multiple of four) as uint32 values of the same
// memory.
func uint32s(b []byte) []uint32 {
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// uint64s views bytes (a multiple of eight) as uint64 values of the same
// memory.
func uint64s(b []byte) []uint64 {
	if len(b) < 8 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), len(b)/8)
}

// vnniTileRows is tileRows for tiles width columns wide: the full groups
// of rows in one call when the tile is full width, the rest through the
// edge scratch tile (rows×width floats).
func vnniTileRows(c []float32, ldc, m0, m1, rows, width, nr int, acc bool, edge []float32, call func(groups, i0 int, out []float32, ldo int)) {
	full := (m1 - m0) / rows
	if nr < width {
		full = 0
	}
	call(full, m0, c[m0*ldc:], ldc)
	for i0 := m0 + full*rows; i0 < m1; i0 += rows {
		mr := min(rows, m1-i0)
		ci := c[i0*ldc:]
		if acc {
			for r := 0; r < mr; r++ {
				copy(edge[r*width:r*width+nr], ci[r*ldc:])
			}
		}
		call(1, i0, edge, width)
		for r := 0; r < mr; r++ {
			copy(ci[r*ldc:r*ldc+nr], edge[r*width:])
		}
	}
}

// vnniKernelGo returns the portable vnniKernel for tiles of rows×span
// panels: the same integer sums (start plus m-weighted half sums of
// (q+128)·w) and epilogue as the assembly.
func vnniKernelGo(rows, span int) vnniKernel {
	width := span * vnniNR
	return func(ng, nb int, a []uint8, as int, ds []float32, dss int, b []int8, aux []int32, f []float32, t []float32, c []float32, ldc int, flags int) {
		for g := 0; g < ng; g++ {
			xa, dg, cg := a[g*as:], ds[g*dss:], c[g*rows*ldc:]
			t := t[:rows*width]
			clear(t)
			for bb := 0; bb < nb; bb++ {
				xb := xa[bb*i8Block*rows : (bb+1)*i8Block*rows]
				for r := 0; r < rows; r++ {
					dx, dxs := dg[(bb*rows+r)*2], dg[(bb*rows+r)*2+1]
					for col := 0; col < width; col++ {
						j, cc := col/vnniNR, col%vnniNR
						pb := b[(j*nb+bb)*vnniPanel:]
						ab := aux[(j*nb+bb)*vnniAux:]
						fb := f[(j*nb+bb)*vnniPanelF:]
						var half [2]int32
						for kk := 0; kk < i8Block; kk++ {
							xi := (kk/4*rows+r)*4 + kk%4
							half[kk/16] += int32(xb[xi]) * int32(pb[(kk/4*vnniNR+cc)*4+kk%4])
						}
						s := ab[cc] + half[0] + half[1]
						if flags&vnniFlagMul != 0 {
							s = ab[cc] + ab[vnniNR+cc]*half[0] + ab[2*vnniNR+cc]*half[1]
						}
						v := fma32(float32(s), dx*fb[cc], t[r*width+col])
						if flags&i8FlagMin != 0 {
							v = fma32(fb[vnniNR+cc], dxs, v)
						}
						t[r*width+col] = v
					}
				}
			}
			for r := 0; r < rows; r++ {
				cr, tr := cg[r*ldc:r*ldc+width], t[r*width:(r+1)*width]
				if flags&i8FlagAcc != 0 {
					for j, v := range tr {
						cr[j] += v
					}
				} else {
					copy(cr, tr)
				}
			}
		}
	}
}

// vnniAsm wraps an assembly vnniKernel of rows×span tiles with the checks
// that keep every access inside the slices; with no blocks the portable
// kernel writes the (zero) tiles.
func vnniAsm(rows, span int, kern func(ng int, nb int, a *uint8, as int, ds *float32, dss int, b *int8, aux *int32, f *float32, t *float32, c *float32, ldc int, flags int)) vnniKernel {
	width := span * vnniNR
	goKern := vnniKernelGo(rows, span)
	return func(ng, nb int, a []uint8, as int, ds []float32, dss int, b []int8, aux []int32, f []float32, t []float32, c []float32, ldc int, flags int) {
		if ng <= 0 {
			return
		}
		if nb <= 0 {
			goKern(ng, 0, a, as, ds, dss, b, aux, f, t, c, ldc, flags)
			return
		}
		_ = a[(ng-1)*as+nb*i8Block*rows-1]
		_ = ds[(ng-1)*dss+nb*rows*2-1]
		_ = b[span*nb*vnniPanel-1]
		_ = aux[span*nb*vnniAux-1]
		_ = f[span*nb*vnniPanelF-1]
		_ = t[rows*width-1]
		_ = c[((ng-1)*rows+rows-1)*ldc+width-1]
		kern(ng, nb, &a[0], as, &ds[0], dss, &b[0], &aux[0], &f[0], &t[0], &c[0], ldc, flags)
	}
}

// vnniGo is the portable form of the avx512-vnni tier's GEMM (the 6×32
// geometry), the tests' reference for the assembly.
var vnniGo = &vnniTier{
	kern: vnniKernelGo(6, 2), kernMul: vnniKernelGo(6, 2),
	rows: 6, span: 2, rowsMul: 6, spanMul: 2,
	pack8: pack8U8Go, quant: quantizeRowU8,
}

// int8Tiers are the tiers that multiply quantized weights in integers.
var int8Tiers = map[Tier]bool{TierAVX2Int8: true, TierAVX512VNNI: true, TierAVXVNNI: true, TierAMX: true,
	TierNEONDotProd: true, TierI8MM: true, TierNEONBF16: true}
