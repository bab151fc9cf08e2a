package kernels

import (
	"encoding/binary"
	"unsafe"

	"github.com/vembed/vembed/gguf"
)

// The u8×s8 path of the integer GEMM, for weight types whose integer
// values fit in ±32: activations as unsigned bytes q+128, weights as signed
// bytes, VPMADDUBSW (two products per int16), int16 sums over two or four k
// steps, then VPMADDWD by a per-column int16 multiplier into int32
// (kernelU8x3x16). Per MAC it issues fewer instructions than the int16
// path, and fewer still on the multiply pipes (BenchmarkInt8Probe,
// BenchmarkI8Kernel).
//
// The +128 makes the sums Σ m·w·(q+128); the kernel starts each block's
// accumulators at −128·Σ m·w, a per-column constant the decoder computes,
// so the block sums are exactly Σ m·w·q. The multiplier m is 1, or the
// sub-block scale of the types that have one per 16 values (Q6_K, Q3_K
// signed, Q2_K 0..15), so that every block still has a single float
// factor fd (Q2_K's minimums, one per 16 values too, are a float32
// product of their own: gemm_int8_q2k.go).
// Saturation: a group's int16 sum is at most steps·2·255·max|w| < 2¹⁵
// (steps 4 for |w| ≤ 16, else 2 for |w| ≤ 32); the int32 block sums stay
// below 32·127·32·128 < 2²⁴, exact in float32.
//
// The types whose values are the nibbles 0..15 with multiplier 1 (Q4_K,
// Q4_1) go to the nibble kernel when the tier has one (kernelS8x6x16): the
// weights become VPMADDUBSW's unsigned operand and the activations the
// signed bytes q, so a pair's sum is at most 2·15·127 and a whole block
// of eight k steps sums in int16 with no +128 to undo; six rows per call
// load each weight vector for twice the rows. The integer block sums are
// the same, and so, through the same epilogue, is every result.

const (
	u8Rows  = 3                // rows per microkernel call
	u8Aux   = 3 * gemmNR       // int32 per block of a panel: start, m(k<16), m(k≥16)
	u8Panel = i8Block * gemmNR // weight bytes per block of a panel

	u8FlagSteps4 = 4 // kernel flag: sum four k steps in int16

	s8Rows = 6 // rows per call of the nibble kernel (u8Tier.nib)
)

// u8Kernel computes, for ng row groups, the rows×gemmNR tiles c (+)= a·bᵀ
// over nb blocks, rows being u8Rows (s8Rows for a nibble kernel): group
// g's activations start at a[g*as], its scales at ds[g*dss], its output at
// c[g*rows*ldc]; see kernelU8x3x16 for the layouts. flags as for
// i8Kernel, and u8FlagSteps4.
type u8Kernel func(ng, nb int, a []uint8, as int, ds []float32, dss int, b []int8, aux []int32, f []float32, t []float32, c []float32, ldc int, flags int)

// u8Decoder turns stored weights into the signed bytes of the u8 path.
type u8Decoder struct {
	blockSize, typeSize int
	hasMin              bool
	// steps4 is set when |q| ≤ 16, so that the kernel may sum four k
	// steps in int16 (else two, for |q| ≤ 32).
	steps4 bool
	// unit is set when every multiplier is 1 (the types without
	// sub-block scales), so the panel's multipliers are written once.
	unit bool
	// nibbles is set when the values are 0..15 and unit is set: the
	// nibble kernel (u8Tier.nib) takes them as the unsigned operand.
	nibbles bool
	// row decodes n values of one weight row at src into q (|q| ≤ 32) and,
	// per 32-value block b, fd[b*fs], fm[b*fs] (when hasMin), the int16
	// multipliers of its two halves, mul[2b], mul[2b+1] (not written when
	// unit: they are 1), and the sums of q over the halves, sum[2b],
	// sum[2b+1]: value i of block b is fd·m·q[i] + fm.
	row func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32)
}

