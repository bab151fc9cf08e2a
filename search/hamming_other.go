//go:build !amd64 && !arm64

package search

func hammingMin(q, blocks, out []uint64) { hammingMinGeneric(q, blocks, out) }
