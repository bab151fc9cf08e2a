// Package heads turns a model's final hidden states into embeddings: mean
// and last-token pooling, L2 normalization, Matryoshka truncation and the
// multi-vector (late-interaction) projector.
//
// Hidden states are row-major n×dim float32, as qwenvl.Model.Forward
// returns them. Sums run in float64 so that pooling long sequences adds no
// error beyond the final rounding to float32.
package heads

import (
	"fmt"
	"math"
)

// MeanPool returns the mean of rows lo..hi-1 (hi exclusive) of hidden.
// The range is computed by the caller from the input's structure; a range
// outside the rows is a programming error and panics.
func MeanPool(hidden []float32, dim, lo, hi int) []float32 {
	if dim <= 0 || lo < 0 || hi <= lo || hi*dim > len(hidden) {
		panic(fmt.Sprintf("heads: MeanPool rows [%d, %d) of %d-wide rows outside %d values", lo, hi, dim, len(hidden)))
	}
	acc := make([]float64, dim)
	for r := lo; r < hi; r++ {
		for i, v := range hidden[r*dim : (r+1)*dim] {
			acc[i] += float64(v)
		}
	}
	out := make([]float32, dim)
	for i, s := range acc {
		out[i] = float32(s / float64(hi-lo))
	}
	return out
}

// LastToken returns a copy of the last row of hidden (GME-style pooling).
func LastToken(hidden []float32, dim int) []float32 {
	if dim <= 0 || len(hidden) < dim || len(hidden)%dim != 0 {
		panic(fmt.Sprintf("heads: LastToken of %d values is not rows of %d", len(hidden), dim))
	}
	return append([]float32(nil), hidden[len(hidden)-dim:]...)
}

// Normalize scales v in place to unit L2 norm. A zero vector stays zero.
func Normalize(v []float32) {
	var ss float64
	for _, x := range v {
		// A product is converted before it is added to (float64(a*b) + c): that
		// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
		// every build computes the same bits (kernels.TestNoFusedMultiplyAdd).
		ss += float64(float64(x) * float64(x))
	}
	if ss == 0 {
		return
	}
	inv := 1 / math.Sqrt(ss)
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
}

// Truncate returns the first k components of v re-normalized to unit
// length (Matryoshka representation learning). v is not modified.
func Truncate(v []float32, k int) ([]float32, error) {
	if k <= 0 || k > len(v) {
		return nil, fmt.Errorf("heads: cannot truncate a %d-dimensional embedding to %d dimensions", len(v), k)
	}
	out := append([]float32(nil), v[:k]...)
	Normalize(out)
	return out, nil
}
