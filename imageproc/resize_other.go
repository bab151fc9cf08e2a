//go:build !amd64 && !arm64

package imageproc

var useVec = false

func vertAcc(acc []int32, src []uint8, w int32) int { return 0 }

func horiz(dst []uint8, r, g, b []int32, k *kernel) bool { return false }

func splitVec(srow []uint8, r, g, b []int32) int { return 0 }
