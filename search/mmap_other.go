//go:build !unix

package search

import (
	"os"

	"github.com/vembed/vembed/index"
)

// openSidecar reads a sidecar into memory where files cannot be mapped.
func openSidecar(path string) (*index.Sidecar, func() error, func([]byte), error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, nil, err
	}
	sc, err := index.ParseSidecar(data)
	if err != nil {
		return nil, nil, nil, err
	}
	return sc, func() error { return nil }, nil, nil
}
