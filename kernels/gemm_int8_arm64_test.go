package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// randVNNIOperands fills the operands of a vnniKernel call of ng groups
// of rows rows over nb blocks of span panels with random values: codes
// q+128 of every byte, weights and multipliers up to ±maxW and ±maxM (1 when maxM is 0), and
// the starts −128·Σ m·w that make the unsigned kernels' sums the signed
// ones.
func randVNNIOperands(rng *rand.Rand, ng, nb, rows, span, maxW, maxM int) (a []uint8, ds []float32, b []int8, aux []int32, f []float32) {
	a = make([]uint8, ng*rows*nb*i8Block)
	for i := range a {
		a[i] = uint8(rng.IntN(256))
	}
	ds = make([]float32, ng*rows*2*nb)
	for i := range ds {
		ds[i] = float32(rng.NormFloat64())
	}
	b = make([]int8, span*nb*vnniPanel)
	for i := range b {
		b[i] = int8(rng.IntN(2*maxW+1) - maxW)
	}
	aux = make([]int32, span*nb*vnniAux)
	f = make([]float32, span*nb*vnniPanelF)
	for i := range f {
		f[i] = float32(rng.NormFloat64())
	}
	for j := 0; j < span*nb; j++ {
		pb, ab := b[j*vnniPanel:], aux[j*vnniAux:]
		for col := 0; col < vnniNR; col++ {
			m0, m1 := int32(1), int32(1) // a unit kernel's
			if maxM > 0 {
				m0, m1 = int32(rng.IntN(2*maxM+1)-maxM), int32(rng.IntN(2*maxM+1)-maxM)
			}
			var s0, s1 int32
			for kk := 0; kk < i8Block; kk++ {
				w := int32(pb[(kk/4*vnniNR+col)*4+kk%4])
				if kk < 16 {
					s0 += w
				} else {
					s1 += w
				}
			}
			ab[col], ab[vnniNR+col], ab[2*vnniNR+col] = -128*(m0*s0+m1*s1), m0, m1
		}
	}
	return a, ds, b, aux, f
}

// rechunk returns the activations a of ng groups of rows rows (nb blocks
// each), interleaved by four-byte groups, interleaved by chunk bytes
// instead (chunk p of row r at (p·rows+r)·chunk).
func rechunk(a []uint8, ng, nb, rows, chunk int) []uint8 {
	out := make([]uint8, len(a))
	k := nb * i8Block
	for g := 0; g < ng; g++ {
		src, dst := a[g*rows*k:], out[g*rows*k:]
		for r := 0; r < rows; r++ {
			for kk := 0; kk < k; kk++ {
				dst[(kk/chunk*rows+r)*chunk+kk%chunk] = src[(kk/4*rows+r)*4+kk%4]
			}
		}
	}
	return out
}

// rechunkPanels returns the weight panels b (4-byte groups, column c's
// group p at (p·vnniNR+c)·4) in eight-byte chunks (pack8S8x8's layout).
func rechunkPanels(b []int8) []int8 {
	out := make([]int8, len(b))
	for blk := 0; blk < len(b)/vnniPanel; blk++ {
		src, dst := b[blk*vnniPanel:], out[blk*vnniPanel:]
		for c := 0; c < vnniNR; c++ {
			for kk := 0; kk < i8Block; kk++ {
				dst[(kk/8*vnniNR+c)*8+kk%8] = src[(kk/4*vnniNR+c)*4+kk%4]
			}
		}
	}
	return out
}

