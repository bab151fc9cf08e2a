package kernels

//go:noescape
func q2kMinsAVX2(blk *byte, nsb int, dst *float32)

// q2kHalfMinsAVX2 is q2kHalfMinsAt, stride 1, in assembly: n offsets.
func q2kHalfMinsAVX2(src []byte, n int, dst []float32) { q2kMinsWith(q2kMinsAVX2, src, n, dst) }

// q2kMins is the row reader of Q2_K's halfMins entry: the assembly where
// the CPU has AVX2 (with F16C, for dmin), else the portable one.
func q2kMins() func(src []byte, n int, dst []float32) {
	if hasAVX2 {
		return q2kHalfMinsAVX2
	}
	return func(src []byte, n int, dst []float32) { q2kHalfMinsAt(src, n, dst, 1) }
}

//go:noescape
func decodeQ2KU8AVX2(blk *byte, nsb int, q *int8, sum *int32, mul *int16, fd *float32, fs int)

// q2kRowAVX2 is u8RowQ2K in assembly (the same outputs, tested).
func q2kRowAVX2(src []byte, n int, q []int8, fd, fm []float32, fs int, mul []int16, sum []int32) {
	q2kRowWith(decodeQ2KU8AVX2, src, n, q, fd, fs, mul, sum)
}
