package pngbomb

import (
	"bytes"
	"image/png"
	"testing"
)

func TestBombDeclaresItsSize(t *testing.T) {
	b := Make(300, 200)
	for _, p := range [][]byte{b, Tag(b, "one")} {
		cfg, err := png.DecodeConfig(bytes.NewReader(p))
		if err != nil || cfg.Width != 300 || cfg.Height != 200 {
			t.Fatalf("DecodeConfig: %+v %v", cfg, err)
		}
		img, err := png.Decode(bytes.NewReader(p))
		if err != nil {
			t.Fatal(err)
		}
		if r, _, _, a := img.At(299, 199).RGBA(); r != 0 || a != 0 {
			t.Errorf("pixel %d %d, want zero", r, a)
		}
	}
	if bytes.Equal(Tag(b, "one"), Tag(b, "two")) {
		t.Error("tagged copies are identical")
	}
	// 32 MiB decoded from a few tens of kilobytes.
	if big := Make(4096, 1024); len(big) > 64<<10 {
		t.Errorf("a 4096x1024 bomb takes %d bytes", len(big))
	}
}