// TestARMInt8Kernels checks the SDOT and SMMLA kernels against the
// portable kernel of their geometry, bit for bit, on random operands
// (the SMMLA ones in their eight-byte layouts): several groups and
// blocks, every flag, weights over the whole int8 range (neither
// instruction has intermediate sums to saturate). The portable epilogue
// rounds a float64 FMA to float32, which differs from FMLA only in rare
// ties; the inputs are fixed, so a difference is a wrong kernel.
func TestARMInt8Kernels(t *testing.T) {
	if !hasDotProd {
		t.Skip("no dot product on this CPU")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		name       string
		has        bool
		kern       vnniKernel
		rows, span int
		mul        bool
		chunk      int
	}{
		{"sdot/unit4x16", hasDotProd, vnniAsm(4, 1, kernelSDOTUnit4x16), 4, 1, false, 4},
		{"sdot/mul2x16", hasDotProd, vnniAsm(2, 1, kernelSDOTMul2x16), 2, 1, true, 4},
		{"smmla/unit4x16", hasI8MM, vnniAsm(4, 1, kernelSMMLAUnit4x16), 4, 1, false, 8},
		{"smmla/mul2x16", hasI8MM, vnniAsm(2, 1, kernelSMMLAMul2x16), 2, 1, true, 8},
	} {
		if !c.has {
			t.Logf("%s: not on this CPU", c.name)
			continue
		}
		ref := vnniKernelGo(c.rows, c.span)
		for _, flags := range []int{0, i8FlagAcc, i8FlagMin, i8FlagAcc | i8FlagMin} {
			if c.mul {
				flags |= vnniFlagMul
			}
			for _, shape := range [][2]int{{1, 1}, {3, 2}, {2, 8}} {
				ng, nb := shape[0], shape[1]
				maxM := 0
				if c.mul {
					maxM = 127
				}
				a, ds, b, aux, f := randVNNIOperands(rng, ng, nb, c.rows, c.span, 127, maxM)
				width := c.span * vnniNR
				ldc := width + 3
				c0 := make([]float32, ng*c.rows*ldc)
				for i := range c0 {
					c0[i] = float32(rng.NormFloat64())
				}
				want, got := append([]float32(nil), c0...), append([]float32(nil), c0...)
				tile := make([]float32, c.rows*width)
				ref(ng, nb, a, c.rows*nb*i8Block, ds, c.rows*2*nb, b, aux, f, tile, want, ldc, flags)
				if c.chunk == 8 {
					a, b = rechunk(a, ng, nb, c.rows, 8), rechunkPanels(b)
				}
				c.kern(ng, nb, a, c.rows*nb*i8Block, ds, c.rows*2*nb, b, aux, f, tile, got, ldc, flags)
				if err := firstDiff(got, want); err != nil {
					t.Errorf("%s flags %d ng %d nb %d: %v", c.name, flags, ng, nb, err)
				}
			}
		}
	}
}

// firstDiff reports the first value of got whose bits differ from want's.
func firstDiff(got, want []float32) error {
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			return fmt.Errorf("[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	return nil
}

// TestQuantizeRowU8NEON checks the NEON quantizer against quantizeRowU8,
// bit for bit: random blocks of several scales, a block of zeros, one of
// tiny values, ones with ±Inf and NaN, one of ±1 (every |q| 127) and one
// of halves (x·(1/d) at .5, rounded to even).
func TestQuantizeRowU8NEON(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const nb = 12
	x := make([]float32, nb*i8Block)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * math.Pow(10, float64(i/i8Block%5-2)))
	}
	blk := func(b int) []float32 { return x[b*i8Block : (b+1)*i8Block] }
	clear(blk(5))
	for i := range blk(6) {
		blk(6)[i] = 1e-35
	}
	blk(7)[3] = float32(math.Inf(-1))
	blk(8)[9] = float32(math.NaN())
	for i := range blk(9) {
		blk(9)[i] = float32(1 - 2*(i%2))
	}
	for i := range blk(10) {
		blk(10)[i] = float32(i) - 15.5 // 127/16 steps: x·(1/d) hits halves
	}
	blk(10)[31] = 127
	want, got := make([]uint8, len(x)), make([]uint8, len(x))
	wd, gd := make([]float32, 2*nb), make([]float32, 2*nb)
	quantizeRowU8(x, want, wd)
	quantizeRowU8NEON(x, got, gd)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("q[%d] (block %d) = %d, want %d", i, i/i8Block, got[i], want[i])
		}
	}
	if err := firstDiff(gd, wd); err != nil {
		t.Fatalf("ds: %v", err)
	}
}

