package kernels

import (
	"math"

	"github.com/vembed/vembed/gguf"
)

// The blocked GEMM behind MatMul: dst[m×N] = x[m×K]·Wᵀ with W stored as N
// rows of K values in a GGUF type.
//
// W is consumed in panels of gemmNR rows (output columns) by gemmKC values,
// decoded to float32 and packed k-major ([k][gemmNR]) into a per-worker
// buffer. A block of gemmNC columns (several panels) is decoded once per
// gemmKC slice and reused by every row of x in the worker's row block, so
// the decoding cost is divided by the number of rows. x is read in place:
// the microkernel broadcasts from gemmMR rows at a time, which streams each
// row sequentially and needs no packed copy of the activations.
//
// Work items are (row block, column block) pairs handed to the worker pool;
// each item owns its output tile, so no two workers write the same values.
// Rows are split only when there are too few column blocks to keep every
// worker busy, since each row block decodes its weights again. Without the
// split, the activations of one k slice stream through the cache once per
// column block, which the hardware prefetchers keep ahead of the FMAs.

const (
	gemmMR = 6   // rows per call of the generic and avx2 microkernels and the int8 layouts
	gemmNR = 16  // their output columns per call (two 8-wide vectors)
	gemmKC = 256 // k slice: a multiple of every block size (256 for K-quants)
	gemmNC = 128 // output columns decoded per slice and worker: a multiple of every tile's nr
)

// tile is a tier's float32 register tile: a microkernel and its geometry,
// mr rows of x by nr output columns. Each tier owns its tile; the blocked
// GEMM and the attention are written for any geometry whose nr divides
// gemmNC and is a multiple of 8, and panels are nr columns wide.
type tile struct {
	kern   microKernel
	mr, nr int
}

// genericTile is the portable 6×16 tile.
var genericTile = tile{kern: microKernelGo, mr: gemmMR, nr: gemmNR}

// microKernel computes the mr×nr tile c = a·b of its tier's geometry, or
// c += a·b when acc is set, over kc values of k. Row i of a starts at
// a[i*lda]; b is a packed panel holding k-major rows of nr values; row i of
// c starts at c[i*ldc].
type microKernel func(kc int, a []float32, lda int, b []float32, c []float32, ldc int, acc bool)

// pack8Func packs eight weight rows, stride bytes apart, into columns
// 0..7 of n8·8 consecutive k rows of a panel of its tier's width at dst; src points
// at the first value of the slice in row 0. It is the vectorized form of a
// decoder for the float types, where decoding is pure data movement.
type pack8Func func(src []byte, stride int, n8 int, dst []float32)

// gemmTier is what a tier plugs into the blocked GEMM.
type gemmTier struct {
	tile
	pack8 map[gguf.Type]pack8Func // optional, by weight type
	// rowDecode, optional by type, decodes n values of a row contiguously;
	// transpose8 then packs the decoded rows (see attnTier). Only for
	// block types, whose slices are whole multiples of 8 values.
	rowDecode  map[gguf.Type]func(src []byte, n int, dst []float32)
	transpose8 func(src []float32, stride, n8 int, dst []float32)
	// narrow, optional, makes the product one of pairs of narrow values
	// (bfloat16): see narrower.
	narrow *narrower
}

// narrower turns the float32 product into one of pairs of narrower values
// held in 32-bit words (the bits stored in float32 slices): x rounds the m
// rows of k activations in src to rows of (k+1)/2 words in dst (an odd k
// padded with a zero); panel rounds a decoded kc×nr float32 panel, in
// place, to (kc+1)/2 rows of nr words, word j of row p holding rows 2p and
// 2p+1 of column j (an odd kc padded with a zero). The tile's kernel then
// takes k in pairs.
type narrower struct {
	x     func(dst, src []float32, m, k int)
	panel func(pan []float32, kc, nr int)
	// pack16, optional by weight type, packs eight weight rows, stride
	// bytes apart, straight into pairs: n16·16 values of each become
	// n16·8 pair rows of columns 0..7 of an nr-wide pair panel, the bits
	// decoding and panel would give. The rest of a panel (k tails, rows
	// short of eight) is decoded and rounded in Go.
	pack16 map[gguf.Type]pack8Func
}

