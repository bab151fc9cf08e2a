package kernels

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

const (
	gemmMR = 6   // rows of x per microkernel call
	gemmNR = 16  // output columns per microkernel call (two 8-wide vectors)
	gemmKC = 256 // k slice: a multiple of every block size (256 for K-quants)
	gemmNC = 128 // output columns decoded per slice and worker
	gemmMC = 384 // most rows of x one work item covers (a multiple of gemmMR)
)

// microKernel computes the gemmMR×gemmNR tile c = a·b, or c += a·b when acc
// is set, over kc values of k. Row i of a starts at a[i*lda]; b is a packed
// panel holding k-major rows of gemmNR values; row i of c starts at c[i*ldc].
type microKernel func(kc int, a []float32, lda int, b []float32, c []float32, ldc int, acc bool)

// gemm runs the blocked product with the given microkernel. The weight type
// must have a decoder.
func gemm(dst, x []float32, m int, w *Matrix, bias []float32, kern microKernel) {
	dec := decoders[w.Type]
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
	mc := min(gemmMC, roundUp(m, gemmMR))
	if want := 3 * workers(); nBlocks*((m+mc-1)/mc) < want {
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
				for r := 0; r < gemmNR; r++ {
					row := n0 + p*gemmNR + r
					if row >= n1 {
						for kk := 0; kk < kc; kk++ {
							pan[kk*gemmNR+r] = 0
						}
						continue
					}
					src := w.Data[row*rowBytes+k0/dec.blockSize*dec.typeSize:]
					dec.decode(src, kc, pan[r:], gemmNR)
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
func matMul(dst, x []float32, m int, w *Matrix, bias []float32, kern microKernel) {
	if _, ok := decoders[w.Type]; !ok {
		MatMulRef(dst, x, m, w, bias)
		return
	}
	gemm(dst, x, m, w, bias, kern)
}
