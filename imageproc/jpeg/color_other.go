//go:build !amd64 && !arm64

package jpeg

var useVec = false

func yccVec(out, y, cb, cr []uint8) int { return 0 }

func h2v2FancyVec(out, near, far []uint8) int { return 0 }

func h2FancyVec(out, in []uint8) int { return 0 }

func idctVec(in *[64]int16, q *[64]int32, dst []uint8, stride int) bool { return false }
