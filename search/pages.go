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
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
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

	// slots bounds the renderings in progress (one a core).
	slots chan struct{}

	mu    sync.Mutex
	cache map[string]kept // "id/width" -> PNG
	order []string
	held  int
}

// kept is a rendered page and the file it was read from.
type kept struct {
	png  []byte
	path string
	file os.FileInfo
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
	return &Pages{x: x, newPDF: newPDF, slots: make(chan struct{}, runtime.GOMAXPROCS(0)), cache: map[string]kept{}}
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
	c, ok := pg.cache[key]
	pg.mu.Unlock()
	if ok {
		// A kept image stands while its file is the one it was read
		// from; else the file is read again, to say gone or changed.
		if st, err := os.Stat(c.path); err == nil && os.SameFile(st, c.file) && st.Size() == c.file.Size() && st.ModTime().Equal(c.file.ModTime()) {
			return c.png, nil
		}
	}
	// A rendering holds its source file (up to maxSourceBytes) and its
	// bitmaps: concurrent ones are bounded, so that many requests at once
	// wait instead of holding that much memory each.
	select {
	case pg.slots <- struct{}{}:
		defer func() { <-pg.slots }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	src, data, fi, err := pg.source(m)
	if err != nil {
		return nil, err
	}
	var img *image.RGBA
	if strings.EqualFold(filepath.Ext(src), ".pdf") {
		img, err = pg.renderPDF(ctx, data, int(m.Page))
	} else {
		img, err = decodeImage(data)
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
	b := buf.Bytes()
	pg.keep(key, kept{png: b, path: src, file: fi})
	return b, nil
}

func (pg *Pages) keep(key string, c kept) {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if len(c.png) > pageCacheBytes/8 {
		return
	}
	if old, ok := pg.cache[key]; ok {
		// Replaced after its file changed: its place in the order stays.
		pg.held -= len(old.png)
	} else {
		pg.order = append(pg.order, key)
	}
	pg.cache[key] = c
	pg.held += len(c.png)
	for pg.held > pageCacheBytes && len(pg.order) > 0 {
		old := pg.order[0]
		pg.order = pg.order[1:]
		pg.held -= len(pg.cache[old].png)
		delete(pg.cache, old)
	}
}

// source finds the item's file: its path as indexed, absolute, or
// relative to the indexing run's folder (the manifest's root) or to the
// current folder; it reads the file once and returns its bytes only when
// their SHA-256 is the indexed one, so that what is rendered is what was
// hashed (a file swapped between a check and a read, or for a symbolic
// link to another file of the same size and time, is never rendered).
func (pg *Pages) source(m Meta) (string, []byte, os.FileInfo, error) {
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
		data, fi, err := readBounded(p, maxSourceBytes)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotRegular) {
			continue
		}
		if err != nil {
			return "", nil, nil, fmt.Errorf("search: %w", err)
		}
		d := sha256.Sum256(data)
		if hex.EncodeToString(d[:]) != m.SHA256 {
			return "", nil, nil, ErrSourceChanged
		}
		return p, data, fi, nil
	}
	return "", nil, nil, ErrSourceGone
}

func (pg *Pages) renderPDF(ctx context.Context, data []byte, page int) (*image.RGBA, error) {
	pg.pdfOnce.Do(func() { pg.pdf, pg.pdfErr = pg.newPDF() })
	if pg.pdfErr != nil {
		return nil, pg.pdfErr
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

// errNotRegular: a path that is not a regular file (a folder, a FIFO, a
// device), which is never opened: a FIFO blocks its opener, a device may
// never end.
var errNotRegular = errors.New("not a regular file")

// readBounded reads a regular file of at most limit bytes, with the
// file's information as opened.
func readBounded(path string, limit int64) ([]byte, os.FileInfo, error) {
	if st, err := os.Stat(path); err != nil {
		return nil, nil, err
	} else if !st.Mode().IsRegular() {
		return nil, nil, errNotRegular
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, errNotRegular
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, nil, err
	}
	if int64(len(data)) > limit {
		return nil, nil, fmt.Errorf("a file over %d bytes", limit)
	}
	return data, fi, nil
}

func decodeImage(data []byte) (*image.RGBA, error) {
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