// pairPanel builds the pair panel pan (ceil(kc/2) rows of nr words) of
// weight rows row0.. (rows from n1 on are zero) for the kc values at byte
// offset koff of each row, with pack16 for whole groups of eight rows and
// decoding into f (kc floats) and rounding for the rest. Only for types
// of one value per block (the float types).
func pairPanel(w *Matrix, dec decoder, pack16 pack8Func, row0, n1, koff, kc, nr int, pan, f []float32) {
	rowBytes := w.RowBytes()
	kp := (kc + 1) / 2
	k16 := kc &^ 15
	for r := 0; r < nr; r += 8 {
		done := 0
		if row0+r+8 <= n1 && k16 > 0 {
			pack16(w.Data[(row0+r)*rowBytes+koff:], rowBytes, k16/16, pan[r:])
			done = k16
		}
		if done == kc {
			continue
		}
		for rr := r; rr < r+8; rr++ {
			fr := f[:kc-done]
			if row := row0 + rr; row < n1 {
				dec.decode(w.Data[row*rowBytes+koff+done*dec.typeSize:], kc-done, fr, 1)
			} else {
				clear(fr)
			}
			for p := done / 2; p < kp; p++ {
				v := bf16Round(fr[2*p-done])
				if 2*p+1 < kc {
					v |= bf16Round(fr[2*p+1-done]) << 16
				}
				pan[p*nr+rr] = math.Float32frombits(v)
			}
		}
	}
}

// gemm runs the blocked product on a tier's kernels. The weight type must
// have a decoder.
func gemm(dst, x []float32, m int, w *Matrix, bias []float32, g *gemmTier) {
	gemmDecoding(dst, x, m, w, bias, g, decoders[w.Type], g.rowDecode[w.Type], w.RowBytes())
}

