package kernels

import (
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/vembed/vembed/gguf"
)

// Packing at load (Prepare) for the VNNI tiers: gemmVNNI decodes each
// weight panel of a k slice (signed bytes in four-byte column groups,
// per-block factors, int32 starting sums) from the stored blocks on every
// product, once per row block, which for a short product (a query of a
// few dozen tokens) is a large part of its cost. A packed matrix holds
// those panels, decoded once by the same code (vnniTier.decodePanel), so
// the products read the weights in place and only copy each block's
// factors and starts into the kernel's layout: the same panels into the
// same kernels, so the same bits.
//
// The weights are stored in the kernel's layout; of the factors and aux
// only what the type uses (fd; fm with mins; the start; the two half
// multipliers, as int16, with multipliers), which keeps a Q8_0 matrix at
// 640 bytes per 512 values (1.18× its 544), a Q6_K one at 704 (1.68× its
// 420) and a Q4_K one at 704 (2.44× its 288). The memory is anonymous
// (allocPacked), outside the Go heap; it is freed when the packed copy
// becomes unreachable.
//
// A packed copy belongs to the GEMM (vnniTier) that made it: after Use
// switches to a tier with another layout, products decode Data again.

// packTypes are the types the VNNI tiers pack: those with panel decoders
// on avx512-vnni, the types of quantized LMs.
var packTypes = map[gguf.Type]bool{gguf.TypeQ8_0: true, gguf.TypeQ4_K: true, gguf.TypeQ6_K: true}

// packOff turns packing off (SetPacking).
var packOff atomic.Bool

// SetPacking sets whether Prepare packs weights for the active tier
// (the default) and returns the previous setting. Off, every product
// decodes the stored weights as it goes, which costs time on every pass
// but no memory beyond the mapped file.
func SetPacking(on bool) bool { return !packOff.Swap(!on) }

// vnniPacked is a matrix's panels for one VNNI GEMM, by column block (the
// gemmNC columns a product's work item takes, vnniBlockPanels panels),
// then k slice, then panel, then block: a work item reads one stretch of
// memory from start to end, and the k slice after the one it computes is
// the next stretch, which it prefetches. In column block c (pc panels),
// block b of panel q of the k slice from k0 (nb blocks) is block index
// c·vnniBlockPanels·k/i8Block + k0/i8Block·pc + q·nb + b of every array,
// so a tile's panels are consecutive, as the kernels read them.
type vnniPacked struct {
	g *vnniTier
	// pt is the number of panels (rounded up to the tiles' span), k the
	// depth.
	pt, k int
	// pan holds vnniPanel weight bytes per block; fd, fm (nil without
	// mins) and start vnniNR values per block; mul (nil for unit types)
	// the multipliers of the two halves, vnniNR each, per block.
	pan    []int8
	fd, fm []float32
	start  []int32
	mul    []int16
}

// vnniBlockPanels is the number of panels of a column block.
const vnniBlockPanels = gemmNC / vnniNR

// Packed reports whether Prepare packed w for a tier: the active tier's
// products then read the packed copy, not Data (other tiers still do).
func (w *Matrix) Packed() bool { return w.packed != nil }

// vnniPacked returns w's panels made by g, or nil.
func (w *Matrix) vnniPacked(g *vnniTier) *vnniPacked {
	if p, ok := w.packed.(*vnniPacked); ok && p.g == g {
		return p
	}
	return nil
}

// keepAlive keeps p (and so its memory) alive until the call: the
// products hold slices of the memory, which do not.
func (p *vnniPacked) keepAlive() { runtime.KeepAlive(p) }

// at returns the block index of block 0 of panel p0 in the k slice from
// k0, and the slice's block count.
func (p *vnniPacked) at(k0, p0 int) (b0, nb int) {
	c, q := p0/vnniBlockPanels, p0%vnniBlockPanels
	pc := min(vnniBlockPanels, p.pt-c*vnniBlockPanels)
	nb = min(gemmKC, p.k-k0) / i8Block
	return c*vnniBlockPanels*(p.k/i8Block) + k0/i8Block*pc + q*nb, nb
}

// panels returns the weights of the panels p0, p0+1, … p0+n−1 (in one
// column block) of the k slice from k0, consecutive.
func (p *vnniPacked) panels(k0, p0, n int) []int8 {
	b0, nb := p.at(k0, p0)
	return p.pan[b0*vnniPanel : (b0+n*nb)*vnniPanel]
}

// prefetch asks for the panels p0 … p0+n−1 of the k slice from k0 and
// their side data to be brought into the cache.
func (p *vnniPacked) prefetch(k0, p0, n int) {
	b0, nb := p.at(k0, p0)
	nt := n * nb
	prefetchBytes(bytesOf(p.pan[b0*vnniPanel : (b0+nt)*vnniPanel]))
	prefetchBytes(unsafe.Slice((*byte)(unsafe.Pointer(&p.fd[b0*vnniNR])), 4*nt*vnniNR))
	prefetchBytes(unsafe.Slice((*byte)(unsafe.Pointer(&p.start[b0*vnniNR])), 4*nt*vnniNR))
	if p.fm != nil {
		prefetchBytes(unsafe.Slice((*byte)(unsafe.Pointer(&p.fm[b0*vnniNR])), 4*nt*vnniNR))
	}
	if p.mul != nil {
		prefetchBytes(unsafe.Slice((*byte)(unsafe.Pointer(&p.mul[2*b0*vnniNR])), 4*nt*vnniNR))
	}
}

