package kernels

import (
	"math"

	"github.com/vembed/vembed/internal/portmath"
)

// Fused attention: for each head and block of queries, the keys the mask
// allows are visited in blocks; each block's scores are computed with the
// GEMM microkernel, turned into weights with an online (running-maximum)
// softmax, and multiplied into the output accumulator at once. Neither the
// full score matrix nor a per-query score row over all keys exists.
//
// Query blocks never straddle a mask segment, so a block-diagonal mask costs
// only the products inside its blocks. The work items, (query block, head)
// pairs, go to the worker pool.

// attnBK is large because every key block costs each query row a pass of
// online-softmax bookkeeping (two short vector calls, a possible rescale of
// its output row) and a round trip of its output tile through the value
// product, besides the products: on Zen 5 (avx512, heads of 80 and 128,
// 1024 and 4096 tokens) 1024 keys per block gave 1.15-1.25x the GFLOPS of
// 128, 512 about 1.12x; scores and panels of a 1024-key block (up to 1.4
// MiB with heads of 128) still measured faster than smaller blocks out of
// L2. Windows shorter than a block are unaffected.
const (
	attnBQ = 96   // queries per block, rounded down to a multiple of the tile's mr
	attnBK = 1024 // keys per block (a multiple of every tile's nr)
)

// attnAhead is how many work items ahead a fused item prefetches the keys
// and values it will pack: each head's 64 rows are 320-byte pieces 5 KiB
// apart in the projections' output, mostly in L3 or memory by then, and
// their loads dominated the packing. Two items ahead (one per worker on
// two cores) measured 8-10% more GFLOPS on 64-token windows at the vision
// tower's shapes than none; four ahead no better than two.
const attnAhead = 2

// attnTier is what a tier plugs into the fused attention.
type attnTier struct {
	tile
	// narrow, when set, is a tile of the same height for the last value
	// panel when the head size leaves at most narrow.nr columns past the
	// full panels; its outputs must be accumulated as the main tile's.
	narrow *tile
	// transpose8, when set, packs eight rows of float32 (stride floats
	// apart, n8·8 values each) into columns 0..7 of an nr-wide panel.
	transpose8 func(src []float32, stride, n8 int, dst []float32)
	// scaleMax multiplies x by s in place and returns the largest result.
	scaleMax func(x []float32, s float32) float32
	// expSum sets x[i] = exp(x[i]−sub) and returns the sum of the results.
	expSum func(x []float32, sub float32) float32
	// scaleMaxRows and expSumRows, when set, are scaleMax and expSum on
	// each of rows rows of n values (a multiple of 8), ld apart, the
	// results (maxes[r], or sums[r] with subs[r] subtracted) per row, with
	// the bits of the one-row functions.
	scaleMaxRows func(x []float32, ld, rows, n int, s float32, maxes []float32)
	expSumRows   func(x []float32, ld, rows, n int, subs, sums []float32)
}

// attnSrc is a run of keys and values [lo, hi) (rows of k and v) that
// some query blocks attend to.
type attnSrc struct {
	k, v   []float32
	lo, hi int
}

// qBlock is a block of query rows [q0, q1) of q and out that attends to
// the keys of source src. Under a causal mask row q0+i sees keys up to and
// including pos+i, pos being the key index of row q0.
type qBlock struct{ q0, q1, src, pos int }

// queryBlocks splits the tokens of a packed pass into query blocks inside
// mask segments, each segment its own key source. Tokens outside every
// segment attend to themselves only.
func queryBlocks(nTok int, mask Mask, k, v []float32, bq int) ([]attnSrc, []qBlock) {
	var srcs []attnSrc
	var out []qBlock
	add := func(lo, hi int) {
		srcs = append(srcs, attnSrc{k, v, lo, hi})
		for q0 := lo; q0 < hi; q0 += bq {
			out = append(out, qBlock{q0, min(q0+bq, hi), len(srcs) - 1, q0})
		}
	}
	if len(mask.Segments) == 0 {
		add(0, nTok)
		return srcs, out
	}
	covered := 0
	for i := 0; i+1 < len(mask.Segments); i++ {
		lo, hi := max(mask.Segments[i], covered), min(mask.Segments[i+1], nTok)
		for t := covered; t < min(lo, nTok); t++ {
			add(t, t+1)
		}
		if lo < hi {
			add(lo, hi)
		}
		covered = max(covered, hi)
	}
	for t := covered; t < nTok; t++ {
		add(t, t+1)
	}
	return srcs, out
}

