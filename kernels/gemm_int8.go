package kernels

import (
	"math"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/vembed/vembed/gguf"
)

// The integer GEMM of the avx2-int8 tier: dst = x·Wᵀ for quantized W, with
// the products of integers exact and only a per-block epilogue in float32.
//
// Activations: each row of x is quantized once per MatMul in blocks of
// i8Block values, symmetric: d = amax/127, q = round-half-even(x/d) (as
// x·(1/d)), |q| ≤ 127, and handed to the kernels as bytes q+128 (u8 path)
// or int16 (int16 path). Per block the row also keeps (d, d·Σq), the
// second for the types whose weights carry an offset. |x − d·q| ≤ d/2 +
// 2u|x| per value (or |x| < 2⁻¹⁰⁰ in blocks that small, which become 0).
//
// Weights stay in their stored type. As in the float32 path (gemm.go), a
// block of gemmNC columns is decoded per gemmKC slice into per-worker
// panels reused by every row of the row block, here as small integers q
// with, per column and 32-value block, a float32 factor fd and offset fm
// such that the weight is fd·m·q + fm (fm = 0 for the types without a
// minimum; m an integer multiplier, see below; Q2_K's minimums, one per
// 16 values, are a float32 product of their own, gemm_int8_q2k.go).
// Sub-block scales that are small integers become m on the u8 path (Q6_K,
// Q3_K, Q2_K: one per 16 values) or are folded into q on the int16 path
// (IQ4_XS: |scale·q| ≤ 4096), so every block has one float factor.
//
// Two integer paths share this design. The u8 path (gemm_int8_u8.go), for
// the types whose integer values fit in ±32 (K-quants, Q4/Q5), multiplies
// bytes with VPMADDUBSW. The int16 path here, for the others (Q8_0, IQ4,
// Q8_K), multiplies int16 pairs with VPMADDWD on 6×16 tiles, twelve int32
// accumulators over one 32-value block (exact: |Σ| ≤ 32·127·4096 < 2²⁴,
// so the conversion to float32 is exact too). Both then do per block
// c += float(Σ)·(dx·fd) + fm·(dx·Σq). BenchmarkInt8Probe measures the
// candidate inner loops.
//
// Per-32 activation blocks (rather than llama.cpp's per-256 Q8_K) cost one
// epilogue per 32 values; they bound the activation error by the largest
// value of 32 neighbours instead of 256, which matters for the outlier
// channels of transformer activations, and they let every type (32- or
// 256-value blocks) share one kernel.

const (
	i8Block   = 32               // activation and epilogue block
	i8PanelK  = i8Block * gemmNR // int16 panel values per block: 16 columns
	i8PanelF  = 2 * gemmNR       // floats per block of a panel: fd, then fm
	i8FlagAcc = 1                // kernel flag: add into c
	i8FlagMin = 2                // kernel flag: apply the offsets fm
	i8MaxQ    = 127              // largest |q| of an activation
	i8Rows    = gemmMR           // rows per microkernel call
)

