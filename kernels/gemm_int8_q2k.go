package kernels

import (
	"encoding/binary"

	"github.com/vembed/vembed/gguf"
)

// Q2_K on the integer paths. A Q2_K value is d·sc·q − dmin·m with q in
// 0..3 and a 4-bit scale sc and minimum m per 16 values. The integer
// kernels apply one offset per 32-value block (fm·dx·Σq), which cannot
// express a minimum that changes every 16 values, so the product is split
// in two:
//
//   - d·sc·q goes through the kernels as any type with sub-block
//     multipliers (Q3_K): values q, multipliers sc, factor d, no offset;
//   - the minimum term Σᵢ xᵢ·(−dmin·m_h(i)) is, with the activations
//     quantized, Σ_h (dx·S_h)·(−dmin·m_h) over the halves h of the row's
//     32-value blocks, S_h the sum of the 16 activation codes of half h:
//     a float32 product of depth K/16 of the rows' half sums T_h = dx·S_h
//     by the weights' −dmin·m_h (read from the blocks as the GEMM decodes
//     its panels: halfMinDecoder), done by the float32 GEMM (halfMinGEMM)
//     into dst before the integer kernels add to it.
//
// Weighed in instructions per 32-value block of a 6×32 avx512-vnni tile:
// the integer part (the kernel with multipliers) issues about 250 (96
// VPDPBUSD, 48 broadcasts, combining the half sums by the multipliers,
// the float epilogue); the minimum term is two k steps of the float32
// GEMM, about 40 for six rows (FMAs, broadcasts, loads): some 16%, as
// measured (1.9 of 11.4 ms at M=512, K=N=2048). A second integer block
// of weights 1 with the minimums as its multipliers, the other form the
// kernels take unchanged, doubles the integer work; an extra epilogue
// step in every kernel (broadcast S_0 and S_1, two VPMULLD by the
// minimums, convert, FMA) costs more than the float product and new
// assembly in each. Every integer tier computes the same T (from the same
// codes) and calls the same float GEMM, whose k order depends on neither
// the tier nor the work split, so the tiers stay bit-identical.
//
// halfMins lists the types whose u8 path decoder leaves such per-16
// minimums to the drivers (gemmU8, gemmVNNI).
var halfMins = map[gguf.Type]halfMinDecoder{
	gguf.TypeQ2_K: {16, 84, q2kHalfMinsAt, q2kMins()},
}

// halfMinDecoder reads a type's per-16 offsets −dmin·m as the float32
// GEMM reads a weight matrix of k/16 columns, straight from the stored
// blocks (no copy of the offsets is made): blockSize offsets per block of
// typeSize bytes, by decode (n offsets, offset i to dst[i*stride], as the
// float32 decoders) or row (n offsets contiguously, the same bits,
// tested).
type halfMinDecoder struct {
	blockSize, typeSize int
	decode              decodeFunc
	row                 func(src []byte, n int, dst []float32)
}

// halfMinGEMM is the float32 GEMM of the minimum terms: the best float32
// tier's (archTiers sets it; avx512 and avx2 give the same bits).
var halfMinGEMM = &gemmTier{tile: genericTile}

// u8RowQ2K decodes Q2_K for the u8 path: the 2-bit values, the scales'
// low nibbles as the multipliers of the 16-value halves, d as the factor
// of every 32-value block. 32-value block j of a 128-value half of a
// super-block holds bits 2j..2j+1 of the half's 32 bytes: each eight bytes
// are read once and give eight values of each of the four blocks.
func u8RowQ2K(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
	for b := 0; b < n/256; b++ {
		blk := (*[84]byte)(src[84*b : 84*b+84])
		d := f16(blk[80:])
		for s := 8 * b; s < 8*b+8; s++ {
			fd[s*fs] = d
		}
		ms := (*[16]int16)(mul[16*b : 16*b+16])
		for i, c := range blk[:16] {
			ms[i] = int16(c & 15)
		}
		ss := (*[16]int32)(sum[16*b : 16*b+16])
		*ss = [16]int32{}
		o := bytesOf(q[256*b : 256*b+256])
		for half := 0; half < 2; half++ {
			qs := (*[32]byte)(blk[16+32*half : 48+32*half])
			oh := (*[128]byte)(o[128*half : 128*half+128])
			for i := 0; i < 32; i += 8 {
				v := le64(qs[i:])
				h := 8*half + i/16 // the sub-block of block 0 these bytes are in
				for j := 0; j < 4; j++ {
					u := v >> (2 * j) & lo2
					put64(oh[32*j+i:], u)
					ss[h+2*j] += byteSum(u)
				}
			}
		}
	}
}

