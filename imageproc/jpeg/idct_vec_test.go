package jpeg

import (
	"math/rand/v2"
	"testing"
)

// TestIDCTVector compares the vector IDCT with idctIslow on random blocks:
// sparse and dense, small and large coefficients, and 16-bit quantizers,
// written at an odd stride. Blocks the vector kernel declines must be the
// ones whose values could overflow its lanes, and must leave dst alone.
func TestIDCTVector(t *testing.T) {
	if !useVec {
		t.Skip("no vector kernel on this machine")
	}
	rng := rand.New(rand.NewPCG(21, 22))
	const stride = 13
	done, declined := 0, 0
	for i := range 20000 {
		var in [64]int16
		var q [64]int32
		mag := []int{1, 8, 64, 1024, 32768}[i%5]
		qmax := []int{1, 16, 255, 32767}[(i/5)%4]
		for k := range q {
			q[k] = int32(int16(1 + rng.IntN(qmax)))
		}
		density := rng.IntN(65)
		for range density {
			in[rng.IntN(64)] = int16(rng.IntN(2*mag) - mag)
		}
		want := make([]uint8, 8*stride)
		got := make([]uint8, 8*stride)
		for k := range got {
			got[k] = 0xA5
		}
		idctIslow(&in, &q, want, stride)
		if !idctVec(&in, &q, got, stride) {
			declined++
			for k, v := range got {
				if v != 0xA5 {
					t.Fatalf("block %d: declined but wrote dst[%d]", i, k)
				}
			}
			continue
		}
		done++
		for y := range 8 {
			for x := range 8 {
				if g, w := got[y*stride+x], want[y*stride+x]; g != w {
					t.Fatalf("block %d (mag %d, q <= %d): pixel (%d,%d) is %d, want %d\nin %v\nq %v", i, mag, qmax, x, y, g, w, in, q)
				}
			}
		}
	}
	t.Logf("%d blocks compared, %d declined", done, declined)
	if done < 5000 {
		t.Errorf("only %d blocks went through the vector kernel", done)
	}
}
