package kernels

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// arithCPUs are the CPU kinds TestArithmeticAcrossCPUs has this test binary
// pretend to run on, by turning features off (GODEBUG cpu.*=off, read by
// golang.org/x/sys/cpu): on a Zen 4/5, Sapphire Rapids-like (all), Ice
// Lake-like (no AVX512_BF16), Skylake-X-like (AVX-512 without VNNI) and
// Alder Lake-like (no AVX-512; AVX-VNNI where the CPU has it). Features
// this CPU lacks stay off whatever the setting.
var arithCPUs = []string{
	"",
	"cpu.avx512bf16=off",
	"cpu.avx512bf16=off,cpu.avx512vnni=off",
	"cpu.avx512f=off",
}

// TestArithmeticAcrossCPUs checks the promise of Arithmetic: tiers with
// the same name compute the same bits whatever the CPU, which shared
// caches rely on (a vector computed by avx2-int8 on an AVX-512 server is
// served for avx2-int8 on an AVX2 laptop). It re-runs this test binary as
// each CPU kind of arithCPUs, has every tier hash its results of products
// by every weight type (edge heights, widths and depths, Q2_K's minimums'
// product past one k slice) and the other operations, and fails if one
// arithmetic name gives two hashes. Tiers whose floats take another path
// by CPU (the integer tiers' float32 products and Q2_K's minimums on
// avx512 or avx2) are where a difference would show.
func TestArithmeticAcrossCPUs(t *testing.T) {
	if out := os.Getenv("VEMBED_ARITH_OUT"); out != "" {
		writeArithHashes(t, out)
		return
	}
	if testing.Short() {
		t.Skip("starts subprocesses")
	}
	dir := t.TempDir()
	seen := map[string]string{} // arithmetic name → hash, first CPU kind
	from := map[string]string{}
	compared := 0
	for i, kind := range arithCPUs {
		path := filepath.Join(dir, fmt.Sprint(i))
		cmd := exec.Command(os.Args[0], "-test.run=^TestArithmeticAcrossCPUs$")
		debug := kind
		if d := os.Getenv("GODEBUG"); d != "" {
			debug = strings.Trim(d+","+kind, ",")
		}
		cmd.Env = append(os.Environ(), "VEMBED_ARITH_OUT="+path, "GODEBUG="+debug)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("GODEBUG=%s: %v\n%s", kind, err, out)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// Lines are "tier arithmetic hash".
			p := strings.Fields(sc.Text())
			if len(p) != 3 {
				t.Fatalf("GODEBUG=%s: line %q", kind, sc.Text())
			}
			where := fmt.Sprintf("%s on GODEBUG=%q", p[0], kind)
			if h, ok := seen[p[1]]; !ok {
				seen[p[1]], from[p[1]] = p[2], where
			} else {
				compared++
				if h != p[2] {
					t.Errorf("arithmetic %q: %s computes other bits than %s", p[1], where, from[p[1]])
				}
			}
		}
		f.Close()
	}
	if compared == 0 {
		t.Skip("no arithmetic name ran on two CPU kinds")
	}
	t.Logf("%d arithmetic names, %d comparisons", len(seen), compared)
}

// writeArithHashes writes, for every tier but the portable ones (whose Go
// code is the same on every CPU), a line "tier arithmetic hash" of its
// results on fixed inputs to path.
func writeArithHashes(t *testing.T, path string) {
	saved := Active()
	defer Use(saved)
	var b strings.Builder
	for _, tier := range Available() {
		if tier == TierReference || tier == TierGeneric {
			continue
		}
		if err := Use(tier); err != nil {
			t.Fatal(err)
		}
		h := fnv.New64a()
		put := func(v []float32) {
			var buf [4]byte
			for _, x := range v {
				bits := math.Float32bits(x)
				buf[0], buf[1], buf[2], buf[3] = byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24)
				h.Write(buf[:])
			}
		}
		rng := rand.New(rand.NewPCG(77, 78))
		for _, typ := range allTypes {
			ks := []int{33, 520}
			switch typ.BlockSize() {
			case 32:
				ks = []int{32, 288}
			case 256:
				ks = []int{256, 768, 4352}
			}
			for _, k := range ks {
				for _, n := range []int{17, 161} {
					w := randMatrix(t, typ, n, k, rng)
					bias := randVec(n, rng)
					for _, m := range []int{1, 7, 43} {
						x := randVec(m*k, rng)
						dst := make([]float32, m*n)
						MatMul(dst, x, m, w, bias)
						put(dst)
					}
				}
			}
		}
		const nTok, nHead, nKV, hd = 29, 4, 2, 80
		q, k, v := randVec(nTok*nHead*hd, rng), randVec(nTok*nKV*hd, rng), randVec(nTok*nKV*hd, rng)
		att := make([]float32, nTok*nHead*hd)
		Attention(att, q, k, v, nTok, nHead, nKV, hd, float32(1/math.Sqrt(hd)), Mask{Causal: true})
		put(att)
		x, g := randVec(nTok*hd, rng), randVec(hd, rng)
		y := make([]float32, len(x))
		RMSNorm(y, x, g, hd, 1e-6)
		put(y)
		LayerNorm(y, x, g, randVec(hd, rng), hd, 1e-6)
		put(y)
		SwiGLU(y, x, randVec(len(x), rng))
		put(y)
		GELU(y)
		put(y)
		QuickGELU(y)
		put(y)
		fmt.Fprintf(&b, "%s %s %x\n", tier, Arithmetic(), h.Sum64())
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
