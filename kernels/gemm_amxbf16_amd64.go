package kernels

import (
	"encoding/binary"
	"runtime"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// hasAMXBF16 reports whether the CPU has AMX bf16 tiles (and the OS gave
// this process the tile state) beside the avx512-bf16 tier.
var hasAMXBF16 = hasAVX512BF16 && hasAMX && cpu.X86.HasAMXBF16

//go:noescape
func kernelAMXBF16(n16 int, a *float32, lda int, b *float32, ta *float32, tb *float32, tail int, t *float32)

// amxBF16Scratch is the microkernel's scratch in floats: the 32×32 sums,
// the 64-byte tile configuration, the zero-padded tails of a (32 rows of
// 16 pairs) and b (16 rows of 32 pairs).
const amxBF16Scratch = 1024 + 16 + 512 + 512

// amxBF16Config writes the tile configuration: palette 1, all eight tiles
// 16 rows of 64 bytes.
func amxBF16Config(cfg []byte) {
	clear(cfg[:64])
	cfg[0] = 1
	for t := 0; t < 8; t++ {
		binary.LittleEndian.PutUint16(cfg[16+2*t:], 64)
		cfg[48+t] = 16
	}
}

// amxBF16Tiles is the tile product the microkernel runs: the assembly, or
// a Go model of it in the tests.
var amxBF16Tiles = kernelAMXBF16

// microKernelAMXBF16 is the 32×32 microkernel over kp pairs: whole steps of
// 16 pairs from a and b in place, the rest through zero-padded copies,
// then c (+)= the sums.
func microKernelAMXBF16(kp int, a []float32, lda int, b []float32, c []float32, ldc int, acc bool) {
	const mr, nr = 32, 32
	_ = a[(mr-1)*lda+kp-1]
	_ = b[kp*nr-1]
	_ = c[(mr-1)*ldc+nr-1]
	sp := getScratch(amxBF16Scratch)
	defer putScratch(sp)
	s := *sp
	out, cfgF, ta, tb := s[:1024], s[1024:1040], s[1040:1552], s[1552:2064]
	n16 := kp / 16
	rest := kp - 16*n16
	if rest > 0 {
		clear(ta)
		clear(tb)
		for r := 0; r < mr; r++ {
			copy(ta[r*16:r*16+rest], a[r*lda+16*n16:r*lda+kp])
		}
		copy(tb, b[16*n16*nr:kp*nr])
	}
	amxBF16Config(unsafe.Slice((*byte)(unsafe.Pointer(&cfgF[0])), 64))
	amxBF16Tiles(n16, &a[0], 4*lda, &b[0], &ta[0], &tb[0], rest, &out[0])
	var ac int
	if acc {
		ac = 1
	}
	tileOut32(&out[0], &c[0], ldc, ac)
}

// tileOut32 writes the 32×32 sums t (rows of 32) to c (rows ldc apart),
// or with acc adds them (c = t + c), in AVX-512.
//
//go:noescape
func tileOut32(t *float32, c *float32, ldc int, acc int)

// amxBF16GEMM is bf16GEMM on the AMX tile.
var amxBF16GEMM = &gemmTier{
	tile:       tile{kern: microKernelAMXBF16, mr: 32, nr: avx512NR},
	pack8:      avx512GEMM.pack8,
	rowDecode:  avx512GEMM.rowDecode,
	transpose8: avx512GEMM.transpose8,
	narrow:     bf16GEMM.narrow,
}

// amxBF16Tier returns the amx-bf16 tier built on the avx512-bf16 tier bf.
func amxBF16Tier(bf impl) *impl {
	t := bf
	t.tier = TierAMXBF16
	t.products.Marked = TierAMXBF16
	t.optIn = true
	// Its tiles sum in their own order: not assumed to reproduce
	// avx512-bf16's bits.
	t.bits = "amx-bf16+" + bf.bits[len("avx512-bf16+"):]
	t.matMul = func(dst, x []float32, m int, w *Matrix, bias []float32) {
		if !w.BF16 || !bf16Types[w.Type] || w.Cols == 0 {
			bf.matMul(dst, x, m, w, bias)
			return
		}
		if p, ok := w.packed.(*amxBF16Packed); ok {
			gemmAMXBF16Packed(dst, x, m, w, bias, p)
			return
		}
		gemm(dst, x, m, w, bias, amxBF16GEMM)
	}
	t.prepare = func(w *Matrix) {
		if w.BF16 && bf16Types[w.Type] {
			packAMXBF16(w)
			return
		}
		bf.prepare(w)
	}
	if int8Tiers[bf.tier] {
		int8Tiers[TierAMXBF16] = true
	}
	return &t
}

// amxBF16Packed is a float matrix marked Matrix.BF16 packed at load
// (Prepare) for the amx-bf16 tier: the bfloat16 pair panels its products
// read, made by the code that makes them during a product (pairPanel),
// so the products give the same bits without rounding the weights again
// on every pass. By k slice of gemmKC values, then panel of 32 columns
// (the tile's width), each panel gemmKC/2 rows of 32 pair words (fewer
// used in a last, shorter slice): a column block's panels of one slice
// are consecutive, as the products take them. Two bytes a weight: the
// size of F16 and BF16 weights, half that of F32.
type amxBF16Packed struct {
	// pt is the number of panels, sw the words of a panel's slice.
	pt, sw int
	data   []float32
	mem    *packMem
}

func (p *amxBF16Packed) release() { p.mem.free() }

// slice returns the panels from p0 on of the k slice from k0.
func (p *amxBF16Packed) slice(k0, p0 int) []float32 {
	return p.data[(k0/gemmKC*p.pt+p0)*p.sw:]
}

// packAMXBF16 packs w, a marked float weight, for the amx-bf16 tier, in
// parallel; it leaves w unpacked if packing is off or the memory cannot
// be had.
func packAMXBF16(w *Matrix) {
	if packOff.Load() || !w.BF16 || !bf16Types[w.Type] || w.Rows <= 0 || w.Cols <= 0 {
		return
	}
	g := amxBF16GEMM
	nr := g.nr
	pack16, dec := g.narrow.pack16[w.Type], decoders[w.Type]
	if pack16 == nil {
		return
	}
	n, k := w.Rows, w.Cols
	pt, slices, sw := (n+nr-1)/nr, (k+gemmKC-1)/gemmKC, gemmKC/2*nr
	size := slices * pt * sw * 4
	mem, freeOnGC := allocPacked(size)
	if mem == nil {
		return
	}
	p := &amxBF16Packed{pt: pt, sw: sw, data: unsafe.Slice((*float32)(unsafe.Pointer(&mem[0])), size/4)}
	parallelFor(slices*pt, func(item int) {
		s, pi := item/pt, item%pt
		k0 := s * gemmKC
		kc := min(gemmKC, k-k0)
		fp := getScratch(gemmKC)
		defer putScratch(fp)
		pan := p.data[(s*pt+pi)*sw : (s*pt+pi)*sw+(kc+1)/2*nr]
		pairPanel(w, dec, pack16, pi*nr, n, k0/dec.blockSize*dec.typeSize, kc, nr, pan, *fp)
	})
	packedBytes.Add(int64(size))
	p.mem = &packMem{mem: mem[:size:size], unmap: freeOnGC}
	runtime.AddCleanup(p, (*packMem).free, p.mem)
	w.packed = p
}

// gemmAMXBF16Packed is gemm on amxBF16GEMM for w packed by packAMXBF16:
// the same activations, blocking and kernel calls with the panels read
// from the packed copy, so the same bits.
func gemmAMXBF16Packed(dst, x []float32, m int, w *Matrix, bias []float32, p *amxBF16Packed) {
	g := amxBF16GEMM
	mr, nr := g.mr, g.nr
	n, k := w.Rows, w.Cols
	if m <= 0 || n <= 0 {
		return
	}
	nBlocks := (n + gemmNC - 1) / gemmNC
	mc := roundUp(m, mr)
	if want := 3 * workers(); nBlocks < want {
		parts := (want + nBlocks - 1) / nBlocks
		mc = max(roundUp((m+parts-1)/parts, mr), min(mc, 8*mr))
	}
	mBlocks := (m + mc - 1) / mc
	lda := (k + 1) / 2
	ap := getScratch(m * lda)
	defer putScratch(ap)
	a := (*ap)[:m*lda]
	const rb = 64
	parallelFor((m+rb-1)/rb, func(i int) {
		r0, r1 := i*rb, min(i*rb+rb, m)
		g.narrow.x(a[r0*lda:r1*lda], x[r0*k:r1*k], r1-r0, k)
	})
	parallelFor(mBlocks*nBlocks, func(item int) {
		m0, m1, n0, n1, _ := gemmTile(item, nBlocks, mc, m, n, nr)
		ep := getScratch(g.edgeScratch(gemmKC))
		defer putScratch(ep)
		for k0 := 0; k0 < k; k0 += gemmKC {
			kp := (min(gemmKC, k-k0) + 1) / 2
			g.panelProductByPanel(dst[m0*n+n0:], n, a[m0*lda+k0/2:], lda, m1-m0, kp, p.slice(k0, n0/nr), p.sw, n1-n0, k0 > 0, *ep)
		}
		addBias(dst, n, bias, m0, m1, n0, n1)
	})
	runtime.KeepAlive(p)
}
