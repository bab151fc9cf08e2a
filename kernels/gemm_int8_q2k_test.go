package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/vembed/vembed/gguf"
)

// TestHalfSums checks the rows' half sums dx·S_h read from every
// activation layout the kernels use (interleaved by four-byte groups in
// groups of 3 and 6 rows, by block and row in groups of 16, as q+128 or,
// for the amx tier, as signed q) against the
// codes quantizeRowU8 gives each row alone, for row counts with and
// without a partial last group; row 0's zero block and non-finite one
// give 0 and NaN.
func TestHalfSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	const k = 96
	nb, kh := k/i8Block, k/16
	for _, l := range []struct {
		rows, chunk int
		signed      bool
	}{{3, 4, false}, {6, 4, false}, {4, 8, false}, {2, 8, false}, {16, i8Block, false}, {16, i8Block, true}} {
		for _, m := range []int{1, l.rows, l.rows + 2, 3*l.rows - 1} {
			t.Run(fmt.Sprintf("rows%d/chunk%d/signed%v/m%d", l.rows, l.chunk, l.signed, m), func(t *testing.T) {
				x := randVec(m*k, rng)
				clear(x[:i8Block])
				x[k-1] = float32(math.Inf(1))
				groups := (m + l.rows - 1) / l.rows
				xa, ds := make([]uint8, groups*l.rows*k), make([]float32, groups*l.rows*2*nb)
				quantizeGroups(x, m, k, l.rows, ds, quantizeRowU8, func(gi, r int, q []uint8) {
					xg := xa[gi*l.rows*k : (gi+1)*l.rows*k]
					for b := 0; b < nb; b++ {
						for i := 0; i < i8Block; i++ {
							kk := b*i8Block + i
							o := (kk/l.chunk*l.rows+r)*l.chunk + kk%l.chunk
							xg[o] = q[b*i8Block+i]
							if l.signed {
								xg[o] ^= 0x80
							}
						}
					}
				})
				got := make([]float32, m*kh)
				halfSums(got, m, k, xa, ds, l.rows, l.chunk, l.signed)
				q, d := make([]uint8, k), make([]float32, 2*nb)
				for i := 0; i < m; i++ {
					quantizeRowU8(x[i*k:(i+1)*k], q, d)
					for h := 0; h < kh; h++ {
						var s int32
						for _, c := range q[16*h : 16*h+16] {
							s += int32(c) - 128
						}
						want := d[2*(h/2)] * float32(s)
						if g := got[i*kh+h]; math.Float32bits(g) != math.Float32bits(want) {
							t.Fatalf("row %d half %d: %v, want %v", i, h, g, want)
						}
					}
					if i == 0 && (got[0] != 0 || !math.IsNaN(float64(got[kh-1]))) {
						t.Fatalf("row 0: zero block gives %v, non-finite one %v", got[0], got[kh-1])
					}
				}
			})
		}
	}
}

// TestHalfMinTypes checks what the drivers assume of the types with
// per-16 minimums: a u8 path decoder with multipliers, not a nibble one
// (the minimums are read from unsigned activation codes), no per-block
// offset of its own, and blocks of the offsets that are the type's
// blocks; and that the offsets are not all zero on random weights.
func TestHalfMinTypes(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 54))
	for typ, mins := range halfMins {
		dec, ok := u8Decoders[typ]
		if !ok || dec.nibbles || dec.unit || dec.hasMin {
			t.Fatalf("%s: halfMins needs a u8 decoder with multipliers, no nibbles, no offset: %+v", typ, dec)
		}
		if mins.blockSize*16 != dec.blockSize || mins.typeSize != dec.typeSize {
			t.Fatalf("%s: offsets in blocks of %d, %d bytes; the type's blocks hold %d values in %d bytes", typ, mins.blockSize, mins.typeSize, dec.blockSize, dec.typeSize)
		}
		w := randMatrix(t, typ, 2, 512, rng)
		fm := make([]float32, 512/16)
		mins.row(w.Data, 512/16, fm)
		nonzero := 0
		for _, v := range fm {
			if v != 0 {
				nonzero++
			}
		}
		if nonzero < len(fm)/2 {
			t.Fatalf("%s: only %d of %d offsets nonzero: %v", typ, nonzero, len(fm), fm)
		}
	}
	if !hasHalfMins(gguf.TypeQ2_K) {
		t.Fatal("Q2_K has no halfMins")
	}
}

