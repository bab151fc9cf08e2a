package kernels

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/vembed/vembed/gguf"
)

// vnniCase is one VNNI GEMM checked against the avx2-int8 tier's integer
// GEMM: the assembly against the AVX2 assembly (both round with hardware
// FMA), the portable form against the portable u8 and int16 paths.
type vnniCase struct {
	name string
	g    *vnniTier
	ref  func(dst, x []float32, m int, w *Matrix, bias []float32)
	// portable cases run fewer sizes: they are slow, and they check the
	// layouts, not the assembly.
	portable bool
}

// int8Ref returns the avx2-int8 tier's integer GEMM built from the given
// kernels: weights of u8Decoders through the u8 path, the rest through
// the int16 path, as int8Tier dispatches them.
func int8Ref(i8 *i8Tier, u8 *u8Tier) func(dst, x []float32, m int, w *Matrix, bias []float32) {
	return func(dst, x []float32, m int, w *Matrix, bias []float32) {
		if u8Decoders[w.Type].row != nil {
			gemmU8(dst, x, m, w, bias, u8)
			return
		}
		gemmInt8(dst, x, m, w, bias, i8)
	}
}

func vnniCases() []vnniCase {
	portable := int8Ref(
		&i8Tier{kern: kernelI16Go, pack8: pack8I16Go, quant: quantizeRowU8},
		&u8Tier{kern: kernelU8Go, nib: kernelS8Go, pack8: pack8U8Go, quant: quantizeRowU8})
	cases := []vnniCase{{"go", vnniGo, portable, true}}
	ref := portable
	if ai8, au8 := archIntKernels(); ai8 != nil {
		ref = int8Ref(ai8["avx2"], au8["avx2"])
	}
	// Without the avx2-int8 assembly (arm64), the assembly GEMMs are held
	// to the portable path: its float64 FMA rounded to float32 differs from
	// a float32 FMA only in rare ties, and the inputs are fixed, so a
	// difference is a wrong kernel (TestInt8ProductHash ties the bits to
	// avx2-int8's across architectures).
	for name, g := range archVNNIKernels() {
		cases = append(cases, vnniCase{name, g, ref, false})
	}
	return cases
}

// vnniSizes are the k depths of a type: one partial slice, whole slices
// and a partial last one (every tail of k a block type allows is a
// multiple of its block).
func vnniSizes(typ gguf.Type) []int {
	if typ.BlockSize() == 256 {
		return []int{256, 768}
	}
	return []int{32, 224, 288, 544}
}

// vnniCompare runs path and ref on random activations (one row of ±1,
// where every |q| is 127, one with zero and tiny blocks) for every row
// count in ms and reports the first output whose bits differ.
func vnniCompare(path, ref func(dst, x []float32, m int, w *Matrix, bias []float32), w *Matrix, ms []int, rng *rand.Rand) error {
	k, n := w.Cols, w.Rows
	for _, m := range ms {
		x := randVec(m*k, rng)
		if m > 2 {
			for i := range k {
				x[2*k+i] = float32(1 - 2*(i%2))
			}
		}
		if m > 3 {
			// Row 3 starts with a block of zeros and, when k allows, one
			// below 2⁻¹⁰⁰ (both quantize to q = 0, d = 0).
			clear(x[3*k : 3*k+i8Block])
			if k > i8Block {
				for i := 3*k + i8Block; i < 3*k+2*i8Block; i++ {
					x[i] = 1e-35
				}
			}
		}
		var bias []float32
		if m%2 == 1 {
			bias = randVec(n, rng)
		}
		want, got := make([]float32, m*n), make([]float32, m*n)
		ref(want, x, m, w, bias)
		path(got, x, m, w, bias)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				return fmt.Errorf("m%d: dst[%d][%d] = %v, the avx2-int8 tier gives %v", m, i/n, i%n, got[i], want[i])
			}
		}
	}
	return nil
}

// vnniRowCounts cover every tail of the 6- and 3-row groups, 16-row
// groups (amx) whole and not, one and
// several groups per call, and row blocks split across workers.
var vnniRowCounts = []int{1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13, 16, 17, 19, 33, 64}

