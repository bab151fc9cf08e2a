//go:build unix

package search

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"github.com/vembed/vembed/index"
	"golang.org/x/sys/unix"
)

// openSidecar maps a sidecar read-only. drop tells the kernel that a
// range was read and may leave the process's resident memory (the page
// cache keeps it): the float vectors are read for a few candidates a
// query, and would otherwise stay resident as queries touch them all.
func openSidecar(path string) (*index.Sidecar, func() error, func([]byte), error) {
	// Not opened unless regular: a FIFO would block the refresh.
	if st, err := os.Stat(path); err != nil {
		return nil, nil, nil, err
	} else if !st.Mode().IsRegular() {
		return nil, nil, nil, errNotRegular
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, nil, err
	}
	if st.Size() == 0 || int64(int(st.Size())) != st.Size() {
		return nil, nil, nil, fmt.Errorf("%d bytes cannot be mapped", st.Size())
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("mmap: %w", err)
	}
	unmap := func() error { return syscall.Munmap(data) }
	sc, err := index.ParseSidecar(data)
	if err != nil {
		unmap()
		return nil, nil, nil, err
	}
	base := uintptr(unsafe.Pointer(&data[0]))
	page := uintptr(os.Getpagesize())
	drop := func(b []byte) {
		if len(b) == 0 {
			return
		}
		// The range widened to whole 2 MiB windows of the mapping: a read
		// fault maps the page cache's whole folio (large folios, up to 2
		// MiB), pages of the neighbouring rows included, and those would
		// stay resident if only the row's own pages were dropped (measured:
		// half the float32 size resident after 30 queries of 10,000 pages).
		// Dropping a neighbour's pages is harmless: a reader faults them in
		// again.
		const window = 2 << 20
		start := uintptr(unsafe.Pointer(&b[0]))
		end := start + uintptr(len(b))
		start = max(base, start&^(window-1))
		end = min(base+uintptr(len(data)), (end+window-1)&^(window-1))
		start = (start + page - 1) &^ (page - 1)
		end &^= page - 1
		if end <= start {
			return
		}
		// x/sys/unix: the syscall package has no Madvise on macOS.
		unix.Madvise(data[start-base:end-base], unix.MADV_DONTNEED)
	}
	return sc, unmap, drop, nil
}