// gemmDecoding is gemm with the weight rows (rowBytes apart in w.Data,
// w.Cols values each) read by the decoder dec, or rowDec (optional: n
// values of a row, contiguous) where the tier transposes decoded rows;
// the tier's packers of w.Type apply as in gemm. gemm_int8_q2k.go reads
// Q2_K's minimums as a matrix of their own this way.
func gemmDecoding(dst, x []float32, m int, w *Matrix, bias []float32, g *gemmTier, dec decoder, rowDec func(src []byte, n int, dst []float32), rowBytes int) {
	pack8 := g.pack8[w.Type]
	if g.transpose8 == nil || dec.blockSize%8 != 0 {
		rowDec = nil
	}
	var pack16 pack8Func
	if g.narrow != nil && dec.blockSize == 1 {
		pack16 = g.narrow.pack16[w.Type]
	}
	mr, nr := g.mr, g.nr
	n, k := w.Rows, w.Cols
	if m <= 0 || n <= 0 {
		return
	}
	if k == 0 {
		for i := 0; i < m; i++ {
			row := dst[i*n : (i+1)*n]
			if bias != nil {
				copy(row, bias[:n])
			} else {
				clear(row)
			}
		}
		return
	}
	nBlocks := (n + gemmNC - 1) / gemmNC
	// Split the rows only as far as needed to give every worker several
	// items: each row block decodes the whole weight matrix again.
	mc := roundUp(m, mr)
	if want := 3 * workers(); nBlocks < want {
		parts := (want + nBlocks - 1) / nBlocks
		mc = max(roundUp((m+parts-1)/parts, mr), min(mc, 8*mr))
	}
	mBlocks := (m + mc - 1) / mc
	a, lda := x, k // the activations as the kernel reads them
	if g.narrow != nil {
		lda = (k + 1) / 2
		ap := getScratch(m * lda)
		defer putScratch(ap)
		a = (*ap)[:m*lda]
		// Rows are rounded independently, in parallel blocks.
		const rb = 64
		parallelFor((m+rb-1)/rb, func(i int) {
			r0, r1 := i*rb, min(i*rb+rb, m)
			g.narrow.x(a[r0*lda:r1*lda], x[r0*k:r1*k], r1-r0, k)
		})
	}

	parallelFor(mBlocks*nBlocks, func(item int) {
		m0, m1, n0, n1, panels := gemmTile(item, nBlocks, mc, m, n, nr)

		np := panels * gemmKC * nr
		bufp := getScratch(np + nr*gemmKC + g.edgeScratch(gemmKC))
		defer putScratch(bufp)
		packed, rowBuf, edge := (*bufp)[:np], (*bufp)[np:np+nr*gemmKC], (*bufp)[np+nr*gemmKC:]

		for k0 := 0; k0 < k; k0 += gemmKC {
			kc := min(gemmKC, k-k0)
			// Decode the panels of this k slice.
			for p := 0; p < panels; p++ {
				pan := packed[p*kc*nr : (p+1)*kc*nr]
				row0 := n0 + p*nr
				koff := k0 / dec.blockSize * dec.typeSize
				if pack16 != nil {
					pairPanel(w, dec, pack16, row0, n1, koff, kc, nr, pan, rowBuf)
					continue
				}
				if rowDec != nil {
					// Decode the rows contiguously, then transpose them
					// into the panel eight at a time.
					for r := 0; r < nr; r++ {
						rb := rowBuf[r*kc : (r+1)*kc]
						if row := row0 + r; row < n1 {
							rowDec(w.Data[row*rowBytes+koff:], kc, rb)
						} else {
							clear(rb)
						}
					}
					for r := 0; r < nr; r += 8 {
						g.transpose8(rowBuf[r*kc:], kc, kc/8, pan[r:])
					}
					continue
				}
				for r := 0; r < nr; r++ {
					row := row0 + r
					if row >= n1 {
						for kk := 0; kk < kc; kk++ {
							pan[kk*nr+r] = 0
						}
						continue
					}
					k8 := 0
					if pack8 != nil && r%8 == 0 && row+8 <= n1 {
						// Eight whole rows: pack their first kc&^7 values
						// at once, decode the rest one row at a time.
						k8 = kc &^ 7
						pack8(w.Data[row*rowBytes+koff:], rowBytes, k8/8, pan[r:])
						for rr := r; rr < r+8 && k8 < kc; rr++ {
							src := w.Data[(row0+rr)*rowBytes+koff+k8*dec.typeSize:]
							dec.decode(src, kc-k8, pan[k8*nr+rr:], nr)
						}
						r += 7
						continue
					}
					dec.decode(w.Data[row*rowBytes+koff:], kc, pan[r:], nr)
				}
			}
			if next := k0 + gemmKC; next < k {
				// Ask for the next slice of the weight rows now: the
				// product below takes far longer than their journey
				// from L3 or memory, which the decoding would wait on.
				koff := next / dec.blockSize * dec.typeSize
				nb := (min(gemmKC, k-next) + dec.blockSize - 1) / dec.blockSize * dec.typeSize
				for row := n0; row < n1; row++ {
					prefetchBytes(w.Data[row*rowBytes+koff : row*rowBytes+koff+nb])
				}
			}
			kk, ak := kc, k0
			if g.narrow != nil {
				if pack16 == nil {
					for p := 0; p < panels; p++ {
						g.narrow.panel(packed[p*kc*nr:(p+1)*kc*nr], kc, nr)
					}
				}
				kk, ak = (kc+1)/2, k0/2
			}
			g.panelProductByPanel(dst[m0*n+n0:], n, a[m0*lda+ak:], lda, m1-m0, kk, packed, kc*nr, n1-n0, k0 > 0, edge)
		}
		addBias(dst, n, bias, m0, m1, n0, n1)
	})
}

// addBias adds bias[n0:n1] to rows m0..m1 of dst (rows n apart).
func addBias(dst []float32, n int, bias []float32, m0, m1, n0, n1 int) {
	if bias == nil {
		return
	}
	for i := m0; i < m1; i++ {
		row := dst[i*n+n0 : i*n+n1]
		addVec(row, row, bias[n0:n1])
	}
}

// gemmTile is work item item of a product over m rows and n columns cut
// into row blocks of mc and nBlocks column blocks of gemmNC: its rows
// m0..m1, columns n0..n1 and the number of nr-wide panels they hold.
func gemmTile(item, nBlocks, mc, m, n, nr int) (m0, m1, n0, n1, panels int) {
	m0 = (item / nBlocks) * mc
	m1 = min(m0+mc, m)
	n0 = (item % nBlocks) * gemmNC
	n1 = min(n0+gemmNC, n)
	return m0, m1, n0, n1, (n1 - n0 + nr - 1) / nr
}

// edgeScratch is the scratch size panelProduct needs for a k depth of kc.
func (t tile) edgeScratch(kc int) int { return t.mr*kc + t.mr*t.nr }

