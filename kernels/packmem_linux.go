//go:build linux

package kernels

import "golang.org/x/sys/unix"

// allocPacked returns n bytes of zeroed anonymous memory outside the Go
// heap for a packed weight copy (so that the heap's growth target does
// not scale with the model), and whether freePacked must release it; nil
// when the memory cannot be had. Transparent huge pages are asked for:
// they make filling gigabytes fault once per 2 MiB, and the products'
// reads miss the TLB less.
func allocPacked(n int) ([]byte, bool) {
	if n <= 0 {
		return nil, false
	}
	mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, false
	}
	_ = unix.Madvise(mem, unix.MADV_HUGEPAGE)
	return mem, true
}

// freePacked releases memory from allocPacked.
func freePacked(mem []byte) { _ = unix.Munmap(mem) }
