package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/vembed/vembed/gguf"
)

// intDecodeRow decodes row j of w into the integer form of whichever
// integer path takes its type: values v (multiplier times stored value),
// per 32-value block the factor fd, and per 16-value half the offset fm
// (value i = fd[i/32]·v[i] + fm[i/16]): the block's offset in both halves,
// or the type's halfMins.
func intDecodeRow(w *Matrix, j int) (v []int32, fd, fm []float32) {
	nb := w.Cols / i8Block
	v, fd, fb := make([]int32, w.Cols), make([]float32, nb), make([]float32, nb)
	src := w.Data[j*w.RowBytes():]
	fm = make([]float32, 2*nb)
	defer func() {
		if mins, ok := halfMins[w.Type]; ok {
			mins.decode(src, w.Cols/16, fm, 1)
			return
		}
		for b, f := range fb {
			fm[2*b], fm[2*b+1] = f, f
		}
	}()
	if dec, ok := u8Decoders[w.Type]; ok {
		q, mul, sum := make([]int8, w.Cols), make([]int16, 2*nb), make([]int32, 2*nb)
		if dec.unit {
			for i := range mul {
				mul[i] = 1
			}
		}
		dec.row(src, w.Cols, q, fd, fb, 1, mul, sum)
		got := make([]int32, 2*nb)
		for i, x := range q {
			v[i] = int32(mul[i/16]) * int32(x)
			got[i/16] += int32(x)
		}
		if !slices.Equal(got, sum) {
			panic(fmt.Sprintf("%s row %d: decoder half sums %v, values sum to %v", w.Type, j, sum, got))
		}
		return v, fd, fm
	}
	q := make([]int16, w.Cols)
	i8Decoders[w.Type].row(src, w.Cols, q, fd, fb, 1)
	for i, x := range q {
		v[i] = int32(x)
	}
	return v, fd, fm
}

// epilogueTerms is the number of roundings that may touch a term of an
// integer product by a weight of type t over nb blocks, for the bound
// γ(epilogueTerms)·mag: the per-block epilogue sums at most 2·nb+1 terms
// (and bias), each rounded once before (fl(dx·fd), fl(dx·Σq)); with
// halfMins it sums nb block terms onto the float32 product of 2·nb
// minimum terms and bias, each rounded once before (fl(dx·S_h)).
func epilogueTerms(t gguf.Type, nb int) int {
	if _, ok := halfMins[t]; ok {
		return 3*nb + 3
	}
	return 2*nb + 2
}

// intTypes lists the types with an integer kernel.
func intTypes() []gguf.Type {
	var ts []gguf.Type
	for t := range u8Decoders {
		ts = append(ts, t)
	}
	for t := range i8Decoders {
		ts = append(ts, t)
	}
	return ts
}

func hasHalfMins(t gguf.Type) bool {
	_, ok := halfMins[t]
	return ok
}

func hasMin(t gguf.Type) bool {
	if d, ok := u8Decoders[t]; ok {
		return d.hasMin
	}
	return i8Decoders[t].hasMin
}

// TestI8DecodersMatchDequantize checks that fd·q + fm is the dequantized
// weight. gguf.Dequantize rounds each value in float32 at most twice from
// the same float32 factors (e.g. fl(fl(d·sc)·q) for Q6_K, fl(fl(fd·q)−m)
// for Q4_K), so the exact fd·q + fm is within 2u(|fd·q| + |fm|) (+u² terms,
// covered by 2.01u) of it.
func TestI8DecodersMatchDequantize(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, typ := range intTypes() {
		t.Run(typ.String(), func(t *testing.T) {
			w := randMatrix(t, typ, 3, 512, rng)
			want := make([]float32, w.Cols)
			for j := 0; j < w.Rows; j++ {
				if err := gguf.Dequantize(typ, w.Data[j*w.RowBytes():(j+1)*w.RowBytes()], want); err != nil {
					t.Fatal(err)
				}
				q, fd, fm := intDecodeRow(w, j)
				for i, v := range want {
					b := i / i8Block
					a := float64(fd[b]) * float64(q[i])
					got := a + float64(fm[i/16])
					tol := 2.01 * u * (math.Abs(a) + math.Abs(float64(fm[i/16])))
					if !(math.Abs(got-float64(v)) <= tol) {
						t.Fatalf("row %d value %d: %v·%d + %v = %v, Dequantize %v", j, i, fd[b], q[i], fm[i/16], got, v)
					}
				}
			}
		})
	}
}

