//go:build !amd64 && !arm64

package kernels

// q2kMins is the row reader of Q2_K's halfMins entry: the portable one.
func q2kMins() func(src []byte, n int, dst []float32) {
	return func(src []byte, n int, dst []float32) { q2kHalfMinsAt(src, n, dst, 1) }
}