func (at *attnTier) attention(out, q, k, v []float32, nTok, nHead, nKV, headDim int, scale float32, mask Mask) {
	if nTok <= 0 || nHead <= 0 || headDim <= 0 {
		return
	}
	if !segmentsSorted(mask.Segments) {
		// Overlapping or unordered boundaries have no block structure to
		// exploit; the reference defines their meaning.
		AttentionRef(out, q, k, v, nTok, nHead, nKV, headDim, scale, mask)
		return
	}
	srcs, blocks := queryBlocks(nTok, mask, k, v, at.bq())
	at.run(out, q, nHead, nKV, headDim, scale, mask.Causal, srcs, blocks)
}

// attentionKV is AttentionKV: each span is a key source of its own, its
// query blocks anchored at the span's first row.
func (at *attnTier) attentionKV(out, q []float32, nHead, nKV, headDim int, scale float32, spans []KVSpan) {
	if nHead <= 0 || headDim <= 0 {
		return
	}
	srcs := make([]attnSrc, 0, len(spans))
	var blocks []qBlock
	for _, sp := range spans {
		if sp.Q1 <= sp.Q0 {
			continue
		}
		srcs = append(srcs, attnSrc{sp.K, sp.V, 0, sp.Pos + sp.Q1 - sp.Q0})
		for q0 := sp.Q0; q0 < sp.Q1; q0 += at.bq() {
			blocks = append(blocks, qBlock{q0, min(q0+at.bq(), sp.Q1), len(srcs) - 1, sp.Pos + q0 - sp.Q0})
		}
	}
	at.run(out, q, nHead, nKV, headDim, scale, true, srcs, blocks)
}

// bq is the number of queries per block: whole tiles of mr rows.
func (at *attnTier) bq() int { return max(attnBQ/at.mr, 1) * at.mr }