// int8Types are the weight types the avx2-int8 tier multiplies in integer
// arithmetic: those whose integer product measured faster than the float32
// one at M=512, K=N=2048 and M=32 (BenchmarkInt8Ratio): the u8 path's
// types (1.15-2.0× at M=512; Q3_K 1.9-2.0× with its AVX2 decoder, 4-5× at
// M≤32, where the float32 path's portable Q3_K decoding dominates) and, on the int16 path, Q8_0 (1.2× at M=512,
// median of three runs, 1.0-1.1× at M=32) and IQ4_NL and IQ4_XS (with
// their AVX2 decoders, over three runs: 0.95-1.21× at M=512, median 1.1×,
// and 1.04-1.31× at M=32, while Q8_0 measured 0.93-1.08× in the same
// runs; with portable Go decoders they were 0.9-1.15× and about 0.5×).
// Q2_K (u8 path plus its minimums' float32 product, gemm_int8_q2k.go,
// with AVX2 decoders) measured, against the float32 products each integer
// tier would otherwise run (BenchmarkQ2KRatio, two runs, each alternated,
// Zen 5): avx2-int8 2.3× avx2's at M=512, 3.9× at M=32, 3-12× at M=1..8,
// and 1.26-1.29× avx512's at M=512, 3.0-3.2× at M=32, 5-7× at M=1..8;
// avx512-vnni 2.2-2.8× avx512's at M=512, 4.5-4.6× at M=32, 4.6-11× at
// M=1..8; avx-vnni 2.4× avx2's at M=512, 4.1-4.2× at M=32, 4.8-6.7× at
// M=1..8 (the float32 path decodes Q2_K in portable Go). The integer
// tiers share this list (their results are the same bits), so a type is
// here only where all of them gain. Q8_K keeps the float32 path: no model
// stores it, and the int16 path stays, tested, as its integer reference.
var int8Types = map[gguf.Type]bool{
	gguf.TypeQ4_K: true, gguf.TypeQ5_K: true, gguf.TypeQ6_K: true, gguf.TypeQ3_K: true,
	gguf.TypeQ4_0: true, gguf.TypeQ4_1: true, gguf.TypeQ5_0: true, gguf.TypeQ5_1: true,
	gguf.TypeQ8_0: true, gguf.TypeIQ4_NL: true, gguf.TypeIQ4_XS: true, gguf.TypeQ2_K: true,
}

// int8RowsScale adjusts SetInt8MinRows's threshold for the types whose
// crossover lies elsewhere, as a power-of-two shift (positive: more rows).
// IQ4_NL and IQ4_XS on the int16 path measured 0.7-1.0× the float32 speed
// at 16 rows and 1.0-1.3× at 32 (BenchmarkInt8Ratio, several runs), so
// they start at twice the threshold. Q3_K's float32 path decodes with
// portable Go while its byte decoder is vectorized: the integer product
// measured 4-5× faster at 1 to 32 rows, so it starts at a sixteenth
// (1 row by default); so does Q2_K (portable float32 decoding too; its
// integer product 3-12× faster at 1 to 32 rows on every integer tier).
var int8RowsScale = map[gguf.Type]int{
	gguf.TypeIQ4_NL: 1, gguf.TypeIQ4_XS: 1, gguf.TypeQ3_K: -4, gguf.TypeQ2_K: -4,
}

// int8Threshold is the number of rows from which products with weights of
// type t take the integer path, for the threshold minRows.
// A positive threshold stays positive, and a huge one (set to turn the
// integer path off) saturates instead of wrapping.
func int8Threshold(t gguf.Type, minRows int) int {
	sh := int8RowsScale[t]
	switch {
	case sh < 0:
		return max(minRows>>-sh, min(minRows, 1))
	case minRows > math.MaxInt>>sh:
		return math.MaxInt
	}
	return minRows << sh
}

// int8MinRows is the threshold SetInt8MinRows sets.
var int8MinRows atomic.Int64

// SetInt8MinRows sets the number of activation rows from which the
// integer tiers (avx2-int8 and the VNNI tiers) multiply in integer
// arithmetic and returns the previous
// value. The default, 0, sends every product by a quantized weight of
// int8Types to the integer kernels whatever its row count, so that a row's
// result never depends on how many other rows share the product: the
// serving engine packs unrelated requests into one product and promises
// each the vector it would get alone. With fewer than 6 to 16 rows the
// float32 path would be faster on Zen 3 (quantizing activations and
// decoding weights to bytes is paid per product); a positive threshold
// buys that speed for benchmarks and experiments at the price of batch
// invariance. Some types scale the threshold (int8RowsScale).
func SetInt8MinRows(n int) int { return int(int8MinRows.Swap(int64(n))) }

