//go:build amd64 || arm64

package jpeg

// The wrappers of the vector colour conversion and upsampling kernels
// (color_amd64.s, color_arm64.s), which evaluate the same integer
// expressions as the portable loops; the tests run both.

// yccVec converts the leading pixels of a row that the vector kernel
// handles (a multiple of 16) and returns how many it did.
func yccVec(out, y, cb, cr []uint8) int {
	n := len(y) &^ 15
	if !useVec || n == 0 {
		return 0
	}
	// Bounds the raw-pointer accesses of the assembly.
	_, _, _ = out[3*n-1], cb[n-1], cr[n-1]
	yccKern(&out[0], &y[0], &cb[0], &cr[0], n)
	return n
}

// h2v2FancyVec computes the outputs of h2v2FancyRow for interior inputs
// 1..m (m a multiple of 16, m <= len(near)-2) and returns m.
func h2v2FancyVec(out, near, far []uint8) int {
	m := (len(near) - 2) &^ 15
	if !useVec || m <= 0 {
		return 0
	}
	_, _ = out[2*m+1], far[m+1]
	h2v2FancyKern(&out[2], &near[1], &far[1], m)
	return m
}

// h2FancyVec computes the outputs of h2FancyRow for interior inputs 1..m
// (m a multiple of 16, m <= len(in)-2) and returns m.
func h2FancyVec(out, in []uint8) int {
	m := (len(in) - 2) &^ 15
	if !useVec || m <= 0 {
		return 0
	}
	_ = out[2*m+1]
	h2FancyKern(&out[2], &in[1], m)
	return m
}
