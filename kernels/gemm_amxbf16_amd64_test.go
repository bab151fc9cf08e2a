package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/vembed/vembed/gguf"
)

// amxBF16TilesGo is a Go model of kernelAMXBF16: the same reads (whole
// steps of 16 pairs from a and b, then the padded tails) and sums.
func amxBF16TilesGo(n16 int, a *float32, lda int, b *float32, ta *float32, tb *float32, tail int, t *float32) {
	out := unsafe.Slice(t, 1024)
	clear(out)
	step := func(ap *float32, ldw int, bp *float32) {
		A := unsafe.Slice(ap, 31*ldw+16)
		B := unsafe.Slice(bp, 15*32+32)
		for m := 0; m < 32; m++ {
			for n := 0; n < 32; n++ {
				s := out[m*32+n]
				for p := 0; p < 16; p++ {
					x, w := math.Float32bits(A[m*ldw+p]), math.Float32bits(B[p*32+n])
					s += bf16Value(x>>16) * bf16Value(w>>16)
					s += bf16Value(x&0xffff) * bf16Value(w&0xffff)
				}
				out[m*32+n] = s
			}
		}
	}
	for i := 0; i < n16; i++ {
		step((*float32)(unsafe.Add(unsafe.Pointer(a), 64*i)), lda/4, (*float32)(unsafe.Add(unsafe.Pointer(b), 2048*i)))
	}
	if tail != 0 {
		step(ta, 16, tb)
	}
}

// TestAMXBF16LayoutGo runs the amx-bf16 tier's blocked GEMM with its
// microkernel's tile product replaced by amxBF16TilesGo (any AVX2 CPU):
// the 32×32 tile, the 16-pair steps and the zero-padded k tails, against
// the float64 reference with the bfloat16 bound.
func TestAMXBF16LayoutGo(t *testing.T) {
	if !hasAVX2 {
		t.Skip("the panel packers need AVX2")
	}
	saved := amxBF16Tiles
	amxBF16Tiles = amxBF16TilesGo
	defer func() { amxBF16Tiles = saved }()
	g := *amxBF16GEMM
	g.narrow = &narrower{x: bf16RowsGo, panel: func(p []float32, kc, nr int) { bf16PanelGo(p, kc, nr, 0) }}
	bf16MatMulCheck(t, func(dst, x []float32, m int, w *Matrix, bias []float32) { gemm(dst, x, m, w, bias, &g) })
}

// TestMatMulAMXBF16 checks the amx-bf16 tier against the float64
// reference with the bfloat16 bound, where the CPU has AMX bf16.
func TestMatMulAMXBF16(t *testing.T) {
	if !hasAMXBF16 {
		t.Skip("the CPU has no AMX bf16 tiles (or the OS did not grant them): the amx-bf16 tier is unverified here")
	}
	needTier(t, TierAMXBF16)
	Use(TierAMXBF16)
	bf16MatMulCheck(t, MatMul)
}

// TestTileOut32 checks the microkernel's output step against the Go loop
// it replaced, bit for bit: the sums copied, or added as t + c.
func TestTileOut32(t *testing.T) {
	if !hasAVX512 {
		t.Skip("tileOut32 needs AVX-512")
	}
	rng := rand.New(rand.NewPCG(91, 92))
	const ldc = 45
	for _, acc := range []bool{false, true} {
		s := randVec(1024, rng)
		s[5] = float32(math.NaN())
		s[77] = float32(math.Inf(1))
		c := randVec(32*ldc, rng)
		want := slices.Clone(c)
		for r := 0; r < 32; r++ {
			for j := 0; j < 32; j++ {
				if acc {
					want[r*ldc+j] = s[r*32+j] + want[r*ldc+j]
				} else {
					want[r*ldc+j] = s[r*32+j]
				}
			}
		}
		ac := 0
		if acc {
			ac = 1
		}
		tileOut32(&s[0], &c[0], ldc, ac)
		sameBits(t, fmt.Sprintf("acc %v", acc), c, want)
	}
}

