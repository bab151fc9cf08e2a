//go:build amd64 || arm64

package kernels

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// ulpDiff is the distance in float32 ulps between got and the float64 want.
func ulpDiff(got float32, want float64) float64 {
	w := float32(want)
	ulp := math.Nextafter32(float32(math.Abs(float64(w))), float32(math.Inf(1))) - float32(math.Abs(float64(w)))
	return math.Abs(float64(got)-want) / float64(ulp)
}

func skipWithoutVecLoops(t *testing.T) {
	t.Helper()
	if !hasVecLoops {
		t.Skip("the CPU has no AVX2: the vector loops are not used")
	}
}

// TestVectorExp sweeps the vector exp over its whole range against
// math.Exp: within 2 ulp for every normal result, exact 0 for −Inf and for
// inputs whose result is below the flush threshold.
func TestVectorExp(t *testing.T) {
	skipWithoutVecLoops(t)
	n := 1 << 20
	if testing.Short() {
		n = 1 << 16 // a sample of the same range for emulated runs
	}
	x := make([]float32, n)
	for i := range x {
		x[i] = -87 + 175*float32(i)/float32(n)
	}
	got := append([]float32(nil), x...)
	expSumVec(got, 0)
	var worst float64
	for i, v := range x {
		worst = max(worst, ulpDiff(got[i], math.Exp(float64(v))))
	}
	t.Logf("worst error %.2f ulp", worst)
	if worst > 2 {
		t.Fatalf("vector exp off by %.2f ulp", worst)
	}
	sp := []float32{float32(math.Inf(-1)), -1000, -88}
	expSumVec(sp, 0)
	for i, v := range sp {
		if v != 0 {
			t.Errorf("exp of tiny input %d = %v, want 0", i, v)
		}
	}
	s := []float32{0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8} // sum covers the tail path
	sum := expSumVec(s, 1)
	var want float64
	for _, v := range []float64{0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8} {
		want += math.Exp(v - 1)
	}
	if math.Abs(float64(sum)-want) > 1e-5*want {
		t.Fatalf("expSum = %v, want %v", sum, want)
	}
}

// fma32Exact is a·b + c rounded once to float32 (exact in big.Float first: the
// product of two float32 values has 48 bits, and 400 bits hold the sum
// whatever the exponents).
func fma32Exact(a, b, c float32) float32 {
	x := new(big.Float).SetPrec(400).SetFloat64(float64(a))
	x.Mul(x, new(big.Float).SetPrec(400).SetFloat64(float64(b)))
	x.Add(x, new(big.Float).SetPrec(400).SetFloat64(float64(c)))
	f, _ := x.Float32()
	return f
}

// expModel is one lane of vecmath_amd64.s's EXP, operation by operation
// (VMAXPS and VMINPS return their second operand unless the first is
// larger or smaller): the arithmetic both architectures' kernels must
// reproduce bit for bit.
func expModel(x float32) float32 {
	keep := x >= -87
	if !(x > -87) {
		x = -87
	}
	if !(x < 88) {
		x = 88
	}
	n := float32(math.RoundToEven(float64(x * math.Float32frombits(0x3fb8aa3b))))
	x = fma32Exact(-n, math.Float32frombits(0x3f318000), x)
	x = fma32Exact(-n, math.Float32frombits(0xb95e8083), x)
	p := math.Float32frombits(0x39506967)
	for _, c := range []uint32{0x3ab743ce, 0x3c088908, 0x3d2aa9c1, 0x3e2aaaaa, 0x3f000000} {
		p = fma32Exact(p, x, math.Float32frombits(c))
	}
	x2 := x * x
	p = fma32Exact(x2, p, x)
	p += 1
	r := p * math.Float32frombits(uint32(int32(n)+127)<<23)
	if !keep {
		return 0
	}
	return r
}

// xOver1pExpModel is XOVER1PEXP: num/(1+exp(x)).
func xOver1pExpModel(num, x float32) float32 { return num / (expModel(x) + 1) }