// u8Decoders lists the weight types of the u8 path.
var u8Decoders = map[gguf.Type]u8Decoder{
	gguf.TypeQ4_K: {256, 144, true, true, true, true, u8RowQ4K},
	gguf.TypeQ5_K: {256, 176, true, false, true, false, u8RowQ5K},
	gguf.TypeQ6_K: {256, 210, false, false, false, false, u8RowQ6K},
	gguf.TypeQ3_K: {256, 110, false, true, false, false, u8RowQ3K},
	gguf.TypeQ2_K: {256, 84, false, true, false, false, u8RowQ2K}, // and halfMins
	gguf.TypeQ4_0: {32, 18, false, true, true, false, u8RowQ4_0},
	gguf.TypeQ4_1: {32, 20, true, true, true, true, u8RowQ4_1},
	gguf.TypeQ5_0: {32, 22, false, false, true, false, u8RowQ5_0},
	gguf.TypeQ5_1: {32, 24, true, false, true, false, u8RowQ5_1},
}

func u8RowKMin(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32, size int, five bool) {
	clear(sum[:2*(n/32)])
	for b := 0; b < n/256; b++ {
		blk := src[size*b : size*b+size]
		d, dmin := f16(blk), f16(blk[2:])
		scales := blk[4:16]
		var qh, qs []byte
		if five {
			qh, qs = blk[16:48], blk[48:176]
		} else {
			qs = blk[16:144]
		}
		for c := 0; c < 4; c++ {
			s0 := 8*b + 2*c
			sc0, m0 := scaleMinK4(scales, 2*c)
			sc1, m1 := scaleMinK4(scales, 2*c+1)
			fd[s0*fs], fm[s0*fs] = d*float32(sc0), -(dmin * float32(m0))
			fd[(s0+1)*fs], fm[(s0+1)*fs] = d*float32(sc1), -(dmin * float32(m1))
			lo, hi := bytesOf(q[32*s0:32*s0+32]), bytesOf(q[32*s0+32:32*s0+64])
			// Eight values at a time in a uint64 (nibbles split by masks,
			// the fifth bits moved into place by shifts).
			for i := 0; i < 32; i += 8 {
				v := le64(qs[32*c+i:])
				l, h := v&lo4, v>>4&lo4
				if five {
					bits := le64(qh[i:]) >> (2 * c)
					l |= (bits & lo1) << 4
					h |= (bits >> 1 & lo1) << 4
				}
				put64(lo[i:], l)
				put64(hi[i:], h)
				sum[2*s0+i/16] += byteSum(l)
				sum[2*s0+2+i/16] += byteSum(h)
			}
		}
	}
}

func u8RowQ4K(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
	u8RowKMin(src, n, q, fd, fm, fs, mul, sum, 144, false)
}

func u8RowQ5K(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
	u8RowKMin(src, n, q, fd, fm, fs, mul, sum, 176, true)
}

// u8RowQ6K keeps q−32 as the value and the signed scale of each 16 values
// as its multiplier.
func u8RowQ6K(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
	for b := 0; b < n/256; b++ {
		blk := src[210*b : 210*b+210]
		d := f16(blk[208:])
		for half := 0; half < 2; half++ {
			ql, qh := blk[64*half:64*half+64], blk[128+32*half:128+32*half+32]
			sc := blk[192+8*half : 192+8*half+8]
			for j := 0; j < 4; j++ {
				s := 8*b + 4*half + j
				fd[s*fs] = d
				mul[2*s], mul[2*s+1] = int16(int8(sc[2*j])), int16(int8(sc[2*j+1]))
				o := bytesOf(q[32*s : 32*s+32])
				lq, sh := ql[32*(j&1):32*(j&1)+32], 4*(j>>1)
				sum[2*s], sum[2*s+1] = -32*16, -32*16
				for i := 0; i < 32; i += 8 {
					u := le64(lq[i:])>>sh&lo4 | (le64(qh[i:])>>(2*j)&lo2)<<4
					sum[2*s+i/16] += int32(byteSum16(u))
					// u−32 per byte for u in 0..63: flip bit 5, and set
					// bits 6 and 7 (the sign) where bit 5 was clear.
					neg := ^u & bit5
					put64(o[i:], u^bit5|neg<<1|neg<<2)
				}
			}
		}
	}
}

