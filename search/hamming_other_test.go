//go:build !amd64

package search

func hasVPOPCNTOrFalse() bool { return false }
