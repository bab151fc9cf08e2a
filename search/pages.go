package search

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/vembed/vembed/imageproc"
	"github.com/vembed/vembed/pdf"
)

// Errors of Pages.Image; the server maps them to statuses.
var (
	// ErrNoItem: the index holds no item of that id.
	ErrNoItem = errors.New("the index holds no item of this id")
	// ErrNoImage: the item has no page image (a text chunk, a table's
	// record).
	ErrNoImage = errors.New("this item has no page image (a text passage or a table's record)")
	// ErrSourceGone: the item's source file is gone since it was indexed.
	ErrSourceGone = errors.New("the item's source file is gone since it was indexed")
	// ErrSourceChanged: the source file's content is not the indexed one.
	ErrSourceChanged = errors.New("the item's source file changed since it was indexed")
)

// MaxPageWidth bounds a thumbnail's requested width.
const MaxPageWidth = 4096

// Pages renders the page images of an index's items from their source
// files: a PDF's page again at the index's DPI, an image file as it is.
// Only files the index names for an id are read, never a path a client
// gives, and only while their content is the indexed one (SHA-256).
type Pages struct {
	x *Index
	// newPDF starts the PDF renderer at the first PDF page asked for.
	newPDF  func() (*pdf.Renderer, error)
	pdfOnce sync.Once
	pdf     *pdf.Renderer
	pdfErr  error

	mu     sync.Mutex
	hashes map[string]hashed // path -> content hash at a size and time
	cache  map[string][]byte // "id/width" -> PNG
	order  []string
	held   int
}

type hashed struct {
	stamp fileStamp
	sum   string
}

// pageCacheBytes bounds the PNGs Pages keeps.
const pageCacheBytes = 64 << 20

// maxSourceBytes bounds a source file read for a page.
const maxSourceBytes = 1 << 30

// NewPages returns the page renderer of x; newPDF starts PDFium (nil:
// a default renderer).
func NewPages(x *Index, newPDF func() (*pdf.Renderer, error)) *Pages {
	if newPDF == nil {
		newPDF = func() (*pdf.Renderer, error) { return pdf.NewRenderer(pdf.Options{}) }
	}
	return &Pages{x: x, newPDF: newPDF, hashes: map[string]hashed{}, cache: map[string][]byte{}}
}

// Close stops the PDF renderer.
func (pg *Pages) Close() error {
	if pg.pdf != nil {
		return pg.pdf.Close()
	}
	return nil
}

// Image returns item id's page as PNG, scaled down to width pixels wide
// when 0 < width < its width.
func (pg *Pages) Image(ctx context.Context, id string, width int) ([]byte, error) {
	m, ok := pg.x.Row(id)
	if !ok {
		return nil, ErrNoItem
	}
	if m.Width <= 0 || m.Height <= 0 {
		return nil, ErrNoImage
	}
	key := fmt.Sprintf("%s/%d", id, width)
	pg.mu.Lock()
	b, ok := pg.cache[key]
	pg.mu.Unlock()
	if ok {
		return b, nil
	}
	src, err := pg.source(m)
	if err != nil {
		return nil, err
	}
	var img *image.RGBA
	if strings.EqualFold(filepath.Ext(src), ".pdf") {
		img, err = pg.renderPDF(ctx, src, int(m.Page))
	} else {
		img, err = decodeImage(src)
	}
	if err != nil {
		return nil, fmt.Errorf("search: page of %s: %w", m.Path, err)
	}
	if width > 0 && width < img.Bounds().Dx() {
		img = scale(img, width)
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img); err != nil {
		return nil, err
	}
	b = buf.Bytes()
	pg.keep(key, b)
	return b, nil
}

func (pg *Pages) keep(key string, b []byte) {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if len(b) > pageCacheBytes/8 {
		return
	}
	pg.cache[key] = b
	pg.order = append(pg.order, key)
	pg.held += len(b)
	for pg.held > pageCacheBytes && len(pg.order) > 0 {
		old := pg.order[0]
		pg.order = pg.order[1:]
		pg.held -= len(pg.cache[old])
		delete(pg.cache, old)
	}
}

