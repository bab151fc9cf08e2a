package kernels

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/vembed/vembed/gguf"
)

// archAMXI8Cases are the amx GEMMs of this CPU beyond the portable model:
// the tile machine with the assembly's epilogue where the CPU has AVX-512
// VNNI (the avx512-vnni decoders pack, the avx2-int8 assembly is the
// reference), and the assembly where it has AMX.
func archAMXI8Cases() []amxI8Case {
	if !hasAVX512VNNI {
		return nil
	}
	ai8, au8 := archIntKernels()
	ref := int8Ref(ai8["avx2"], au8["avx2"])
	small := func(dst, x []float32, m int, w *Matrix, bias []float32) { gemmVNNI(dst, x, m, w, bias, vnniAVX512) }
	cases := []amxI8Case{{"model-asm-epilogue", &amxI8Tier{kern: kernelAMXI8Model(amxI8EpilogueChecked), quant: quantizeRowU8AVX2, dec: vnniAVX512, small: small}, ref, false}}
	if hasAMX {
		cases = append(cases, amxI8Case{"amx", &amxI8Tier{kern: kernelAMXI8Asm, quant: quantizeRowU8AVX2, dec: vnniAVX512, small: small}, ref, false})
	}
	return cases
}

// TestAMXI8Encoding checks that kernelAMXI8's bytes decode, by binutils'
// objdump, as the tile instructions the Go model of the kernel
// (kernelAMXI8Model) runs, in order and with the same tiles, bases and
// strides: per variant (one plane, one with minimums, two planes, two
// with minimums) the first block's tiles, a step of each parity (the next
// block's tiles, then the current sums stored), the last block of each
// parity; and that the epilogue the tests run (amxI8Epilogue) has no tile
// instruction. Where the CPU has AMX, TestAMXI8MatchesAVX2Int8 runs the
// bytes themselves.
func TestAMXI8Encoding(t *testing.T) {
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		t.Skip("binutils' objdump is not installed: the amx kernel's bytes are not decoded here")
	}
	var want []string
	add := func(f string, a ...any) { want = append(want, fmt.Sprintf(f, a...)) }
	want = append(want, "ldtilecfg (%r10)")
	for _, two := range []bool{false, false, true, true} {
		issue := func(par int) {
			add("tileloadd (%%rax,%%r9,1),%%tmm%d", 4+par)
			if !two {
				add("tileloadd (%%rbx,%%r10,1),%%tmm%d", 6+par)
				add("tilezero %%tmm%d", par)
				add("tdpbssd %%tmm%d,%%tmm%d,%%tmm%d", 6+par, 4+par, par)
				return
			}
			add("tileloadd (%%rbx,%%r10,1),%%tmm6")
			add("tileloadd (%%rdx,%%r10,1),%%tmm7")
			add("tilezero %%tmm%d", par)
			add("tilezero %%tmm%d", 2+par)
			add("tdpbssd %%tmm6,%%tmm%d,%%tmm%d", 4+par, par)
			add("tdpbssd %%tmm7,%%tmm%d,%%tmm%d", 4+par, 2+par)
		}
		store := func(par int) {
			add("tilestored %%tmm%d,(%%rsi,%%r10,1)", par)
			if two {
				add("tilestored %%tmm%d,(%%rdx,%%r10,1)", 2+par)
			}
		}
		issue(0)
		issue(1)
		store(0)
		issue(0)
		store(1)
		store(0)
		store(1)
	}
	want = append(want, "tilerelease")

	code := funcBytes(t, "kernelAMXI8", "amxI8Epilogue")
	for _, fn := range []string{"kernelAMXI8", "amxI8Epilogue"} {
		got := tileInsns(t, objdump, fn, code[fn])
		if fn == "amxI8Epilogue" {
			if len(got) > 0 {
				t.Errorf("amxI8Epilogue has tile instructions: %v", got)
			}
			continue
		}
		if len(got) == 0 {
			t.Skip("this objdump decodes no AMX instruction (binutils before 2.34?)")
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("kernelAMXI8 decodes as\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestAMXI8Native requires the amx tier wherever /proc/cpuinfo lists
// amx_int8 (then TestAMXI8MatchesAVX2Int8 runs the assembly) and skips,
// saying so, elsewhere.
func TestAMXI8Native(t *testing.T) {
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skipf("no /proc/cpuinfo (%v): whether the CPU has AMX is not known here", err)
	}
	listed := regexp.MustCompile(`(?m)^flags\s*:.*\bamx_int8\b`).Match(info)
	switch {
	case !listed:
		t.Skip("/proc/cpuinfo lists no amx_int8: the amx kernel's assembly is checked here only through the tile model (TestAMXI8MatchesAVX2Int8's model cases) and its disassembly (TestAMXI8Encoding)")
	case !hasAMX:
		t.Fatalf("/proc/cpuinfo lists amx_int8 but the amx tier is unavailable (AVX-512 VNNI %v, tile state granted %v)", hasAVX512VNNI, amxGranted)
	case !hasTier(TierAMX):
		t.Fatal("AMX present but no amx tier")
	}
	if cs := archAMXI8Cases(); cs[len(cs)-1].name != "amx" {
		t.Fatalf("AMX present but the assembly is not among the cases %v", cs)
	}
}

// TestAMXTierPacking checks the amx tier's wiring, built here on the tile
// model where the CPU has no AMX (on the assembly where it has): Prepare
// packs every integer type and nothing else, the tier's products by
// packed weights equal avx2-int8's bit for bit and read the packed copy
// (spoiling it changes them, and no other tier's), and with packing off
// the products (avx512-vnni's GEMM on the stored weights) are still
// avx2-int8's bits.
func TestAMXTierPacking(t *testing.T) {
	cs := archAMXI8Cases()
	if len(cs) == 0 {
		t.Skip("no AVX-512 VNNI: the amx tier's epilogue cannot run here")
	}
	g := cs[len(cs)-1].g
	var i8 *impl
	for _, im := range tiers {
		if im.tier == TierAVX2Int8 {
			i8 = im
		}
	}
	amx := amxTier(i8, g)
	if amx.tier != TierAMX || !amx.optIn || amx.products.Quantized != TierAMX {
		t.Fatalf("amx tier %+v", amx)
	}
	saved := SetPacking(true)
	defer SetPacking(saved)
	rng := rand.New(rand.NewPCG(95, 96))
	for _, typ := range allTypes {
		k := 256
		if typ.BlockSize() == 1 {
			k = 100
		}
		w := randMatrix(t, typ, 40, k, rng)
		amx.prepare(w)
		if w.Packed() != int8Types[typ] {
			t.Errorf("%s: packed %v", typ, w.Packed())
		}
		if !w.Packed() {
			continue
		}
		for _, m := range []int{1, 19} {
			x, bias := randVec(m*k, rng), randVec(w.Rows, rng)
			want, got := make([]float32, m*w.Rows), make([]float32, m*w.Rows)
			i8.matMul(want, x, m, w, bias)
			amx.matMul(got, x, m, w, bias)
			sameBits(t, fmt.Sprintf("%s m%d", typ, m), got, want)
			if m == 19 {
				p := w.packed.(*amxPacked)
				for i := range p.data {
					p.data[i] ^= 0x11
				}
				amx.matMul(got, x, m, w, bias)
				if slices.Equal(got, want) {
					t.Errorf("%s: spoiling the packed copy changes nothing: it is not read", typ)
				}
				i8.matMul(got, x, m, w, bias)
				sameBits(t, fmt.Sprintf("%s avx2-int8 beside a spoiled amx copy", typ), got, want)
			}
		}
		w.Unpack()
	}
	SetPacking(false)
	w := randMatrix(t, gguf.TypeQ6_K, 40, 512, rng)
	if amx.prepare(w); w.Packed() {
		t.Error("packed with packing off")
	}
	x := randVec(19*512, rng)
	want, got := make([]float32, 19*40), make([]float32, 19*40)
	i8.matMul(want, x, 19, w, nil)
	amx.matMul(got, x, 19, w, nil)
	sameBits(t, "Q6_K unpacked", got, want)
}