// u8RowQ3K keeps the 3-bit value and the signed 6-bit scale of each 16
// values as its multiplier.
func u8RowQ3K(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
	for b := 0; b < n/256; b++ {
		blk := src[110*b : 110*b+110]
		hmask, qs := blk[:32], blk[32:96]
		sc := q3kScales(blk[96:108])
		d := f16(blk[108:])
		for half := 0; half < 2; half++ {
			for j := 0; j < 4; j++ {
				s := 8*b + 4*half + j
				fd[s*fs] = d
				mul[2*s], mul[2*s+1] = int16(sc[8*half+2*j]), int16(sc[8*half+2*j+1])
				o := q[32*s : 32*s+32]
				bit := 4*half + j
				sum[2*s], sum[2*s+1] = 0, 0
				for i := range o {
					v := int8(qs[32*half+i]>>(2*j)) & 3
					if hmask[i]>>bit&1 == 0 {
						v -= 4
					}
					o[i] = v
					sum[2*s+i/16] += int32(v)
				}
			}
		}
	}
}

// u8Row4 decodes 32 four-bit values from 16 bytes, minus bias, and
// their sums over the two halves.
func u8Row4(o []int8, qs []byte, bias int8, sum []int32) {
	var s0, s1 int32
	for j, c := range qs[:16] {
		o[j], o[j+16] = int8(c&15)-bias, int8(c>>4)-bias
		s0 += int32(o[j])
		s1 += int32(o[j+16])
	}
	sum[0], sum[1] = s0, s1
}

func u8RowQ4_0(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
	for b := 0; b < n/32; b++ {
		blk := src[18*b : 18*b+18]
		fd[b*fs] = f16(blk)
		u8Row4(q[32*b:32*b+32], blk[2:18], 8, sum[2*b:])
	}
}

func u8RowQ4_1(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
	for b := 0; b < n/32; b++ {
		blk := src[20*b : 20*b+20]
		fd[b*fs], fm[b*fs] = f16(blk), f16(blk[2:])
		u8Row4(q[32*b:32*b+32], blk[4:20], 0, sum[2*b:])
	}
}

// u8Row5 decodes 32 five-bit values: nibbles at qs, fifth bits in h, and
// their sums over the two halves.
func u8Row5(o []int8, qs []byte, h uint32, bias int8, sum []int32) {
	var s0, s1 int32
	for j, c := range qs[:16] {
		o[j] = int8(c&15|byte(h>>j&1)<<4) - bias
		o[j+16] = int8(c>>4|byte(h>>(j+16)&1)<<4) - bias
		s0 += int32(o[j])
		s1 += int32(o[j+16])
	}
	sum[0], sum[1] = s0, s1
}

func u8RowQ5_0(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
	for b := 0; b < n/32; b++ {
		blk := src[22*b : 22*b+22]
		fd[b*fs] = f16(blk)
		u8Row5(q[32*b:32*b+32], blk[6:22], le32(blk[2:]), 16, sum[2*b:])
	}
}

func u8RowQ5_1(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
	for b := 0; b < n/32; b++ {
		blk := src[24*b : 24*b+24]
		fd[b*fs], fm[b*fs] = f16(blk), f16(blk[2:])
		u8Row5(q[32*b:32*b+32], blk[8:24], le32(blk[4:]), 0, sum[2*b:])
	}
}

