//go:build !linux

package pdf

import "github.com/tetratelabs/wazero/experimental"

// memoryAllocator is the Go-heap fallback off Linux (see memory.go).
var memoryAllocator experimental.MemoryAllocator = experimental.MemoryAllocatorFunc(func(capBytes, _ uint64) experimental.LinearMemory {
	return &sliceMemory{buf: make([]byte, 0, capBytes)}
})
