package jpeg

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// findMarker returns the offset of the first 0xFF m marker.
func findMarker(t *testing.T, data []byte, m byte) int {
	t.Helper()
	i := bytes.Index(data, []byte{0xFF, m})
	if i < 0 {
		t.Fatalf("marker %02X not found", m)
	}
	return i
}

// TestTruncated: every proper prefix of a file is an error, as under
// Pillow, whose libjpeg source runs dry before the marker that ends the
// last scan and reports "image file is truncated".
func TestTruncated(t *testing.T) {
	for _, name := range []string{"s420_q90.jpg", "prog_420.jpg", "restart_blocks_420.jpg", "multiscan_sequential.jpg"} {
		data := readTestdata(t, name)
		for n := 0; n < len(data); n++ {
			if _, err := Decode(data[:n], 1<<20); err == nil {
				t.Fatalf("%s: prefix of %d/%d bytes decoded without error", name, n, len(data))
			}
		}
	}
}

func TestErrors(t *testing.T) {
	base := readTestdata(t, "s420_q90.jpg")
	patch := func(f func(b []byte)) []byte {
		b := bytes.Clone(base)
		f(b)
		return b
	}
	sof := findMarker(t, base, mSOF0)
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrCorrupt},
		{"not jpeg", []byte("GIF89a"), ErrCorrupt},
		{"12-bit", patch(func(b []byte) { b[sof+4] = 12 }), ErrUnsupported},
		{"arithmetic", patch(func(b []byte) { b[sof+1] = 0xC9 }), ErrUnsupported},
		{"lossless", patch(func(b []byte) { b[sof+1] = 0xC3 }), ErrUnsupported},
		{"zero height", patch(func(b []byte) { b[sof+5], b[sof+6] = 0, 0 }), ErrUnsupported},
		{"zero width", patch(func(b []byte) { b[sof+7], b[sof+8] = 0, 0 }), ErrCorrupt},
		{"bad sampling", patch(func(b []byte) { b[sof+11] = 0x05 }), ErrCorrupt},
		{"two components", patch(func(b []byte) { b[sof+3], b[sof+9] = 14, 2 }), ErrUnsupported},
		{"bad huffman table", patch(func(b []byte) {
			// Claim 3 codes of length 1: they cannot fit.
			dht := findMarker(t, b, mDHT)
			b[dht+5] = 3
		}), ErrCorrupt},
	}
	for _, c := range cases {
		_, err := Decode(c.data, 1<<20)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := Decode(base, 37*29-1); !errors.Is(err, ErrTooLarge) {
		t.Errorf("maxPixels: got %v, want ErrTooLarge", err)
	}
	if _, err := Decode(base, 37*29); err != nil {
		t.Errorf("maxPixels exactly the size: %v", err)
	}
}

// TestCorruptScanData: damaged entropy-coded data must give an image or
// an error, never a panic; an invalid Huffman code must be an error.
func TestCorruptScanData(t *testing.T) {
	base := readTestdata(t, "prog_sa_script.jpg")
	sos := findMarker(t, base, mSOS)
	for i := sos + 20; i < len(base)-2; i += 7 {
		b := bytes.Clone(base)
		b[i] ^= 0x5A
		_, _ = Decode(b, 1<<20)
	}
}

// TestBadHuffmanCode: bits that start no code of the table are an error
// (libjpeg warns and substitutes zero; Pillow would show a damaged image).
func TestBadHuffmanCode(t *testing.T) {
	// Codes "0" and "10"; "11" starts nothing.
	counts := [17]int{0, 1, 1}
	tab, err := buildHuffTable(&counts, []byte{5, 7}, false)
	if err != nil {
		t.Fatal(err)
	}
	r := &bitReader{data: []byte{0x53, 0xFF, 0x00, 0xC0}} // 0 10 10 0 11...
	r.fill()
	for _, want := range []int{5, 7, 7, 5} {
		if s, err := r.decode(tab); err != nil || s != want {
			t.Fatalf("decode = %d, %v; want %d", s, err, want)
		}
	}
	if _, err := r.decode(tab); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("all-ones code: %v, want ErrCorrupt", err)
	}
}

func TestDecodeConfig(t *testing.T) {
	for _, c := range []struct {
		file, cs string
		comps    int
		prog     bool
	}{
		{"gray.jpg", "gray", 1, false},
		{"gray_prog.jpg", "gray", 1, true},
		{"rgb.jpg", "rgb", 3, false},
		{"cmyk_pil.jpg", "cmyk", 4, false},
		{"ycck_2211.jpg", "ycck", 4, false},
		{"prog_420.jpg", "ycbcr", 3, true},
	} {
		info, err := DecodeConfig(readTestdata(t, c.file))
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if info.ColorTransform != c.cs || info.Components != c.comps || info.Progressive != c.prog || info.EXIFOrientation != 0 {
			t.Errorf("%s: %+v", c.file, info)
		}
	}
}

// stripSegments removes every marker segment of kind m (before the first
// scan's data).
func stripSegments(data []byte, m byte) []byte {
	out := append([]byte{}, data[:2]...)
	p := 2
	for p+4 <= len(data) && data[p] == 0xFF {
		n := int(data[p+2])<<8 | int(data[p+3])
		if data[p+1] != m {
			out = append(out, data[p:p+2+n]...)
		}
		if data[p+1] == mSOS {
			return append(out, data[p+2+n:]...)
		}
		p += 2 + n
	}
	return out
}

// TestStandardHuffmanTables: cjpeg without -optimize writes the tables of
// T.81 Annex K, so without its DHT segments (as in Motion-JPEG frames)
// the file must decode to the same pixels, as libjpeg-turbo does.
func TestStandardHuffmanTables(t *testing.T) {
	for _, name := range []string{"s420_q90", "restart_rows_420", "gray"} {
		data := stripSegments(readTestdata(t, name+".jpg"), mDHT)
		if bytes.Contains(data[:100], []byte{0xFF, mDHT}) {
			t.Fatalf("%s: DHT not stripped", name)
		}
		want := readTestdata(t, name+".rgb")
		img, err := Decode(data, 1<<20)
		if err != nil {
			t.Fatalf("%s without DHT: %v", name, err)
		}
		if !bytes.Equal(img.Pix, want) {
			t.Errorf("%s without DHT: pixels differ", name)
		}
	}
}
