package jpeg

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// withPortable runs fn with the vector kernels switched off.
func withPortable(fn func()) {
	saved := useVec
	useVec = false
	defer func() { useVec = saved }()
	fn()
}

// TestYCCVectorExhaustive converts every (Y, Cb, Cr) triple with the
// dispatching yccRow and with the portable loop.
func TestYCCVectorExhaustive(t *testing.T) {
	if !useVec {
		t.Skip("no vector kernel on this machine")
	}
	const n = 1 << 16
	y, cb, cr := make([]uint8, n), make([]uint8, n), make([]uint8, n)
	got, want := make([]uint8, 3*n), make([]uint8, 3*n)
	for i := range n {
		cb[i], cr[i] = uint8(i), uint8(i>>8)
	}
	for lum := range 256 {
		for i := range y {
			y[i] = uint8(lum)
		}
		yccRow(got, y, cb, cr)
		yccRowGo(want, y, cb, cr)
		if i := firstDiff(got, want); i >= 0 {
			p := i / 3
			t.Fatalf("Y=%d Cb=%d Cr=%d channel %d: vector %d, portable %d", lum, cb[p], cr[p], i%3, got[i], want[i])
		}
	}
}

// TestVectorKernelsOddLengths compares the vector and portable paths of
// the colour conversion and the fancy upsampling (2:1 and 2-D) on random
// rows of every length up to 100, where the vector part is followed by a
// portable tail of any size.
func TestVectorKernelsOddLengths(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	row := func(n int) []uint8 {
		b := make([]uint8, n)
		for i := range b {
			b[i] = uint8(rng.IntN(256))
		}
		return b
	}
	for n := 1; n <= 100; n++ {
		y, cb, cr := row(n), row(n), row(n)
		got, want := make([]uint8, 3*n), make([]uint8, 3*n)
		yccRow(got, y, cb, cr)
		withPortable(func() { yccRow(want, y, cb, cr) })
		if i := firstDiff(got, want); i >= 0 {
			t.Fatalf("ycc, %d pixels: byte %d is %d, portable %d", n, i, got[i], want[i])
		}
		if n < 3 {
			continue
		}
		in := row(n)
		got, want = make([]uint8, 2*n), make([]uint8, 2*n)
		h2FancyRow(got, in)
		withPortable(func() { h2FancyRow(want, in) })
		if i := firstDiff(got, want); i >= 0 {
			t.Fatalf("h2v1, %d samples: output %d is %d, portable %d", n, i, got[i], want[i])
		}
		near, far := row(n), row(n)
		got, want = make([]uint8, 2*n), make([]uint8, 2*n)
		h2v2FancyRow(got, near, far)
		withPortable(func() { h2v2FancyRow(want, near, far) })
		if i := firstDiff(got, want); i >= 0 {
			t.Fatalf("h2v2, %d samples: output %d is %d, portable %d", n, i, got[i], want[i])
		}
	}
}

func firstDiff(a, b []uint8) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return len(a)
}
