//go:build linux

package kernels

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// allocPacked returns n bytes of zeroed anonymous memory outside the Go
// heap for a packed weight copy (so that the heap's growth target does
// not scale with the model), and whether freePacked must release it; nil
// when the memory cannot be had. Huge pages are not asked for: with
// MADV_HUGEPAGE neither the load nor a query measured any faster, and a
// fragmented host may stall the faults compacting memory.
func allocPacked(n int) ([]byte, bool) {
	if n <= 0 {
		return nil, false
	}
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, false
	}
	return unsafe.Slice((*byte)(p), n), true
}

// trimPacked returns mem[:n], the whole pages of mem past n unmapped.
func trimPacked(mem []byte, n int) []byte {
	page := os.Getpagesize()
	if end := (n + page - 1) / page * page; end < len(mem) {
		_ = unix.MunmapPtr(unsafe.Pointer(&mem[end]), uintptr(len(mem)-end))
	}
	return mem[:n:n]
}

// freePacked unmaps memory from allocPacked (trimmed or not).
func freePacked(mem []byte) {
	if len(mem) > 0 {
		_ = unix.MunmapPtr(unsafe.Pointer(&mem[0]), uintptr(len(mem)))
	}
}