// u8AuxCol writes the kernel's per-block data of column col of a panel
// from a decoded row's multipliers and half sums: the starting sum
// −128·Σ m·q and the two multipliers, duplicated into both int16 halves of
// an int32 lane (the lane VPMADDWD pairs).
func u8AuxCol(mul []int16, sum []int32, nb int, aux []int32, col int) {
	for b := 0; b < nb; b++ {
		m0, m1 := mul[2*b], mul[2*b+1]
		a := aux[b*u8Aux : (b+1)*u8Aux]
		a[col] = -128 * (int32(m0)*sum[2*b] + int32(m1)*sum[2*b+1])
		a[gemmNR+col] = int32(uint16(m0)) | int32(uint16(m0))<<16
		a[2*gemmNR+col] = int32(uint16(m1)) | int32(uint16(m1))<<16
	}
}

// u8AuxSums is u8AuxCol for multipliers that are all 1, whose entries
// u8AuxUnit wrote beforehand: only the start values change per column.
func u8AuxSums(sum []int32, nb int, aux []int32, col int) {
	sum = sum[:2*nb]
	for b := 0; b < nb; b++ {
		aux[b*u8Aux+col] = -128 * (sum[2*b] + sum[2*b+1])
	}
}

// u8AuxUnit writes the multiplier entries (1 in both int16 halves) of
// every column of nb blocks of aux.
func u8AuxUnit(aux []int32, nb int) {
	for b := 0; b < nb; b++ {
		m := aux[b*u8Aux+gemmNR : (b+1)*u8Aux]
		for i := range m {
			m[i] = 1 | 1<<16
		}
	}
}

// SWAR helpers: eight bytes in a uint64.
const (
	lo4  = 0x0f0f0f0f0f0f0f0f
	lo2  = 0x0303030303030303
	lo1  = 0x0101010101010101
	bit5 = 0x2020202020202020
)

func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

func put64(b []byte, v uint64) { binary.LittleEndian.PutUint64(b, v) }

// byteSum adds the eight bytes of v; the total must be below 256.
func byteSum(v uint64) int32 { return int32(v * lo1 >> 56) }

// byteSum16 adds the eight bytes of v through 16-bit lanes (any bytes).
func byteSum16(v uint64) uint64 {
	const lo8 = 0x00ff00ff00ff00ff
	w := v&lo8 + v>>8&lo8
	return w * 0x0001000100010001 >> 48
}

// bytesOf views signed bytes as bytes.
func bytesOf(q []int8) []byte {
	if len(q) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&q[0])), len(q))
}

// u8Tier is what a tier plugs into the u8 path.
type u8Tier struct {
	kern u8Kernel
	// nib, optional, is the kernel of the nibbles decoders: s8Rows rows
	// per group, activations as signed bytes q, weights as the unsigned
	// operand of VPMADDUBSW, a whole block summed in int16 (at most
	// 8·2·15·127 < 2¹⁵), aux not read. Its sums, hence its results, equal
	// kern's.
	nib u8Kernel
	// pack8 moves the 4-byte groups of eight decoded rows (kc bytes
	// each, kc apart) into columns 0..7 of a panel: group p of row r to
	// dst[(p*gemmNR+r)*4:].
	pack8 func(src []int8, kc int, dst []int8)
	// quant is quantizeRowU8 or a faster equal.
	quant func(x []float32, q []uint8, ds []float32)
	// rows, optional by type, replace u8Decoders' row with a faster
	// equal.
	rows map[gguf.Type]func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32)
}