// side writes the factors and aux of the panels p0 … p0+n−1 of the k
// slice from k0 into fac and aux in the kernel's layout (vnniPanelF and
// vnniAux per block), the entries the type uses.
func (p *vnniPacked) side(k0, p0, n int, fac []float32, aux []int32) {
	b0, nb := p.at(k0, p0)
	nt := n * nb
	fac, aux = fac[:nt*vnniPanelF], aux[:nt*vnniAux]
	fd, start := p.fd[b0*vnniNR:(b0+nt)*vnniNR], p.start[b0*vnniNR:(b0+nt)*vnniNR]
	// Fixed-size array copies compile to a few vector moves, where copy
	// would call memmove for every 64 bytes.
	for i := 0; i < nt; i++ {
		*(*[vnniNR]float32)(fac[i*vnniPanelF:]) = *(*[vnniNR]float32)(fd[i*vnniNR:])
		*(*[vnniNR]int32)(aux[i*vnniAux:]) = *(*[vnniNR]int32)(start[i*vnniNR:])
	}
	if p.fm != nil {
		fm := p.fm[b0*vnniNR : (b0+nt)*vnniNR]
		for i := 0; i < nt; i++ {
			*(*[vnniNR]float32)(fac[i*vnniPanelF+vnniNR:]) = *(*[vnniNR]float32)(fm[i*vnniNR:])
		}
	}
	if p.mul != nil {
		mul := p.mul[b0*2*vnniNR : (b0+nt)*2*vnniNR]
		for i := 0; i < nt; i++ {
			a, m := (*[2 * vnniNR]int32)(aux[i*vnniAux+vnniNR:]), (*[2 * vnniNR]int16)(mul[i*2*vnniNR:])
			for j, v := range m {
				a[j] = int32(v)
			}
		}
	}
}

// packVNNI packs w for g when its type is one of packTypes, in parallel
// over the pool; it leaves w unpacked if the memory cannot be had.
func packVNNI(w *Matrix, g *vnniTier) {
	if packOff.Load() || !packTypes[w.Type] || !int8Types[w.Type] {
		return
	}
	packPanels(w, g)
}

// packPanels packs w, of any type of vnniDecoders, for g.
func packPanels(w *Matrix, g *vnniTier) {
	if w.Rows <= 0 || w.Cols <= 0 {
		return
	}
	dec, ok := vnniDecoders[w.Type]
	if !ok {
		return
	}
	if row := g.dec[w.Type]; row != nil {
		dec.row = row
	}
	span := g.span
	if !dec.unit {
		span = g.spanMul
	}
	n, k := w.Rows, w.Cols
	// Column blocks start at multiples of gemmNC, whole panels, and a
	// tile rounds its panels up to span: pt covers the last one.
	pt := roundUp((n+vnniNR-1)/vnniNR, span)
	nblk := k / i8Block * pt
	size := nblk * (vnniPanel + 2*4*vnniNR)
	if dec.hasMin {
		size += nblk * 4 * vnniNR
	}
	if !dec.unit {
		size += nblk * 2 * 2 * vnniNR
	}
	mem, freeOnGC := allocPacked(size)
	if mem == nil {
		return
	}
	p := &vnniPacked{g: g, pt: pt, k: k}
	off := 0
	take := func(bytes int) unsafe.Pointer {
		q := unsafe.Pointer(&mem[off])
		off += bytes
		return q
	}
	p.pan = unsafe.Slice((*int8)(take(nblk*vnniPanel)), nblk*vnniPanel)
	p.fd = unsafe.Slice((*float32)(take(nblk*4*vnniNR)), nblk*vnniNR)
	p.start = unsafe.Slice((*int32)(take(nblk*4*vnniNR)), nblk*vnniNR)
	if dec.hasMin {
		p.fm = unsafe.Slice((*float32)(take(nblk*4*vnniNR)), nblk*vnniNR)
	}
	if !dec.unit {
		p.mul = unsafe.Slice((*int16)(take(nblk*2*2*vnniNR)), nblk*2*vnniNR)
	}

	// Items are a k slice of a column block.
	const group = vnniBlockPanels
	groups := (pt + group - 1) / group
	slices := (k + gemmKC - 1) / gemmKC
	const kb = gemmKC / i8Block
	parallelFor(slices*groups, func(item int) {
		k0 := item / groups * gemmKC
		bp := byteScratch.get(vnniNR * gemmKC)
		defer byteScratch.put(bp)
		ap := i16Scratch.get(2*kb*vnniAux + 2*kb + 4*kb)
		defer i16Scratch.put(ap)
		as := int32s((*ap)[:2*kb*vnniAux])
		mul := (*ap)[2*kb*vnniAux : 2*kb*vnniAux+2*kb]
		sum := int32s((*ap)[2*kb*vnniAux+2*kb:])
		fp := getScratch(kb * vnniPanelF)
		defer putScratch(fp)
		fs := *fp
		rowBuf := int8s(*bp)
		for pi := item % groups * group; pi < min(pt, (item%groups+1)*group); pi++ {
			b0, nb := p.at(k0, pi)
			pp := p.pan[b0*vnniPanel : (b0+nb)*vnniPanel]
			g.decodePanel(w, dec, pi*vnniNR, n, k0, pp, fs[:nb*vnniPanelF], as[:nb*vnniAux], rowBuf, mul, sum)
			for b := 0; b < nb; b++ {
				o := (b0 + b) * vnniNR
				copy(p.fd[o:o+vnniNR], fs[b*vnniPanelF:])
				copy(p.start[o:o+vnniNR], as[b*vnniAux:])
				if p.fm != nil {
					copy(p.fm[o:o+vnniNR], fs[b*vnniPanelF+vnniNR:])
				}
				if p.mul != nil {
					m := p.mul[2*o : 2*o+2*vnniNR]
					for j := range m {
						m[j] = int16(as[b*vnniAux+vnniNR+j])
					}
				}
			}
		}
	})
	if freeOnGC {
		runtime.AddCleanup(p, freePacked, mem)
	}
	w.packed = p
}
