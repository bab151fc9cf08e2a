//go:build !unix

package gguf

import (
	"fmt"
	"os"
)

// Open reads the GGUF file at path into memory and parses it; systems
// without mmap support read the whole file.
func Open(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return f, nil
}
