package kernels

import (
	"math"
	"runtime"
	"sync"
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
// multipliers, as int16, with multipliers), in compact forms where they
// are exact (layOut). A Q8_0 matrix takes 576 bytes per 512 values,
// 1.06× its 544; a Q4_K one would take 704, 2.4× its 288, and a Q6_K one
// up to 704, 1.7× its 420. The memory is anonymous (allocPacked), outside
// the Go heap, and freed by Unpack (a model's Close) or when the packed
// copy becomes unreachable.
//
// A packed copy belongs to the GEMM (vnniTier) that made it: after Use
// switches to a tier with another layout, products decode Data again.

// packTypes are the types Prepare packs: Q8_0 only. A product by a few
// dozen rows waits on its weights coming from memory, once per pass:
// Q8_0's panels are a few percent more bytes than its blocks and save the
// decoding; K-quant panels (packPanels packs them, bit-identical too) are
// 1.7-2.4× their blocks, and a Q4_K_M LM packed was no faster on a
// 30-token query on a Zen 5 (0.51-0.55 CPU-s against 0.49-0.54) while its
// resident memory grew 1.6×.
var packTypes = map[gguf.Type]bool{gguf.TypeQ8_0: true}

// packOff turns packing off (SetPacking).
var packOff atomic.Bool

// packedBytes counts the memory of the packed copies not yet freed.
var packedBytes atomic.Int64

// PackedBytes returns the memory held by packed weight copies (Prepare):
// what packing adds to a process beside its mapped model files, whose
// pages of the packed weights it releases.
func PackedBytes() int64 { return packedBytes.Load() }

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
	// fd16 and start16 replace fd and start (then nil) when they hold
	// them exactly: fd as binary16, start as start>>7 (layOut).
	fd16    []uint16
	start16 []int16
	// size is the bytes of memory the copy holds, mem that memory.
	size int
	mem  *packMem
}

// vnniBlockPanels is the number of panels of a column block.
const vnniBlockPanels = gemmNC / vnniNR

// Packed reports whether Prepare packed w for a tier: that tier's products
// (and those of the tiers on the same VNNI GEMM) then read the packed copy,
// not Data (other tiers still do).
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
	if p.fd16 != nil {
		prefetchBytes(unsafe.Slice((*byte)(unsafe.Pointer(&p.fd16[b0*vnniNR])), 2*nt*vnniNR))
	} else {
		prefetchBytes(unsafe.Slice((*byte)(unsafe.Pointer(&p.fd[b0*vnniNR])), 4*nt*vnniNR))
	}
	if p.start16 != nil {
		prefetchBytes(unsafe.Slice((*byte)(unsafe.Pointer(&p.start16[b0*vnniNR])), 2*nt*vnniNR))
	} else {
		prefetchBytes(unsafe.Slice((*byte)(unsafe.Pointer(&p.start[b0*vnniNR])), 4*nt*vnniNR))
	}
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
	if p.fd16 != nil {
		halvesSide(fac, vnniPanelF, p.fd16[b0*vnniNR:(b0+nt)*vnniNR], nt)
	} else {
		copySide32(fac, vnniPanelF, p.fd[b0*vnniNR:(b0+nt)*vnniNR], nt)
	}
	switch {
	case p.g.signed: // the signed kernels (SDOT, SMMLA) read no starts
	case p.start16 != nil:
		startsSide(aux, vnniAux, p.start16[b0*vnniNR:(b0+nt)*vnniNR], nt)
	default:
		copySide32(aux, vnniAux, p.start[b0*vnniNR:(b0+nt)*vnniNR], nt)
	}
	if p.fm != nil {
		copySide32(fac[vnniNR:], vnniPanelF, p.fm[b0*vnniNR:(b0+nt)*vnniNR], nt)
	}
	if p.mul != nil {
		widenSide(aux[vnniNR:], vnniAux, p.mul[b0*2*vnniNR:(b0+nt)*2*vnniNR], nt)
	}
}

// copySide32Go is the portable copySide32.
func copySide32Go[T float32 | int32](dst []T, stride int, src []T, n int) {
	for i := 0; i < n; i++ {
		copy(dst[i*stride:i*stride+vnniNR], src[i*vnniNR:(i+1)*vnniNR])
	}
}

// halvesSideGo is the portable halvesSide.
func halvesSideGo(dst []float32, stride int, src []uint16, n int) {
	for i := 0; i < n; i++ {
		for j, h := range src[i*vnniNR : (i+1)*vnniNR] {
			dst[i*stride+j] = halfToFloat(h)
		}
	}
}

// startsSideGo is the portable startsSide.
func startsSideGo(dst []int32, stride int, src []int16, n int) {
	for i := 0; i < n; i++ {
		for j, q := range src[i*vnniNR : (i+1)*vnniNR] {
			dst[i*stride+j] = int32(q) << 7
		}
	}
}