// i8Kernel computes, for ng row groups, the i8Rows×gemmNR tiles
// c (+)= a·bᵀ over nb blocks of i8Block values; group g's activations
// start at a[g*as], its scales at ds[g*dss], its output at
// c[g*i8Rows*ldc]. A group's activations interleave its i8Rows rows by
// int16 pairs (pair p of row r at a[(p*i8Rows+r)*2:]), ds holds per block
// the rows' (d, d·Σq) pairs (row r of block b at ds[(b*i8Rows+r)*2:]), b is
// a panel of nb·i8PanelK int16 in the (k pair, column, pair half) layout,
// f its nb·i8PanelF factors. The blocks accumulate in the compact scratch
// tile t (i8Rows×gemmNR); c (row r at c[r*ldc]) is written, or added to
// with i8FlagAcc, once per group. i8FlagMin applies the offsets.
type i8Kernel func(ng, nb int, a []int16, as int, ds []float32, dss int, b []int16, f []float32, t []float32, c []float32, ldc int, flags int)

// i8PackFunc moves the int16 pairs of eight decoded rows (kc values each,
// stride kc apart) into columns 0..7 of a panel: pair p of row r goes to
// dst[(p*gemmNR+r)*2:].
type i8PackFunc func(src []int16, kc int, dst []int16)

// i8Decoder turns stored weights into the integer form of the GEMM.
type i8Decoder struct {
	blockSize, typeSize int
	hasMin              bool
	// row decodes n values (whole blocks of the type) of one weight row
	// at src into q, and writes for each 32-value block b the factor
	// fd[b*fs] and, when hasMin, the offset fm[b*fs]: value i of block b
	// is fd·q[i] + fm.
	row func(src []byte, n int, q []int16, fd, fm []float32, fs int)
}

// i8Decoders lists the weight types of the int16 path: those whose
// integer values do not fit the u8 path's ±32 (gemm_int8_u8.go). Q2_K,
// whose minimum changes every 16 values (which the per-32 offset term
// cannot express), takes the u8 path with its minimums as a separate
// float32 product (gemm_int8_q2k.go). The float types keep the float32
// path.
var i8Decoders = map[gguf.Type]i8Decoder{
	gguf.TypeQ8_0:   {32, 34, false, i8RowQ8_0},
	gguf.TypeIQ4_NL: {32, 18, false, i8RowIQ4NL},
	gguf.TypeIQ4_XS: {256, 136, false, i8RowIQ4XS},
	gguf.TypeQ8_K:   {256, 292, false, i8RowQ8K},
}

func i8RowQ8_0(src []byte, n int, q []int16, fd, fm []float32, fs int) {
	for b := 0; b < n/32; b++ {
		blk := src[34*b : 34*b+34]
		fd[b*fs] = f16(blk)
		o := q[32*b : 32*b+32]
		for j := range o {
			o[j] = int16(int8(blk[2+j]))
		}
	}
}

func i8RowQ8K(src []byte, n int, q []int16, fd, fm []float32, fs int) {
	for b := 0; b < n/256; b++ {
		blk := src[292*b : 292*b+292]
		d := math.Float32frombits(le32(blk))
		o := q[256*b : 256*b+256]
		for j := range o {
			o[j] = int16(int8(blk[4+j]))
		}
		for s := 0; s < 8; s++ {
			fd[(8*b+s)*fs] = d
		}
	}
}

func i8RowIQ4NL(src []byte, n int, q []int16, fd, fm []float32, fs int) {
	for b := 0; b < n/32; b++ {
		blk := src[18*b : 18*b+18]
		fd[b*fs] = f16(blk)
		o := q[32*b : 32*b+32]
		for j := 0; j < 16; j++ {
			c := blk[2+j]
			o[j], o[j+16] = int16(iq4nlValues[c&15]), int16(iq4nlValues[c>>4])
		}
	}
}

