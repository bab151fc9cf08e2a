package kernels

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/vembed/vembed/gguf"
)

// amxI8Case is an amx GEMM checked against the avx2-int8 tier's integer
// GEMM, bit for bit.
type amxI8Case struct {
	name string
	g    *amxI8Tier
	ref  func(dst, x []float32, m int, w *Matrix, bias []float32)
	// portable cases run fewer sizes (the Go models are slow).
	portable bool
}

// amxI8Cases are the amx GEMMs this CPU can run: on any CPU the tile
// machine with the Go epilogue against the portable integer paths; with
// AVX-512 VNNI the tile machine with the assembly's epilogue against the
// avx2-int8 assembly; with AMX the assembly itself.
func amxI8Cases() []amxI8Case {
	portableRef := vnniCases()[0].ref
	small := func(dst, x []float32, m int, w *Matrix, bias []float32) { gemmVNNI(dst, x, m, w, bias, vnniGo) }
	cases := []amxI8Case{{"model-go", &amxI8Tier{kern: kernelAMXI8Model(amxI8EpilogueGo), quant: quantizeRowU8, dec: vnniGo, small: small}, portableRef, true}}
	return append(cases, archAMXI8Cases()...)
}

// amxMatch packs w for c.g and compares c's products with the reference
// for the row counts ms.
func amxMatch(t *testing.T, c amxI8Case, w *Matrix, ms []int, rng *rand.Rand) error {
	t.Helper()
	packAMX(w, c.g)
	defer w.Unpack()
	p := w.amxPackedFor(c.g)
	if p == nil {
		t.Fatalf("%s %s: not packed", c.name, w.Type)
	}
	path := func(dst, x []float32, m int, w *Matrix, bias []float32) { gemmAMXI8(dst, x, m, w, bias, c.g, p) }
	return vnniCompare(path, c.ref, w, ms, rng)
}

// amxRowCounts cover partial groups of 16 alone (1, 15) and after whole
// ones, several groups per call, and row blocks split
// across workers.
var amxRowCounts = []int{1, 15, 16, 17, 31, 32, 33, 48, 70}

// TestAMXI8MatchesAVX2Int8 checks that the amx GEMM gives, for every
// weight type the integer tiers multiply, every output bit for bit as the
// avx2-int8 tier's integer GEMM, over the tails of rows (groups of 16),
// columns (panels of 16, column blocks of gemmNC) and k (partial k
// slices), one and two weight planes.
func TestAMXI8MatchesAVX2Int8(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	for _, c := range amxI8Cases() {
		t.Run(c.name, func(t *testing.T) {
			for _, typ := range slices.Sorted(maps.Keys(int8Types)) {
				ns, ms := []int{1, 15, 17, 33, 161}, amxRowCounts
				if c.portable {
					ns, ms = []int{17, 33}, []int{5, 16, 19, 33}
				}
				for _, k := range vnniSizes(typ) {
					for _, n := range ns {
						w := randMatrix(t, typ, n, k, rng)
						if err := amxMatch(t, c, w, ms, rng); err != nil {
							t.Fatalf("%s k%d n%d: %v", typ, k, n, err)
						}
					}
				}
			}
		})
	}
}

// TestAMXI8Planes checks the packing's choice of planes: one for the
// types without multipliers and for Q2_K (4-bit scales by 2-bit values),
// two for Q6_K and IQ4_XS (whose products by their scales leave a byte),
// one for Q3_K when no value reaches −4·−32; and that a matrix packed
// with two planes whose products would fit gives the same bits as one
// packed with one.
func TestAMXI8Planes(t *testing.T) {
	rng := rand.New(rand.NewPCG(83, 84))
	g := &amxI8Tier{kern: kernelAMXI8Model(amxI8EpilogueGo), quant: quantizeRowU8, dec: vnniGo}
	want := map[gguf.Type]int{gguf.TypeQ8_0: 1, gguf.TypeQ4_K: 1, gguf.TypeQ5_K: 1, gguf.TypeQ4_0: 1, gguf.TypeIQ4_NL: 1,
		gguf.TypeQ2_K: 1, gguf.TypeQ6_K: 2, gguf.TypeIQ4_XS: 2}
	for typ, planes := range want {
		w := randMatrix(t, typ, 20, 512, rng)
		packAMX(w, g)
		p := w.amxPackedFor(g)
		if p == nil || p.planes != planes {
			t.Errorf("%s: packed %+v, want %d planes", typ, p, planes)
		}
		w.Unpack()
	}
	// Q3_K: the high bit of every value set (hmask all ones) keeps q in
	// [0, 3], so m·q stays within ±96: one plane.
	w := randMatrix(t, gguf.TypeQ3_K, 20, 256, rng)
	for b := 0; b < len(w.Data); b += 110 {
		for i := 0; i < 32; i++ {
			w.Data[b+i] = 0xff
		}
	}
	packAMX(w, g)
	if p := w.amxPackedFor(g); p == nil || p.planes != 1 {
		t.Errorf("Q3_K without −4: packed %+v, want one plane", p)
	}
	w.Unpack()
}