// gemmU8 is MatMul through the u8 kernels; w's type must be in u8Decoders.
// The types of halfMins must not be nibbles (their minimums are read from
// the unsigned activations).
func gemmU8(dst, x []float32, m int, w *Matrix, bias []float32, g *u8Tier) {
	dec := u8Decoders[w.Type]
	if row := g.rows[w.Type]; row != nil {
		dec.row = row
	}
	n, k := w.Rows, w.Cols
	if m <= 0 || n <= 0 {
		return
	}
	rows, kern, signed := u8Rows, g.kern, false
	if dec.nibbles && g.nib != nil {
		rows, kern, signed = s8Rows, g.nib, true
	}
	nbRow := k / i8Block
	groups := (m + rows - 1) / rows
	xap, dsp := byteScratch.get(groups*rows*k), getScratch(groups*rows*2*nbRow)
	defer byteScratch.put(xap)
	defer putScratch(dsp)
	xa, ds := *xap, *dsp
	// Activations of a group of rows, interleaved by 4-byte groups in the
	// order the kernel broadcasts them; rows past m are zero (q = 0 is
	// the byte 128, or 0 signed). q+128 becomes the signed byte q by
	// flipping its top bit.
	var flip uint32
	if signed {
		flip = 0x80808080
	}
	quantizeGroups(x, m, k, rows, ds, g.quant, func(gi, r int, q []uint8) {
		xg := xa[gi*rows*k : (gi+1)*rows*k]
		for p := 0; p < k/4; p++ {
			o := (p*rows + r) * 4
			binary.LittleEndian.PutUint32(xg[o:], binary.LittleEndian.Uint32(q[4*p:])^flip)
		}
	})

	// The per-16 minimums (halfMins) are a float32 product written to dst
	// first (with the bias); the kernels then add to it from the first k
	// slice on.
	preset := false
	if mins, ok := halfMins[w.Type]; ok {
		halfMinProduct(dst, m, w, bias, mins, xa, ds, rows, 4)
		bias, preset = nil, true
	}

	rowBytes := w.RowBytes()
	mc, mBlocks, nBlocks := int8Blocking(m, n, rows)
	flagMin := 0
	if dec.hasMin {
		flagMin = i8FlagMin
	}
	if dec.steps4 {
		flagMin |= u8FlagSteps4
	}
	const kb = gemmKC / i8Block

	parallelFor(mBlocks*nBlocks, func(item int) {
		m0, m1, n0, n1, panels := gemmTile(item, nBlocks, mc, m, n, gemmNR)

		sc := getByteTile(u8Panels, panels, rows*gemmNR)
		defer sc.put()
		pan, rowBuf, aux, mul, sum := sc.pan, sc.rowBuf, sc.aux, sc.mul, sc.sum
		fac, tile, edge := sc.fac, sc.tile, sc.edge

		if dec.unit && !signed {
			u8AuxUnit(aux, panels*kb)
		}
		for k0 := 0; k0 < k; k0 += gemmKC {
			kc := min(gemmKC, k-k0)
			nb := kc / i8Block
			koff := k0 / dec.blockSize * dec.typeSize
			for p := 0; p < panels; p++ {
				pp := pan[p*nb*u8Panel : (p+1)*nb*u8Panel]
				fs := fac[p*nb*i8PanelF : (p+1)*nb*i8PanelF]
				as := aux[p*nb*u8Aux : (p+1)*nb*u8Aux]
				row0 := n0 + p*gemmNR
				for r := 0; r < gemmNR; r++ {
					rb := rowBuf[r*kc : (r+1)*kc]
					if row := row0 + r; row < n1 {
						src := w.Data[row*rowBytes+koff:]
						prefetchSlice(src, k-k0, kc, dec.blockSize, dec.typeSize)
						dec.row(src, kc, rb, fs[r:], fs[gemmNR+r:], i8PanelF, mul, sum)
					} else {
						clear(rb)
						clear(mul)
						clear(sum)
						for b := 0; b < nb; b++ {
							fs[b*i8PanelF+r], fs[b*i8PanelF+gemmNR+r] = 0, 0
						}
					}
					switch {
					case signed: // the nibble kernel reads no aux
					case dec.unit:
						u8AuxSums(sum, nb, as, r)
					default:
						u8AuxCol(mul, sum, nb, as, r)
					}
				}
				g.pack8(rowBuf, kc, pp)
				g.pack8(rowBuf[8*kc:], kc, pp[4*8:])
			}
			flags, acc := flagMin, k0 > 0 || preset
			if acc {
				flags |= i8FlagAcc
			}
			for p := 0; p < panels; p++ {
				j0 := p * gemmNR
				nr := min(gemmNR, n1-n0-j0)
				pp := pan[p*nb*u8Panel : (p+1)*nb*u8Panel]
				fs := fac[p*nb*i8PanelF : (p+1)*nb*i8PanelF]
				as8 := aux[p*nb*u8Aux : (p+1)*nb*u8Aux]
				as, dss := rows*k, rows*2*nbRow
				tileRows(dst[n0+j0:], n, m0, m1, rows, nr, acc, edge, func(groups, i0 int, out []float32, ldo int) {
					a := xa[i0*k+k0*rows:]
					dsa := ds[(i0*nbRow+k0/i8Block*rows)*2:]
					kern(groups, nb, a, as, dsa, dss, pp, as8, fs, tile, out, ldo, flags)
				})
			}
		}
		addBias(dst, n, bias, m0, m1, n0, n1)
	})
}