// TestVNNIMatchesAVX2Int8 checks that every VNNI GEMM gives, for every
// weight type the integer tiers multiply, every output bit for bit as the
// avx2-int8 tier's integer GEMM: both compute exact integer block sums
// and the same float epilogue, so any difference is a wrong kernel,
// decoder or layout. Sizes cover the tails of rows (groups of 6 and 3),
// columns (panels of 16, tiles of 32, column blocks of gemmNC) and k
// (partial k slices).
func TestVNNIMatchesAVX2Int8(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, c := range vnniCases() {
		t.Run(c.name, func(t *testing.T) { vnniMatch(t, c, rng) })
	}
}

func vnniMatch(t *testing.T, c vnniCase, rng *rand.Rand) {
	for _, typ := range slices.Sorted(maps.Keys(int8Types)) {
		ns, ms := []int{1, 15, 17, 33, 161}, vnniRowCounts
		if c.portable {
			ns, ms = []int{17, 33}, []int{1, 5, 7, 16, 19}
		}
		for _, k := range vnniSizes(typ) {
			for _, n := range ns {
				w := randMatrix(t, typ, n, k, rng)
				path := func(dst, x []float32, m int, w *Matrix, bias []float32) { gemmVNNI(dst, x, m, w, bias, c.g) }
				if err := vnniCompare(path, c.ref, w, ms, rng); err != nil {
					t.Fatalf("%s %s k%d n%d: %v", c.name, typ, k, n, err)
				}
				// The same products from the panels packed at load.
				packPanels(w, c.g)
				if w.vnniPacked(c.g) == nil {
					t.Fatalf("%s %s k%d n%d: not packed", c.name, typ, k, n)
				}
				if err := vnniCompare(path, c.ref, w, ms, rng); err != nil {
					t.Fatalf("%s %s k%d n%d packed: %v", c.name, typ, k, n, err)
				}
			}
		}
	}
}

// TestVNNIMutants checks that TestVNNIMatchesAVX2Int8's comparison fails
// on wrong kernels: a weight decoded one off, a column's starting sum one
// off, one activation byte one off, and the two half multipliers
// swapped. Each must be caught on some type, and on Q2_K (multipliers,
// and minimums added by a float32 product first) each one.
func TestVNNIMutants(t *testing.T) {
	for _, c := range vnniCases() {
		mutants := map[string]func(g vnniTier) *vnniTier{
			"weight": func(g vnniTier) *vnniTier {
				g.dec = map[gguf.Type]func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32){}
				for typ, d := range vnniDecoders {
					row := d.row
					if f := c.g.dec[typ]; f != nil {
						row = f
					}
					g.dec[typ] = func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
						row(src, n, q, fd, fm, fs, mul, sum)
						q[n-1]++
						sum[len(sum[:2*(n/32)])-1]++
					}
				}
				// The panel decoders, which read no row decoder: the
				// last weight of the first column one up, its start to
				// match (the last value is in the second half, whose
				// multiplier a unit type's start does not hold).
				g.panel = map[gguf.Type]func(src []byte, rowBytes, nrows, nb int, pan []int8, fs []float32, aux []int32){}
				for typ, pd := range c.g.panel {
					unit := vnniDecoders[typ].unit
					g.panel[typ] = func(src []byte, rowBytes, nrows, nb int, pan []int8, fs []float32, aux []int32) {
						pd(src, rowBytes, nrows, nb, pan, fs, aux)
						pan[(nb-1)*vnniPanel+7*4*vnniNR+3]++
						if unit {
							aux[(nb-1)*vnniAux] -= 128
						} else {
							aux[(nb-1)*vnniAux] -= 128 * aux[(nb-1)*vnniAux+2*vnniNR]
						}
					}
				}
				return &g
			},
			"start": func(g vnniTier) *vnniTier {
				if g.signed {
					// The kernels take q itself and read no starts: a
					// wrong start would compute the right sums.
					return nil
				}
				g.kern = mutateAux(g.kern, func(aux []int32) { aux[3]++ })
				g.kernMul = mutateAux(g.kernMul, func(aux []int32) { aux[3]++ })
				return &g
			},
			"activation": func(g vnniTier) *vnniTier {
				wrap := func(k vnniKernel) vnniKernel {
					return func(ng, nb int, a []uint8, as int, ds []float32, dss int, b []int8, aux []int32, f []float32, t []float32, c []float32, ldc int, flags int) {
						if nb > 0 {
							a[nb*i8Block-1]++
							defer func() { a[nb*i8Block-1]-- }()
						}
						k(ng, nb, a, as, ds, dss, b, aux, f, t, c, ldc, flags)
					}
				}
				g.kern, g.kernMul = wrap(g.kern), wrap(g.kernMul)
				return &g
			},
			"multipliers": func(g vnniTier) *vnniTier {
				g.kernMul = mutateAux(g.kernMul, func(aux []int32) {
					for b := 0; b+vnniAux <= len(aux); b += vnniAux {
						for j := 0; j < vnniNR; j++ {
							aux[b+vnniNR+j], aux[b+2*vnniNR+j] = aux[b+2*vnniNR+j], aux[b+vnniNR+j]
						}
					}
				})
				return &g
			},
		}
		t.Run(c.name, func(t *testing.T) { vnniMutants(t, c, mutants) })
	}
}