// i8RowIQ4XS folds the 6-bit sub-block scale ls−32 into the codebook value.
func i8RowIQ4XS(src []byte, n int, q []int16, fd, fm []float32, fs int) {
	for b := 0; b < n/256; b++ {
		blk := src[136*b : 136*b+136]
		d, qs := f16(blk), blk[8:136]
		sh := uint16(blk[2]) | uint16(blk[3])<<8
		for ib := 0; ib < 8; ib++ {
			s := 8*b + ib
			fd[s*fs] = d
			ls := (int16(blk[4+ib/2]>>(4*(ib%2))&15) | int16(sh>>(2*ib)&3)<<4) - 32
			o := q[32*s : 32*s+32]
			for j := 0; j < 16; j++ {
				c := qs[16*ib+j]
				o[j], o[j+16] = ls*int16(iq4nlValues[c&15]), ls*int16(iq4nlValues[c>>4])
			}
		}
	}
}

// quantizeRowI8 quantizes k values of x (k a multiple of i8Block) into q
// and the (d, d·Σq) pairs of ds. A block whose largest magnitude is below
// 2⁻¹⁰⁰ (where 1/d could overflow; such values add nothing a float32
// product could keep) gets q = 0 and d = 0; one whose largest magnitude is
// not finite gets q = 0 and d = that magnitude, so the product comes out
// NaN as the float32 path's would.
func quantizeRowI8(x []float32, q []int16, ds []float32) {
	for b := 0; b < len(x)/i8Block; b++ {
		xs := x[b*i8Block : (b+1)*i8Block : (b+1)*i8Block]
		qs := q[b*i8Block : (b+1)*i8Block : (b+1)*i8Block]
		var amax uint32
		for _, v := range xs {
			amax = max(amax, math.Float32bits(v)&^(1<<31))
		}
		if amax < i8TinyBits || amax >= 0x7f800000 {
			clear(qs)
			ds[2*b], ds[2*b+1] = 0, 0
			if amax >= 0x7f800000 {
				ds[2*b] = math.Float32frombits(amax)
			}
			continue
		}
		d := math.Float32frombits(amax) / i8MaxQ
		id := 1 / d
		var sum int32
		for j, v := range xs {
			// x·(1/d) rounds before roundHalfEven adds its constant
			// (the assembly's order): the conversion keeps compilers
			// that fuse a·b + c (arm64, GOAMD64=v3) from skipping it.
			r := roundHalfEven(float32(v * id))
			qs[j] = int16(r)
			sum += r
		}
		ds[2*b], ds[2*b+1] = d, d*float32(sum)
	}
}

// i8TinyBits is the float32 bit pattern of 2⁻¹⁰⁰.
const i8TinyBits = (127 - 100) << 23

// roundHalfEven rounds v, |v| ≤ 2²², to the nearest integer, halves to
// even: adding and subtracting 1.5·2²³ leaves no fraction bits, and
// float32 addition rounds half to even. |x·(1/d)| ≤ 127·(1+2u) rounds to
// at most 127, so no clamp is needed.
func roundHalfEven(v float32) int32 {
	const magic = 3 << 22
	return int32(float32(v+magic) - magic)
}

// scratchPool hands out reusable buffers of T, as getScratch does for
// float32: a product's buffers survive to the next call without living per
// goroutine.
type scratchPool[T any] struct{ p sync.Pool }

// get returns a buffer of at least n values; its contents are arbitrary.
func (s *scratchPool[T]) get(n int) *[]T {
	if p, ok := s.p.Get().(*[]T); ok && cap(*p) >= n {
		*p = (*p)[:n]
		return p
	}
	b := make([]T, n)
	return &b
}

func (s *scratchPool[T]) put(b *[]T) { s.p.Put(b) }

var (
	i16Scratch  scratchPool[int16]
	byteScratch scratchPool[byte]
)