// run computes the query blocks. A query row's result depends only on its
// own values and its source's keys: key blocks start at the source's first
// key whatever the query blocking, so a row gives the same bits in a
// packed pass, alone, or in a later chunk against cached keys.
func (at *attnTier) run(out, q []float32, nHead, nKV, headDim int, scale float32, causal bool, srcs []attnSrc, blocks []qBlock) {
	if len(blocks) == 0 {
		return
	}
	group := nHead / nKV
	nr := at.nr
	bq := at.bq()
	hd := headDim
	qs, ks := nHead*hd, nKV*hd
	// Values are packed as nf full panels of nk×nr and, when the head
	// leaves a remainder the narrow tile covers, one panel of nk×nw;
	// otherwise as hdPad/nr panels, the last zero-padded.
	nf, nw := roundUp(hd, nr)/nr, 0
	if rem := hd % nr; rem != 0 && at.narrow != nil && rem <= at.narrow.nr {
		nf, nw = hd/nr, at.narrow.nr
	}
	vw := nf*nr + nw // packed value columns

	kbSize := func(nk int) int { return roundUp(nk, nr)*hd + vw*nk }
	type keyBlock struct{ src, j0, nk, off int } // head g's panels at off + g·kbSize(nk)
	var kbs []keyBlock
	first := make([]int, len(srcs)) // first key block of each source
	total := 0
	for si, s := range srcs {
		first[si] = len(kbs)
		for j0 := s.lo; j0 < s.hi; j0 += attnBK {
			nk := min(attnBK, s.hi-j0)
			kbs = append(kbs, keyBlock{si, j0, nk, total})
			total += nKV * kbSize(nk)
		}
	}
	// pack writes key/value head g of key block kb into base: keys as
	// panels of hd×nr (zero beyond the block), then the value panels.
	pack := func(kb keyBlock, g int, base []float32) {
		k, v := srcs[kb.src].k, srcs[kb.src].v
		kp, vp := base[:roundUp(kb.nk, nr)*hd], base[roundUp(kb.nk, nr)*hd:kbSize(kb.nk)]
		for p := 0; p < len(kp)/(nr*hd); p++ {
			pan := kp[p*nr*hd : (p+1)*nr*hd]
			for r := 0; r < nr; r++ {
				j := p*nr + r
				if at.transpose8 != nil && r%8 == 0 && j+8 <= kb.nk && hd%8 == 0 {
					at.transpose8(k[(kb.j0+j)*ks+g*hd:], ks, hd/8, pan[r:])
					r += 7
					continue
				}
				if j >= kb.nk {
					for d := 0; d < hd; d++ {
						pan[d*nr+r] = 0
					}
					continue
				}
				kr := k[(kb.j0+j)*ks+g*hd : (kb.j0+j)*ks+g*hd+hd]
				for d, kv := range kr {
					pan[d*nr+r] = kv
				}
			}
		}
		for p := 0; p*nr < vw; p++ {
			pw := nr // this panel's width
			if p == nf {
				pw = nw
			}
			pan := vp[p*nr*kb.nk : p*nr*kb.nk+pw*kb.nk]
			c0 := p * nr
			w := min(pw, hd-c0)
			for j := 0; j < kb.nk; j++ {
				src := v[(kb.j0+j)*ks+g*hd+c0:]
				switch {
				case w == 16 && pw == 16:
					// A whole panel row: one fixed-size move rather than
					// a call to the general copy per 16 or 32 values.
					*(*[16]float32)(pan[j*16:]) = *(*[16]float32)(src)
					continue
				case w == 32 && pw == 32:
					*(*[32]float32)(pan[j*32:]) = *(*[32]float32)(src)
					continue
				}
				copy(pan[j*pw:j*pw+w], src[:w])
				clear(pan[j*pw+w : (j+1)*pw])
			}
		}
	}

	// When every source is one key block read by one query block and no
	// two heads share a key/value head (the vision tower's windows), each
	// work item packs its own block into its scratch just before using
	// it: the panels stay in cache instead of making a round trip through
	// a buffer the size of all keys and values. Otherwise every key block
	// is packed once per key/value head, before the query blocks that
	// share it run.
	fused := group == 1 && len(blocks) == len(srcs) && len(kbs) == len(srcs)
	// Score rows are as long as the longest key block (64 for the
	// tower's windows, not attnBK), and a fused item's packing space as
	// large as the largest block.
	ldS, ownSize := 0, 0
	for _, kb := range kbs {
		ldS = max(ldS, roundUp(kb.nk, nr))
		ownSize = max(ownSize, kbSize(kb.nk))
	}
	var packed []float32
	if !fused {
		packp := getScratch(total)
		defer putScratch(packp)
		packed = *packp
		parallelFor(len(kbs)*nKV, func(item int) {
			kb, g := kbs[item/nKV], item%nKV
			pack(kb, g, packed[kb.off+g*kbSize(kb.nk):kb.off+(g+1)*kbSize(kb.nk)])
		})
	}

	size := bq*ldS + 5*bq + at.edgeScratch(max(hd, attnBK))
	if fused {
		size += ownSize
	}
	parallelFor(len(blocks)*nHead, func(item int) {
		bi, h := item/nHead, item%nHead
		b, g := blocks[bi], h/group
		src := srcs[b.src]
		bufp := getScratch(size)
		defer putScratch(bufp)
		buf := *bufp
		take := func(n int) []float32 { s := buf[:n:n]; buf = buf[n:]; return s }
		sc := take(bq * ldS)
		mx, l := take(bq), take(bq)
		bmR, mR, sR := take(bq), take(bq), take(bq) // the row kernels' maxima, new maxima, sums
		var own []float32                           // this item's packed key block, when fused
		if fused {
			own = take(ownSize)
			// Hint the keys and values of a later item (usually another
			// head of the same window) while this one computes.
			if next := item + attnAhead; next < len(blocks)*nHead {
				nb, nh := blocks[next/nHead], next%nHead
				ns := srcs[nb.src]
				for j := ns.lo; j < ns.hi; j++ {
					prefetchFloats(ns.k[j*ks+nh*hd : j*ks+nh*hd+hd])
					prefetchFloats(ns.v[j*ks+nh*hd : j*ks+nh*hd+hd])
				}
			}
		}
		edge := buf

		rows := b.q1 - b.q0
		for i := 0; i < rows; i++ {
			mx[i], l[i] = float32(math.Inf(-1)), 0
		}
		kEnd := src.hi
		if causal {
			kEnd = min(src.hi, b.pos+rows)
		}
		qb := q[b.q0*qs+h*hd:]
		// The weighted values accumulate in place in out (row stride qs):
		// no block-sized buffer and no copy at the end.
		o := out[b.q0*qs+h*hd:]
		for j0 := src.lo; j0 < kEnd; j0 += attnBK {
			kb := kbs[first[b.src]+(j0-src.lo)/attnBK]
			nk := min(kb.nk, kEnd-j0) // the causal limit may cut the block
			var base []float32
			if fused {
				base = own
				pack(kb, g, base)
			} else {
				base = packed[kb.off+g*kbSize(kb.nk):]
			}
			kp, vp := base[:roundUp(kb.nk, nr)*hd], base[roundUp(kb.nk, nr)*hd:kbSize(kb.nk)]
			at.panelProductStride(sc, ldS, qb, qs, rows, hd, kp, nr*hd, nk, false, edge)

			// Online softmax: fold this block into each row's running
			// maximum and sum, rescaling what was accumulated so far.
			// When every row sees the whole block in whole groups of
			// eight, a tier with row kernels scales, takes the maxima and
			// exponentiates all rows in two calls, each row with the same
			// arithmetic as alone.
			whole := at.expSumRows != nil && nk%8 == 0 && (!causal || b.pos-j0+1 >= nk)
			if whole {
				at.scaleMaxRows(sc, ldS, rows, nk, scale, bmR)
				for i := 0; i < rows; i++ {
					mR[i] = max(mx[i], bmR[i])
				}
				at.expSumRows(sc, ldS, rows, nk, mR, sR)
			}
			for i := 0; i < rows; i++ {
				var mNew, s float32
				if whole {
					mNew, s = mR[i], sR[i]
				} else {
					row := sc[i*ldS : i*ldS+nk]
					limit := nk
					if causal {
						limit = min(nk, b.pos+i-j0+1)
					}
					if limit <= 0 {
						clear(row)
						continue
					}
					bm := at.scaleMax(row[:limit], scale)
					mNew = max(mx[i], bm)
					s = at.expSum(row[:limit], mNew)
					clear(row[limit:])
				}
				if j0 > src.lo {
					// An unchanged maximum (the usual case once a few
					// blocks are in) needs no rescale.
					if mNew != mx[i] {
						// portmath: math.Exp differs between amd64 and arm64.
						alpha := float32(portmath.Exp(float64(mx[i] - mNew)))
						l[i] *= alpha
						at.scaleMax(o[i*qs:i*qs+hd], alpha)
					}
					l[i] += s
				} else {
					l[i] = s
				}
				mx[i] = mNew
			}

			at.panelProductStride(o, qs, sc, ldS, rows, nk, vp, nr*kb.nk, min(hd, nf*nr), j0 > src.lo, edge)
			if nw > 0 {
				at.narrow.panelProductStride(o[nf*nr:], qs, sc, ldS, rows, nk, vp[nf*nr*kb.nk:], nw*kb.nk, hd-nf*nr, j0 > src.lo, edge)
			}
		}
		for i := 0; i < rows; i++ {
			at.scaleMax(o[i*qs:i*qs+hd], 1/l[i]) // the maximum is not needed
		}
	})
}

// segmentsSorted reports whether segment boundaries never decrease.
func segmentsSorted(seg []int) bool {
	for i := 1; i < len(seg); i++ {
		if seg[i] < seg[i-1] || seg[i-1] < 0 {
			return false
		}
	}
	return true
}

// scaleMaxGo is the portable scaleMax.
func scaleMaxGo(x []float32, s float32) float32 {
	m := float32(math.Inf(-1))
	for i, v := range x {
		v *= s
		x[i] = v
		m = max(m, v)
	}
	return m
}

// expSumGo is the portable expSum.
func expSumGo(x []float32, sub float32) float32 {
	var sum float32
	for i, v := range x {
		e := float32(portmath.Exp(float64(v - sub)))
		x[i] = e
		sum += e
	}
	return sum
}
