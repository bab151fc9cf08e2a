package jpeg

import (
	"math"
	"math/rand/v2"
	"testing"
)

// idctFloat is the textbook 2-D inverse DCT in float64 with the JPEG
// level shift and clamping: the reference the integer kernel approximates.
// ok is false when an output is so far out of range that libjpeg's range
// table wraps it (beyond +-512 before the level shift; only corrupt or
// adversarial coefficients get there).
func idctFloat(in *[64]int16, q *[64]int32, out *[64]uint8) (ok bool) {
	ok = true
	for y := 0; y < 8; y++ {
		for x := 0; x < 8; x++ {
			s := 0.0
			for v := 0; v < 8; v++ {
				for u := 0; u < 8; u++ {
					cu, cv := 1.0, 1.0
					if u == 0 {
						cu = math.Sqrt2 / 2
					}
					if v == 0 {
						cv = math.Sqrt2 / 2
					}
					coef := float64(in[v*8+u]) * float64(q[v*8+u])
					s += cu * cv * coef * math.Cos(float64(2*x+1)*float64(u)*math.Pi/16) *
						math.Cos(float64(2*y+1)*float64(v)*math.Pi/16)
				}
			}
			if math.Abs(s/4) > 500 {
				ok = false
			}
			out[y*8+x] = uint8(min(max(math.Round(s/4+128), 0), 255))
		}
	}
	return ok
}

// randomBlock draws coefficients shaped like natural images: large DC,
// AC amplitudes falling with frequency, many zeros.
func randomBlock(rng *rand.Rand, blk *[64]int16, q *[64]int32) {
	for i := range blk {
		u, v := i%8, i/8
		q[i] = int32(1 + rng.IntN(1+2*(u+v)))
		amp := 600.0 / float64(1+2*(u+v)) / float64(q[i])
		if i == 0 {
			amp = 1000 / float64(q[0])
		}
		if i > 0 && rng.IntN(3) != 0 {
			blk[i] = 0
			continue
		}
		blk[i] = int16(math.Round(rng.NormFloat64() * amp))
	}
}

// TestIDCTAgainstFloat: libjpeg's islow IDCT is accurate to within one
// level of the exact transform for such inputs (it meets IEEE 1180's peak
// error bound of 1), and its mean error is far below one level.
func TestIDCTAgainstFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var blk [64]int16
	var q [64]int32
	var ref [64]uint8
	out := make([]uint8, 64)
	diffs, total := 0, 0
	for n := 0; n < 800; n++ {
		randomBlock(rng, &blk, &q)
		if !idctFloat(&blk, &q, &ref) {
			continue
		}
		idctIslow(&blk, &q, out, 8)
		for i := range ref {
			d := int(out[i]) - int(ref[i])
			if d < -1 || d > 1 {
				t.Fatalf("block %d pixel %d: islow %d, exact %d", n, i, out[i], ref[i])
			}
			if d != 0 {
				diffs++
			}
			total++
		}
	}
	if frac := float64(diffs) / float64(total); frac > 0.05 {
		t.Errorf("%.3f of pixels differ from the exact IDCT by one level; expected a few percent", frac)
	}
}

// TestIDCTDCOnly: the DC-only shortcut is exactly the full kernel's
// result on blocks with no AC coefficient, including out-of-range DC.
func TestIDCTDCOnly(t *testing.T) {
	var blk [64]int16
	var q [64]int32
	for i := range q {
		q[i] = 1
	}
	full := make([]uint8, 64)
	fast := make([]uint8, 64)
	for _, qv := range []int32{1, 3, 16, 255, -1} {
		q[0] = qv
		for dc := -2048; dc <= 2047; dc += 3 {
			blk[0] = int16(dc)
			idctIslow(&blk, &q, full, 8)
			idctDCOnly(blk[0], q[0], fast, 8)
			for i := range full {
				if full[i] != fast[i] {
					t.Fatalf("dc %d q %d: shortcut %d, full %d", dc, qv, fast[i], full[i])
				}
			}
		}
	}
}