// quantizeGroups quantizes the m rows of x (k values each) with quant,
// in parallel by groups of rows rows, and hands each row's bytes (q+128) to
// put(group, row in the group, q) to store in a kernel's layout; the rows'
// (d, d·Σq) pairs go to ds in the layout [group][block][row][2]. The rows
// past m in the last group quantize as zeros.
func quantizeGroups(x []float32, m, k, rows int, ds []float32, quant func(x []float32, q []uint8, ds []float32), put func(gi, r int, q []uint8)) {
	nb := k / i8Block
	parallelFor((m+rows-1)/rows, func(gi int) {
		qp, dp := byteScratch.get(k), getScratch(2*nb)
		defer byteScratch.put(qp)
		defer putScratch(dp)
		q, dr := *qp, *dp
		dg := ds[gi*rows*2*nb : (gi+1)*rows*2*nb]
		for r := 0; r < rows; r++ {
			if i := gi*rows + r; i < m {
				quant(x[i*k:(i+1)*k], q, dr)
			} else {
				for j := range q {
					q[j] = 128
				}
				clear(dr)
			}
			put(gi, r, q)
			for b := 0; b < nb; b++ {
				o := (b*rows + r) * 2
				dg[o], dg[o+1] = dr[2*b], dr[2*b+1]
			}
		}
	})
}

// prefetchSlice asks for the next k slice of a weight row whose current
// slice of kc values starts at src (left values of the row from there):
// it is read after this slice's panels, by which time the hardware
// prefetcher, following a hundred-odd interleaved row streams, has not
// fetched it.
func prefetchSlice(src []byte, left, kc, blockSize, typeSize int) {
	if rest := min(gemmKC, left-kc); rest > 0 {
		cur := kc / blockSize * typeSize
		prefetchBytes(src[cur : cur+rest/blockSize*typeSize])
	}
}

// int8Blocking splits a product of m rows by n columns into work items as
// gemm does: column blocks of gemmNC, and row blocks of whole groups of
// rows (one kernel call each), split further only when there are too few
// column blocks to keep every worker busy, since each row block decodes
// the weights again.
func int8Blocking(m, n, rows int) (mc, mBlocks, nBlocks int) {
	nBlocks = (n + gemmNC - 1) / gemmNC
	mc = roundUp(m, rows)
	if want := 3 * workers(); nBlocks < want {
		parts := (want + nBlocks - 1) / nBlocks
		mc = max(roundUp((m+parts-1)/parts, rows), min(mc, roundUp(8*gemmMR, rows)))
	}
	return mc, (m + mc - 1) / mc, nBlocks
}

// tileRows runs one column panel's product over rows m0..m1 of c (the
// panel's first column, row stride ldc) in groups of rows: all full groups
// in one call when the panel is full width, the rest (bottom rows, right
// columns) through the edge tile. call(groups, i0, out, ldo) computes
// groups row groups from row i0 into out, row stride ldo.
func tileRows(c []float32, ldc, m0, m1, rows, nr int, acc bool, edge []float32, call func(groups, i0 int, out []float32, ldo int)) {
	full := (m1 - m0) / rows
	if nr < gemmNR {
		full = 0
	}
	call(full, m0, c[m0*ldc:], ldc)
	for i0 := m0 + full*rows; i0 < m1; i0 += rows {
		throughEdge(c[i0*ldc:], ldc, min(rows, m1-i0), nr, acc, edge, func(out []float32) {
			call(1, i0, out, gemmNR)
		})
	}
}

// throughEdge runs call, which writes a full tile of rows×gemmNR outputs
// rows gemmNR apart, for a tile of c that has only mr rows and nr columns:
// through the scratch tile edge, copying c in first when the call adds to
// it (acc).
func throughEdge(c []float32, ldc, mr, nr int, acc bool, edge []float32, call func(out []float32)) {
	if acc {
		for r := 0; r < mr; r++ {
			copy(edge[r*gemmNR:r*gemmNR+nr], c[r*ldc:])
		}
	}
	call(edge)
	for r := 0; r < mr; r++ {
		copy(c[r*ldc:r*ldc+nr], edge[r*gemmNR:])
	}
}

// i8Tier is what a tier plugs into the integer GEMM.
type i8Tier struct {
	kern  i8Kernel
	pack8 i8PackFunc
	// quant is quantizeRowU8 or a faster equal: the activations arrive
	// as q+128 and are widened while being interleaved.
	quant func(x []float32, q []uint8, ds []float32)
	// rows, optional by type, replace i8Decoders' row with a faster
	// equal.
	rows map[gguf.Type]func(src []byte, n int, q []int16, fd, fm []float32, fs int)
}