// pack8U8Go is the portable u8Tier.pack8.
func pack8U8Go(src []int8, kc int, dst []int8) {
	for r := 0; r < 8; r++ {
		row := src[r*kc : (r+1)*kc]
		for p := 0; p < kc/4; p++ {
			copy(dst[(p*gemmNR+r)*4:(p*gemmNR+r)*4+4], row[4*p:4*p+4])
		}
	}
}

// kernelU8Go is the portable u8Kernel: the same integer sums (without
// the +128 detour, which cancels exactly) and epilogue as the assembly.
func kernelU8Go(ng, nb int, a []uint8, as int, ds []float32, dss int, b []int8, aux []int32, f []float32, t []float32, c []float32, ldc int, flags int) {
	for g := 0; g < ng; g++ {
		xa := a[g*as:]
		intTile(u8Rows, nb, ds[g*dss:], f, t, c[g*u8Rows*ldc:], ldc, flags, func(bb, r, col int) int32 {
			pb, ab := b[bb*u8Panel:(bb+1)*u8Panel], aux[bb*u8Aux:(bb+1)*u8Aux]
			xb := xa[bb*i8Block*u8Rows : (bb+1)*i8Block*u8Rows]
			s := ab[col]
			for kk := 0; kk < i8Block; kk++ {
				mq := int32(int16(ab[gemmNR*(1+kk/16)+col]))
				xv := int32(xb[(kk/4*u8Rows+r)*4+kk%4])
				s += mq * int32(pb[(kk/4*gemmNR+col)*4+kk%4]) * xv
			}
			return s
		})
	}
}

// kernelS8Go is the portable nib kernel (u8Tier.nib): activations are the
// signed bytes q, aux is not read.
func kernelS8Go(ng, nb int, a []uint8, as int, ds []float32, dss int, b []int8, aux []int32, f []float32, t []float32, c []float32, ldc int, flags int) {
	for g := 0; g < ng; g++ {
		xa := a[g*as:]
		intTile(s8Rows, nb, ds[g*dss:], f, t, c[g*s8Rows*ldc:], ldc, flags, func(bb, r, col int) int32 {
			pb := b[bb*u8Panel : (bb+1)*u8Panel]
			xb := xa[bb*i8Block*s8Rows : (bb+1)*i8Block*s8Rows]
			var s int32
			for kk := 0; kk < i8Block; kk++ {
				s += int32(pb[(kk/4*gemmNR+col)*4+kk%4]) * int32(int8(xb[(kk/4*s8Rows+r)*4+kk%4]))
			}
			return s
		})
	}
}

