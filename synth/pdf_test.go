package synth

import (
	"bytes"
	"compress/zlib"
	"image"
	"image/color"
	"io"
	"regexp"
	"strconv"
	"testing"
)

// TestPDFLayout checks what a reader relies on first: every in-use xref
// entry points at its object's header, startxref points at the table, and
// stream lengths and Flate data are right (the image's pixels come back).
func TestPDFLayout(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 10)
	}
	docs := map[string][]byte{
		"plain":     PDF([]PDFPage{{WidthPt: 300, HeightPt: 200, Image: img, Text: []string{"a (b) c\\"}}, {WidthPt: 100, HeightPt: 100, Rotate: 90}}, PDFOptions{}),
		"encrypted": PDF([]PDFPage{{WidthPt: 300, HeightPt: 200, Text: []string{"x"}}}, PDFOptions{UserPassword: "pw"}),
		"zero":      PDFZeroPages(),
		"deep":      PDFDeepNesting(100),
		"huge":      PDFHugePage(),
		"bomb":      PDFImageBomb(1000),
		"flate":     PDFFlateBomb(1 << 20),
	}
	for name, b := range docs {
		checkXref(t, name, b)
	}
	// The plain document's image stream inflates to the image's RGB bytes.
	b := docs["plain"]
	m := regexp.MustCompile(`/Subtype /Image [^>]*/Length (\d+) >>\nstream\n`).FindSubmatchIndex(b)
	if m == nil {
		t.Fatal("no image stream")
	}
	n, _ := strconv.Atoi(string(b[m[2]:m[3]]))
	zr, err := zlib.NewReader(bytes.NewReader(b[m[1] : m[1]+n]))
	if err != nil {
		t.Fatal(err)
	}
	rgb, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for y := range 2 {
		for x := range 3 {
			c := img.At(x, y).(color.RGBA)
			want = append(want, c.R, c.G, c.B)
		}
	}
	if !bytes.Equal(rgb, want) {
		t.Errorf("image stream = %v, want %v", rgb, want)
	}
	if !bytes.Contains(b, []byte(`(a \(b\) c\\) Tj`)) && !bytes.Contains(inflateAll(b), []byte(`(a \(b\) c\\) Tj`)) {
		t.Error("text line not escaped as a PDF string")
	}
	many := PDFManyPages(100000)
	if !bytes.HasSuffix(many, []byte("%%EOF\n")) || !bytes.Contains(many, []byte("/Type /XRef")) {
		t.Error("many-pages document has no cross-reference stream")
	}
	if got := len(many); got > 1<<20 {
		t.Errorf("100000 pages take %d bytes", got)
	}
	if bytes.Contains(docs["encrypted"], []byte("(x) Tj")) || !bytes.Contains(docs["encrypted"], []byte("/Encrypt")) {
		t.Error("encrypted document is not encrypted")
	}
	if !bytes.Equal(PDFJunk(64, 7, false), PDFJunk(64, 7, false)) || !bytes.HasPrefix(PDFJunk(64, 7, true), []byte("%PDF-1.7")) {
		t.Error("PDFJunk not deterministic or header missing")
	}
	if len(PDFTruncated()) >= len(PDF([]PDFPage{{WidthPt: 200, HeightPt: 100, Text: []string{"truncated"}}}, PDFOptions{})) {
		t.Error("truncated document is not shorter")
	}
}

func inflateAll(b []byte) []byte {
	var out []byte
	re := regexp.MustCompile(`/Length (\d+) >>\nstream\n`)
	for _, m := range re.FindAllSubmatchIndex(b, -1) {
		n, _ := strconv.Atoi(string(b[m[2]:m[3]]))
		if zr, err := zlib.NewReader(bytes.NewReader(b[m[1] : m[1]+n])); err == nil {
			d, _ := io.ReadAll(zr)
			out = append(out, d...)
		}
	}
	return out
}

func checkXref(t *testing.T, name string, b []byte) {
	t.Helper()
	m := regexp.MustCompile(`startxref\n(\d+)\n%%EOF\n$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no startxref at the end", name)
	}
	xref, _ := strconv.Atoi(string(m[1]))
	if !bytes.HasPrefix(b[xref:], []byte("xref\n0 ")) {
		t.Fatalf("%s: startxref %d does not point at the table", name, xref)
	}
	entries := regexp.MustCompile(`(\d{10}) 00000 n\r\n`).FindAllSubmatchIndex(b[xref:], -1)
	for i, e := range entries {
		off, _ := strconv.Atoi(string(b[xref+e[2] : xref+e[3]]))
		if !regexp.MustCompile(`^\d+ 0 obj\n`).Match(b[off:min(off+20, len(b))]) {
			t.Fatalf("%s: xref entry %d points at %q", name, i, b[off:min(off+20, len(b))])
		}
	}
	if len(entries) == 0 {
		t.Fatalf("%s: no objects", name)
	}
}