// amxBF16PackedCheck runs, for the float types and odd sizes (several k
// slices, column blocks, tails of rows and columns), the amx-bf16 GEMM
// on w packed at load and on w as stored, and requires the same bits;
// the packed product is also held to the bfloat16 bound.
func amxBF16PackedCheck(t *testing.T) {
	rng := rand.New(rand.NewPCG(93, 94))
	saved := SetPacking(true)
	defer SetPacking(saved)
	for _, typ := range []gguf.Type{gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16} {
		for _, k := range []int{1, 33, 256, 300, 555} {
			for _, n := range []int{1, 33, 130} {
				w := randMatrix(t, typ, n, k, rng)
				packed := *w
				before := PackedBytes()
				packAMXBF16(&packed)
				p, ok := packed.packed.(*amxBF16Packed)
				if !ok {
					t.Fatalf("%s k%d n%d: not packed", typ, k, n)
				}
				if got := PackedBytes() - before; got != int64(len(p.data)*4) {
					t.Errorf("%s k%d n%d: PackedBytes grew by %d, the copy has %d", typ, k, n, got, len(p.data)*4)
				}
				for _, m := range []int{1, 31, 33, 70} {
					x, bias := randVec(m*k, rng), randVec(n, rng)
					want, got := make([]float32, m*n), make([]float32, m*n)
					gemm(want, x, m, w, bias, amxBF16GEMM)
					gemmAMXBF16Packed(got, x, m, &packed, bias, p)
					sameBits(t, fmt.Sprintf("%s k%d n%d m%d packed", typ, k, n, m), got, want)
				}
				packed.Unpack()
				if PackedBytes() != before {
					t.Errorf("%s k%d n%d: Unpack left %d bytes", typ, k, n, PackedBytes()-before)
				}
			}
		}
	}
	// Unmarked and quantized weights, and packing off, are not packed.
	for _, w := range []*Matrix{randMatrix(t, gguf.TypeF16, 8, 64, rng), randMatrix(t, gguf.TypeQ8_0, 8, 64, rng)} {
		w.BF16 = w.Type == gguf.TypeQ8_0
		packAMXBF16(w)
		if w.Packed() {
			t.Errorf("%s marked %v: packed", w.Type, w.BF16)
		}
	}
	SetPacking(false)
	w := randMatrix(t, gguf.TypeF16, 8, 64, rng)
	if packAMXBF16(w); w.Packed() {
		t.Error("packed with packing off")
	}
}

// TestAMXBF16PackedGo runs amxBF16PackedCheck on the Go model of the tile
// product (any AVX-512 CPU: the panel packers and the output step are
// assembly).
func TestAMXBF16PackedGo(t *testing.T) {
	if !hasAVX512BF16 {
		t.Skip("the pair packers need AVX-512 BF16")
	}
	saved := amxBF16Tiles
	amxBF16Tiles = amxBF16TilesGo
	defer func() { amxBF16Tiles = saved }()
	amxBF16PackedCheck(t)
}

// TestAMXBF16PackedNative runs amxBF16PackedCheck on the tiles, and the
// tier's Prepare and MatMul on a packed weight against the bfloat16
// bound, where the CPU has AMX bf16.
func TestAMXBF16PackedNative(t *testing.T) {
	if !hasAMXBF16 {
		t.Skip("the CPU has no AMX bf16 tiles (or the OS did not grant them): packed amx-bf16 products are checked here only through the tile model")
	}
	amxBF16PackedCheck(t)
	needTier(t, TierAMXBF16)
	Use(TierAMXBF16)
	bf16MatMulCheck(t, func(dst, x []float32, m int, w *Matrix, bias []float32) {
		if !w.Packed() {
			Prepare(w)
			if !w.Packed() {
				t.Fatalf("%s: Prepare did not pack a marked weight", w.Type)
			}
		}
		MatMul(dst, x, m, w, bias)
	})
}