// TestQ2KRowDecoders checks every tier's Q2_K row decoder against the
// portable one (values, factors, multipliers, half sums), for one and
// several super-blocks.
func TestQ2KRowDecoders(t *testing.T) {
	rng := rand.New(rand.NewPCG(55, 56))
	ref := u8Decoders[gguf.TypeQ2_K].row
	decs := map[string]func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32){}
	if _, u8 := archIntKernels(); u8 != nil {
		decs["avx2-int8"] = u8["avx2"].rows[gguf.TypeQ2_K]
	}
	for name, g := range archVNNIKernels() {
		decs[name] = g.dec[gguf.TypeQ2_K]
	}
	for name, row := range decs {
		if row == nil {
			continue
		}
		for _, k := range []int{256, 768, 2048} {
			w := randMatrix(t, gguf.TypeQ2_K, 3, k, rng)
			nb := k / i8Block
			for j := 0; j < w.Rows; j++ {
				src := w.Data[j*w.RowBytes() : (j+1)*w.RowBytes()]
				out := func(f func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32)) string {
					q, fd, mul, sum := make([]int8, k), make([]float32, 2*nb), make([]int16, 2*nb), make([]int32, 2*nb)
					f(src, k, q, fd, make([]float32, 2*nb), 2, mul, sum)
					return fmt.Sprint(q, fd, mul, sum)
				}
				if got, want := out(row), out(ref); got != want {
					t.Fatalf("%s k%d row %d: decoded\n%s\nthe portable decoder\n%s", name, k, j, got, want)
				}
			}
		}
	}
}

// TestQ2KHalfMins checks halfMins' Q2_K readers against each other bit
// for bit (the row one, assembly where the CPU has it, and the portable
// strided one at stride 1 and at a panel's), and the offsets against the
// float32 decoder: its value is fl(d·sc·q − dmin·m) with d·sc·q exact, so
// value − fd·sc·q is the offset within u·|value|.
func TestQ2KHalfMins(t *testing.T) {
	rng := rand.New(rand.NewPCG(57, 58))
	mins := halfMins[gguf.TypeQ2_K]
	for _, k := range []int{256, 768, 2048} {
		w := randMatrix(t, gguf.TypeQ2_K, 3, k, rng)
		for j := 0; j < w.Rows; j++ {
			src := w.Data[j*w.RowBytes() : (j+1)*w.RowBytes()]
			got, want, at := make([]float32, k/16), make([]float32, k/16), make([]float32, k/16*gemmNR)
			mins.row(src, k/16, got)
			mins.decode(src, k/16, at, gemmNR)
			q2kHalfMinsAt(src, k/16, want, 1)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(at[i*gemmNR]) != math.Float32bits(want[i]) {
					t.Fatalf("k%d row %d offset %d: %v, strided %v, the portable one %v", k, j, i, got[i], at[i*gemmNR], want[i])
				}
			}
			vals := make([]float32, k)
			decodeQ2K(src, k, vals, 1)
			q, fd, fm := intDecodeRow(w, j)
			for i, v := range vals {
				if d := float64(v) - float64(fd[i/32])*float64(q[i]); !(math.Abs(d-float64(fm[i/16])) <= u*math.Abs(float64(v))) {
					t.Fatalf("k%d row %d value %d: %v − %v·%d = %v, offset %v", k, j, i, v, fd[i/32], q[i], d, fm[i/16])
				}
			}
		}
	}
}

