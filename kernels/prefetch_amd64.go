package kernels

import "unsafe"

//go:noescape
func prefetch(p *byte, n int)

// prefetchBytes hints that b will be read soon.
func prefetchBytes(b []byte) {
	if len(b) > 0 {
		prefetch(&b[0], len(b))
	}
}

// prefetchFloats hints that x will be read soon.
func prefetchFloats(x []float32) {
	if len(x) > 0 {
		prefetch((*byte)(unsafe.Pointer(&x[0])), 4*len(x))
	}
}
