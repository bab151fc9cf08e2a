//go:build !unix

package quantize

// release is a no-op where madvise is not available.
func release(b []byte) {}
