package synth

import (
	"bytes"
	"compress/zlib"
	"crypto/md5"
	"crypto/rc4"
	"encoding/binary"
	"fmt"
	"image"
	"io"
	"math/rand/v2"
	"strings"
)

// PDFPage describes one page written by PDF.
type PDFPage struct {
	// WidthPt and HeightPt are the page's MediaBox size in points (1/72 inch).
	WidthPt, HeightPt float64
	// Rotate is the page's /Rotate entry (a multiple of 90; 0 when absent).
	Rotate int
	// Image, when set, is drawn as an 8-bit RGB image XObject (Flate) filling
	// ImageRect, or the whole page when ImageRect is zero. Alpha is dropped.
	Image image.Image
	// ImageRect is x, y, width, height in points from the page's lower left.
	ImageRect [4]float64
	// Text lines are drawn in Helvetica from the top left, one per line.
	// Only printable ASCII is written as is; other runes become '?'.
	Text []string
	// FontSize of the text lines in points (default 12).
	FontSize float64
}

// PDFOptions control how PDF writes a document.
type PDFOptions struct {
	// UserPassword, when set, encrypts the document with the standard
	// security handler (revision 3, 128-bit RC4): a reader must be given it.
	UserPassword string
	// OwnerPassword of an encrypted document (default: UserPassword).
	OwnerPassword string
}

// PDF writes a PDF 1.4 document with the given pages. Every page shares one
// font resource. It panics on a page of non-positive size, as that is a
// mistake in the test that asks for it.
func PDF(pages []PDFPage, opts PDFOptions) []byte {
	w := newPDFWriter()
	if opts.UserPassword != "" {
		owner := opts.OwnerPassword
		if owner == "" {
			owner = opts.UserPassword
		}
		w.encrypt(opts.UserPassword, owner)
	}
	const catalog, root, font = 1, 2, 3
	w.object(catalog, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", root))
	w.object(font, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	next := 4
	kids := make([]string, len(pages))
	for i, p := range pages {
		if !(p.WidthPt > 0 && p.HeightPt > 0) {
			panic(fmt.Sprintf("synth: PDF page %d has size %gx%g", i, p.WidthPt, p.HeightPt))
		}
		pageObj, contentObj := next, next+1
		next += 2
		var content bytes.Buffer
		xobjects := ""
		if p.Image != nil {
			imgObj := next
			next++
			r := p.ImageRect
			if r == [4]float64{} {
				r = [4]float64{0, 0, p.WidthPt, p.HeightPt}
			}
			b := p.Image.Bounds()
			rgb := make([]byte, 0, 3*b.Dx()*b.Dy())
			for y := b.Min.Y; y < b.Max.Y; y++ {
				for x := b.Min.X; x < b.Max.X; x++ {
					cr, cg, cb, _ := p.Image.At(x, y).RGBA()
					rgb = append(rgb, byte(cr>>8), byte(cg>>8), byte(cb>>8))
				}
			}
			w.stream(imgObj, fmt.Sprintf("/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /FlateDecode",
				b.Dx(), b.Dy()), deflate(rgb))
			xobjects = fmt.Sprintf(" /XObject << /Im0 %d 0 R >>", imgObj)
			fmt.Fprintf(&content, "q %s 0 0 %s %s %s cm /Im0 Do Q\n", num(r[2]), num(r[3]), num(r[0]), num(r[1]))
		}
		if len(p.Text) > 0 {
			size := p.FontSize
			if size <= 0 {
				size = 12
			}
			fmt.Fprintf(&content, "BT /F1 %s Tf %s TL 36 %s Td\n", num(size), num(size*1.2), num(p.HeightPt-36-size))
			for _, line := range p.Text {
				fmt.Fprintf(&content, "(%s) Tj T*\n", pdfString(line))
			}
			content.WriteString("ET\n")
		}
		w.stream(contentObj, "/Filter /FlateDecode", deflate(content.Bytes()))
		rotate := ""
		if p.Rotate != 0 {
			rotate = fmt.Sprintf(" /Rotate %d", p.Rotate)
		}
		w.object(pageObj, fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %s %s]%s /Resources << /Font << /F1 %d 0 R >>%s >> /Contents %d 0 R >>",
			root, num(p.WidthPt), num(p.HeightPt), rotate, font, xobjects, contentObj))
		kids[i] = fmt.Sprintf("%d 0 R", pageObj)
	}
	w.object(root, fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(pages)))
	return w.finish(catalog)
}

// WritePDF writes PDF(pages, PDFOptions{}) to w.
func WritePDF(w io.Writer, pages []PDFPage) error {
	if _, err := w.Write(PDF(pages, PDFOptions{})); err != nil {
		return fmt.Errorf("synth: writing PDF: %w", err)
	}
	return nil
}

