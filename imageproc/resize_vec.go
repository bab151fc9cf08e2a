//go:build amd64 || arm64

package imageproc

// vertAcc adds src[i]*w to acc[i] for all i, returning how many leading
// elements it handled (a multiple of 8); the caller does the rest.
func vertAcc(acc []int32, src []uint8, w int32) int {
	n := min(len(acc), len(src)) &^ 7
	if !useVec || n == 0 {
		return 0
	}
	vertAccKern(&acc[0], &src[0], n, w)
	return n
}

// splitVec widens the leading pixels of an RGB row into the planes (a
// multiple of 16 of them) and returns how many it did.
func splitVec(srow []uint8, r, g, b []int32) int {
	n := min(len(r), len(srow)/3) &^ 15
	if !useVec || n == 0 {
		return 0
	}
	_, _ = g[n-1], b[n-1]
	splitKern(&r[0], &g[0], &b[0], &srow[0], n)
	return n
}

// horiz computes one row of the horizontal pass into dst (3 bytes per
// output pixel) and reports whether it did. The planes must extend
// k.size entries past the last pixel any output reads.
func horiz(dst []uint8, r, g, b []int32, k *kernel) bool {
	nout := len(k.first32)
	if !useVec || nout == 0 || k.size%8 != 0 {
		return false
	}
	// The assembly reads through raw pointers; these checks keep every
	// access inside the slices.
	_ = r[k.span-1]
	_ = g[k.span-1]
	_ = b[k.span-1]
	_ = dst[3*nout-1]
	_ = k.w[nout*k.size-1]
	horizKern(&dst[0], &r[0], &g[0], &b[0], &k.first32[0], &k.w[0], k.size, nout)
	return true
}
