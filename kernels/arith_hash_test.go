package kernels

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// arithHash hashes the active tier's results on fixed inputs: products by
// every weight type (edge heights, widths and depths, Q2_K's minimums'
// product past one k slice), attention within one key block and across
// several, and the other operations.
func arithHash(t testing.TB) uint64 {
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
	// Keys past any key block (1024 to date): where the softmax splits.
	const long = 1100
	q, k, v = randVec(long*hd, rng), randVec(long*hd, rng), randVec(long*hd, rng)
	att = make([]float32, long*hd)
	Attention(att, q, k, v, long, 1, 1, hd, float32(1/math.Sqrt(hd)), Mask{})
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
	return h.Sum64()
}

// arithGolden holds arithHash by arithmetic name, for the names of this
// revision (arithmeticRevision). A name's hash is the same on every CPU
// (TestArithmeticAcrossCPUs), so one machine records them all but those
// of tiers it lacks; arm64's tiers compute the names of x86 tiers (neon
// avx2's, neon-dotprod and i8mm avx2-int8's), checked under qemu.
var arithGolden = map[string]uint64{
	"reference/4":             0x3efef0757a021b38,
	"generic/4":               0xcfb058686a6b4053,
	"avx2/4":                  0xf0422d9589e8df6a,
	"avx2-int8/4":             0xfe3e07a53354fe33,
	"avx512-bf16+avx2-int8/4": 0x588f6ea0d0792112,
}

// TestArithmeticRevision checks that every arithmetic name this machine
// runs computes the bits recorded for it: a change to the bits (a
// summation order, a blocking, an approximation) must come with a new
// arithmeticRevision, so that caches shared by processes of different
// versions stop serving the old bits for the new, and with the new
// hashes (VEMBED_ARITH_RECORD=1 prints them).
func TestArithmeticRevision(t *testing.T) {
	saved := Active()
	defer Use(saved)
	record := os.Getenv("VEMBED_ARITH_RECORD") != ""
	seen := map[string]bool{}
	checked := 0
	for _, tier := range slices.Backward(Available()) {
		if err := Use(tier); err != nil {
			t.Fatal(err)
		}
		name := Arithmetic()
		if record {
			if !seen[name] {
				seen[name] = true
				t.Logf("%q: %#x,", name, arithHash(t))
			}
			continue
		}
		// Every tier, not one per name: a name is a promise that all its
		// tiers compute these bits (i8mm those of neon-dotprod).
		want, ok := arithGolden[name]
		if !ok {
			t.Logf("%s: no hash recorded for %q", tier, name)
			continue
		}
		got := arithHash(t)
		checked++
		if got != want {
			t.Errorf("%s computes other bits under the name %q than recorded: bump arithmeticRevision and record the hashes again", tier, name)
		}
	}
	if checked == 0 && !record {
		t.Skip("no arithmetic name of this build and CPU has a recorded hash")
	}
}
