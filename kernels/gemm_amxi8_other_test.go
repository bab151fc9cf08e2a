//go:build !amd64

package kernels

// archAMXI8Cases: no amx GEMM but the portable model off amd64.
func archAMXI8Cases() []amxI8Case { return nil }
