package kernels

// Candidate integer inner loops, timed by BenchmarkInt8Probe to choose the
// microkernel. Each runs n iterations over operands in L1.

//go:noescape
func probeMaddwd6x16(n int, a *int16, b *int16)

//go:noescape
func probeMaddubsw4x16(n int, a *int8, b *uint8)

//go:noescape
func probeMaddubswI16(n int, a *int8, b *uint8)
