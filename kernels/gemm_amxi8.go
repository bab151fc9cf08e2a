package kernels

import (
	"encoding/binary"
	"math"
	"runtime"
	"sync/atomic"
)

// The integer GEMM of the amx tier: the VNNI tiers' products (gemm_vnni.go)
// with each 32-value block of a 16×16 tile summed by one AMX tile
// product, TDPBSSD, which multiplies signed bytes by signed bytes (so the
// activations need no +128 and the weights no starting sums), and the
// float epilogue of the avx2-int8 tier applied to the stored sums by
// AVX-512, interleaved with the next block's tile product.
//
// Why 16×16 tiles, one per call of the block loop: with per-32 scales
// every block's integer sums must leave the tile (TILESTORED, 1 KiB) and
// go through the float epilogue, three vector operations per row (convert,
// the scale dx·fd, the FMA; four with minimums) against the sixteen
// cycles of the tile product, so the epilogue, not the tiles, bounds the
// rate. Its sixteen float accumulator rows stay in zmm registers for the
// whole k slice; a 2×2 arrangement of C tiles would keep 64 rows, which
// must then live in memory and double the stores per block. The tiles of
// the next block (A, B, C) are loaded and multiplied before the current
// block's sums are stored (two sets of A, B and C tiles), so the tile unit
// computes while the vector units run the epilogue.
//
// Layouts. A group of 16 activation rows is stored by block, then row,
// then the block's 32 signed bytes q (an A tile: 16 rows of 32 bytes,
// contiguous). The weights are packed at load (Prepare) for every type of
// int8Types, by panel of 16 columns, then block: a record of the block's
// B tile (8 rows of 64 bytes: k/4, column, k%4, the VNNI panel layout),
// its factors fd (16 float32) and, for types with minimums, fm (16
// float32). Types with sub-block multipliers m (Q6_K, Q3_K, Q2_K, IQ4_XS)
// have them folded into the bytes, P = m·q; when some |P| of the matrix
// exceeds a byte (Q6_K's 6-bit values by 8-bit scales reach 4096), P is
// split into two planes, P = 64·H + L with L in [−32, 31] and H in
// [−64, 64], each its own B tile and tile product, and the epilogue forms
// S = 64·S_H + S_L. Every block sum S is the exact integer the avx2-int8
// tier computes (Σ q·m·w), and the epilogue the same operations in the same
// order, so the results are bit-identical to that tier's.
//
// Products of fewer than amxMinRows rows run on the avx512-vnni GEMM.
// That GEMM cannot read the tile records, so on packed weights it decodes
// the stored blocks on every product, which is estimated (not measured:
// no AMX here) to cost more than a tile's zero rows at any row count:
// amxMinRows is 1 until AMX hardware says otherwise (vembed bench --m on
// the amx and avx512-vnni tiers).

const (
	// amxRows is the number of activation rows of a tile.
	amxRows = 16
	// amxTileBytes is the size of a B tile: a panel's block.
	amxTileBytes = i8Block * vnniNR
	// amxFlagTwo tells the kernel that the weights have two planes.
	amxFlagTwo = 4
	// amxMinRows is the row count from which the amx tier multiplies on
	// tiles; fewer rows take the avx512-vnni GEMM (the same bits).
	amxMinRows = 1
	// amxI8Scratch is the kernel's scratch in bytes: the tile configuration
	// (64) and two buffers of a block's sums (two planes of 16×16 int32),
	// plus 64 to align it.
	amxI8Scratch = 64 + 2*2*1024 + 64
)

// amxI8Kernel computes, for np panels and ng groups of 16 rows, the 16×16
// tiles c (+)= a·bᵀ over the nb blocks of one k slice: group g's
// activations (block-major signed bytes) at a[g*as], its (dx, dx·Σq)
// pairs at ds[g*dss] (row r of block b at ds[(b*16+r)*2]), panel j's
// records (rec bytes each, nb consecutive) at b[j*pstride], its output at
// c[g*16*ldc+j*16]. flags: i8FlagAcc (add to c), i8FlagMin (apply fm),
// amxFlagTwo.
type amxI8Kernel func(np, ng, nb int, a []int8, as int, ds []float32, dss int, b []byte, rec, pstride, flags int, c []float32, ldc int)