// panelProduct computes c (+)= a·b for a rows×kc block a (row i at a[i*lda])
// and the packed panels b of kc×cols weights (ceil(cols/nr) panels of
// kc×nr, zero-padded), into c with row stride ldc. It adds to c when acc is
// set. edge is scratch of edgeScratch(kc) floats for the tiles at the
// bottom and right borders, which the fixed-size kernel cannot write in
// place.
func (t tile) panelProduct(c []float32, ldc int, a []float32, lda int, rows, kc int, b []float32, cols int, acc bool, edge []float32) {
	t.panelProductStride(c, ldc, a, lda, rows, kc, b, kc*t.nr, cols, acc, edge)
}

// panelProductStride is panelProduct with the panels of b ps floats apart
// (at least kc·nr), so that a product may use the first kc rows of longer
// panels.
func (t tile) panelProductStride(c []float32, ldc int, a []float32, lda int, rows, kc int, b []float32, ps, cols int, acc bool, edge []float32) {
	MR, NR, kern := t.mr, t.nr, t.kern
	edgeA, tileBuf := edge[:MR*kc], edge[MR*kc:MR*kc+MR*NR]
	for i0 := 0; i0 < rows; i0 += MR {
		mr := min(MR, rows-i0)
		ai, ldai := a[i0*lda:], lda
		if mr < MR {
			// Too few rows left for the kernel's fixed height: copy them
			// into a zero-padded block.
			clear(edgeA)
			for r := 0; r < mr; r++ {
				copy(edgeA[r*kc:(r+1)*kc], a[(i0+r)*lda:(i0+r)*lda+kc])
			}
			ai, ldai = edgeA, kc
		}
		for j0 := 0; j0 < cols; j0 += NR {
			nr := min(NR, cols-j0)
			pan := b[j0/NR*ps : j0/NR*ps+kc*NR]
			ci := c[i0*ldc+j0:]
			if mr == MR && nr == NR {
				kern(kc, ai, ldai, pan, ci, ldc, acc)
				continue
			}
			// Edge tile: compute into a full-size tile, then copy the part
			// that exists.
			if acc {
				for r := 0; r < mr; r++ {
					copy(tileBuf[r*NR:r*NR+nr], ci[r*ldc:])
				}
			}
			kern(kc, ai, ldai, pan, tileBuf, NR, acc)
			for r := 0; r < mr; r++ {
				copy(ci[r*ldc:r*ldc+nr], tileBuf[r*NR:])
			}
		}
	}
}

// byPanelBytes bounds the block of activations (rows × kc words) that
// panelProductByPanel runs each panel down: with the block's tile of c and
// the column block's panels it stays in a Zen 4/5 core's 1 MiB L2.
const byPanelBytes = 256 << 10

// panelProductByPanel is panelProductStride with the loops the other way
// round, for the GEMM: in blocks of rows whose activations stay in L2
// (byPanelBytes), each panel of b (kc·nr values, 16 KiB for the 8×32 bf16
// tile, 32 KiB for the float one) runs down all full row groups of the
// block before the next panel, so it stays in L1 while the rows of a
// stream from L2. Row group by row group, the column block's four panels
// overflow Zen 5's 48 KiB L1 and every call read its panel from L2: 1-5%
// more CPU time at the vision tower's shapes (342 rows, K and N of 1280
// and 3420) on both 8×32 tiles. Without the row blocks, 1024 rows (a 512
// KiB to 1 MiB block) made every panel re-read the activations from L3,
// 5-10% slower than row group by row group. Every tile gets the same
// kernel call either way, so the results are the same bits. The bottom
// rows and right columns short of a tile go through panelProductStride's
// edge path.
func (t tile) panelProductByPanel(c []float32, ldc int, a []float32, lda int, rows, kc int, b []float32, ps, cols int, acc bool, edge []float32) {
	MR, NR, kern := t.mr, t.nr, t.kern
	full := rows / MR * MR
	fullCols := cols / NR * NR
	rb := max(MR, byPanelBytes/(4*kc)/MR*MR) // rows per block
	for r0 := 0; r0 < full; r0 += rb {
		r1 := min(r0+rb, full)
		for j0 := 0; j0 < fullCols; j0 += NR {
			pan := b[j0/NR*ps : j0/NR*ps+kc*NR]
			for i0 := r0; i0 < r1; i0 += MR {
				kern(kc, a[i0*lda:], lda, pan, c[i0*ldc+j0:], ldc, acc)
			}
		}
	}
	if fullCols < cols {
		t.panelProductStride(c[fullCols:], ldc, a, lda, full, kc, b[fullCols/NR*ps:], ps, cols-fullCols, acc, edge)
	}
	if full < rows {
		t.panelProductStride(c[full*ldc:], ldc, a[full*lda:], lda, rows-full, kc, b, ps, cols, acc, edge)
	}
}