// i8Ref is the reference of the integer math: the same activation
// quantization, exact integer block dots, combined in float64. mag[i*n+j]
// is Σ over blocks of |dx·fd·Σq_x·q_w| + |fm·dx·Σq_x| + |bias|, the scale of
// the terms the float32 epilogue rounds; with halfMins the offset terms
// are |fm_h·dx·S_h| per half (S_h the half's Σq_x).
func i8Ref(x []float32, m int, w *Matrix, bias []float32) (ref, mag []float64) {
	n, k := w.Rows, w.Cols
	nb := k / i8Block
	xq, ds := make([]int16, m*k), make([]float32, 2*m*nb)
	for i := 0; i < m; i++ {
		quantizeRowI8(x[i*k:(i+1)*k], xq[i*k:(i+1)*k], ds[2*i*nb:2*(i+1)*nb])
	}
	ref, mag = make([]float64, m*n), make([]float64, m*n)
	for j := 0; j < n; j++ {
		q, fd, fm := intDecodeRow(w, j)
		for i := 0; i < m; i++ {
			var s, a float64
			for b := 0; b < nb; b++ {
				var isum int64
				for kk := b * i8Block; kk < (b+1)*i8Block; kk++ {
					isum += int64(xq[i*k+kk]) * int64(q[kk])
				}
				dx := float64(ds[2*(i*nb+b)])
				t1 := dx * float64(fd[b]) * float64(isum)
				var t2, t3 float64
				switch {
				case hasHalfMins(w.Type):
					t2 = float64(fm[2*b]) * dx * float64(codeSum(xq[i*k+b*i8Block:][:16]))
					t3 = float64(fm[2*b+1]) * dx * float64(codeSum(xq[i*k+b*i8Block+16:][:16]))
				case hasMin(w.Type):
					t2 = float64(fm[2*b]) * float64(ds[2*(i*nb+b)+1])
				}
				s += t1 + t2 + t3
				a += math.Abs(t1) + math.Abs(t2) + math.Abs(t3)
			}
			if bias != nil {
				s += float64(bias[j])
				a += math.Abs(float64(bias[j]))
			}
			ref[i*n+j], mag[i*n+j] = s, a
		}
	}
	return ref, mag
}

// codeSum is the sum of activation codes.
func codeSum(q []int16) (s int64) {
	for _, v := range q {
		s += int64(v)
	}
	return s
}

// intGEMM is one integer path and kernel, run on a product.
type intGEMM struct {
	name  string
	types map[gguf.Type]bool
	run   func(dst, x []float32, m int, w *Matrix, bias []float32)
}

// intGEMMs lists the integer paths and kernels this build can run.
func intGEMMs() []intGEMM {
	i8 := map[string]*i8Tier{"go": {kern: kernelI16Go, pack8: pack8I16Go, quant: quantizeRowU8}}
	u8 := map[string]*u8Tier{
		"go":     {kern: kernelU8Go, pack8: pack8U8Go, quant: quantizeRowU8},
		"go-nib": {kern: kernelU8Go, nib: kernelS8Go, pack8: pack8U8Go, quant: quantizeRowU8},
	}
	ai8, au8 := archIntKernels()
	for name, g := range ai8 {
		i8[name] = g
	}
	for name, g := range au8 {
		u8[name] = g
	}
	var out []intGEMM
	i8t, u8t := map[gguf.Type]bool{}, map[gguf.Type]bool{}
	for t := range i8Decoders {
		i8t[t] = true
	}
	for t := range u8Decoders {
		u8t[t] = true
	}
	for name, g := range i8 {
		out = append(out, intGEMM{"i16-" + name, i8t, func(dst, x []float32, m int, w *Matrix, bias []float32) {
			gemmInt8(dst, x, m, w, bias, g)
		}})
	}
	for name, g := range u8 {
		out = append(out, intGEMM{"u8-" + name, u8t, func(dst, x []float32, m int, w *Matrix, bias []float32) {
			gemmU8(dst, x, m, w, bias, g)
		}})
	}
	vt := map[gguf.Type]bool{}
	for t := range vnniDecoders {
		vt[t] = true
	}
	vn := map[string]*vnniTier{"go": vnniGo}
	for name, g := range archVNNIKernels() {
		vn[name] = g
	}
	for name, g := range vn {
		out = append(out, intGEMM{"vnni-" + name, vt, func(dst, x []float32, m int, w *Matrix, bias []float32) {
			gemmVNNI(dst, x, m, w, bias, g)
		}})
	}
	return out
}

