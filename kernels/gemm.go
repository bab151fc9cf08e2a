package kernels

import "github.com/vembed/vembed/gguf"

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
	gemmMR = 6   // rows of x per microkernel call
	gemmNR = 16  // output columns per microkernel call (two 8-wide vectors)
	gemmKC = 256 // k slice: a multiple of every block size (256 for K-quants)
	gemmNC = 128 // output columns decoded per slice and worker
)

// microKernel computes the gemmMR×gemmNR tile c = a·b, or c += a·b when acc
// is set, over kc values of k. Row i of a starts at a[i*lda]; b is a packed
// panel holding k-major rows of gemmNR values; row i of c starts at c[i*ldc].
type microKernel func(kc int, a []float32, lda int, b []float32, c []float32, ldc int, acc bool)

// pack8Func packs eight weight rows, stride bytes apart, into columns
// 0..7 of n8·8 consecutive k rows of a gemmNR-wide panel at dst; src points
// at the first value of the slice in row 0. It is the vectorized form of a
// decoder for the float types, where decoding is pure data movement.
type pack8Func func(src []byte, stride int, n8 int, dst []float32)

// gemmTier is what a tier plugs into the blocked GEMM.
type gemmTier struct {
	kern  microKernel
	pack8 map[gguf.Type]pack8Func // optional, by weight type
}

// gemm runs the blocked product on a tier's kernels. The weight type must
// have a decoder.
func gemm(dst, x []float32, m int, w *Matrix, bias []float32, g *gemmTier) {
	dec := decoders[w.Type]
	pack8 := g.pack8[w.Type]
	kern := g.kern
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
	rowBytes := w.RowBytes()
	nBlocks := (n + gemmNC - 1) / gemmNC
	// Split the rows only as far as needed to give every worker several
	// items: each row block decodes the whole weight matrix again.
	mc := roundUp(m, gemmMR)
	if want := 3 * workers(); nBlocks < want {
		parts := (want + nBlocks - 1) / nBlocks
		mc = max(roundUp((m+parts-1)/parts, gemmMR), min(mc, 8*gemmMR))
	}
	mBlocks := (m + mc - 1) / mc

	parallelFor(mBlocks*nBlocks, func(item int) {
		m0 := (item / nBlocks) * mc
		m1 := min(m0+mc, m)
		n0 := (item % nBlocks) * gemmNC
		n1 := min(n0+gemmNC, n)
		panels := (n1 - n0 + gemmNR - 1) / gemmNR

		bufp := getScratch(panels*gemmKC*gemmNR + gemmMR*gemmKC + gemmMR*gemmNR)
		defer putScratch(bufp)
		buf := *bufp
		packed := buf[:panels*gemmKC*gemmNR]
		edgeA := buf[len(packed) : len(packed)+gemmMR*gemmKC]
		tile := buf[len(packed)+len(edgeA):]

		for k0 := 0; k0 < k; k0 += gemmKC {
			kc := min(gemmKC, k-k0)
			// Decode the panels of this k slice.
			for p := 0; p < panels; p++ {
				pan := packed[p*kc*gemmNR : (p+1)*kc*gemmNR]
				row0 := n0 + p*gemmNR
				koff := k0 / dec.blockSize * dec.typeSize
				for r := 0; r < gemmNR; r++ {
					row := row0 + r
					if row >= n1 {
						for kk := 0; kk < kc; kk++ {
							pan[kk*gemmNR+r] = 0
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
							dec.decode(src, kc-k8, pan[k8*gemmNR+rr:], gemmNR)
						}
						r += 7
						continue
					}
					dec.decode(w.Data[row*rowBytes+koff:], kc, pan[r:], gemmNR)
				}
			}
			acc := k0 > 0
			for i0 := m0; i0 < m1; i0 += gemmMR {
				rows := min(gemmMR, m1-i0)
				a, lda := x[i0*k+k0:], k
				if rows < gemmMR {
					// Too few rows left for the kernel's fixed height: copy
					// them into a zero-padded block.
					clear(edgeA[:gemmMR*kc])
					for r := 0; r < rows; r++ {
						copy(edgeA[r*kc:(r+1)*kc], x[(i0+r)*k+k0:(i0+r)*k+k0+kc])
					}
					a, lda = edgeA, kc
				}
				for p := 0; p < panels; p++ {
					j0 := n0 + p*gemmNR
					cols := min(gemmNR, n1-j0)
					pan := packed[p*kc*gemmNR : (p+1)*kc*gemmNR]
					if rows == gemmMR && cols == gemmNR {
						kern(kc, a, lda, pan, dst[i0*n+j0:], n, acc)
						continue
					}
					// Edge tile: compute into a full-size tile, then copy
					// the part that exists.
					if acc {
						for r := 0; r < rows; r++ {
							copy(tile[r*gemmNR:r*gemmNR+cols], dst[(i0+r)*n+j0:])
						}
					}
					kern(kc, a, lda, pan, tile, gemmNR, acc)
					for r := 0; r < rows; r++ {
						copy(dst[(i0+r)*n+j0:(i0+r)*n+j0+cols], tile[r*gemmNR:])
					}
				}
			}
		}
		if bias != nil {
			for i := m0; i < m1; i++ {
				row := dst[i*n+n0 : i*n+n1]
				for j, b := range bias[n0:n1] {
					row[j] += b
				}
			}
		}
	})
}

func roundUp(v, to int) int { return (v + to - 1) / to * to }

// microKernelGo is the portable microkernel. It accumulates each output in
// k order with separate multiply and add roundings, like the assembly
// kernels do with fused ones.
func microKernelGo(kc int, a []float32, lda int, b []float32, c []float32, ldc int, acc bool) {
	var t [gemmMR][gemmNR]float32
	if acc {
		for i := range t {
			copy(t[i][:], c[i*ldc:i*ldc+gemmNR])
		}
	}
	b = b[:kc*gemmNR]
	for i := range t {
		ai := a[i*lda : i*lda+kc]
		ti := &t[i]
		for kk, av := range ai {
			bk := b[kk*gemmNR : kk*gemmNR+gemmNR]
			for j := range ti {
				ti[j] += av * bk[j]
			}
		}
	}
	for i := range t {
		copy(c[i*ldc:i*ldc+gemmNR], t[i][:])
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