// gemmInt8 is MatMul through the integer kernels; w's type must be in
// i8Decoders (every such type has blocks of 32 or 256, so k is a multiple of
// i8Block).
func gemmInt8(dst, x []float32, m int, w *Matrix, bias []float32, g *i8Tier) {
	dec := i8Decoders[w.Type]
	if row := g.rows[w.Type]; row != nil {
		dec.row = row
	}
	n, k := w.Rows, w.Cols
	if m <= 0 || n <= 0 {
		return
	}
	if k == 0 {
		gemm(dst, x, m, w, bias, &gemmTier{tile: genericTile})
		return
	}
	// Activations of each group of i8Rows rows are stored interleaved by
	// int16 pairs, the order the kernel broadcasts them in (consecutive
	// addresses instead of rows k apart, whose equal cache sets thrash L1
	// for power-of-two k); the rows past m in the last group are zero.
	nbRow := k / i8Block
	groups := (m + i8Rows - 1) / i8Rows
	xqp, dsp := i16Scratch.get(groups*i8Rows*k), getScratch(groups*i8Rows*2*nbRow)
	defer i16Scratch.put(xqp)
	defer putScratch(dsp)
	xq, ds := *xqp, *dsp
	quantizeGroups(x, m, k, i8Rows, ds, g.quant, func(gi, r int, q []uint8) {
		xg := xq[gi*i8Rows*k : (gi+1)*i8Rows*k]
		for p := 0; p < k/2; p++ {
			o := (p*i8Rows + r) * 2
			xg[o], xg[o+1] = int16(q[2*p])-128, int16(q[2*p+1])-128
		}
	})

	rowBytes := w.RowBytes()
	mc, mBlocks, nBlocks := int8Blocking(m, n, i8Rows)
	flagMin := 0
	if dec.hasMin {
		flagMin = i8FlagMin
	}
	const kb = gemmKC / i8Block // blocks per full k slice

	parallelFor(mBlocks*nBlocks, func(item int) {
		m0, m1, n0, n1, panels := gemmTile(item, nBlocks, mc, m, n, gemmNR)

		np := panels * kb * i8PanelK
		ip := i16Scratch.get(np + gemmNR*gemmKC)
		defer i16Scratch.put(ip)
		pan, rowBuf := (*ip)[:np], (*ip)[np:np+gemmNR*gemmKC]
		nf := panels * kb * i8PanelF
		fp := getScratch(nf + 2*i8Rows*gemmNR)
		defer putScratch(fp)
		fac, tile, edge := (*fp)[:nf], (*fp)[nf:nf+i8Rows*gemmNR], (*fp)[nf+i8Rows*gemmNR:nf+2*i8Rows*gemmNR]

		for k0 := 0; k0 < k; k0 += gemmKC {
			kc := min(gemmKC, k-k0)
			nb := kc / i8Block
			koff := k0 / dec.blockSize * dec.typeSize
			for p := 0; p < panels; p++ {
				pp := pan[p*nb*i8PanelK : (p+1)*nb*i8PanelK]
				fs := fac[p*nb*i8PanelF : (p+1)*nb*i8PanelF]
				row0 := n0 + p*gemmNR
				for r := 0; r < gemmNR; r++ {
					rb := rowBuf[r*kc : (r+1)*kc]
					if row := row0 + r; row < n1 {
						src := w.Data[row*rowBytes+koff:]
						prefetchSlice(src, k-k0, kc, dec.blockSize, dec.typeSize)
						dec.row(src, kc, rb, fs[r:], fs[gemmNR+r:], i8PanelF)
						continue
					}
					clear(rb)
					for b := 0; b < nb; b++ {
						fs[b*i8PanelF+r], fs[b*i8PanelF+gemmNR+r] = 0, 0
					}
				}
				g.pack8(rowBuf, kc, pp)
				g.pack8(rowBuf[8*kc:], kc, pp[2*8:])
			}
			flags := flagMin
			if k0 > 0 {
				flags |= i8FlagAcc
			}
			// Panel by panel: the panel (nb·1 KiB) stays in L1 while the
			// activation rows of the row block stream by.
			for p := 0; p < panels; p++ {
				j0 := p * gemmNR
				nr := min(gemmNR, n1-n0-j0)
				pp := pan[p*nb*i8PanelK : (p+1)*nb*i8PanelK]
				fs := fac[p*nb*i8PanelF : (p+1)*nb*i8PanelF]
				as, dss := i8Rows*k, i8Rows*2*nbRow
				tileRows(dst[n0+j0:], n, m0, m1, i8Rows, nr, k0 > 0, edge, func(groups, i0 int, out []float32, ldo int) {
					a := xq[i0*k+k0*i8Rows:]
					dsa := ds[(i0*nbRow+k0/i8Block*i8Rows)*2:]
					g.kern(groups, nb, a, as, dsa, dss, pp, fs, tile, out, ldo, flags)
				})
			}
		}
		addBias(dst, n, bias, m0, m1, n0, n1)
	})
}

