package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vembed/vembed/gguf"
)

// TestMatMulRowInvariance checks that every row of a product is bit for bit
// what the same row gives alone or inside any other batch: the serving
// engine packs the inputs of unrelated requests into one product, and an
// input's embedding must not depend on what it was batched with.
func TestMatMulRowInvariance(t *testing.T) {
	eachTier(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(11, 12))
		for _, typ := range allTypes {
			k := 512
			if typ.BlockSize() == 32 {
				k = 288
			}
			if Active() == TierReference && !dequantizes(typ) {
				continue
			}
			w := randMatrix(t, typ, 37, k, rng)
			bias := randVec(37, rng)
			const m = 211
			x := randVec(m*k, rng)
			full := make([]float32, m*w.Rows)
			MatMul(full, x, m, w, bias)
			// The same weights as the tier packs them at load (if it
			// does): rows of the packed products against the unpacked
			// batch.
			wc := *w
			wp := &wc
			Prepare(wp)
			for _, mat := range []*Matrix{w, wp} {
				for _, r := range [][2]int{{0, 1}, {5, 6}, {7, 29}, {100, 211}, {3, 195}, {m - 1, m}} {
					lo, hi := r[0], r[1]
					part := make([]float32, (hi-lo)*w.Rows)
					MatMul(part, x[lo*k:hi*k], hi-lo, mat, bias)
					for i := range part {
						if math.Float32bits(part[i]) != math.Float32bits(full[lo*w.Rows+i]) {
							t.Errorf("%s (packed %v): rows [%d,%d): value %d is %v alone, %v in the batch of %d", typ, mat.Packed(), lo, hi, i, part[i], full[lo*w.Rows+i], m)
							break
						}
					}
				}
			}
		}
	})
}

// TestAttentionKVMatchesOnePass checks that attention computed chunk by
// chunk against the keys and values of earlier chunks (chunked prefill)
// equals, bit for bit, one causal pass over packed sequences.
func TestAttentionKVMatchesOnePass(t *testing.T) {
	eachTier(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(21, 22))
		for _, c := range []struct{ nHead, nKV, hd int }{{4, 2, 16}, {2, 2, 24}, {16, 2, 128}} {
			lens := []int{1, 300, 97, 129, 5}
			if c.hd <= 24 {
				// Past one key block, where the chunks' key blocks must
				// still start at the sequence's first key.
				lens = append(lens, attnBK+70)
			}
			qs, ks := c.nHead*c.hd, c.nKV*c.hd
			bounds := []int{0}
			for _, n := range lens {
				bounds = append(bounds, bounds[len(bounds)-1]+n)
			}
			total := bounds[len(bounds)-1]
			q, k, v := randVec(total*qs, rng), randVec(total*ks, rng), randVec(total*ks, rng)
			scale := float32(1 / math.Sqrt(float64(c.hd)))
			want := make([]float32, total*qs)
			Attention(want, q, k, v, total, c.nHead, c.nKV, c.hd, scale, Mask{Causal: true, Segments: bounds})

			// Cut every sequence into chunks; each "pass" takes one chunk of
			// every sequence that has one left, in a different order.
			chunks := []int{1, 7, 64, 128, 200, 1000}
			if testing.Short() {
				// A chunk shorter and one longer than a query block:
				// the emulated arm64 runs take a third of the time.
				chunks = []int{7, 200}
			}
			for _, chunk := range chunks {
				t.Run(fmt.Sprintf("h%d/kv%d/d%d/chunk%d", c.nHead, c.nKV, c.hd, chunk), func(t *testing.T) {
					got := make([]float32, total*qs)
					done := make([]int, len(lens))
					for {
						var spans []KVSpan
						var rows []int // sequence of each span
						var qp []float32
						for s := len(lens) - 1; s >= 0; s-- {
							if done[s] == lens[s] {
								continue
							}
							a, b := done[s], min(done[s]+chunk, lens[s])
							base := bounds[s]
							q0 := len(qp) / qs
							qp = append(qp, q[(base+a)*qs:(base+b)*qs]...)
							spans = append(spans, KVSpan{Q0: q0, Q1: q0 + b - a, K: k[base*ks : (base+b)*ks], V: v[base*ks : (base+b)*ks], Pos: a})
							rows = append(rows, s)
						}
						if len(spans) == 0 {
							break
						}
						out := make([]float32, len(qp))
						AttentionKV(out, qp, c.nHead, c.nKV, c.hd, scale, spans)
						for i, sp := range spans {
							s := rows[i]
							a := done[s]
							copy(got[(bounds[s]+a)*qs:], out[sp.Q0*qs:sp.Q1*qs])
							done[s] += sp.Q1 - sp.Q0
						}
					}
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("value %d (token %d): chunked %v, one pass %v", i, i/qs, got[i], want[i])
						}
					}
				})
			}
		}
	})
}

// TestMatMulRowBlocksInvariance checks row invariance across the row
// blocks of panelProductByPanel (256 KiB of activations: 256 float32 rows
// or 512 bfloat16 pair rows of a full k slice): a batch of 603 rows of a
// bfloat16-marked F16 weight, k with a tail slice and n with a partial
// panel, against parts that lie in one block, straddle two or hold the
// bottom rows short of a tile.
func TestMatMulRowBlocksInvariance(t *testing.T) {
	eachTier(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(13, 14))
		const m, k, n = 603, 520, 70
		w := randMatrix(t, gguf.TypeF16, n, k, rng)
		w.BF16 = true
		bias := randVec(n, rng)
		x := randVec(m*k, rng)
		full := make([]float32, m*n)
		MatMul(full, x, m, w, bias)
		for _, r := range [][2]int{{0, 1}, {250, 262}, {505, 517}, {255, 600}, {597, 603}} {
			lo, hi := r[0], r[1]
			part := make([]float32, (hi-lo)*n)
			MatMul(part, x[lo*k:hi*k], hi-lo, w, bias)
			for i := range part {
				if math.Float32bits(part[i]) != math.Float32bits(full[lo*n+i]) {
					t.Fatalf("rows [%d,%d): value %d is %v alone, %v in the batch of %d", lo, hi, i, part[i], full[lo*n+i], m)
				}
			}
		}
	})
}