// TestColorAgainstFloat: the fixed-point conversion (16 fractional bits)
// is within one level of the exact JFIF equations after rounding.
func TestColorAgainstFloat(t *testing.T) {
	out := make([]uint8, 3)
	for y := 0; y < 256; y += 5 {
		for cb := 0; cb < 256; cb += 3 {
			for cr := 0; cr < 256; cr += 3 {
				yccRow(out, []uint8{uint8(y)}, []uint8{uint8(cb)}, []uint8{uint8(cr)})
				fy, fb, fr := float64(y), float64(cb)-128, float64(cr)-128
				want := [3]float64{fy + 1.402*fr, fy - 0.344136*fb - 0.714136*fr, fy + 1.772*fb}
				for c := range want {
					w := min(max(math.Round(want[c]), 0), 255)
					if d := float64(out[c]) - w; d < -1 || d > 1 {
						t.Fatalf("ycc %d,%d,%d channel %d: %d, exact %v", y, cb, cr, c, out[c], w)
					}
				}
			}
		}
	}
}

// TestFancyUpsampleAgainstFloat: the triangle filters are 3/4-1/4
// interpolations whose only error is the alternating rounding of halves,
// so they are within 0.5 of the exact weights (1 level after rounding).
func TestFancyUpsampleAgainstFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 3; n < 40; n++ {
		near, far := make([]uint8, n), make([]uint8, n)
		for i := range near {
			near[i], far[i] = uint8(rng.IntN(256)), uint8(rng.IntN(256))
		}
		h := make([]uint8, 2*n)
		h2FancyRow(h, near)
		hv := make([]uint8, 2*n)
		h2v2FancyRow(hv, near, far)
		at := func(row []uint8, i int) float64 { return float64(row[min(max(i, 0), n-1)]) }
		for o := 0; o < 2*n; o++ {
			i, j := o/2, o/2-1
			if o%2 == 1 {
				j = o/2 + 1
			}
			wantH := 0.75*at(near, i) + 0.25*at(near, j)
			wantHV := 0.75*(0.75*at(near, i)+0.25*at(near, j)) + 0.25*(0.75*at(far, i)+0.25*at(far, j))
			if math.Abs(float64(h[o])-wantH) > 0.5 || math.Abs(float64(hv[o])-wantHV) > 0.5+1.0/16 {
				t.Fatalf("n=%d out %d: h2 %d (exact %.3f), h2v2 %d (exact %.3f)", n, o, h[o], wantH, hv[o], wantHV)
			}
		}
	}
}

// TestIDCTLow4: the 4x4-corner kernel equals the full one bit for bit on
// blocks whose coefficients lie in the corner, including extreme values.
func TestIDCTLow4(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var blk [64]int16
	var q [64]int32
	full := make([]uint8, 64)
	low := make([]uint8, 64)
	for n := 0; n < 20000; n++ {
		blk = [64]int16{}
		scale := []int{4, 64, 1024, 32767}[n%4]
		for i := range q {
			q[i] = int32(int16(rng.IntN(65536)))
			if n%2 == 0 {
				q[i] = int32(1 + rng.IntN(50))
			}
		}
		for k := 0; k < 1+rng.IntN(10); k++ {
			blk[(rng.IntN(4))*8+rng.IntN(4)] = int16(rng.IntN(2*scale+1) - scale)
		}
		idctIslow(&blk, &q, full, 8)
		idctIslowLow4(&blk, &q, low, 8)
		for i := range full {
			if full[i] != low[i] {
				t.Fatalf("block %d pixel %d: low4 %d, full %d (%v)", n, i, low[i], full[i], blk)
			}
		}
	}
}

// TestIDCTAny: the dispatching kernel equals the full one on blocks of
// every shape (DC only, 4x4 corner, anywhere).
func TestIDCTAny(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var blk [64]int16
	var q [64]int32
	full := make([]uint8, 64)
	got := make([]uint8, 64)
	for n := 0; n < 20000; n++ {
		blk = [64]int16{}
		for i := range q {
			q[i] = int32(1 + rng.IntN(60))
		}
		blk[0] = int16(rng.IntN(2001) - 1000)
		for k := 0; k < n%5; k++ {
			span := []int{1, 4, 8}[rng.IntN(3)]
			blk[rng.IntN(span)*8+rng.IntN(span)] = int16(rng.IntN(201) - 100)
		}
		idctIslow(&blk, &q, full, 8)
		idctAny(&blk, &q, got, 8)
		for i := range full {
			if full[i] != got[i] {
				t.Fatalf("block %d pixel %d: %d, full %d", n, i, got[i], full[i])
			}
		}
	}
}
