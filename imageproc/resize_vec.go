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