// bytePanels is the layout of a byte tier's weight panels: their columns
// and, per 32-value block, a panel's weight bytes, aux int32s (starts and
// multipliers) and factors.
type bytePanels struct{ nr, weights, aux, fac int }

var u8Panels = bytePanels{gemmNR, u8Panel, u8Aux, i8PanelF}

// byteTile is a worker's scratch for one tile of a byte-kernel product
// (gemmU8, gemmVNNI), from the pools: the weights, aux and factors of its
// panels for a k slice, the decoders' row buffer (nr rows of a k slice)
// and their multipliers and sums (one row), the kernel's tile and the
// edge tile.
type byteTile struct {
	pan, rowBuf     []int8
	aux, sum        []int32
	mul             []int16
	fac, tile, edge []float32

	bp *[]byte
	ap *[]int16
	fp *[]float32
}

// getByteTile takes the scratch for panels panels of layout g and tiles of
// tileLen floats; give it back with put.
func getByteTile(g bytePanels, panels, tileLen int) byteTile {
	const kb = gemmKC / i8Block
	var s byteTile
	np := panels * kb * g.weights
	s.bp = byteScratch.get(np + g.nr*gemmKC)
	s.pan = int8s((*s.bp)[:np])
	s.rowBuf = int8s((*s.bp)[np : np+g.nr*gemmKC])
	na := panels * kb * g.aux
	s.ap = i16Scratch.get(2*na + 2*kb + 4*kb)
	s.aux = int32s((*s.ap)[:2*na])
	s.mul = (*s.ap)[2*na : 2*na+2*kb]
	s.sum = int32s((*s.ap)[2*na+2*kb : 2*na+2*kb+4*kb])
	nf := panels * kb * g.fac
	s.fp = getScratch(nf + 2*tileLen)
	s.fac, s.tile, s.edge = (*s.fp)[:nf], (*s.fp)[nf:nf+tileLen], (*s.fp)[nf+tileLen:nf+2*tileLen]
	return s
}

func (s *byteTile) put() {
	putScratch(s.fp)
	i16Scratch.put(s.ap)
	byteScratch.put(s.bp)
}

// intTile is the epilogue of the portable kernels for one group of rows
// rows: per block bb, row r and column col, the exact integer sum
// dot(bb, r, col) scaled as the assembly does (t the scratch tile).
func intTile(rows, nb int, ds, f, t, c []float32, ldc, flags int, dot func(bb, r, col int) int32) {
	t = t[:rows*gemmNR]
	clear(t)
	for bb := 0; bb < nb; bb++ {
		fb := f[bb*i8PanelF : (bb+1)*i8PanelF]
		for r := 0; r < rows; r++ {
			dx, dxs := ds[(bb*rows+r)*2], ds[(bb*rows+r)*2+1]
			tr := t[r*gemmNR : (r+1)*gemmNR]
			for col := range tr {
				v := fma32(float32(dot(bb, r, col)), dx*fb[col], tr[col])
				if flags&i8FlagMin != 0 {
					v = fma32(fb[gemmNR+col], dxs, v)
				}
				tr[col] = v
			}
		}
	}
	for r := 0; r < rows; r++ {
		cr, tr := c[r*ldc:r*ldc+gemmNR], t[r*gemmNR:(r+1)*gemmNR]
		if flags&i8FlagAcc != 0 {
			for j, v := range tr {
				cr[j] += v
			}
		} else {
			copy(cr, tr)
		}
	}
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// quantizeRowU8 is quantizeRowI8 for the u8 path: q is stored as q+128.
func quantizeRowU8(x []float32, q []uint8, ds []float32) {
	var buf [i8Block]int16
	for b := 0; b < len(x)/i8Block; b++ {
		quantizeRowI8(x[b*i8Block:(b+1)*i8Block], buf[:], ds[2*b:2*b+2])
		for j, v := range buf {
			q[b*i8Block+j] = uint8(v + 128)
		}
	}
}