// amxI8Tier is what the amx tier plugs into its GEMM.
type amxI8Tier struct {
	kern  amxI8Kernel
	quant func(x []float32, q []uint8, ds []float32)
	// dec decodes the weights into VNNI panels when packing; small
	// multiplies the products of fewer than amxMinRows rows.
	dec   *vnniTier
	small func(dst, x []float32, m int, w *Matrix, bias []float32)
}

// amxPacked is a matrix packed for an amx GEMM (amxI8Tier).
type amxPacked struct {
	g *amxI8Tier
	// planes is 1 or 2; hasMin says the records hold fm.
	planes int
	hasMin bool
	// rec is the bytes of a record; nbk the blocks of a row, pt the
	// panels.
	rec, nbk, pt int
	data         []byte
	mem          *packMem
}

func (p *amxPacked) release() { p.mem.free() }

// amxRecord returns the bytes of a record of planes weight planes, with
// fm or not.
func amxRecord(planes int, hasMin bool) int {
	n := planes*amxTileBytes + 4*vnniNR
	if hasMin {
		n += 4 * vnniNR
	}
	return n
}

// at returns the records from block b0 of panel pi on (those of the
// following panels after).
func (p *amxPacked) at(pi, b0 int) []byte {
	return p.data[(pi*p.nbk+b0)*p.rec:]
}

// amxPackedFor returns w's copy packed for g, or nil.
func (w *Matrix) amxPackedFor(g *amxI8Tier) *amxPacked {
	if p, ok := w.packed.(*amxPacked); ok && p.g == g {
		return p
	}
	return nil
}

// packAMX packs w, of a type of int8Types, for g: every panel decoded once
// by g.dec into VNNI panels, the multipliers folded into the bytes (two
// planes where a product leaves a byte), factors beside each block. It
// leaves w unpacked if packing is off or the memory cannot be had.
func packAMX(w *Matrix, g *amxI8Tier) {
	if packOff.Load() || !int8Types[w.Type] || w.Rows <= 0 || w.Cols <= 0 {
		return
	}
	dec, ok := vnniDecoders[w.Type]
	if !ok {
		return
	}
	if row := g.dec.dec[w.Type]; row != nil {
		dec.row = row
	}
	n, k := w.Rows, w.Cols
	p := &amxPacked{g: g, planes: 1, hasMin: dec.hasMin, nbk: k / i8Block, pt: (n + vnniNR - 1) / vnniNR}
	slices := (k + gemmKC - 1) / gemmKC
	items := p.pt * slices
	// Types with multipliers: one plane only if every m·q of the matrix
	// is a byte.
	if !dec.unit {
		var wide atomic.Bool
		parallelFor(items, func(item int) {
			if wide.Load() {
				return
			}
			s := newAMXPackScratch()
			defer s.put()
			pi, k0 := item/slices, item%slices*gemmKC
			nb := min(gemmKC, k-k0) / i8Block
			g.dec.decodePanel(w, dec, pi*vnniNR, n, k0, s.pan[:nb*vnniPanel], s.fs[:nb*vnniPanelF], s.aux[:nb*vnniAux], s.rowBuf, s.mul, s.sum)
			for b := 0; b < nb; b++ {
				for i := 0; i < vnniPanel; i++ {
					if v := amxFold(s.pan, s.aux, b, i); v != int32(int8(v)) {
						wide.Store(true)
						return
					}
				}
			}
		})
		if wide.Load() {
			p.planes = 2
		}
	}
	p.rec = amxRecord(p.planes, p.hasMin)
	size := p.pt * p.nbk * p.rec
	mem, freeOnGC := allocPacked(size)
	if mem == nil {
		return
	}
	p.data = mem[:size:size]
	parallelFor(items, func(item int) {
		s := newAMXPackScratch()
		defer s.put()
		pi, k0 := item/slices, item%slices*gemmKC
		nb := min(gemmKC, k-k0) / i8Block
		g.dec.decodePanel(w, dec, pi*vnniNR, n, k0, s.pan[:nb*vnniPanel], s.fs[:nb*vnniPanelF], s.aux[:nb*vnniAux], s.rowBuf, s.mul, s.sum)
		out := p.at(pi, k0/i8Block)[:nb*p.rec]
		for b := 0; b < nb; b++ {
			r := out[b*p.rec : (b+1)*p.rec]
			pw := int8s(r[:p.planes*amxTileBytes])
			for i := 0; i < vnniPanel; i++ {
				v := int32(s.pan[b*vnniPanel+i])
				if !dec.unit {
					v = amxFold(s.pan, s.aux, b, i)
				}
				if p.planes == 1 {
					pw[i] = int8(v)
					continue
				}
				lo := (v+32)&63 - 32
				pw[i], pw[amxTileBytes+i] = int8((v-lo)>>6), int8(lo)
			}
			f := r[p.planes*amxTileBytes:]
			for j := 0; j < vnniNR; j++ {
				putF32(f[4*j:], s.fs[b*vnniPanelF+j])
				if p.hasMin {
					putF32(f[4*vnniNR+4*j:], s.fs[b*vnniPanelF+vnniNR+j])
				}
			}
		}
	})
	packedBytes.Add(int64(size))
	p.mem = &packMem{mem: p.data, unmap: freeOnGC}
	runtime.AddCleanup(p, (*packMem).free, p.mem)
	w.packed = p
}