// TestAMXBF16TierPacking checks the amx-bf16 tier's wiring, built here on
// the Go tile model: Prepare packs marked float weights into its pair
// panels and leaves the rest to the tier it is built on (Q8_0 into
// avx512-vnni's panels, where that tier packs), products by packed
// weights give the unpacked bits, unmarked weights the base tier's.
func TestAMXBF16TierPacking(t *testing.T) {
	var bf *impl
	for _, im := range tiers {
		if im.tier == TierAVX512BF16 {
			bf = im
		}
	}
	if bf == nil {
		t.Skip("no avx512-bf16 tier on this CPU")
	}
	saved, packing := amxBF16Tiles, SetPacking(true)
	amxBF16Tiles = amxBF16TilesGo
	defer func() { amxBF16Tiles = saved; SetPacking(packing) }()
	amx := amxBF16Tier(*bf)
	rng := rand.New(rand.NewPCG(97, 98))
	const m, n, k = 35, 70, 300
	x, bias := randVec(m*k, rng), randVec(n, rng)
	run := func(im *impl, w *Matrix) []float32 {
		out := make([]float32, m*n)
		im.matMul(out, x, m, w, bias)
		return out
	}
	w := randMatrix(t, gguf.TypeF16, n, k, rng)
	want := run(amx, w)
	amx.prepare(w)
	if _, ok := w.packed.(*amxBF16Packed); !ok {
		t.Fatalf("a marked F16 weight packed as %T", w.packed)
	}
	sameBits(t, "packed F16", run(amx, w), want)
	sameBits(t, "avx512-bf16 beside the packed copy", run(bf, w), run(bf, &Matrix{Type: w.Type, Rows: n, Cols: k, Data: w.Data, BF16: true}))
	w.Unpack()
	w.BF16 = false
	amx.prepare(w)
	if w.Packed() {
		t.Error("an unmarked F16 weight was packed")
	}
	sameBits(t, "unmarked F16", run(amx, w), run(bf, w))
	q := randMatrix(t, gguf.TypeQ8_0, n, 256, rng)
	amx.prepare(q)
	if _, ok := q.packed.(*vnniPacked); ok != hasAVX512VNNI {
		t.Errorf("Q8_0 packed as %T", q.packed)
	}
	q.Unpack()
}

// TestAMXBF16Encoding checks that kernelAMXBF16's bytes decode, by
// binutils' objdump, as the tile instructions its Go model
// (amxBF16TilesGo) stands for, in order: the configuration, zeroed
// quarters, a step of 16 pairs (two A and two B tiles, four products), the
// zero-padded tail step, the four quarters stored. The model checks the
// data flow; this, that the bytes are those instructions.
func TestAMXBF16Encoding(t *testing.T) {
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		t.Skip("binutils' objdump is not installed: the amx-bf16 kernel's bytes are not decoded here")
	}
	step := func(stride string) []string {
		return []string{
			"tileloadd (%rax," + stride + ",1),%tmm4", "tileloadd (%r10," + stride + ",1),%tmm5",
			"tileloadd (%rbx,%r11,1),%tmm6", "tileloadd (%r10,%r11,1),%tmm7",
			"tdpbf16ps %tmm6,%tmm4,%tmm0", "tdpbf16ps %tmm7,%tmm4,%tmm1",
			"tdpbf16ps %tmm6,%tmm5,%tmm2", "tdpbf16ps %tmm7,%tmm5,%tmm3",
		}
	}
	want := []string{"ldtilecfg (%r10)", "tilezero %tmm0", "tilezero %tmm1", "tilezero %tmm2", "tilezero %tmm3"}
	want = append(want, step("%r9")...)
	want = append(want, step("%r8")...)
	want = append(want, "tilestored %tmm0,(%rdi,%r11,1)", "tilestored %tmm1,(%r10,%r11,1)",
		"tilestored %tmm2,(%r10,%r11,1)", "tilestored %tmm3,(%r10,%r11,1)", "tilerelease")
	code := funcBytes(t, "kernelAMXBF16")
	got := tileInsns(t, objdump, "kernelAMXBF16", code["kernelAMXBF16"])
	if len(got) == 0 {
		t.Skip("this objdump decodes no AMX instruction (binutils before 2.34?)")
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("kernelAMXBF16 decodes as\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