// TestMatMulInt8 checks the integer GEMM against i8Ref on every type with
// an integer kernel, over tails of rows and columns, several k slices and
// the worker pool. Per output, the epilogue rounds fl(dx·fd), fl(dx·Σq)
// and each partial sum of at most 2·nb+1 terms once, so the result is
// within γ(2·nb+2)·mag (Higham §3.1) of the exact combination; the
// float64 reference adds u·|ref|.
func TestMatMulInt8(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, path := range intGEMMs() {
		for typ := range path.types {
			ks := []int{32, 288, 544}
			if typ.BlockSize() == 256 {
				ks = []int{256, 768}
			}
			for _, k := range ks {
				for _, n := range []int{1, 17, 130} {
					w := randMatrix(t, typ, n, k, rng)
					for _, m := range []int{1, 5, 6, 13, 64} {
						t.Run(fmt.Sprintf("%s/%s/k%d/n%d/m%d", path.name, typ, k, n, m), func(t *testing.T) {
							x := randVec(m*k, rng)
							var bias []float32
							if m%2 == 1 {
								bias = randVec(n, rng)
							}
							got := make([]float32, m*n)
							for i := range got {
								got[i] = float32(math.NaN())
							}
							path.run(got, x, m, w, bias)
							ref, mag := i8Ref(x, m, w, bias)
							nb := k / i8Block
							for i, r := range ref {
								tol := gamma(epilogueTerms(typ, nb))*mag[i] + u*math.Abs(r)
								if !(math.Abs(float64(got[i])-r) <= tol) {
									t.Fatalf("dst[%d][%d] = %v, want %v ± %.3g", i/n, i%n, got[i], r, tol)
								}
							}
						})
					}
				}
			}
		}
	}
}

// int8Slack reports whether the active tier multiplies w in integers, so
// that a product by w may move from the float32 one by int8RowBound.
func int8Slack(w *Matrix) bool { return int8Types[w.Type] && int8Tiers[Active()] }

// int8Act is a row of activations with the codes and block factors the
// integer tiers quantize it to (quantizeRowI8).
type int8Act struct {
	x  []float32
	q  []int16
	ds []float32
}

// quantizeActs quantizes each of the m rows of k values of x.
func quantizeActs(x []float32, m, k int) []int8Act {
	acts := make([]int8Act, m)
	for i := range acts {
		a := int8Act{x: x[i*k : (i+1)*k], q: make([]int16, k), ds: make([]float32, 2*(k/i8Block))}
		quantizeRowI8(a.x, a.q, a.ds)
		acts[i] = a
	}
	return acts
}

// int8RowBound bounds how far the integer product of activations a by a
// weight row of type typ in intDecodeRow's form (q, fd, fm) moves from the
// float32 product by the decoded weights ŵ:
//   - activations: |x − dx·q| ≤ dx/2 + 2.0001u|x| per value (q rounds
//     fl(x·fl(1/dx)), each rounding relative u);
//   - weights: the exact fd·q + fm is within 2.01u·wa of ŵ, wa = |fd·q|+|fm|
//     (TestI8DecodersMatchDequantize);
//   - the epilogue: γ(2·nb+2) of its terms (TestMatMulInt8).
//
// So |Σx·ŵ − result| ≤ Σ_b dx_b/2·Σ_b wa + 5u·Σ|x|·wa + γ(n)·mag, n
// epilogueTerms and fm per half (halfMins) in wa and mag. The callers
// decode each weight row and quantize each activation row once: under
// emulation, doing so per output took most of TestMatMul's time.
func int8RowBound(typ gguf.Type, q []int32, fd, fm []float32, a int8Act) float64 {
	nb := len(a.x) / i8Block
	x, xq, ds := a.x, a.q, a.ds
	var tol, mag float64
	for b := 0; b < nb; b++ {
		var sw, swx float64
		var isum int64
		for kk := b * i8Block; kk < (b+1)*i8Block; kk++ {
			wa := math.Abs(float64(fd[b])*float64(q[kk])) + math.Abs(float64(fm[kk/16]))
			sw += wa
			swx += math.Abs(float64(x[kk])) * wa
			isum += int64(xq[kk]) * int64(q[kk])
		}
		tol += float64(ds[2*b])/2*sw + 5*u*swx
		mag += math.Abs(float64(ds[2*b]) * float64(fd[b]) * float64(isum))
		if hasHalfMins(typ) {
			for h := 0; h < 2; h++ {
				mag += math.Abs(float64(fm[2*b+h]) * float64(ds[2*b]) * float64(codeSum(xq[b*i8Block+16*h:][:16])))
			}
		} else {
			mag += math.Abs(float64(fm[2*b]) * float64(ds[2*b+1]))
		}
	}
	return tol + gamma(epilogueTerms(typ, nb))*mag
}