// amxFold is the weight of byte i of block b of a decoded VNNI panel
// times its half's multiplier (aux holds them, gemm_vnni.go): column
// i/4%16, k i/64·4 + i%4, the half k/16.
func amxFold(pan []int8, aux []int32, b, i int) int32 {
	col, half := i/4%vnniNR, i/(16*vnniNR)
	return int32(pan[b*vnniPanel+i]) * aux[b*vnniAux+(1+half)*vnniNR+col]
}

// putF32 stores f little-endian at b.
func putF32(b []byte, f float32) {
	u := math.Float32bits(f)
	_ = b[3]
	b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
}

// amxPackScratch is the decoding scratch of one panel's k slice.
type amxPackScratch struct {
	pan, rowBuf []int8
	fs          []float32
	aux, sum    []int32
	mul         []int16
	bp          *[]byte
	ap          *[]int16
	fp          *[]float32
}

func newAMXPackScratch() amxPackScratch {
	const kb = gemmKC / i8Block
	var s amxPackScratch
	s.bp = byteScratch.get(kb*vnniPanel + vnniNR*gemmKC)
	s.pan = int8s((*s.bp)[:kb*vnniPanel])
	s.rowBuf = int8s((*s.bp)[kb*vnniPanel:])
	s.ap = i16Scratch.get(2*kb*vnniAux + 2*kb + 4*kb)
	s.aux = int32s((*s.ap)[:2*kb*vnniAux])
	s.mul = (*s.ap)[2*kb*vnniAux : 2*kb*vnniAux+2*kb]
	s.sum = int32s((*s.ap)[2*kb*vnniAux+2*kb:])
	s.fp = getScratch(kb * vnniPanelF)
	s.fs = *s.fp
	return s
}

func (s *amxPackScratch) put() {
	byteScratch.put(s.bp)
	i16Scratch.put(s.ap)
	putScratch(s.fp)
}

