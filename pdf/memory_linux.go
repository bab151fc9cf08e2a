//go:build linux

package pdf

import (
	"log/slog"
	"sync/atomic"
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// memoryAllocator maps each instance's memory as described in memory.go.
var memoryAllocator experimental.MemoryAllocator = experimental.MemoryAllocatorFunc(func(capBytes, maxBytes uint64) experimental.LinearMemory {
	if maxBytes == 0 || maxBytes > 1<<32 {
		return &sliceMemory{buf: make([]byte, 0, capBytes)}
	}
	b, err := syscall.Mmap(-1, 0, int(maxBytes), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_NORESERVE)
	if err != nil {
		slog.Debug("pdf: mapping an instance's memory failed, using the Go heap", "bytes", maxBytes, "err", err)
		return &sliceMemory{buf: make([]byte, 0, capBytes)}
	}
	return &mappedMemory{buf: b}
})

// mappedMemory's buf never changes: views of it stay valid after Free
// until the mapping is retired (memory.go).
type mappedMemory struct {
	buf   []byte
	freed atomic.Bool
}

func (m *mappedMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(m.buf)) {
		return nil // past the cap: memory.grow fails inside the instance
	}
	return m.buf[:size]
}

func (m *mappedMemory) Free() {
	if m.freed.Swap(true) {
		return
	}
	b := m.buf
	// The pages go back now; the addresses stay valid until no call
	// that may still run on them is left.
	if err := syscall.Madvise(b, syscall.MADV_DONTNEED); err != nil {
		slog.Debug("pdf: releasing an instance's memory", "err", err)
	}
	calls.retire(func() {
		if err := syscall.Munmap(b); err != nil {
			slog.Debug("pdf: unmapping an instance's memory", "err", err)
		}
	})
}