// TestAMXI8Mutants checks that the comparison of TestAMXI8MatchesAVX2Int8
// fails on wrong kernels: in every block of the packed copy a weight byte
// one off, the factor of a column 2⁻⁷ off, the bytes of a plane moved to
// the other (with two; else one off), and an activation byte one off.
// (One block's change alone can vanish: a Q4_K block's factor may be 0.)
func TestAMXI8Mutants(t *testing.T) {
	rng := rand.New(rand.NewPCG(85, 86))
	c := amxI8Cases()[0]
	if cs := archAMXI8Cases(); len(cs) > 0 {
		c = cs[0]
	}
	records := func(p *amxPacked, f func(r []byte)) {
		for i := 0; i+p.rec <= len(p.data); i += p.rec {
			f(p.data[i : i+p.rec])
		}
	}
	for name, mutate := range map[string]func(p *amxPacked){
		"weight": func(p *amxPacked) { records(p, func(r []byte) { r[3]++ }) },
		"factor": func(p *amxPacked) { records(p, func(r []byte) { r[p.planes*amxTileBytes+4+2]++ }) },
		"plane": func(p *amxPacked) {
			records(p, func(r []byte) {
				if p.planes == 1 {
					r[amxTileBytes/2]++
					return
				}
				for i := 0; i < amxTileBytes; i++ {
					r[i], r[amxTileBytes+i] = r[amxTileBytes+i], r[i]
				}
			})
		},
		"activation": nil,
	} {
		for _, typ := range []gguf.Type{gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ6_K} {
			w := randMatrix(t, typ, 20, 256, rng)
			packAMX(w, c.g)
			p := w.amxPackedFor(c.g)
			g := *c.g
			if mutate != nil {
				mutate(p)
			} else {
				kern := g.kern
				g.kern = func(np, ng, nb int, a []int8, as int, ds []float32, dss int, b []byte, rec, pstride, flags int, cc []float32, ldc int) {
					a = slices.Clone(a)
					a[40]++
					kern(np, ng, nb, a, as, ds, dss, b, rec, pstride, flags, cc, ldc)
				}
			}
			path := func(dst, x []float32, m int, w *Matrix, bias []float32) { gemmAMXI8(dst, x, m, w, bias, &g, p) }
			if err := vnniCompare(path, c.ref, w, []int{19}, rng); err == nil {
				t.Errorf("%s: mutant %q not caught on %s", c.name, name, typ)
			}
			w.Unpack()
		}
	}
}