// q2kHalfMinsAt writes the offsets −dmin·m of the 16-value sub-blocks of a
// Q2_K row as a decodeFunc of them: n offsets (those of 16·n values),
// offset i to dst[i*stride]. dmin·m is exact in float32 (an 11-bit
// significand times a 4-bit integer) and the float32 decoder subtracts
// the same value.
func q2kHalfMinsAt(src []byte, n int, dst []float32, stride int) {
	for b := 0; b < n/16; b++ {
		blk := (*[84]byte)(src[84*b : 84*b+84])
		dmin := f16(blk[82:])
		o := dst[16*b*stride:]
		for s, c := range blk[:16] {
			o[s*stride] = -(dmin * q2kMinValues[c>>4])
		}
	}
}

// q2kMinValues are the sixteen 4-bit minimums as float32 (a table load
// instead of an integer conversion per value).
var q2kMinValues = [16]float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}

// halfMinProduct writes dst = T·Mᵀ + bias for the m rows of a product by
// w, whose per-16 offsets mins reads (the minimum terms, see halfMins): M
// holds each weight row's offsets (w.Rows × k/16), read from w's blocks
// as the float32 GEMM decodes its panels, T each activation row's half
// sums dx·S_h, read from the quantized activations xa (q+128, groups of
// rows rows as the kernels read them: interleaved by chunks of chunk
// bytes, chunk p of row r at (p·rows+r)·chunk: four for the VNNI and SDOT
// kernels, eight for SMMLA's, i8Block for a layout by block and row) and
// their scales ds ([group][block][row] pairs of dx, dx·Σq).
func halfMinProduct(dst []float32, m int, w *Matrix, bias []float32, mins halfMinDecoder, xa []uint8, ds []float32, rows, chunk int) {
	halfMinProductLayout(dst, m, w, bias, mins, xa, ds, rows, chunk, false)
}

// halfMinProductLayout is halfMinProduct for activations stored as q+128
// or, when signed (the amx tier's, by block and row), as q.
func halfMinProductLayout(dst []float32, m int, w *Matrix, bias []float32, mins halfMinDecoder, xa []uint8, ds []float32, rows, chunk int, signed bool) {
	kh := w.Cols / 16
	tp := getScratch(m * kh)
	defer putScratch(tp)
	t := *tp
	halfSums(t, m, w.Cols, xa, ds, rows, chunk, signed)
	view := &Matrix{Type: w.Type, Rows: w.Rows, Cols: kh, Data: w.Data}
	gemmDecoding(dst, t, m, view, bias, halfMinGEMM, decoder{mins.blockSize, mins.typeSize, mins.decode}, mins.row, w.RowBytes())
}

// halfSums writes, for each of the m rows and each 16-value half h of its
// k values, t[i*k/16+h] = dx·S_h: the block's scale times the sum of the
// half's codes q (stored as q+128 in xa; layouts as for halfMinProduct).
// The sums are exact (|S_h| ≤ 16·127) and dx·S_h rounds once.
func halfSums(t []float32, m, k int, xa []uint8, ds []float32, rows, chunk int, signed bool) {
	var flip uint64
	if signed {
		// q as a byte, flipped to q+128.
		flip = 0x8080808080808080
	}
	nb, kh := k/i8Block, k/16
	parallelFor((m+rows-1)/rows, func(gi int) {
		xg, dg := xa[gi*rows*k:(gi+1)*rows*k], ds[gi*rows*2*nb:(gi+1)*rows*2*nb]
		for r := 0; r < rows && gi*rows+r < m; r++ {
			tr := t[(gi*rows+r)*kh : (gi*rows+r+1)*kh]
			for b := 0; b < nb; b++ {
				dx := dg[(b*rows+r)*2]
				for h := 0; h < 2; h++ {
					var lo, hi uint64
					// Value kk of the row at (kk/chunk·rows+r)·chunk
					// + kk%chunk: a chunk of eight or more holds
					// whole eight-byte words of the half.
					at := func(kk int) int { return (kk/chunk*rows+r)*chunk + kk%chunk }
					k0 := b*i8Block + 16*h
					if chunk >= 8 {
						lo, hi = le64(xg[at(k0):])^flip, le64(xg[at(k0+8):])^flip
					} else {
						g := func(i int) uint64 { return uint64(binary.LittleEndian.Uint32(xg[at(k0+4*i):])) }
						lo, hi = g(0)|g(1)<<32, g(2)|g(3)<<32
					}
					s := int32(byteSum16(lo)+byteSum16(hi)) - 16*128
					tr[2*b+h] = dx * float32(s)
				}
			}
		}
	})
}