func vnniMutants(t *testing.T, c vnniCase, mutants map[string]func(g vnniTier) *vnniTier) {
	for name, mutate := range mutants {
		g := mutate(*c.g)
		if g == nil {
			continue
		}
		rng := rand.New(rand.NewPCG(43, 44))
		caught, caughtPacked := false, true
		for _, typ := range []gguf.Type{gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeIQ4_XS, gguf.TypeQ2_K} {
			w := randMatrix(t, typ, 40, 512, rng)
			path := func(dst, x []float32, m int, w *Matrix, bias []float32) { gemmVNNI(dst, x, m, w, bias, g) }
			here := vnniCompare(path, c.ref, w, []int{1, 7, 13}, rng) != nil
			caught = caught || here
			if typ == gguf.TypeQ2_K && !here {
				t.Errorf("%s: the mutant %q gives the avx2-int8 tier's results on Q2_K", c.name, name)
			}
			// Packed by the mutant, it must be caught wherever it is
			// unpacked.
			packPanels(w, g)
			if here && vnniCompare(path, c.ref, w, []int{1, 7, 13}, rng) == nil {
				caughtPacked = false
			}
		}
		if !caught {
			t.Errorf("%s: the mutant %q gives the avx2-int8 tier's results", c.name, name)
		}
		if !caughtPacked {
			t.Errorf("%s: the mutant %q, packed, gives the avx2-int8 tier's results", c.name, name)
		}
	}
}

// mutateAux wraps a kernel so that it sees its aux changed by f (and
// restored after the call).
func mutateAux(k vnniKernel, f func(aux []int32)) vnniKernel {
	return func(ng, nb int, a []uint8, as int, ds []float32, dss int, b []int8, aux []int32, fc []float32, t []float32, c []float32, ldc int, flags int) {
		saved := slices.Clone(aux)
		f(aux)
		defer copy(aux, saved)
		k(ng, nb, a, as, ds, dss, b, aux, fc, t, c, ldc, flags)
	}
}