// TestTileMachine checks the tile model on a product it can be held to by
// hand: TDPBSSD of random signed bytes against the plain sums, TDPBF16PS
// against bfloat16 pair sums, and the shape rules (a fault on tiles that
// do not fit, on an unconfigured tile, on a bad configuration).
func TestTileMachine(t *testing.T) {
	rng := rand.New(rand.NewPCG(87, 88))
	cfg := make([]byte, 64)
	amxI8Config(cfg)
	var m tileMachine
	m.ldtilecfg(&cfg[0])
	a, b := make([]int8, 16*32), make([]int8, 8*64)
	for i := range a {
		a[i] = int8(rng.Uint32())
	}
	for i := range b {
		b[i] = int8(rng.Uint32())
	}
	c := make([]int32, 256)
	m.loadd(4, unsafe.Pointer(&a[0]), 32)
	m.loadd(6, unsafe.Pointer(&b[0]), 64)
	m.zero(0)
	m.dpbssd(0, 4, 6)
	m.dpbssd(0, 4, 6)
	m.stored(0, unsafe.Pointer(&c[0]), 64)
	for i := 0; i < 16; i++ {
		for j := 0; j < 16; j++ {
			var s int32
			for k := 0; k < 32; k++ {
				s += int32(a[i*32+k]) * int32(b[k/4*64+4*j+k%4])
			}
			if c[i*16+j] != 2*s {
				t.Fatalf("TDPBSSD c[%d][%d] = %d, want %d", i, j, c[i*16+j], 2*s)
			}
		}
	}
	faults := map[string]func(){
		"shapes":       func() { m.dpbssd(0, 6, 4) },
		"same tiles":   func() { m.dpbssd(4, 4, 6) },
		"bad palette":  func() { bad := slices.Clone(cfg); bad[0] = 2; m.ldtilecfg(&bad[0]) },
		"too wide":     func() { bad := slices.Clone(cfg); bad[16] = 65; m.ldtilecfg(&bad[0]) },
		"unconfigured": func() { var u tileMachine; u.zero(0) },
	}
	for name, f := range faults {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no fault", name)
				}
			}()
			f()
		}()
	}

	// TDPBF16PS on 16 rows of 16 pairs by 16 pairs of 16 columns.
	bcfg := make([]byte, 64)
	bcfg[0] = 1
	for i := 0; i < 8; i++ {
		bcfg[16+2*i], bcfg[48+i] = 64, 16
	}
	m.ldtilecfg(&bcfg[0])
	x, y := make([]uint16, 16*32), make([]uint16, 16*32)
	for i := range x {
		x[i] = uint16(bf16Round(float32(rng.NormFloat64())))
		y[i] = uint16(bf16Round(float32(rng.NormFloat64())))
	}
	out := make([]float32, 256)
	m.loadd(0, unsafe.Pointer(&x[0]), 64)
	m.loadd(1, unsafe.Pointer(&y[0]), 64)
	m.zero(2)
	m.dpbf16ps(2, 0, 1)
	m.stored(2, unsafe.Pointer(&out[0]), 64)
	for i := 0; i < 16; i++ {
		for j := 0; j < 16; j++ {
			var s float32
			for p := 0; p < 16; p++ {
				s += bf16Value(uint32(x[i*32+2*p+1])) * bf16Value(uint32(y[p*32+2*j+1]))
				s += bf16Value(uint32(x[i*32+2*p])) * bf16Value(uint32(y[p*32+2*j]))
			}
			if out[i*16+j] != s {
				t.Fatalf("TDPBF16PS c[%d][%d] = %v, want %v", i, j, out[i*16+j], s)
			}
		}
	}
}

// TestAMXI8Config checks the kernel's tile configuration against the
// products it runs (TDPBSSD sums, activations, weights of each parity and
// plane) and against its data: A tiles of 16 rows of one block's 32
// bytes, B tiles of a panel's block.
func TestAMXI8Config(t *testing.T) {
	cfg := make([]byte, 64)
	amxI8Config(cfg)
	var m tileMachine
	m.ldtilecfg(&cfg[0])
	for _, p := range [][3]int{{0, 4, 6}, {1, 5, 7}, {0, 4, 6}, {2, 4, 7}, {1, 5, 6}, {3, 5, 7}} {
		m.dotShape(p[0], p[1], p[2])
	}
	if m.rows[4]*m.colsb[4] != amxRows*i8Block || m.rows[6]*m.colsb[6] != amxTileBytes {
		t.Errorf("A tile %d×%d, B tile %d×%d: not a group's block and a panel's block", m.rows[4], m.colsb[4], m.rows[6], m.colsb[6])
	}
}

// BenchmarkAMXI8Pack measures packing at load, per weight type.
func BenchmarkAMXI8Pack(b *testing.B) {
	rng := rand.New(rand.NewPCG(89, 90))
	g := &amxI8Tier{dec: vnniGo}
	if cs := archAMXI8Cases(); len(cs) > 0 {
		g = cs[0].g
	}
	for _, typ := range []gguf.Type{gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ6_K} {
		w := randMatrix(b, typ, 2048, 2048, rng)
		b.Run(fmt.Sprint(typ), func(b *testing.B) {
			for b.Loop() {
				packAMX(w, g)
				w.Unpack()
			}
		})
	}
}
