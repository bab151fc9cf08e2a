package gguf

import (
	"os"
	"syscall"
	"unsafe"
)

// releasePages drops the whole pages of r, a range of the read-only
// shared mapping m, from the process with MADV_DONTNEED: the pages stay
// in the page cache and fault back in from it if read again; a read-only
// file mapping loses nothing.
func releasePages(m, r []byte) {
	if len(m) == 0 || len(r) == 0 {
		return
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(m)))
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(r)))
	hi := lo + uintptr(len(r))
	if lo < base || hi > base+uintptr(len(m)) {
		return
	}
	page := uintptr(os.Getpagesize())
	lo, hi = (lo+page-1)&^(page-1), hi&^(page-1)
	if hi <= lo {
		return
	}
	_ = syscall.Madvise(m[lo-base:hi-base], syscall.MADV_DONTNEED)
}