// TestMatMulInt8VsExact compares every integer path and kernel with the
// float64 product by the decoded weights on activations with outlier
// channels (a few columns 30× larger, as in transformer hidden states),
// within int8RowBound; it also reports the largest error relative to Σ|x·w|.
func TestMatMulInt8VsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	const m, k, n = 23, 1024, 70
	for _, path := range intGEMMs() {
		for typ := range path.types {
			w := randMatrix(t, typ, n, k, rng)
			x := randVec(m*k, rng)
			for i := 0; i < m; i++ {
				for _, c := range []int{7, 300, 301, 1000} {
					x[i*k+c] *= 30
				}
			}
			got := make([]float32, m*n)
			path.run(got, x, m, w, nil)
			row := make([]float32, k)
			acts := quantizeActs(x, m, k)
			var worst float64
			for j := 0; j < n; j++ {
				decoders[typ].decode(w.Data[j*w.RowBytes():], k, row, 1)
				q, fd, fm := intDecodeRow(w, j)
				for i := 0; i < m; i++ {
					xi := x[i*k : (i+1)*k]
					var s, a float64
					for kk, v := range row {
						s += float64(xi[kk]) * float64(v)
						a += math.Abs(float64(xi[kk]) * float64(v))
					}
					tol := int8RowBound(typ, q, fd, fm, acts[i]) + u*math.Abs(s)
					e := math.Abs(float64(got[i*n+j]) - s)
					if !(e <= tol) {
						t.Fatalf("%s %s: dst[%d][%d] = %v, want %v ± %.3g", path.name, typ, i, j, got[i*n+j], s, tol)
					}
					worst = max(worst, e/a)
				}
			}
			t.Logf("%s %s: max |error| / Σ|x·w| = %.2g", path.name, typ, worst)
		}
	}
}

func hasTier(t Tier) bool {
	for _, a := range Available() {
		if a == t {
			return true
		}
	}
	return false
}

// TestQuantizeRowI8 checks the activation quantization on edge values:
// exact halves round to even, all-zero and non-finite blocks.
func TestQuantizeRowI8(t *testing.T) {
	x := make([]float32, 3*i8Block)
	x[0] = 127 // d = 1: values are their own codes
	x[1], x[2], x[3] = 2.5, -3.5, 0.5
	x[i8Block+5] = float32(math.Inf(1))
	q, ds := make([]int16, len(x)), make([]float32, 6)
	quantizeRowI8(x, q, ds)
	if ds[0] != 1 || q[0] != 127 || q[1] != 2 || q[2] != -4 || q[3] != 0 {
		t.Fatalf("block 0: d=%v q=%v", ds[0], q[:4])
	}
	if ds[1] != float32(127+2-4) {
		t.Fatalf("block 0: d·Σq = %v", ds[1])
	}
	if !math.IsInf(float64(ds[2]), 1) || q[i8Block+5] != 0 || ds[3] != 0 {
		t.Fatalf("block with +Inf: d=%v q=%v", ds[2], q[i8Block+5])
	}
	if ds[4] != 0 || ds[5] != 0 {
		t.Fatalf("zero block: d=%v d·Σq=%v", ds[4], ds[5])
	}
}