// sum8Model is the AVX2 kernels' sum of v: eight lane sums in order, then
// HSUM's pairing.
func sum8Model(v []float32) float32 {
	var l [8]float32
	for i, e := range v {
		l[i%8] += e
	}
	s := [4]float32{l[0] + l[4], l[1] + l[5], l[2] + l[6], l[3] + l[7]}
	return (s[0] + s[2]) + (s[1] + s[3])
}

// TestVecMathMatchesModel checks the vector scaling and exp-based kernels against the
// model of the AVX2 arithmetic above, bit for bit, values and sums, on
// inputs over the whole range with the clamp and flush boundaries, ±Inf
// and NaN, at lengths with tails: on amd64 it pins the AVX2 kernels to the
// model, on arm64 the NEON ones, so the two architectures' softmax and
// activations agree bit for bit.
func TestVecMathMatchesModel(t *testing.T) {
	skipWithoutVecLoops(t)
	rng := rand.New(rand.NewPCG(75, 76))
	special := []float32{0, float32(math.Copysign(0, -1)), -87, -87.00001, 88, 88.5, -88, 1e-30, -1e-30,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 3e38, -3e38, 0.5, -0.5}
	for _, n := range []int{1, 7, 8, 9, 16, 23, 100, 1027} {
		x := make([]float32, n)
		for i := range x {
			switch rng.IntN(4) {
			case 0:
				x[i] = special[rng.IntN(len(special))]
			case 1:
				x[i] = float32(rng.NormFloat64())
			default:
				x[i] = 200*rng.Float32() - 100
			}
		}
		up := randVec(n, rng)
		check := func(what string, got []float32, model func(v, u float32) float32) {
			t.Helper()
			want := make([]float32, n)
			for i, v := range x {
				want[i] = model(v, up[i])
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
					t.Fatalf("%s n=%d: value %d (input %v) is %v, the model's %v", what, n, i, x[i], got[i], want[i])
				}
			}
		}

		const sub = 1.25
		e := append([]float32(nil), x...)
		sum := expSumVec(e, sub)
		check("exp", e, func(v, _ float32) float32 { return expModel(v - sub) })
		// The sum: the tail of a length that is not a multiple of 8 is
		// a separate call, added last.
		n8 := n &^ 7
		wantSum := sum8Model(e[:n8])
		if n8 < n {
			wantSum += sum8Model(e[n8:])
		}
		if n8 == 0 {
			wantSum = sum8Model(e)
		}
		if math.Float32bits(sum) != math.Float32bits(wantSum) && !(sum != sum && wantSum != wantSum) {
			t.Fatalf("expSum n=%d = %v, the model's %v", n, sum, wantSum)
		}

		const scale = 0.0883883476 // 1/√128
		sm := append([]float32(nil), x...)
		m := scaleMaxVec(sm, scale)
		check("scale", sm, func(v, _ float32) float32 { return v * scale })
		wantMax := float32(math.Inf(-1))
		nan := false
		for _, v := range sm {
			nan = nan || v != v
			wantMax = max(wantMax, v)
		}
		// A NaN score has no defined maximum (the lanes keep or drop it
		// by position); every other maximum is exact.
		if !nan && m != wantMax {
			t.Fatalf("scaleMax n=%d = %v, want %v", n, m, wantMax)
		}

		d := make([]float32, n)
		siluMulVec(d, x, up)
		check("silu", d, func(v, u float32) float32 { return xOver1pExpModel(v, -v) * u })
		q := append([]float32(nil), x...)
		quickGELUVec(q)
		check("quick gelu", q, func(v, _ float32) float32 {
			return xOver1pExpModel(v, v*math.Float32frombits(0xbfd9db23))
		})
		g := append([]float32(nil), x...)
		geluTanhVec(g)
		check("tanh gelu", g, func(v, _ float32) float32 {
			z := float32(float32(float32(v*0.044715)*v)*v) + v
			return xOver1pExpModel(v, z*-1.5957691216057308)
		})
	}
}

