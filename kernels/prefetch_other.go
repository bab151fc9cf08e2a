//go:build !amd64

package kernels

// prefetchBytes hints that b will be read soon: a no-op here.
func prefetchBytes(b []byte) {}

// prefetchFloats hints that x will be read soon: a no-op here.
func prefetchFloats(x []float32) {}