// TestQuantizeRowU8 checks the tiers' activation quantizers against
// quantizeRowU8 bit for bit, on random rows with outliers and on blocks of
// zeros, infinities, NaNs, exact halves and the extremes of float32.
func TestQuantizeRowU8(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	const nb = 40
	x := randVec(nb*i8Block, rng)
	x[5] *= 1000
	for i := i8Block; i < 2*i8Block; i++ {
		x[i] = 0
	}
	x[2*i8Block+3] = float32(math.Inf(-1))
	x[3*i8Block+9] = float32(math.NaN())
	x[4*i8Block] = 127
	for i := 1; i < i8Block; i++ {
		x[4*i8Block+i] = float32(i) - 15.5
	}
	x[5*i8Block] = math.MaxFloat32
	x[6*i8Block] = math.SmallestNonzeroFloat32
	for i := 0; i < i8Block; i++ {
		x[7*i8Block+i] = float32(i) * 1e-31 // amax above 2⁻¹⁰⁰
		x[8*i8Block+i] = float32(i) * 1e-40 // subnormal: below
	}
	want, wantDS := make([]uint8, len(x)), make([]float32, 2*nb)
	quantizeRowU8(x, want, wantDS)
	_, au8 := archIntKernels()
	for name, g := range au8 {
		got, gotDS := make([]uint8, len(x)), make([]float32, 2*nb)
		g.quant(x, got, gotDS)
		if !slices.Equal(got, want) {
			t.Errorf("%s: q differs", name)
		}
		for i := range wantDS {
			if math.Float32bits(gotDS[i]) != math.Float32bits(wantDS[i]) {
				t.Errorf("%s: ds[%d] = %v, want %v", name, i, gotDS[i], wantDS[i])
			}
		}
	}
}

// TestU8RowsMatch checks the tiers' faster decoders against the portable
// ones, every output bit for bit, over several super-blocks.
func TestU8RowsMatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	ai8, au8 := archIntKernels()
	for name, g := range ai8 {
		for typ, row := range g.rows {
			for _, n := range rowSizes(i8Decoders[typ].blockSize) {
				w := randMatrix(t, typ, 1, n, rng)
				run := func(f func(src []byte, n int, q []int16, fd, fm []float32, fs int)) ([]int16, []float32) {
					q, fd := make([]int16, n), make([]float32, 2*n/32)
					f(w.Data, n, q, fd, make([]float32, 2*n/32), 2)
					return q, fd
				}
				wq, wfd := run(i8Decoders[typ].row)
				gq, gfd := run(row)
				if !slices.Equal(gq, wq) || !slices.Equal(gfd, wfd) {
					t.Errorf("%s %s n=%d: decoder differs from the portable one", name, typ, n)
				}
			}
		}
	}
	for name, g := range au8 {
		for typ, row := range g.rows {
			for _, n := range rowSizes(u8Decoders[typ].blockSize) {
				u8RowMatch(t, name, typ, n, u8Decoders[typ].row, row, rng)
			}
		}
	}
}

// rowSizes are the row lengths TestU8RowsMatch decodes for a block size:
// one block, an odd number, and more than the decoders' chunks.
func rowSizes(bs int) []int { return []int{bs, 3 * bs, 25 * bs} }

// u8RowMatch compares a byte decoder with ref, the portable one of its
// type, on one random row of n values.
func u8RowMatch(t *testing.T, name string, typ gguf.Type, n int, ref, row func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32), rng *rand.Rand) {
	w := randMatrix(t, typ, 1, n, rng)
	type out struct {
		q      []int8
		fd, fm []float32
		mul    []int16
		sum    []int32
	}
	run := func(f func(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32)) out {
		o := out{make([]int8, n), make([]float32, 2*n/32), make([]float32, 2*n/32), make([]int16, n/16), make([]int32, n/16)}
		f(w.Data, n, o.q, o.fd, o.fm[1:], 2, o.mul, o.sum)
		return o
	}
	want, got := run(ref), run(row)
	if !slices.Equal(got.q, want.q) || !slices.Equal(got.fd, want.fd) || !slices.Equal(got.fm, want.fm) ||
		!slices.Equal(got.mul, want.mul) || !slices.Equal(got.sum, want.sum) {
		t.Errorf("%s %s n=%d: decoder differs from the portable one", name, typ, n)
	}
}

// TestMatMulInt8Concurrent runs integer products from several goroutines
// at once on each integer tier: each must get its own scratch (activation,
// panel and tile buffers) and the same result as when alone.
func TestMatMulInt8Concurrent(t *testing.T) {
	saved := Active()
	defer Use(saved)
	ran := false
	for tier := range int8Tiers {
		if !hasTier(tier) {
			continue
		}
		ran = true
		Use(tier)
		t.Run(string(tier), matMulInt8Concurrent)
	}
	if !ran {
		t.Skip("no integer tier on this CPU")
	}
}

