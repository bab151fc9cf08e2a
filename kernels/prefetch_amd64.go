package kernels

//go:noescape
func prefetch(p *byte, n int)

// prefetchBytes hints that b will be read soon.
func prefetchBytes(b []byte) {
	if len(b) > 0 {
		prefetch(&b[0], len(b))
	}
}