// source finds the item's file: its path as indexed, absolute, or
// relative to the indexing run's folder (the manifest's root) or to the
// current folder; and checks its content hash.
func (pg *Pages) source(m Meta) (string, error) {
	s := pg.x.snap.Load()
	var tries []string
	if filepath.IsAbs(m.Path) {
		tries = []string{m.Path}
	} else {
		if s.root != "" {
			tries = append(tries, filepath.Join(s.root, m.Path))
		}
		tries = append(tries, m.Path)
	}
	for _, p := range tries {
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		sum, err := pg.hash(p, fileStamp{st.Size(), st.ModTime()})
		if err != nil {
			return "", err
		}
		if sum != m.SHA256 {
			return "", ErrSourceChanged
		}
		return p, nil
	}
	return "", ErrSourceGone
}

func (pg *Pages) hash(p string, stamp fileStamp) (string, error) {
	pg.mu.Lock()
	h, ok := pg.hashes[p]
	pg.mu.Unlock()
	if ok && h.stamp == stamp {
		return h.sum, nil
	}
	f, err := os.Open(p)
	if err != nil {
		return "", fmt.Errorf("search: %w", err)
	}
	defer f.Close()
	d := sha256.New()
	if _, err := io.Copy(d, f); err != nil {
		return "", fmt.Errorf("search: %w", err)
	}
	sum := hex.EncodeToString(d.Sum(nil))
	pg.mu.Lock()
	pg.hashes[p] = hashed{stamp, sum}
	pg.mu.Unlock()
	return sum, nil
}

func (pg *Pages) renderPDF(ctx context.Context, path string, page int) (*image.RGBA, error) {
	pg.pdfOnce.Do(func() { pg.pdf, pg.pdfErr = pg.newPDF() })
	if pg.pdfErr != nil {
		return nil, pg.pdfErr
	}
	data, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	doc, err := pg.pdf.Open(ctx, data, "")
	if err != nil {
		return nil, err
	}
	defer doc.Close()
	if page < 1 || page > doc.NumPages() {
		return nil, fmt.Errorf("page %d of a %d-page document", page, doc.NumPages())
	}
	dpi := pg.x.snap.Load().dpi
	if dpi <= 0 {
		dpi = pdf.DefaultDPI
	}
	p, err := doc.Render(ctx, page-1, dpi)
	if err != nil {
		return nil, err
	}
	return p.Image, nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSourceBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxSourceBytes {
		return nil, fmt.Errorf("source file over %d bytes", maxSourceBytes)
	}
	return data, nil
}

func decodeImage(path string) (*image.RGBA, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	im, err := imageproc.Decode(data, imageproc.DecodeOptions{Limits: imageproc.DefaultLimits()})
	if err != nil {
		return nil, err
	}
	return toRGBA(im), nil
}

func toRGBA(im *imageproc.Image) *image.RGBA {
	out := image.NewRGBA(image.Rect(0, 0, im.Width, im.Height))
	for i, j := 0, 0; i < len(im.Pix); i, j = i+3, j+4 {
		out.Pix[j], out.Pix[j+1], out.Pix[j+2], out.Pix[j+3] = im.Pix[i], im.Pix[i+1], im.Pix[i+2], 255
	}
	return out
}

// scale resizes img to width pixels wide (bicubic), keeping its aspect.
func scale(img *image.RGBA, width int) *image.RGBA {
	b := img.Bounds()
	h := max(1, b.Dy()*width/b.Dx())
	src := imageproc.NewImage(b.Dx(), b.Dy())
	for y := range b.Dy() {
		for x := range b.Dx() {
			o := img.PixOffset(b.Min.X+x, b.Min.Y+y)
			copy(src.Pix[3*(y*b.Dx()+x):], img.Pix[o:o+3])
		}
	}
	return toRGBA(imageproc.ResizeBicubic(src, width, h))
}