func matMulInt8Concurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	const callers, m, k, n = 4, 41, 512, 150
	for _, typ := range []gguf.Type{gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeQ5_0, gguf.TypeQ8_0, gguf.TypeQ2_K} {
		w := randMatrix(t, typ, n, k, rng)
		xs := make([][]float32, callers)
		want := make([][]float32, callers)
		for c := range xs {
			xs[c] = randVec(m*k, rng)
			want[c] = make([]float32, m*n)
			MatMul(want[c], xs[c], m, w, nil)
		}
		errs := make(chan error, callers)
		for c := 0; c < callers; c++ {
			go func() {
				got := make([]float32, m*n)
				for rep := 0; rep < 5; rep++ {
					MatMul(got, xs[c], m, w, nil)
					if !slices.Equal(got, want[c]) {
						errs <- fmt.Errorf("%s caller %d: result differs from the one computed alone", typ, c)
						return
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
	}
}

// TestMatMulInt8NonFinite checks that a row with an infinite or NaN
// activation comes out non-finite on every integer path, as the float32
// product would, and that the other rows are unaffected.
func TestMatMulInt8NonFinite(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	const m, k, n = 7, 256, 20
	for _, path := range intGEMMs() {
		for typ := range path.types {
			w := randMatrix(t, typ, n, k, rng)
			x := randVec(m*k, rng)
			x[1*k+40] = float32(math.Inf(1))
			x[4*k+200] = float32(math.NaN())
			got := make([]float32, m*n)
			path.run(got, x, m, w, nil)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					v := float64(got[i*n+j])
					finite := !math.IsInf(v, 0) && !math.IsNaN(v)
					if (i == 1 || i == 4) == finite {
						t.Fatalf("%s %s: dst[%d][%d] = %v", path.name, typ, i, j, v)
					}
				}
			}
		}
	}
}

// TestInt8Threshold checks the per-type scaling of the row threshold at
// its edges: zero stays zero, a positive one stays positive, a huge one
// does not wrap into a small one.
func TestInt8Threshold(t *testing.T) {
	cases := []struct {
		typ           gguf.Type
		minRows, want int
	}{
		{gguf.TypeQ4_K, 16, 16},
		{gguf.TypeQ4_K, 0, 0},
		{gguf.TypeIQ4_XS, 16, 32},
		{gguf.TypeIQ4_NL, 0, 0},
		{gguf.TypeIQ4_NL, math.MaxInt / 2, math.MaxInt - 1},
		{gguf.TypeIQ4_NL, math.MaxInt/2 + 1, math.MaxInt},
		{gguf.TypeQ3_K, 16, 1},
		{gguf.TypeQ3_K, 15, 1},
		{gguf.TypeQ3_K, 64, 4},
		{gguf.TypeQ3_K, 0, 0},
	}
	for _, c := range cases {
		if got := int8Threshold(c.typ, c.minRows); got != c.want {
			t.Errorf("int8Threshold(%s, %d) = %d, want %d", c.typ, c.minRows, got, c.want)
		}
	}
}

// TestNibKernelMatchesU8 checks that the nibble kernels (6-row groups,
// signed activations, whole blocks summed in int16) give every output bit
// for bit as the 3-row u8 kernel: both sum exactly and share the float
// epilogue, so any difference is a wrong sum. Row counts cover every tail
// of both group sizes; k several slices of the panel depth.
func TestNibKernelMatchesU8(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	tiers := map[string]*u8Tier{"go": {kern: kernelU8Go, nib: kernelS8Go, pack8: pack8U8Go, quant: quantizeRowU8}}
	_, au8 := archIntKernels()
	for name, g := range au8 {
		if g.nib != nil {
			tiers[name] = g
		}
	}
	for name, g := range tiers {
		plain := *g
		plain.nib = nil
		for typ, dec := range u8Decoders {
			if !dec.nibbles {
				continue
			}
			for _, k := range []int{256, 768} {
				for _, n := range []int{17, 40} {
					w := randMatrix(t, typ, n, k, rng)
					for _, m := range []int{1, 2, 3, 5, 6, 7, 11, 12, 13, 19} {
						x := randVec(m*k, rng)
						if m > 2 {
							// A row of extremes: every |q| reaches 127.
							for i := range k {
								x[2*k+i] = float32(1 - 2*(i%2))
							}
						}
						want, got := make([]float32, m*n), make([]float32, m*n)
						gemmU8(want, x, m, w, nil, &plain)
						gemmU8(got, x, m, w, nil, g)
						for i := range got {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%s %s k%d n%d m%d: dst[%d][%d] = %v, the u8 kernel gives %v", name, typ, k, n, m, i/n, i%n, got[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}