// pack8I16Go is the portable i8PackFunc.
func pack8I16Go(src []int16, kc int, dst []int16) {
	for r := 0; r < 8; r++ {
		row := src[r*kc : (r+1)*kc]
		for p := 0; p < kc/2; p++ {
			o := (p*gemmNR + r) * 2
			dst[o], dst[o+1] = row[2*p], row[2*p+1]
		}
	}
}

// fma32 is a fused multiply-add rounded to float32. The float64 FMA is
// rounded twice (to float64, then float32), which may differ from a float32
// FMA by one unit in the last place in rare ties: within the epilogue
// bounds the tests use.
func fma32(a, b, c float32) float32 {
	return float32(math.FMA(float64(a), float64(b), float64(c)))
}

// kernelI16Go is the portable i8Kernel, the same integer math and epilogue
// as the assembly.
func kernelI16Go(ng, nb int, a []int16, as int, ds []float32, dss int, b []int16, f []float32, t []float32, c []float32, ldc int, flags int) {
	for g := 0; g < ng; g++ {
		kernelI16Group(nb, a[g*as:], ds[g*dss:], b, f, t, c[g*i8Rows*ldc:], ldc, flags)
	}
}

// kernelI16Group is kernelI16Go for one row group: the exact int16 pair
// sums of each block, scaled by the byte kernels' portable epilogue
// (intTile), which does the assembly's operations in its order.
func kernelI16Group(nb int, a []int16, ds []float32, b []int16, f []float32, t []float32, c []float32, ldc int, flags int) {
	intTile(i8Rows, nb, ds, f, t, c, ldc, flags, func(bb, r, col int) int32 {
		pb := b[bb*i8PanelK : (bb+1)*i8PanelK]
		ab := a[bb*i8Block*i8Rows : (bb+1)*i8Block*i8Rows]
		var s int32
		for kk := 0; kk < i8Block; kk++ {
			s += int32(ab[(kk/2*i8Rows+r)*2+kk&1]) * int32(pb[kk/2*gemmNR*2+col*2+kk&1])
		}
		return s
	})
}

// int8s and int32s view a buffer as another integer type of the same
// memory, so that one pooled buffer serves several layouts.
func int8s(b []byte) []int8 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*int8)(unsafe.Pointer(&b[0])), len(b))
}

func int32s(b []int16) []int32 {
	if len(b) < 2 {
		return nil
	}
	return unsafe.Slice((*int32)(unsafe.Pointer(&b[0])), len(b)/2)
}

// QuantizesActivations reports whether the active tier multiplies weights
// of type t by activations quantized to 8 bits (for products of enough
// rows, SetInt8MinRows), so that results carry that quantization's error.
func QuantizesActivations(t gguf.Type) bool {
	return int8Tiers[Active()] && int8Types[t]
}
