package kernels

//go:noescape
func decodeQ2KU8NEON(blk *byte, nsb int, q *int8, sum *int32, mul *int16, fd *float32, fs int)

//go:noescape
func q2kMinsNEON(blk *byte, nsb int, dst *float32)

// q2kRowNEON is u8RowQ2K on NEON (the same outputs, tested).
func q2kRowNEON(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
	q2kRowWith(decodeQ2KU8NEON, src, n, q, fd, fs, mul, sum)
}

// q2kMins is the row reader of Q2_K's halfMins entry: the NEON loop
// where the CPU has ASIMD (every ARMv8-A core), else the portable one.
func q2kMins() func(src []byte, n int, dst []float32) {
	if hasNEON {
		return func(src []byte, n int, dst []float32) { q2kMinsWith(q2kMinsNEON, src, n, dst) }
	}
	return func(src []byte, n int, dst []float32) { q2kHalfMinsAt(src, n, dst, 1) }
}