// PDFTruncated is a valid one-page document cut at half its length: its
// cross-reference table and the end of its objects are missing.
func PDFTruncated() []byte {
	b := PDF([]PDFPage{{WidthPt: 200, HeightPt: 100, Text: []string{"truncated"}}}, PDFOptions{})
	return b[:len(b)/2]
}

// PDFZeroPages is a well-formed document whose page tree has no pages.
func PDFZeroPages() []byte { return PDF(nil, PDFOptions{}) }

// PDFHugePage is one page of 200x200 inches (14400 pt, the largest size
// PDF 1.7 allows) with an image over all of it and a line of text.
func PDFHugePage() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 15)
	}
	return PDF([]PDFPage{{WidthPt: 14400, HeightPt: 14400, Image: img, Text: []string{"huge"}}}, PDFOptions{})
}

// PDFManyPages is a PDF 1.5 document of n pages that all draw one shared
// content stream (a line of text). The page dictionaries and the page tree
// sit in one compressed object stream and the cross-reference table is a
// compressed stream, so 100000 pages take a few hundred kilobytes.
func PDFManyPages(n int) []byte {
	w := newPDFWriter()
	w.buf.Reset()
	w.buf.WriteString("%PDF-1.5\n%\xe2\xe3\xcf\xd3\n")
	const catalog, root, font, content, objStm, firstPage = 1, 2, 3, 4, 5, 6
	w.object(catalog, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", root))
	w.object(font, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	w.stream(content, "/Filter /FlateDecode", deflate([]byte("BT /F1 12 Tf 36 36 Td (shared page) Tj ET\n")))

	// The object stream: the page tree's root first, then the pages.
	var head, body bytes.Buffer
	var kids strings.Builder
	for i := range n {
		fmt.Fprintf(&kids, "%d 0 R ", firstPage+i)
	}
	add := func(num int, obj string) {
		fmt.Fprintf(&head, "%d %d ", num, body.Len())
		body.WriteString(obj)
		body.WriteByte('\n')
	}
	// MediaBox and Resources are inherited from the page tree's root.
	add(root, fmt.Sprintf("<</Type/Pages/MediaBox[0 0 612 792]/Resources<</Font<</F1 %d 0 R>>>>/Kids[%s]/Count %d>>", font, kids.String(), n))
	page := fmt.Sprintf("<</Type/Page/Parent %d 0 R/Contents %d 0 R>>", root, content)
	for i := range n {
		add(firstPage+i, page)
	}
	w.stream(objStm, fmt.Sprintf("/Type /ObjStm /N %d /First %d /Filter /FlateDecode", n+1, head.Len()),
		deflate(append(head.Bytes(), body.Bytes()...)))

	// The cross-reference stream (W [1 4 4]): type 1 entries for the
	// objects in the file, type 2 for those in the object stream.
	xrefObj := firstPage + n
	size := xrefObj + 1
	w.offsets[xrefObj] = w.buf.Len()
	entries := make([]byte, 0, 9*size)
	entry := func(typ byte, a, b uint32) {
		entries = append(entries, typ)
		entries = binary.BigEndian.AppendUint32(entries, a)
		entries = binary.BigEndian.AppendUint32(entries, b)
	}
	for num := range size {
		switch {
		case num == 0:
			entry(0, 0, 65535)
		case num == root:
			entry(2, objStm, 0)
		case num >= firstPage && num < xrefObj:
			entry(2, objStm, uint32(num-firstPage+1))
		default:
			entry(1, uint32(w.offsets[num]), 0)
		}
	}
	data := deflate(entries)
	fmt.Fprintf(&w.buf, "%d 0 obj\n<< /Type /XRef /Size %d /W [1 4 4] /Root %d 0 R /Filter /FlateDecode /Length %d >>\nstream\n",
		xrefObj, size, catalog, len(data))
	w.buf.Write(data)
	fmt.Fprintf(&w.buf, "\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n", w.offsets[xrefObj])
	return w.buf.Bytes()
}

// PDFDeepNesting is a one-page document whose page dictionary holds arrays
// and dictionaries nested depth levels deep (a parser recursing on them
// without a bound runs out of stack).
func PDFDeepNesting(depth int) []byte {
	w := newPDFWriter()
	w.object(1, "<< /Type /Catalog /Pages 2 0 R >>")
	w.object(2, "<< /Type /Pages /Kids [3 0 R] /Count 1 >>")
	var deep strings.Builder
	for i := range depth {
		if i%2 == 0 {
			deep.WriteString("[")
		} else {
			deep.WriteString("<</A ")
		}
	}
	for i := depth - 1; i >= 0; i-- {
		if i%2 == 0 {
			deep.WriteString("]")
		} else {
			deep.WriteString(">>")
		}
	}
	w.object(3, fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Nested %s /Contents 4 0 R >>", deep.String()))
	w.stream(4, "", []byte("0 0 1 rg 10 10 50 50 re f\n"))
	return w.finish(1)
}

// PDFImageBomb is one letter-size page drawing an image XObject that
// declares side x side RGB pixels (side*side*3 bytes decoded) while its
// Flate data holds one row: a reader that allocates the declared image up
// front asks for gigabytes.
func PDFImageBomb(side int) []byte {
	w := newPDFWriter()
	w.object(1, "<< /Type /Catalog /Pages 2 0 R >>")
	w.object(2, "<< /Type /Pages /Kids [3 0 R] /Count 1 >>")
	w.object(3, "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im0 5 0 R >> >> /Contents 4 0 R >>")
	w.stream(4, "", []byte("q 612 0 0 792 0 0 cm /Im0 Do Q\n"))
	w.stream(5, fmt.Sprintf("/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /FlateDecode", side, side),
		deflate(make([]byte, 3*side)))
	return w.finish(1)
}

// PDFFlateBomb is one page whose content stream inflates to decoded bytes
// of spaces (valid, empty content) from about decoded/1000 bytes of Flate
// data: a decompression bomb.
func PDFFlateBomb(decoded int) []byte {
	w := newPDFWriter()
	w.object(1, "<< /Type /Catalog /Pages 2 0 R >>")
	w.object(2, "<< /Type /Pages /Kids [3 0 R] /Count 1 >>")
	w.object(3, "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>")
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	chunk := bytes.Repeat([]byte{' '}, 1<<16)
	for n := decoded; n > 0; n -= len(chunk) {
		zw.Write(chunk[:min(n, len(chunk))])
	}
	zw.Close()
	w.stream(4, "/Filter /FlateDecode", buf.Bytes())
	return w.finish(1)
}

// PDFJunk is n bytes of seeded random data; when header is true it starts
// with a PDF header line so that only the rest is garbage.
func PDFJunk(n int, seed uint64, header bool) []byte {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	if header {
		copy(b, "%PDF-1.7\n")
	}
	return b
}

// HostilePDF is one named hostile input.
type HostilePDF struct {
	Name string
	Data []byte
}

// HostilePDFs returns the hostile documents above at small sizes (fit for
// fuzz seeds; ask PDFManyPages for 100000 pages directly) plus an encrypted
// document whose user password is "secret".
func HostilePDFs() []HostilePDF {
	return []HostilePDF{
		{"truncated", PDFTruncated()},
		{"zero-pages", PDFZeroPages()},
		{"huge-page", PDFHugePage()},
		{"many-pages", PDFManyPages(2000)},
		{"deep-nesting", PDFDeepNesting(5000)},
		{"image-bomb", PDFImageBomb(40000)},
		{"flate-bomb", PDFFlateBomb(8 << 20)},
		{"encrypted", PDF([]PDFPage{{WidthPt: 300, HeightPt: 200, Text: []string{"encrypted text"}}}, PDFOptions{UserPassword: "secret"})},
		{"junk", PDFJunk(4096, 1, false)},
		{"junk-header", PDFJunk(4096, 2, true)},
	}
}

// pdfWriter lays out numbered objects and writes the cross-reference
// table for them.
type pdfWriter struct {
	buf     bytes.Buffer
	offsets map[int]int
	key     []byte // file key when encrypting, nil otherwise
	encDict string
	id      []byte
}

func newPDFWriter() *pdfWriter {
	w := &pdfWriter{offsets: map[int]int{}}
	// A binary comment line tells transfer tools the file is binary.
	w.buf.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	return w
}

func (w *pdfWriter) object(num int, body string) {
	w.offsets[num] = w.buf.Len()
	fmt.Fprintf(&w.buf, "%d 0 obj\n%s\nendobj\n", num, body)
}

// stream writes a stream object; dict holds its entries besides /Length.
func (w *pdfWriter) stream(num int, dict string, data []byte) {
	if w.key != nil {
		data = rc4Crypt(w.objectKey(num), data)
	}
	w.offsets[num] = w.buf.Len()
	fmt.Fprintf(&w.buf, "%d 0 obj\n<< %s /Length %d >>\nstream\n", num, dict, len(data))
	w.buf.Write(data)
	w.buf.WriteString("\nendstream\nendobj\n")
}

func (w *pdfWriter) finish(catalog int) []byte {
	size := 0
	for n := range w.offsets {
		size = max(size, n+1)
	}
	encRef := ""
	if w.key != nil {
		w.object(size, w.encDict)
		encRef = fmt.Sprintf(" /Encrypt %d 0 R", size)
		size++
	}
	xref := w.buf.Len()
	fmt.Fprintf(&w.buf, "xref\n0 %d\n0000000000 65535 f\r\n", size)
	for n := 1; n < size; n++ {
		if off, ok := w.offsets[n]; ok {
			fmt.Fprintf(&w.buf, "%010d 00000 n\r\n", off)
		} else {
			w.buf.WriteString("0000000000 65535 f\r\n")
		}
	}
	id := w.id
	if id == nil {
		sum := md5.Sum(w.buf.Bytes()[:min(w.buf.Len(), 4096)])
		id = sum[:]
	}
	fmt.Fprintf(&w.buf, "trailer\n<< /Size %d /Root %d 0 R%s /ID [<%x> <%x>] >>\nstartxref\n%d\n%%%%EOF\n",
		size, catalog, encRef, id, id, xref)
	return w.buf.Bytes()
}

// pdfPadding is the password padding of the standard security handler
// (PDF 1.7, 7.6.3.3, Algorithm 2).
var pdfPadding = []byte{
	0x28, 0xBF, 0x4E, 0x5E, 0x4E, 0x75, 0x8A, 0x41, 0x64, 0x00, 0x4E, 0x56, 0xFF, 0xFA, 0x01, 0x08,
	0x2E, 0x2E, 0x00, 0xB6, 0xD0, 0x68, 0x3E, 0x80, 0x2F, 0x0C, 0xA9, 0xFE, 0x64, 0x53, 0x69, 0x7A,
}

func padPassword(pw string) []byte {
	b := append([]byte(pw), pdfPadding...)
	return b[:32]
}

// encrypt sets up the standard security handler, revision 3 with a 128-bit
// RC4 key (Algorithms 2, 3 and 5 of PDF 1.7 section 7.6.3).
func (w *pdfWriter) encrypt(user, owner string) {
	const n = 16
	const perms = int32(-3904) // print, copy and the rest allowed; reserved bits set
	w.id = []byte("vembed-synth-pdf")

	// Algorithm 3: the O entry.
	h := md5.Sum(padPassword(owner))
	for range 50 {
		h = md5.Sum(h[:n])
	}
	o := rc4Crypt(h[:n], padPassword(user))
	for i := 1; i <= 19; i++ {
		o = rc4Crypt(xorKey(h[:n], byte(i)), o)
	}

	// Algorithm 2: the file key.
	d := md5.New()
	d.Write(padPassword(user))
	d.Write(o)
	var p [4]byte
	pv := perms
	binary.LittleEndian.PutUint32(p[:], uint32(pv))
	d.Write(p[:])
	d.Write(w.id)
	key := d.Sum(nil)
	for range 50 {
		s := md5.Sum(key[:n])
		key = s[:]
	}
	key = key[:n]

	// Algorithm 5: the U entry.
	d = md5.New()
	d.Write(pdfPadding)
	d.Write(w.id)
	u := rc4Crypt(key, d.Sum(nil))
	for i := 1; i <= 19; i++ {
		u = rc4Crypt(xorKey(key, byte(i)), u)
	}
	u = append(u, make([]byte, 16)...)

	w.key = key
	w.encDict = fmt.Sprintf("<< /Filter /Standard /V 2 /R 3 /Length 128 /O <%x> /U <%x> /P %d >>", o, u, perms)
}

// objectKey is Algorithm 1's per-object key.
func (w *pdfWriter) objectKey(num int) []byte {
	b := append([]byte{}, w.key...)
	b = append(b, byte(num), byte(num>>8), byte(num>>16), 0, 0)
	s := md5.Sum(b)
	return s[:min(len(w.key)+5, 16)]
}

func xorKey(key []byte, x byte) []byte {
	k := make([]byte, len(key))
	for i := range key {
		k[i] = key[i] ^ x
	}
	return k
}

func rc4Crypt(key, data []byte) []byte {
	c, err := rc4.NewCipher(key)
	if err != nil {
		panic(err) // key lengths here are always 5..16 bytes
	}
	out := make([]byte, len(data))
	c.XORKeyStream(out, data)
	return out
}

func deflate(b []byte) []byte {
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// num formats a coordinate without exponent, as PDF numbers have none.
func num(f float64) string {
	s := fmt.Sprintf("%.4f", f)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

func pdfString(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '(' || r == ')' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		default:
			b.WriteByte('?')
		}
	}
	return b.String()
}