func roundUp(v, to int) int { return (v + to - 1) / to * to }

// asmKernel6x16 wraps an assembly microkernel of the 6×16 tile (acc 0 or
// 1) with the checks that keep its raw pointers inside the slices.
func asmKernel6x16(f func(kc int, a *float32, lda int, b *float32, c *float32, ldc int, acc int)) microKernel {
	return func(kc int, a []float32, lda int, b []float32, c []float32, ldc int, acc bool) {
		_ = a[(gemmMR-1)*lda+kc-1]
		_ = b[kc*gemmNR-1]
		_ = c[(gemmMR-1)*ldc+gemmNR-1]
		var ac int
		if acc {
			ac = 1
		}
		f(kc, &a[0], lda, &b[0], &c[0], ldc, ac)
	}
}

// microKernelGo is the portable microkernel. It accumulates each output in
// k order, like the assembly kernels. It works on 2×8 sub-tiles whose
// sixteen sums the compiler keeps in registers.
func microKernelGo(kc int, a []float32, lda int, b []float32, c []float32, ldc int, acc bool) {
	b = b[:kc*gemmNR]
	for i := 0; i < gemmMR; i += 2 {
		a0, a1 := a[i*lda:i*lda+kc], a[(i+1)*lda:(i+1)*lda+kc]
		for j := 0; j < gemmNR; j += 8 {
			var s0, s1, s2, s3, s4, s5, s6, s7 float32
			var t0, t1, t2, t3, t4, t5, t6, t7 float32
			for kk := 0; kk < kc; kk++ {
				bk := b[kk*gemmNR+j : kk*gemmNR+j+8 : kk*gemmNR+j+8]
				x, y := a0[kk], a1[kk]
				// A product is converted before it is added to (float32(a*b) + c): that
				// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
				// every build computes the same bits (TestNoFusedMultiplyAdd).
				s0 += float32(x * bk[0])
				s1 += float32(x * bk[1])
				s2 += float32(x * bk[2])
				s3 += float32(x * bk[3])
				s4 += float32(x * bk[4])
				s5 += float32(x * bk[5])
				s6 += float32(x * bk[6])
				s7 += float32(x * bk[7])
				t0 += float32(y * bk[0])
				t1 += float32(y * bk[1])
				t2 += float32(y * bk[2])
				t3 += float32(y * bk[3])
				t4 += float32(y * bk[4])
				t5 += float32(y * bk[5])
				t6 += float32(y * bk[6])
				t7 += float32(y * bk[7])
			}
			c0 := c[i*ldc+j : i*ldc+j+8 : i*ldc+j+8]
			c1 := c[(i+1)*ldc+j : (i+1)*ldc+j+8 : (i+1)*ldc+j+8]
			if acc {
				s0, s1, s2, s3 = s0+c0[0], s1+c0[1], s2+c0[2], s3+c0[3]
				s4, s5, s6, s7 = s4+c0[4], s5+c0[5], s6+c0[6], s7+c0[7]
				t0, t1, t2, t3 = t0+c1[0], t1+c1[1], t2+c1[2], t3+c1[3]
				t4, t5, t6, t7 = t4+c1[4], t5+c1[5], t6+c1[6], t7+c1[7]
			}
			c0[0], c0[1], c0[2], c0[3], c0[4], c0[5], c0[6], c0[7] = s0, s1, s2, s3, s4, s5, s6, s7
			c1[0], c1[1], c1[2], c1[3], c1[4], c1[5], c1[6], c1[7] = t0, t1, t2, t3, t4, t5, t6, t7
		}
	}
}

// matMul is MatMul on a tier's microkernel; weight types without a panel
// decoder take the reference path.
func matMul(dst, x []float32, m int, w *Matrix, bias []float32, g *gemmTier) {
	if _, ok := decoders[w.Type]; !ok {
		MatMulRef(dst, x, m, w, bias)
		return
	}
	gemm(dst, x, m, w, bias, g)
}