// FuzzQ2KDecoders feeds arbitrary bytes (any scale bits: subnormal,
// infinite, NaN) as Q2_K blocks to every tier's decoders and checks them
// against the portable ones: values, multipliers and half sums equal,
// factors and offsets equal or both NaN (the assembly converts binary16
// NaNs to quiet ones).
func FuzzQ2KDecoders(f *testing.F) {
	rng := rand.New(rand.NewPCG(59, 60))
	for _, nsb := range []int{1, 2, 3} {
		seed := make([]byte, 84*nsb)
		for i := range seed {
			seed[i] = byte(rng.Uint32())
		}
		f.Add(seed)
	}
	nan := make([]byte, 84)
	nan[80], nan[81], nan[82], nan[83] = 0x01, 0x7c, 0x00, 0xfe // a signalling NaN d, −∞ dmin
	f.Add(nan)
	sub := make([]byte, 84)
	sub[0], sub[16], sub[80], sub[82] = 0xff, 0xff, 0x01, 0x03 // subnormal d and dmin
	f.Add(sub)
	rows := map[string]func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32){}
	if _, u8 := archIntKernels(); u8 != nil {
		rows["avx2-int8"] = u8["avx2"].rows[gguf.TypeQ2_K]
	}
	for name, g := range archVNNIKernels() {
		// A GEMM without a decoder of its own decodes with the portable
		// one, the reference here.
		if row := g.dec[gguf.TypeQ2_K]; row != nil {
			rows[name] = row
		}
	}
	same := func(a, b float32) bool {
		return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		nsb := min(len(data)/84, 8)
		if nsb == 0 {
			return
		}
		src, n := data[:84*nsb], 256*nsb
		nb := n / 32
		type out struct {
			q        []int8
			fd, mins []float32
			mul      []int16
			sum      []int32
		}
		run := func(row func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32), mins func(src []byte, n int, dst []float32)) out {
			o := out{make([]int8, n), make([]float32, nb), make([]float32, n/16), make([]int16, 2*nb), make([]int32, 2*nb)}
			row(src, n, o.q, o.fd, make([]float32, nb), 1, o.mul, o.sum)
			mins(src, n/16, o.mins)
			return o
		}
		want := run(u8RowQ2K, func(src []byte, n int, dst []float32) { q2kHalfMinsAt(src, n, dst, 1) })
		for name, row := range rows {
			got := run(row, halfMins[gguf.TypeQ2_K].row)
			if !slices.Equal(got.q, want.q) || !slices.Equal(got.mul, want.mul) || !slices.Equal(got.sum, want.sum) {
				t.Fatalf("%s: values, multipliers or sums differ from the portable decoder", name)
			}
			for i := range got.fd {
				if !same(got.fd[i], want.fd[i]) {
					t.Fatalf("%s: factor %d is %v, the portable decoder's %v", name, i, got.fd[i], want.fd[i])
				}
			}
			for i := range got.mins {
				if !same(got.mins[i], want.mins[i]) {
					t.Fatalf("%s: offset %d is %v, the portable one %v", name, i, got.mins[i], want.mins[i])
				}
			}
		}
	})
}

// TestQ2KSpecialScales multiplies Q2_K weights whose scale d or minimum
// scale dmin is a NaN, an infinity, a subnormal, the largest binary16 or
// zero, one special per weight row, on every tier: the rows with a NaN or
// infinite scale must give non-finite outputs, the others finite ones
// (whatever path the tier takes: the integer kernels plus the minimums'
// float32 product, or the float32 decoders), and the integer tiers must
// agree bit for bit, as their shared arithmetic name promises.
func TestQ2KSpecialScales(t *testing.T) {
	saved := Active()
	defer Use(saved)
	rng := rand.New(rand.NewPCG(63, 64))
	const k, n, m = 512, 40, 9
	w := randMatrix(t, gguf.TypeQ2_K, n, k, rng)
	specials := []uint16{0x7e00, 0x7c01, 0x7c00, 0xfc00, 0x0001, 0x8001, 0x03ff, 0x7bff, 0x0000}
	bad := func(v uint16) bool { return v&0x7c00 == 0x7c00 }
	// Row r: special r%9 as d (r < 9) or dmin (9 ≤ r < 18), in
	// super-block r%2 of the row.
	for r := 0; r < 2*len(specials); r++ {
		off := r*w.RowBytes() + 84*(r%2) + 80 + 2*(r/len(specials))
		v := specials[r%len(specials)]
		w.Data[off], w.Data[off+1] = byte(v), byte(v>>8)
	}
	x := randVec(m*k, rng)
	var int8Ref []float32
	for _, tier := range Available() {
		Use(tier)
		out := make([]float32, m*n)
		MatMul(out, x, m, w, nil)
		for i, v := range out {
			r := i % n
			wantBad := r < 2*len(specials) && bad(specials[r%len(specials)])
			if finite := !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0); finite == wantBad {
				t.Errorf("%s: dst[%d][%d] = %v (weight row %d's special scale %#04x)", tier, i/n, r, v, r, specials[r%len(specials)])
			}
		}
		if !int8Tiers[tier] {
			continue
		}
		if int8Ref == nil {
			int8Ref = out
			continue
		}
		for i := range out {
			if math.Float32bits(out[i]) != math.Float32bits(int8Ref[i]) {
				t.Fatalf("%s: dst[%d][%d] = %v, the first integer tier's %v", tier, i/n, i%n, out[i], int8Ref[i])
			}
		}
	}
}
