//go:build !amd64 && !arm64

package search

// hammingAsm names the assembly Hamming kernel this CPU runs: none here.
func hammingAsm() string { return "" }