// TestQuantizeStridedNEON checks the NEON quantizer that writes the
// interleaved activations directly against quantizeRowU8 and the
// interleaving, for SDOT's four-byte and SMMLA's eight-byte groups: the
// codes in place, the bytes between them left alone, the same scales; on
// random blocks, one of zeros and one with an infinity (the special
// blocks' path).
func TestQuantizeStridedNEON(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	const nb, rows = 5, 3
	x := make([]float32, nb*i8Block)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	clear(x[i8Block : 2*i8Block])
	x[3*i8Block+7] = float32(math.Inf(1))
	q, wd := make([]uint8, len(x)), make([]float32, 2*nb)
	quantizeRowU8(x, q, wd)
	for _, chunk := range []int{4, 8} {
		stride := rows * chunk
		want, got := make([]uint8, rows*len(x)), make([]uint8, rows*len(x))
		for i := range want {
			want[i] = uint8(i)
			got[i] = want[i]
		}
		for p := 0; p < len(x)/chunk; p++ {
			copy(want[p*stride+chunk:p*stride+2*chunk], q[p*chunk:(p+1)*chunk])
		}
		gd := make([]float32, 2*nb)
		quantizeStridedNEON(chunk)(x, got[chunk:], stride, gd)
		if !slices.Equal(got, want) {
			t.Errorf("chunk %d: the interleaved codes differ from quantizeRowU8's", chunk)
		}
		if err := firstDiff(gd, wd); err != nil {
			t.Errorf("chunk %d: ds: %v", chunk, err)
		}
	}
}

// TestU8RowsNEON checks the integer tiers' NEON decoders against the
// portable ones (the u8 path's, and the VNNI layout's of Q8_0 and the IQ4
// types), every output bit for bit, on rows of one block, an odd number of
// blocks and many; and that the tiers use them for every type.
func TestU8RowsNEON(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for typ, row := range vnniRowsNEON {
		dec := vnniDecoders[typ]
		for _, n := range rowSizes(dec.blockSize) {
			u8RowMatch(t, "neon", typ, n, dec.row, row, rng)
		}
	}
	for _, g := range []*vnniTier{sdotGEMM, smmlaGEMM} {
		for typ := range vnniDecoders {
			if g.dec[typ] == nil {
				t.Errorf("%s: no NEON decoder in the integer tiers", typ)
			}
		}
	}
}

// TestPack8U8NEON checks the NEON byte panel packers against the
// portable ones (SDOT's four-byte groups, SMMLA's eight-byte chunks) on
// random rows of one and several steps, the panel's other columns left
// alone.
func TestPack8U8NEON(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, c := range []struct {
		name      string
		ref, neon func(src []int8, kc int, dst []int8)
	}{
		{"sdot", pack8U8Go, pack8U8NEON},
		{"smmla", pack8S8x8, pack8S8x8NEON},
	} {
		for _, kc := range []int{32, 96, 256} {
			src := make([]int8, 8*kc)
			for i := range src {
				src[i] = int8(rng.Uint32())
			}
			want, got := make([]int8, kc*vnniNR), make([]int8, kc*vnniNR)
			for i := range want {
				want[i] = int8(i)
				got[i] = want[i]
			}
			c.ref(src, kc, want)
			c.neon(src, kc, got)
			if !slices.Equal(got, want) {
				t.Errorf("%s kc=%d: the NEON panel differs from the portable one's", c.name, kc)
			}
		}
	}
}

// TestBF16RoundingNEON checks the neon-bf16 tier's rounding of
// activation rows and 16-wide weight panels against bf16Round. It needs
// no BF16 instruction (integer steps), so it runs on every arm64 CPU.
func TestBF16RoundingNEON(t *testing.T) {
	checkBF16Rounding(t, neonBF16GEMM.narrow.x, neonBF16GEMM.narrow.panel, gemmNR)
}