// TestVNNIDecoders checks the VNNI decoders of the int16 path's types
// against that path's (values times multipliers, factors) and their half
// sums against the values, and the assembly decoders against the
// portable ones.
func TestVNNIDecoders(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	for _, typ := range []gguf.Type{gguf.TypeQ8_0, gguf.TypeIQ4_NL, gguf.TypeIQ4_XS} {
		for _, k := range vnniSizes(typ) {
			w := randMatrix(t, typ, 3, k, rng)
			nb := k / 32
			for j := 0; j < w.Rows; j++ {
				src := w.Data[j*w.RowBytes():]
				want, wfd := make([]int16, k), make([]float32, nb)
				i8Decoders[typ].row(src, k, want, wfd, make([]float32, nb), 1)
				decs := map[string]func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32){"go": vnniDecoders[typ].row}
				for name, g := range archVNNIKernels() {
					if f := g.dec[typ]; f != nil {
						decs[name] = f
					}
				}
				for name, row := range decs {
					q, fd, mul, sum := make([]int8, k), make([]float32, nb), make([]int16, 2*nb), make([]int32, 2*nb)
					for i := range mul {
						mul[i] = 1
					}
					row(src, k, q, fd, make([]float32, nb), 1, mul, sum)
					got := make([]int32, 2*nb)
					for i, v := range q {
						if int16(v)*mul[i/16] != want[i] {
							t.Fatalf("%s %s k%d row %d: value %d is %d·%d, the int16 path has %d", name, typ, k, j, i, v, mul[i/16], want[i])
						}
						got[i/16] += int32(v)
					}
					if !slices.Equal(got, sum) || !slices.Equal(fd, wfd) {
						t.Fatalf("%s %s k%d row %d: half sums %v (values sum to %v), factors %v want %v", name, typ, k, j, sum, got, fd, wfd)
					}
				}
			}
		}
	}
}

