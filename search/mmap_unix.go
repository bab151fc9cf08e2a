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
		start := uintptr(unsafe.Pointer(&b[0]))
		end := start + uintptr(len(b))
		// Whole pages inside the range only.
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
