package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vembed/vembed/gguf"
)

func TestDecodersMatchDequantize(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range allTypes {
		t.Run(typ.String(), func(t *testing.T) {
			cols := 512
			w := randMatrix(t, typ, 3, cols, rng)
			want := make([]float32, cols)
			got := make([]float32, 3*cols)
			for r := 0; r < 3; r++ {
				src := w.Data[r*w.RowBytes() : (r+1)*w.RowBytes()]
				if err := gguf.Dequantize(typ, src, want); err != nil {
					t.Skipf("gguf.Dequantize does not take %s yet: %v", typ, err)
				}
				// Strided writes, as into a packed panel.
				decoders[typ].decode(src, cols, got[r:], 3)
				for i := range want {
					if math.Float32bits(got[i*3+r]) != math.Float32bits(want[i]) {
						t.Fatalf("row %d value %d: decoded %v, Dequantize %v", r, i, got[i*3+r], want[i])
					}
				}
			}
		})
	}
}

// matMulCheck compares MatMul with a float64 product of the decoded weights.
// A float32 product of K terms accumulated in any order, plus the bias, is
// within γ_{K+1}·(Σ|x_k·w_k| + |b|) of the exact value (Higham, Accuracy and
// Stability of Numerical Algorithms, §3.1); the float64 reference adds at
// most one rounding to float32, u·|ref|. The avx2-int8 tier adds the error
// of its activation quantization, bounded by int8RowBound, and avx512-bf16
// the rounding of activations and float weights to bfloat16, bf16Slack.
func matMulCheck(t *testing.T, w *Matrix, m int, withBias bool, rng *rand.Rand) {
	t.Helper()
	k, n := w.Cols, w.Rows
	x := randVec(m*k, rng)
	var bias []float32
	if withBias {
		bias = randVec(n, rng)
	}
	dst := make([]float32, m*n)
	for i := range dst {
		dst[i] = float32(math.NaN()) // every output must be written
	}
	MatMul(dst, x, m, w, bias)

	row := make([]float32, k)
	var acts []int8Act
	if int8Slack(w) {
		acts = quantizeActs(x, m, k)
	}
	for j := 0; j < n; j++ {
		decoders[w.Type].decode(w.Data[j*w.RowBytes():], k, row, 1)
		var q []int32
		var fd, fm []float32
		if acts != nil {
			q, fd, fm = intDecodeRow(w, j)
		}
		for i := 0; i < m; i++ {
			var s, mag float64
			for kk, v := range row {
				p := float64(x[i*k+kk]) * float64(v)
				s += p
				mag += math.Abs(p)
			}
			if bias != nil {
				s += float64(bias[j])
				mag += math.Abs(float64(bias[j]))
			}
			tol := gamma(k+1)*mag + u*math.Abs(s) + bf16Slack(w.Type, k, mag)
			if acts != nil {
				tol += int8RowBound(w.Type, q, fd, fm, acts[i])
			}
			if got := float64(dst[i*n+j]); !(math.Abs(got-s) <= tol) {
				t.Fatalf("%s m=%d k=%d n=%d: dst[%d][%d] = %v, want %v ± %.3g", w.Type, m, k, n, i, j, got, s, tol)
			}
		}
	}
}

func TestMatMul(t *testing.T) {
	eachTier(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 4))
		for _, typ := range allTypes {
			ks := []int{1, 5, 33, 300}
			switch typ.BlockSize() {
			case 32:
				ks = []int{32, 288}
			case 256:
				ks = []int{256, 512}
			}
			for _, k := range ks {
				for _, n := range []int{1, 17, 300} {
					w := randMatrix(t, typ, n, k, rng)
					for _, m := range []int{1, 3, 7, 65} {
						t.Run(fmt.Sprintf("%s/k%d/n%d/m%d", typ, k, n, m), func(t *testing.T) {
							if Active() == TierReference && !dequantizes(typ) {
								t.Skipf("gguf.Dequantize does not take %s yet", typ)
							}
							matMulCheck(t, w, m, m%2 == 1, rng)
						})
					}
				}
			}
		}
	})
}

// TestMatMulLarge covers several k slices, column blocks and row blocks at
// once, the shapes where the blocking logic matters.
func TestMatMulLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("large product")
	}
	eachTier(t, func(t *testing.T) {
		if Active() == TierReference && !dequantizes(gguf.TypeQ4_K) {
			t.Skip("gguf.Dequantize does not take Q4_K yet")
		}
		rng := rand.New(rand.NewPCG(5, 6))
		w := randMatrix(t, gguf.TypeQ4_K, 260, 768, rng)
		matMulCheck(t, w, 400, true, rng)
	})
}

func TestMatMulZeroSizes(t *testing.T) {
	eachTier(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(7, 8))
		w := randMatrix(t, gguf.TypeF32, 3, 0, rng)
		dst := []float32{9, 9, 9}
		MatMul(dst, nil, 1, w, []float32{1, 2, 3})
		if dst[0] != 1 || dst[1] != 2 || dst[2] != 3 {
			t.Fatalf("k=0 product with bias = %v, want the bias", dst)
		}
		MatMul(nil, nil, 0, w, nil) // no rows: nothing to do
	})
}

// dequantizes reports whether gguf.Dequantize, which the reference tier
// uses, takes type typ.
func dequantizes(typ gguf.Type) bool {
	bs := typ.BlockSize()
	src := make([]byte, typ.TypeSize())
	return gguf.Dequantize(typ, src, make([]float32, bs)) == nil
}

// TestMatMulConcurrent runs products from several goroutines at once, as a
// server does: each must get its own scratch buffers and results.
func TestMatMulConcurrent(t *testing.T) {
	eachTier(t, func(t *testing.T) {
		if Active() == TierReference {
			t.Skip("the reference is single-threaded")
		}
		rng := rand.New(rand.NewPCG(17, 18))
		w := randMatrix(t, gguf.TypeQ8_0, 200, 256, rng)
		const callers = 4
		xs := make([][]float32, callers)
		want := make([][]float32, callers)
		for c := range xs {
			xs[c] = randVec(37*256, rng)
			want[c] = make([]float32, 37*200)
			MatMul(want[c], xs[c], 37, w, nil)
		}
		errs := make(chan error, callers)
		for c := 0; c < callers; c++ {
			go func() {
				got := make([]float32, 37*200)
				for rep := 0; rep < 5; rep++ {
					MatMul(got, xs[c], 37, w, nil)
					for i := range got {
						if got[i] != want[c][i] {
							errs <- fmt.Errorf("caller %d: dst[%d] = %v, want %v", c, i, got[i], want[c][i])
							return
						}
					}
				}
				errs <- nil
			}()
		}
		for c := 0; c < callers; c++ {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	})
}
