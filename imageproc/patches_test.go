package imageproc

import (
	"errors"
	"math"
	"testing"
)

// TestPatchLayout checks the row and value order against the formula of
// the reference's reshape/permute, computed independently per value: row
// r = ((bh*(gw/2)+bw)*4 + mh*2 + mw) holds patch (2bh+mh, 2bw+mw), value
// c*392 + tp*196 + py*14 + px holds channel c of pixel (14*prow+py, 14*pcol+px).
func TestPatchLayout(t *testing.T) {
	cfg := JinaV4Config()
	cfg.Mean = [3]float32{}
	cfg.Std = [3]float32{1, 1, 1}
	img := randomImage(84, 56, 5)
	p, err := Patchify(img, cfg)
	if err != nil {
		t.Fatal(err)
	}
	gh, gw := 56/14, 84/14
	if p.GridT != 1 || p.GridH != gh || p.GridW != gw || p.MergedTokens() != gh*gw/4 {
		t.Fatalf("grid %d %d %d, merged %d", p.GridT, p.GridH, p.GridW, p.MergedTokens())
	}
	if len(p.Data) != gh*gw*1176 {
		t.Fatalf("%d values", len(p.Data))
	}
	for prow := 0; prow < gh; prow++ {
		for pcol := 0; pcol < gw; pcol++ {
			bh, mh, bw, mw := prow/2, prow%2, pcol/2, pcol%2
			r := ((bh*(gw/2)+bw)*4 + mh*2 + mw)
			for c := 0; c < 3; c++ {
				for tp := 0; tp < 2; tp++ {
					for py := 0; py < 14; py++ {
						for px := 0; px < 14; px++ {
							pix := img.Pix[((14*prow+py)*84+14*pcol+px)*3+c]
							want := float32(float64(pix) * (1.0 / 255))
							got := p.Data[r*1176+c*392+tp*196+py*14+px]
							if got != want {
								t.Fatalf("row %d c %d tp %d py %d px %d: %v, want %v", r, c, tp, py, px, got, want)
							}
						}
					}
				}
			}
		}
	}
}

// TestNormalization checks the reference order of operations,
// float32(v * (1/255 in float64)), then (x - mean) / std in float32, against
// float32 bit patterns computed with numpy that way.
func TestNormalization(t *testing.T) {
	tab := normTable(JinaV4Config())
	for _, c := range []struct {
		ch, v int
		bits  uint32
	}{{0, 0, 3219482844}, {1, 128, 1043133291}, {2, 255, 1074353760}, {0, 77, 3207269909}, {1, 254, 1073992962}} {
		if got := math.Float32bits(tab[c.ch][c.v]); got != c.bits {
			t.Errorf("channel %d level %d: %v, want %v", c.ch, c.v, tab[c.ch][c.v], math.Float32frombits(c.bits))
		}
	}
}

func TestConfigValidation(t *testing.T) {
	bad := []func(*Config){
		func(c *Config) { c.PatchSize = 0 },
		func(c *Config) { c.MergeSize = -1 },
		func(c *Config) { c.TemporalPatchSize = 0 },
		func(c *Config) { c.MaxPixels = 0 },
		func(c *Config) { c.MinPixels = c.MaxPixels + 1 },
		func(c *Config) { c.Std[1] = 0 },
		func(c *Config) { c.MaxPixels = MaxPixelsLimit + 1 },
	}
	img := NewImage(56, 56)
	for i, f := range bad {
		cfg := JinaV4Config()
		f(&cfg)
		if _, err := FromImage(img, cfg); err == nil {
			t.Errorf("case %d: invalid config accepted", i)
		}
	}
	if _, err := Patchify(NewImage(50, 56), JinaV4Config()); err == nil {
		t.Error("Patchify accepted a width that is not a multiple of 28")
	}
}

func TestFromImageTooSmall(t *testing.T) {
	_, err := FromImage(NewImage(20, 40), JinaV4Config())
	if !errors.Is(err, ErrSize) {
		t.Fatalf("got %v, want ErrSize", err)
	}
}

func TestTemporalPatchSize(t *testing.T) {
	cfg := JinaV4Config()
	cfg.TemporalPatchSize = 3
	p, err := Patchify(randomImage(56, 56, 1), cfg)
	if err != nil {
		t.Fatal(err)
	}
	row := cfg.RowLen()
	if row != 3*3*196 || len(p.Data) != 16*row {
		t.Fatalf("row %d, %d values", row, len(p.Data))
	}
	for r := 0; r < 16; r++ {
		for c := 0; c < 3; c++ {
			ch := p.Data[r*row+c*588 : r*row+(c+1)*588]
			for tp := 1; tp < 3; tp++ {
				for i := 0; i < 196; i++ {
					if ch[tp*196+i] != ch[i] {
						t.Fatalf("frame %d differs from frame 0", tp)
					}
				}
			}
		}
	}
}
