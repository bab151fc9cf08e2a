package kernels

import (
	"bufio"
	"fmt"
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
		fmt.Fprintf(&b, "%s %s %x\n", tier, Arithmetic(), arithHash(t))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
