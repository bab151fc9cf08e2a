//go:build unix

package quantize

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

var pageSize = uintptr(os.Getpagesize())

// release (used only for files that gguf.Open maps, which it does on every
// unix system) tells the kernel that the whole pages inside b, a view of the
// memory-mapped input, will not be read again, so a long conversion does
// not keep the entire input resident. The file's pages stay in the page
// cache; a later read would fault them back in.
func release(b []byte) {
	if len(b) == 0 {
		return
	}
	start := uintptr(unsafe.Pointer(&b[0]))
	first := (start + pageSize - 1) &^ (pageSize - 1)
	end := (start + uintptr(len(b))) &^ (pageSize - 1)
	if end <= first {
		return
	}
	unix.Madvise(b[first-start:end-start], unix.MADV_DONTNEED)
}
