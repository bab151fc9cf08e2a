package imageproc

import (
	"image"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestPreprocessStreamsLikeFromImage checks that Preprocess, which resizes
// JPEG rows while they are decoded, gives exactly FromImage's patches on
// the decoded image: for a file large enough to be decoded in bands on
// several goroutines, for odd sizes, for grayscale, for a width that smart
// resize keeps, and for progressive and multi-scan files.
func TestPreprocessStreamsLikeFromImage(t *testing.T) {
	gray := image.NewGray(image.Rect(0, 0, 301, 77))
	for i := range gray.Pix {
		gray.Pix[i] = uint8(i * 7)
	}
	bigGray := image.NewGray(image.Rect(0, 0, 1000, 333))
	for i := range bigGray.Pix {
		bigGray.Pix[i] = uint8(i*7 + i/1000)
	}
	cases := []struct {
		name string
		m    image.Image
	}{
		{"720x1000", photoLike(720, 1000)},
		{"333x517", photoLike(333, 517)},
		{"gray301x77", gray},
		{"gray1000x333", bigGray},
		{"width kept 280x300", photoLike(280, 300)},
	}
	type encoded struct {
		name string
		data []byte
	}
	var files []encoded
	for _, tc := range cases {
		files = append(files, encoded{tc.name, encodeJPEG(t, tc.m, 85)})
	}
	// Progressive and multi-scan files reach the resizer in one piece.
	for _, name := range []string{"prog_420", "prog_422_restart", "multiscan_sequential"} {
		data, err := os.ReadFile(filepath.Join("jpeg", "testdata", name+".jpg"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, encoded{name, data})
	}
	cfg := JinaV4Config()
	for _, tc := range files {
		data := tc.data
		img, err := Decode(data, DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want, err := FromImage(img, cfg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Preprocess(data, cfg, DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.GridH != want.GridH || got.GridW != want.GridW || !slices.Equal(got.Data, want.Data) {
			t.Errorf("%s: streamed patches differ from FromImage's (grid %dx%d, want %dx%d)", tc.name, got.GridH, got.GridW, want.GridH, want.GridW)
		}
	}
	// A truncated file fails as Decode does.
	data := encodeJPEG(t, photoLike(720, 1000), 85)
	cut := data[:len(data)/2]
	_, errD := Decode(cut, DecodeOptions{})
	_, errP := Preprocess(cut, cfg, DecodeOptions{})
	if errD == nil || errP == nil || errD.Error() != errP.Error() {
		t.Errorf("truncated: Decode error %v, Preprocess error %v", errD, errP)
	}
}
