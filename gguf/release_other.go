//go:build unix && !linux

package gguf

// releasePages does nothing where MADV_DONTNEED's effect on a file
// mapping is not the one releasePages relies on.
func releasePages(m, r []byte) {}