// widenSideGo is the portable widenSide.
func widenSideGo(dst []int32, stride int, src []int16, n int) {
	for i := 0; i < n; i++ {
		d, s := dst[i*stride:i*stride+2*vnniNR], src[i*2*vnniNR:(i+1)*2*vnniNR]
		for j, v := range s {
			d[j] = int32(v)
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
	p.pan = int8s(mem[:nblk*vnniPanel])
	// The side data is gathered on the heap first and laid out after the
	// weights once it is known whether its compact forms hold it exactly.
	p.fd, p.start = make([]float32, nblk*vnniNR), make([]int32, nblk*vnniNR)
	if dec.hasMin {
		p.fm = make([]float32, nblk*vnniNR)
	}
	if !dec.unit {
		p.mul = make([]int16, nblk*2*vnniNR)
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
	mem = p.layOut(mem, nblk*vnniPanel)
	p.size = len(mem)
	packedBytes.Add(int64(len(mem)))
	p.mem = &packMem{mem: mem, unmap: freeOnGC}
	runtime.AddCleanup(p, (*packMem).free, p.mem)
	w.packed = p
}

// packMem is the memory of a packed copy, freed once: by Unpack, or
// when the collector finds the copy unreachable.
type packMem struct {
	mem   []byte
	unmap bool // allocPacked's answer: the memory is not the heap's
	once  sync.Once
}

func (m *packMem) free() {
	m.once.Do(func() {
		packedBytes.Add(-int64(len(m.mem)))
		if m.unmap {
			freePacked(m.mem)
		}
		m.mem = nil
	})
}

// Unpack frees w's packed copy (Prepare) now, instead of when the
// collector next finds it unreachable: the copy lives outside the Go heap,
// so a closed model's gigabytes do not themselves make a collection
// happen. Products by w then decode Data again. Like unmapping the file
// that Data views, it must not run while a product by w does; a model
// calls it as it closes (gguf.File.OnClose).
func (w *Matrix) Unpack() {
	if p, ok := w.packed.(packedCopy); ok {
		w.packed = nil
		p.release()
	}
}

// packedCopy is a packed copy of a matrix (Matrix.packed): vnniPacked,
// and the amx tiers' copies.
type packedCopy interface {
	// release frees the copy's memory.
	release()
}

func (p *vnniPacked) release() { p.mem.free() }

// layOut moves p's side data from the heap into mem from off on, in
// compact form where that is exact: the factors fd as binary16 when
// every one is a binary16 value (Q8_0's block scales are), the starts
// as int16 multiples of −128 when every one is (the unit types' starts
// are −128·Σq). It returns mem cut to what is used (the rest released).
func (p *vnniPacked) layOut(mem []byte, off int) []byte {
	take := func(bytes int) unsafe.Pointer {
		q := unsafe.Pointer(&mem[off])
		off += bytes
		return q
	}
	n := len(p.fd)
	if h, ok := halves(p.fd); ok {
		p.fd16 = unsafe.Slice((*uint16)(take(2*n)), n)
		copy(p.fd16, h)
		p.fd = nil
	} else {
		fd := unsafe.Slice((*float32)(take(4*n)), n)
		copy(fd, p.fd)
		p.fd = fd
	}
	if q, ok := startQuotients(p.start); ok {
		p.start16 = unsafe.Slice((*int16)(take(2*n)), n)
		copy(p.start16, q)
		p.start = nil
	} else {
		st := unsafe.Slice((*int32)(take(4*n)), n)
		copy(st, p.start)
		p.start = st
	}
	if p.fm != nil {
		fm := unsafe.Slice((*float32)(take(4*n)), n)
		copy(fm, p.fm)
		p.fm = fm
	}
	if p.mul != nil {
		mul := unsafe.Slice((*int16)(take(4*n)), 2*n)
		copy(mul, p.mul)
		p.mul = mul
	}
	return trimPacked(mem, off)
}

// halves returns the binary16 forms of v if each converts back to the
// same float32 bits (NaNs excluded: the conversions may quiet them).
func halves(v []float32) ([]uint16, bool) {
	h := make([]uint16, len(v))
	for i, x := range v {
		h[i] = gguf.F32ToF16(x)
		if x != x || math.Float32bits(halfToFloat(h[i])) != math.Float32bits(x) {
			return nil, false
		}
	}
	return h, true
}

// startQuotients returns the quotients s>>7 of the starts s when every
// one is a multiple of 128 whose quotient is an int16.
func startQuotients(s []int32) ([]int16, bool) {
	q := make([]int16, len(s))
	for i, x := range s {
		if x&127 != 0 || x>>7 != int32(int16(x>>7)) {
			return nil, false
		}
		q[i] = int16(x >> 7)
	}
	return q, true
}