// gemmAMXI8 is MatMul through the AMX kernels for w packed by packAMX
// for g (p); products of fewer than amxMinRows rows take g.small.
func gemmAMXI8(dst, x []float32, m int, w *Matrix, bias []float32, g *amxI8Tier, p *amxPacked) {
	n, k := w.Rows, w.Cols
	if m <= 0 || n <= 0 {
		return
	}
	if m < amxMinRows {
		g.small(dst, x, m, w, bias)
		return
	}
	nbRow := k / i8Block
	groups := (m + amxRows - 1) / amxRows
	xap, dsp := byteScratch.get(groups*amxRows*k), getScratch(groups*amxRows*2*nbRow)
	defer byteScratch.put(xap)
	defer putScratch(dsp)
	xa, ds := *xap, *dsp
	quantizeGroups(x, m, k, amxRows, ds, g.quant, func(gi, r int, q []uint8) {
		xg := xa[gi*amxRows*k : (gi+1)*amxRows*k]
		// q+128 to q: the top bit of each byte flipped, eight at a time.
		const flip = 0x8080808080808080
		for b := 0; b < nbRow; b++ {
			o := xg[(b*amxRows+r)*i8Block : (b*amxRows+r+1)*i8Block]
			for j := 0; j < i8Block; j += 8 {
				binary.LittleEndian.PutUint64(o[j:], le64(q[b*i8Block+j:])^flip)
			}
		}
	})
	xs := int8s(xa)

	preset := false
	if mins, ok := halfMins[w.Type]; ok {
		halfMinProductLayout(dst, m, w, bias, mins, xa, ds, amxRows, i8Block, true)
		bias, preset = nil, true
	}

	mc, mBlocks, nBlocks := int8Blocking(m, n, amxRows)
	flags0 := 0
	if p.hasMin {
		flags0 |= i8FlagMin
	}
	if p.planes == 2 {
		flags0 |= amxFlagTwo
	}
	parallelFor(mBlocks*nBlocks, func(item int) {
		m0, m1, n0, n1, panels := gemmTile(item, nBlocks, mc, m, n, vnniNR)
		ep := getScratch(amxRows * vnniNR)
		defer putScratch(ep)
		edge := *ep
		full := (m1 - m0) / amxRows
		fullP := (n1 - n0) / vnniNR
		as, dss := amxRows*k, amxRows*2*nbRow
		for k0 := 0; k0 < k; k0 += gemmKC {
			nb := min(gemmKC, k-k0) / i8Block
			flags, acc := flags0, k0 > 0 || preset
			if acc {
				flags |= i8FlagAcc
			}
			b := p.at(n0/vnniNR, k0/i8Block)
			pstride := p.nbk * p.rec
			a := xs[m0*k+k0*amxRows:]
			dsa := ds[(m0*nbRow+k0/i8Block*amxRows)*2:]
			if full > 0 && fullP > 0 {
				g.kern(fullP, full, nb, a, as, dsa, dss, b, p.rec, pstride, flags, dst[m0*n+n0:], n)
			}
			// The tiles past the full ones (the right panel's columns,
			// the bottom group's rows) through the edge tile.
			for j := 0; j < panels; j++ {
				nr := min(vnniNR, n1-n0-j*vnniNR)
				g0 := full
				if nr < vnniNR {
					g0 = 0
				}
				for gi := g0; gi*amxRows < m1-m0; gi++ {
					i0 := m0 + gi*amxRows
					mr := min(amxRows, m1-i0)
					ci := dst[i0*n+n0+j*vnniNR:]
					if acc {
						for r := 0; r < mr; r++ {
							copy(edge[r*vnniNR:r*vnniNR+nr], ci[r*n:r*n+nr])
						}
					}
					g.kern(1, 1, nb, a[gi*as:], as, dsa[gi*dss:], dss, b[j*pstride:], p.rec, pstride, flags, edge, vnniNR)
					for r := 0; r < mr; r++ {
						copy(ci[r*n:r*n+nr], edge[r*vnniNR:r*vnniNR+nr])
					}
				}
			}
		}
		addBias(dst, n, bias, m0, m1, n0, n1)
	})
	runtime.KeepAlive(p)
}

// amxI8Config writes the tile configuration of kernelAMXI8 (palette 1):
// tmm0..tmm3 the sums (16 rows of 16 int32), tmm4, tmm5 the activations
// (16 rows of 32 bytes), tmm6, tmm7 the weights (8 rows of 64 bytes).
func amxI8Config(cfg []byte) {
	clear(cfg[:64])
	cfg[0] = 1
	set := func(t, colsb, rows int) {
		binary.LittleEndian.PutUint16(cfg[16+2*t:], uint16(colsb))
		cfg[48+t] = byte(rows)
	}
	for t := 0; t < 4; t++ {
		set(t, 4*vnniNR, amxRows)
	}
	set(4, i8Block, amxRows)
	set(5, i8Block, amxRows)
	set(6, 4*vnniNR, i8Block/4)
	set(7, 4*vnniNR, i8Block/4)
}