// TestVNNITiers checks MatMul on each VNNI tier against the avx2-int8
// tier, bit for bit, for every weight type (float types and Q8_K take the
// same float32 path on both), through the exported API.
func TestVNNITiers(t *testing.T) {
	if !hasTier(TierAVX2Int8) {
		t.Skip("no avx2-int8 tier on this CPU")
	}
	saved := Active()
	defer Use(saved)
	rng := rand.New(rand.NewPCG(47, 48))
	for _, tier := range []Tier{TierAVX512VNNI, TierAVXVNNI} {
		if !hasTier(tier) {
			t.Logf("no %s tier on this CPU", tier)
			continue
		}
		for _, typ := range allTypes {
			k := 512
			if typ.BlockSize() == 32 {
				k = 288
			}
			w := randMatrix(t, typ, 45, k, rng)
			for _, m := range []int{1, 9, 70} {
				x, bias := randVec(m*k, rng), randVec(w.Rows, rng)
				want, got := make([]float32, m*w.Rows), make([]float32, m*w.Rows)
				Use(TierAVX2Int8)
				MatMul(want, x, m, w, bias)
				Use(tier)
				MatMul(got, x, m, w, bias)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s %s m%d: dst[%d][%d] = %v, avx2-int8 gives %v", tier, typ, m, i/w.Rows, i%w.Rows, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestDefaultTierSkipsOptIn checks that an opt-in tier (amx, unverified)
// is never the one a process starts on, even when it is listed first.
func TestDefaultTierSkipsOptIn(t *testing.T) {
	saved := tiers
	defer func() { tiers = saved }()
	opt := *generic
	opt.tier, opt.optIn = "opt-in", true
	tiers = []*impl{&opt, generic, reference}
	if got := defaultTier().tier; got != TierGeneric {
		t.Fatalf("default tier %s, want %s", got, TierGeneric)
	}
	tiers = []*impl{&opt}
	if got := defaultTier().tier; got != TierReference {
		t.Fatalf("default tier %s with only an opt-in tier, want %s", got, TierReference)
	}
}

// TestVNNIPackedTiers checks, through the exported API, that Prepare packs
// the weights of packTypes on each VNNI tier, that the tier's products by
// the packed copy equal the avx2-int8 tier's bit for bit, and that a copy
// belongs to the tier that made it: with the copy spoiled, that tier's
// products change (it reads the copy) while every other tier's stay
// right (they decode the stored weights).
func TestVNNIPackedTiers(t *testing.T) {
	if !hasTier(TierAVX2Int8) {
		t.Skip("no avx2-int8 tier on this CPU")
	}
	saved := Active()
	defer Use(saved)
	rng := rand.New(rand.NewPCG(49, 50))
	var vnni []Tier
	for _, tier := range []Tier{TierAVX512VNNI, TierAVXVNNI} {
		if hasTier(tier) {
			vnni = append(vnni, tier)
		}
	}
	if len(vnni) == 0 {
		t.Skip("no VNNI tier on this CPU")
	}
	run := func(tier Tier, w *Matrix, x []float32, m int, bias []float32) []float32 {
		Use(tier)
		out := make([]float32, m*w.Rows)
		MatMul(out, x, m, w, bias)
		return out
	}
	same := func(a, b []float32) bool {
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				return false
			}
		}
		return true
	}
	for _, tier := range vnni {
		Use(tier)
		w := randMatrix(t, gguf.TypeQ4_K, 16, 256, rng)
		if Prepare(w); w.Packed() != packTypes[gguf.TypeQ4_K] {
			t.Errorf("%s: Prepare packs Q4_K: %v, packTypes says %v", tier, w.Packed(), packTypes[gguf.TypeQ4_K])
		}
	}
	// Every type with a panel decoder packs the same way.
	savedTypes := packTypes
	defer func() { packTypes = savedTypes }()
	packTypes = map[gguf.Type]bool{gguf.TypeQ8_0: true, gguf.TypeQ4_K: true, gguf.TypeQ6_K: true}
	for _, tier := range vnni {
		for _, typ := range slices.Sorted(maps.Keys(packTypes)) {
			k := 768
			if typ.BlockSize() == 32 {
				k = 288
			}
			w := randMatrix(t, typ, 161, k, rng)
			Use(tier)
			Prepare(w)
			if !w.Packed() {
				t.Fatalf("%s %s: Prepare did not pack", tier, typ)
			}
			// The count holds every live copy (others may be freed
			// meanwhile), this one at least the weights' bytes.
			if size := w.packed.(*vnniPacked).size; size < 161*k || PackedBytes() < int64(size) {
				t.Errorf("%s %s: a copy of %d bytes for %d weights, %d counted", tier, typ, size, 161*k, PackedBytes())
			}
			// Both forms of the side data are covered: Q8_0's scales and
			// starts are compact, Q4_K's factors (scale × sub-scale) not.
			pk := w.packed.(*vnniPacked)
			if compact := pk.fd16 != nil && pk.start16 != nil; compact != (typ == gguf.TypeQ8_0) && typ != gguf.TypeQ6_K {
				t.Errorf("%s %s: compact side data %v", tier, typ, compact)
			}
			for _, m := range []int{1, 7, 70} {
				x, bias := randVec(m*k, rng), randVec(w.Rows, rng)
				want := run(TierAVX2Int8, w, x, m, bias)
				if got := run(tier, w, x, m, bias); !same(got, want) {
					t.Fatalf("%s %s m%d: packed products differ from avx2-int8's", tier, typ, m)
				}
			}
			x := randVec(7*k, rng)
			want := run(TierAVX2Int8, w, x, 7, nil)
			p := w.packed.(*vnniPacked)
			saved := slices.Clone(p.pan)
			for i := range p.pan {
				p.pan[i] ^= 0x55
			}
			if run(tier, w, x, 7, nil)[0] == want[0] {
				t.Errorf("%s %s: spoiling the packed copy changes nothing: it is not read", tier, typ)
			}
			for _, other := range append(slices.DeleteFunc(slices.Clone(vnni), func(o Tier) bool { return o == tier }), TierAVX2Int8) {
				if !same(run(other, w, x, 7, nil), want) {
					t.Errorf("%s %s: the %s tier reads the copy packed for %s", other, typ, other, tier)
				}
			}
			copy(p.pan, saved)
		}
	}
	prev := SetPacking(false)
	defer SetPacking(prev)
	Use(vnni[0])
	w := randMatrix(t, gguf.TypeQ8_0, 16, 64, rng)
	if Prepare(w); w.Packed() {
		t.Errorf("Prepare packed with packing off")
	}
	Use(TierAVX2Int8)
	if Prepare(w); w.Packed() {
		t.Errorf("the avx2-int8 tier packed a VNNI copy")
	}
}
