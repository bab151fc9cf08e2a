//go:build !amd64

package kernels

// q2kMins is the Q2_K entry of halfMins: the portable one.
func q2kMins() func(src []byte, n int, dst []float32) { return q2kHalfMins }