// TestAddAndRoPEVectorsMatchGo checks the assembly addition and rotation
// against the Go loops bit for bit, on lengths around every group size,
// with the destination aliasing an operand, and RoPE head sizes whose
// halves leave tails (vision towers use 80, LMs 128).
func TestAddAndRoPEVectorsMatchGo(t *testing.T) {
	skipWithoutVecLoops(t)
	rng := rand.New(rand.NewPCG(71, 72))
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 40, 63, 64, 65, 100, 1280, 1283} {
		a, b := randVec(n, rng), randVec(n, rng)
		want := make([]float32, n)
		AddRef(want, a, b)
		got := make([]float32, n)
		addVec(got, a, b)
		sameBits(t, fmt.Sprintf("add n=%d", n), got, want)
		inPlace := append([]float32(nil), a...)
		addVec(inPlace, inPlace, b)
		sameBits(t, fmt.Sprintf("add in place n=%d", n), inPlace, want)
	}
	for _, headDim := range []int{2, 14, 16, 18, 32, 34, 64, 80, 128} {
		const nTok, nHead = 5, 3
		half := headDim / 2
		x := randVec(nTok*nHead*headDim, rng)
		cos, sin := randVec(nTok*half, rng), randVec(nTok*half, rng)
		want := append([]float32(nil), x...)
		RoPERef(want, nTok, nHead, headDim, cos, sin)
		ropeHeads(x, nTok, nHead, headDim, cos, sin)
		sameBits(t, fmt.Sprintf("rope headDim=%d", headDim), x, want)
	}
}

// TestNormRowsVecMatchGo checks the assembly RMSNorm and LayerNorm (with
// and without bias) against rmsNormRows and layerNormRows bit for bit:
// row counts around the four-row groups, widths with and without tails
// (the towers' 1280, the LMs' 2048), in place, and rows of zeros, huge
// values and NaN.
func TestNormRowsVecMatchGo(t *testing.T) {
	skipWithoutVecLoops(t)
	rng := rand.New(rand.NewPCG(73, 74))
	for _, dim := range []int{1, 3, 4, 5, 8, 9, 16, 18, 80, 1280, 1283, 2048} {
		for _, rows := range []int{1, 3, 4, 5, 8, 9} {
			x, w := randVec(rows*dim, rng), randVec(dim, rng)
			for i := range x {
				x[i] *= float32(math.Exp2(float64(rng.IntN(41) - 20)))
			}
			if rows > 2 {
				clear(x[dim : 2*dim])
				x[2*dim] = 3e38
				if dim > 1 {
					x[2*dim+1] = -3e38
				}
			}
			if rows > 4 {
				x[4*dim+dim/2] = float32(math.NaN())
			}
			want := make([]float32, rows*dim)
			got := make([]float32, rows*dim)
			bias := randVec(dim, rng)
			for _, b := range [][]float32{nil, bias} {
				layerNormRows(want, x, w, b, dim, 1e-5)
				layerNormRowsVec(got, x, w, b, dim, 1e-5)
				sameBits(t, fmt.Sprintf("layernorm dim=%d rows=%d bias=%v", dim, rows, b != nil), got, want)
			}
			x2 := append([]float32(nil), x...)
			layerNormRowsVec(x2, x2, w, bias, dim, 1e-5)
			sameBits(t, fmt.Sprintf("layernorm in place dim=%d rows=%d", dim, rows), x2, want)

			rmsNormRows(want, x, w, dim, 1e-6)
			rmsNormRowsVec(got, x, w, dim, 1e-6)
			sameBits(t, fmt.Sprintf("rmsnorm dim=%d rows=%d", dim, rows), got, want)
			rmsNormRowsVec(x, x, w, dim, 1e-6)
			sameBits(t, fmt.Sprintf("rmsnorm in place dim=%d rows=%d", dim, rows), x, want)
		}
	}
}
