// Package pdf renders PDF pages to images and reads their text layer with
// PDFium, the renderer Chrome uses, compiled to WebAssembly and run by
// wazero (through go-pdfium's webassembly runtime): pure Go, no cgo, no
// system library.
//
// Every document is opened in its own WebAssembly instance, a sandbox whose
// memory is capped (Options.MaxBytes plus room for one page of
// Options.MaxPixels) and which has no file system. A call that runs past
// Options.Timeout or its context is interrupted and its instance discarded;
// an instance that traps (a PDFium crash or memory exhaustion) is discarded
// too. The pool makes a fresh instance for the next document, so a hostile
// file costs an error, never the process. On Linux an instance's memory is
// a reserved mapping of its cap: the process holds only the pages PDFium
// touches, and they go back to the OS when the instance is discarded.
//
// A well-formed document without pages opens with NumPages 0.
//
// Compiling PDFium's module takes seconds; the compiled code is cached on
// disk (Options.CacheDir) so later processes start in a fraction of that.
//
// Page pixel sizes follow pdftoppm (and so pdf2image, which runs it):
// ceil(points * dpi / 72) for each side, on the page as displayed (its
// /Rotate applied). pdftoppm measures the MediaBox; PDFium displays the
// CropBox, which is the same box unless the document sets a smaller one.
package pdf

import (
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klippa-app/go-pdfium"
	"github.com/klippa-app/go-pdfium/enums"
	pdfiumerrors "github.com/klippa-app/go-pdfium/errors"
	"github.com/klippa-app/go-pdfium/references"
	"github.com/klippa-app/go-pdfium/requests"
	"github.com/klippa-app/go-pdfium/webassembly"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"
)

// DefaultDPI is the resolution pdf2image renders at by default, the one the
// ColPali-style retrieval tutorials feed their models with.
const DefaultDPI = 200

// Defaults of Options' zero values.
const (
	DefaultMaxPages = 10000
	DefaultMaxBytes = 1 << 30
	// DefaultMaxPixels is 32 Mi pixels (128 MiB as RGBA): an A1 sheet at
	// 200 DPI fits, a 200x200-inch page is rendered at about 28 DPI.
	DefaultMaxPixels = 1 << 25
	DefaultTimeout   = 60 * time.Second
)

// maxPixelsLimit keeps a bitmap's 4-byte stride times height within what
// 32-bit WebAssembly can address with room to spare.
const maxPixelsLimit = 1 << 28

// testMemoryLimit, when set by a test, replaces the instances' computed
// memory limit (bytes).
var testMemoryLimit int64

// maxTextChars bounds the text layer read from one page.
const maxTextChars = 1 << 20

// Errors returned (wrapped with context) by Open and Render.
var (
	ErrFormat       = errors.New("incorrect format")
	ErrEncrypted    = errors.New("encrypted: a password is needed")
	ErrPassword     = errors.New("wrong password")
	ErrTooManyPages = errors.New("too many pages")
	ErrTooLarge     = errors.New("too large")
)

// Options bound a Renderer.
type Options struct {
	Workers   int           // WebAssembly instances = concurrent documents; default runtime.GOMAXPROCS(0)
	CacheDir  string        // wazero compilation cache; "" = os.UserCacheDir()/vembed/pdfium; "-" = none
	MaxPixels int64         // per rendered page; a page that would exceed it renders at a lower DPI
	MaxPages  int           // a document with more pages fails Open with ErrTooManyPages (0 = default 10000)
	MaxBytes  int64         // a larger document fails Open (0 = default 1 GiB)
	Timeout   time.Duration // bounds each Open / Render / Text call (0 = default 60 s)
}

// Renderer opens documents, each in a WebAssembly instance of its pool.
// It is safe for concurrent use.
type Renderer struct {
	opts  Options
	pool  pdfium.Pool
	cache wazero.CompilationCache

	// go-pdfium's pool reads its table of instances in Close without its
	// lock while Kill, instance Close and GetInstance write it: mu
	// serializes kills and releases with Close, opening counts the Opens
	// between taking an instance and registering their document, and
	// docs lets Close kill the documents still open.
	mu      sync.Mutex
	closed  bool
	opening sync.WaitGroup
	docs    map[*Document]struct{}
}

// NewRenderer compiles PDFium (or loads it from the compilation cache) and
// sets up a pool of at most opts.Workers instances.
func NewRenderer(opts Options) (*Renderer, error) {
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.MaxPixels <= 0 {
		opts.MaxPixels = DefaultMaxPixels
	}
	opts.MaxPixels = min(opts.MaxPixels, maxPixelsLimit)
	if opts.MaxPages <= 0 {
		opts.MaxPages = DefaultMaxPages
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	// An instance holds the document, PDFium's parse of it, one bitmap and
	// its decoded images: the document's size, twice the bitmap and
	// 256 MiB of working room, within 32-bit WebAssembly's 4 GiB.
	memBytes := opts.MaxBytes + 8*opts.MaxPixels + 256<<20
	if testMemoryLimit > 0 {
		memBytes = testMemoryLimit
	}
	memPages := uint32(min(memBytes>>16, 65536))

	rc := wazero.NewRuntimeConfig().
		// The bundled module lowers setjmp/longjmp to exception handling.
		WithCoreFeatures(api.CoreFeaturesV2 | experimental.CoreFeaturesExceptionHandling).
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(memPages)
	r := &Renderer{opts: opts, docs: map[*Document]struct{}{}}
	dir := cacheDir(opts.CacheDir)
	pool, err := r.start(rc, dir)
	if err != nil && dir != "" {
		// wazero keeps a damaged cache entry (truncated, corrupted) and
		// fails on it at every start: drop what it wrote and compile anew,
		// then, failing that too, run without a cache.
		slog.Warn("pdf: starting PDFium from the compilation cache failed, clearing it", "dir", dir, "err", err)
		if entries, gerr := filepath.Glob(filepath.Join(dir, "wazero-*")); gerr == nil {
			for _, e := range entries {
				os.RemoveAll(e)
			}
		}
		pool, err = r.start(rc, dir)
		if err != nil {
			pool, err = r.start(rc, "")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("pdf: starting PDFium: %w", err)
	}
	r.pool = pool
	return r, nil
}

// start compiles PDFium (through the cache in dir, when set) and makes the
// pool.
func (r *Renderer) start(rc wazero.RuntimeConfig, dir string) (pdfium.Pool, error) {
	r.cache = nil
	if dir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(dir)
		if err != nil {
			slog.Warn("pdf: compilation cache unavailable, compiling PDFium on every start", "dir", dir, "err", err)
		} else {
			r.cache = cache
			rc = rc.WithCompilationCache(cache)
		}
	}
	pool, err := webassembly.Init(webassembly.Config{
		// Instances' memories come from memoryAllocator (memory.go).
		Context:       experimental.WithMemoryAllocator(context.Background(), memoryAllocator),
		MinIdle:       0,
		MaxIdle:       r.opts.Workers,
		MaxTotal:      r.opts.Workers,
		FSConfig:      wazero.NewFSConfig(), // no file system: documents come as bytes
		RuntimeConfig: rc,
		Stdout:        io.Discard,
		Stderr:        io.Discard,
	})
	if err != nil && r.cache != nil {
		r.cache.Close(context.Background())
		r.cache = nil
	}
	return pool, err
}

func cacheDir(opt string) string {
	switch opt {
	case "-":
		return ""
	case "":
		base, err := os.UserCacheDir()
		if err != nil {
			slog.Debug("pdf: no user cache directory, PDFium's compilation is not cached", "err", err)
			return ""
		}
		return filepath.Join(base, "vembed", "pdfium")
	}
	return opt
}

// Close releases the pool and every open document's instance.
func (r *Renderer) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	docs := make([]*Document, 0, len(r.docs))
	for d := range r.docs {
		docs = append(docs, d)
	}
	r.mu.Unlock()
	// Kill what is open (running calls are interrupted and end with an
	// error first), then wait for Opens in progress, which find the
	// renderer closed.
	for _, d := range docs {
		d.kill()
	}
	r.opening.Wait()
	r.mu.Lock()
	err := r.pool.Close()
	r.mu.Unlock()
	if r.cache != nil {
		if cerr := r.cache.Close(context.Background()); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("pdf: closing: %w", err)
	}
	return nil
}

// Document is an open PDF holding one WebAssembly instance until Close.
// Its methods may be called from several goroutines; they run one at a time.
type Document struct {
	r      *Renderer
	mu     sync.Mutex
	inst   pdfium.Pdfium
	doc    references.FPDF_DOCUMENT
	pages  int
	killed atomic.Bool // the instance was (or is being) killed
	gone   bool        // the instance was killed or returned; guarded by r.mu
	closed bool

	// callCtx is go-pdfium's field holding the context its calls into the
	// module run with, base its own value (the worker's context). guard
	// sets a context of each call's own there, whose cancellation
	// interrupts the call (see guard).
	callCtx reflect.Value
	base    context.Context
	// running is held by guard while a call runs, so a kill from another
	// goroutine waits for the call to return; interrupt, set while it
	// runs and guarded by interruptMu, interrupts it.
	running     sync.Mutex
	interruptMu sync.Mutex
	interrupt   context.CancelFunc
}

// Open parses data (the whole file) with the given password ("" for none).
// It waits for a free instance while ctx allows: a caller holding Workers
// documents open must close one before opening another.
func (r *Renderer) Open(ctx context.Context, data []byte, password string) (*Document, error) {
	if int64(len(data)) > r.opts.MaxBytes {
		return nil, fmt.Errorf("pdf: document of %d bytes, the limit is %d: %w", len(data), r.opts.MaxBytes, ErrTooLarge)
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, errors.New("pdf: renderer is closed")
	}
	r.opening.Add(1)
	r.mu.Unlock()
	inst, err := r.pool.GetInstanceWithContext(ctx)
	r.mu.Lock()
	if err == nil && r.closed {
		inst.Close()
		err = errors.New("pdf: renderer is closed")
	}
	d := &Document{r: r, inst: inst}
	if err == nil {
		if d.callCtx, err = callContext(inst); err != nil {
			inst.Close()
		} else {
			d.base = d.callCtx.Interface().(context.Context)
			r.docs[d] = struct{}{}
		}
	}
	r.mu.Unlock()
	r.opening.Done()
	if err != nil {
		if ctx.Err() != nil {
			// The pool's own timeout error does not wrap the context's.
			return nil, fmt.Errorf("pdf: waiting for a PDFium instance: %w", context.Cause(ctx))
		}
		return nil, fmt.Errorf("pdf: waiting for a PDFium instance: %w", err)
	}
	err = d.guard(ctx, "opening the document", func() error {
		req := &requests.OpenDocument{File: &data}
		if password != "" {
			req.Password = &password
		}
		resp, err := inst.OpenDocument(req)
		if err != nil && password != "" && errors.Is(err, pdfiumerrors.ErrPassword) {
			// PDFium tries a given password as the owner's and the user's
			// but not the empty user password that documents encrypted for
			// their owner only have: a password meant for other files of
			// a folder must not lock those out.
			if r2, err2 := inst.OpenDocument(&requests.OpenDocument{File: &data}); err2 == nil {
				resp, err = r2, nil
			}
		}
		if err != nil {
			return openError(err, password)
		}
		d.doc = resp.Document
		n, err := inst.FPDF_GetPageCount(&requests.FPDF_GetPageCount{Document: d.doc})
		if err != nil {
			return fmt.Errorf("pdf: counting pages: %w", err)
		}
		d.pages = n.PageCount
		return nil
	})
	if err != nil {
		d.release()
		return nil, err
	}
	if d.pages > r.opts.MaxPages {
		d.Close()
		return nil, fmt.Errorf("pdf: %d pages, the limit is %d: %w", d.pages, r.opts.MaxPages, ErrTooManyPages)
	}
	return d, nil
}

func openError(err error, password string) error {
	switch {
	case errors.Is(err, pdfiumerrors.ErrPassword):
		if password == "" {
			return fmt.Errorf("pdf: opening: %w", ErrEncrypted)
		}
		return fmt.Errorf("pdf: opening: %w", ErrPassword)
	case errors.Is(err, pdfiumerrors.ErrSecurity):
		return fmt.Errorf("pdf: opening: unsupported security handler: %w", ErrEncrypted)
	case errors.Is(err, pdfiumerrors.ErrFormat):
		return fmt.Errorf("pdf: opening: %w", ErrFormat)
	case errors.Is(err, pdfiumerrors.ErrFile), errors.Is(err, pdfiumerrors.ErrUnknown), errors.Is(err, pdfiumerrors.ErrPage):
		return fmt.Errorf("pdf: opening: PDFium error %q: %w", err, ErrFormat)
	}
	return fmt.Errorf("pdf: opening: %w", err)
}

// NumPages is the document's page count.
func (d *Document) NumPages() int { return d.pages }

// PageSize is page i's size in points as displayed (its rotation applied).
func (d *Document) PageSize(i int) (widthPt, heightPt float64, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(i); err != nil {
		return 0, 0, err
	}
	err = d.guard(context.Background(), fmt.Sprintf("page %d size", i+1), func() error {
		widthPt, heightPt, err = d.pageSize(i)
		return err
	})
	return widthPt, heightPt, err
}

func (d *Document) pageSize(i int) (float64, float64, error) {
	resp, err := d.inst.FPDF_GetPageSizeByIndexF(&requests.FPDF_GetPageSizeByIndexF{Document: d.doc, Index: i})
	if err != nil {
		return 0, 0, fmt.Errorf("pdf: page %d: %v: %w", i+1, err, ErrFormat)
	}
	w, h := float64(resp.Size.Width), float64(resp.Size.Height)
	if !(w > 0 && h > 0) || math.IsInf(w, 0) || math.IsInf(h, 0) {
		return 0, 0, fmt.Errorf("pdf: page %d has size %gx%g pt: %w", i+1, w, h, ErrFormat)
	}
	return w, h, nil
}

func (d *Document) usable(i int) error {
	switch {
	case d.closed:
		return errors.New("pdf: document is closed")
	case d.killed.Load():
		return errors.New("pdf: document's PDFium instance was discarded after an earlier failure")
	case i < 0 || i >= d.pages:
		return fmt.Errorf("pdf: page index %d out of range [0,%d)", i, d.pages)
	}
	return nil
}

// Page is one rendered page.
type Page struct {
	Image *image.RGBA // opaque, page painted on white, annotations drawn
	DPI   float64     // the DPI used (lower than asked when MaxPixels capped it)
	Text  string      // the page's text layer (UTF-8), "" when none
}

// PixelSize is the bitmap size of a page of w x h points at dpi, as
// pdftoppm computes it: ceil(points * dpi / 72), the product first (poppler
// 22.12 agrees on 180 size and DPI pairs; ceil(points * (dpi/72)) gives
// letter at 300 DPI a 3301st row), at least 1 and at most 1<<31.
func PixelSize(widthPt, heightPt, dpi float64) (int, int) {
	side := func(pt float64) int {
		v := math.Ceil(pt * dpi / 72)
		if !(v >= 1) { // NaN, zero or negative
			return 1
		}
		return int(min(v, 1<<31))
	}
	return side(widthPt), side(heightPt)
}

// fitDPI lowers dpi until the page's bitmap has at most maxPixels pixels.
func fitDPI(widthPt, heightPt, dpi float64, maxPixels int64) float64 {
	// In float64 first: the pixel counts of an absurd DPI overflow ints.
	fw, fh := widthPt*dpi/72, heightPt*dpi/72
	if fw*fh > float64(maxPixels) {
		dpi = 72 * math.Sqrt(float64(maxPixels)/(widthPt*heightPt))
	}
	// ceil can still overshoot by a row or column: step down until it fits.
	for range 200 {
		w, h := PixelSize(widthPt, heightPt, dpi)
		if int64(w)*int64(h) <= maxPixels {
			break
		}
		dpi *= 0.995
	}
	return dpi
}

// Render draws page i (0-based) at dpi (DefaultDPI when 0) and reads its
// text layer.
func (d *Document) Render(ctx context.Context, i int, dpi float64) (*Page, error) {
	if dpi == 0 {
		dpi = DefaultDPI
	}
	if !(dpi > 0) || math.IsInf(dpi, 0) {
		return nil, fmt.Errorf("pdf: invalid DPI %g", dpi)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(i); err != nil {
		return nil, err
	}
	var page *Page
	err := d.guard(ctx, fmt.Sprintf("rendering page %d", i+1), func() error {
		var err error
		page, err = d.render(i, dpi)
		return err
	})
	return page, err
}

func (d *Document) render(i int, dpi float64) (*Page, error) {
	wPt, hPt, err := d.pageSize(i)
	if err != nil {
		return nil, err
	}
	dpi = fitDPI(wPt, hPt, dpi, d.r.opts.MaxPixels)
	w, h := PixelSize(wPt, hPt, dpi)
	if int64(w)*int64(h) > d.r.opts.MaxPixels {
		return nil, fmt.Errorf("pdf: page %d of %gx%g pt does not fit %d pixels: %w", i+1, wPt, hPt, d.r.opts.MaxPixels, ErrTooLarge)
	}

	inst := d.inst
	lp, err := inst.FPDF_LoadPage(&requests.FPDF_LoadPage{Document: d.doc, Index: i})
	if err != nil {
		return nil, fmt.Errorf("pdf: loading page %d: %v: %w", i+1, err, ErrFormat)
	}
	pageRef := requests.Page{ByReference: &lp.Page}
	defer inst.FPDF_ClosePage(&requests.FPDF_ClosePage{Page: lp.Page})

	// BGRA filled with opaque white: PDFium composites over it and the
	// alpha stays 255, so the rows copy out as they are.
	bm, err := inst.FPDFBitmap_Create(&requests.FPDFBitmap_Create{Width: w, Height: h, Alpha: 1})
	if err != nil {
		return nil, fmt.Errorf("pdf: page %d: a %dx%d bitmap: %v: %w", i+1, w, h, err, ErrTooLarge)
	}
	defer inst.FPDFBitmap_Destroy(&requests.FPDFBitmap_Destroy{Bitmap: bm.Bitmap})
	// PDFium answers a failed allocation with a null bitmap, which has no
	// stride: the instance is out of memory for a bitmap this size.
	stride, err := inst.FPDFBitmap_GetStride(&requests.FPDFBitmap_GetStride{Bitmap: bm.Bitmap})
	if err != nil {
		return nil, fmt.Errorf("pdf: page %d: %w", i+1, err)
	}
	if stride.Stride < 4*w {
		return nil, fmt.Errorf("pdf: page %d: no memory for a %dx%d bitmap: %w", i+1, w, h, ErrTooLarge)
	}
	if _, err := inst.FPDFBitmap_FillRect(&requests.FPDFBitmap_FillRect{Bitmap: bm.Bitmap, Width: w, Height: h, Color: 0xFFFFFFFF}); err != nil {
		return nil, fmt.Errorf("pdf: page %d: %w", i+1, err)
	}
	// Annotations drawn, grayscale anti-aliased text (no LCD subpixels),
	// bytes in RGBA order.
	flags := enums.FPDF_RENDER_FLAG_ANNOT | enums.FPDF_RENDER_FLAG_REVERSE_BYTE_ORDER
	if _, err := inst.FPDF_RenderPageBitmap(&requests.FPDF_RenderPageBitmap{
		Bitmap: bm.Bitmap, Page: pageRef, SizeX: w, SizeY: h, Flags: flags,
	}); err != nil {
		return nil, fmt.Errorf("pdf: rendering page %d: %w", i+1, err)
	}
	buf, err := inst.FPDFBitmap_GetBuffer(&requests.FPDFBitmap_GetBuffer{Bitmap: bm.Bitmap})
	if err != nil {
		return nil, fmt.Errorf("pdf: page %d: %w", i+1, err)
	}
	if stride.Stride < 4*w || len(buf.Buffer) < stride.Stride*(h-1)+4*w {
		return nil, fmt.Errorf("pdf: page %d: bitmap buffer of %d bytes, stride %d, for %dx%d", i+1, len(buf.Buffer), stride.Stride, w, h)
	}
	// The buffer is a view of the instance's memory: copy it out.
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	if stride.Stride == img.Stride {
		copy(img.Pix, buf.Buffer)
	} else {
		for y := range h {
			copy(img.Pix[y*img.Stride:y*img.Stride+4*w], buf.Buffer[y*stride.Stride:])
		}
	}
	// A page whose transparency group PDFium renders as its own layer
	// may leave alpha below 255 even over the white fill: the image is
	// promised opaque.
	for i := 3; i < len(img.Pix); i += 4 {
		img.Pix[i] = 0xFF
	}
	text, err := d.text(pageRef, i)
	if err != nil {
		return nil, err
	}
	return &Page{Image: img, DPI: dpi, Text: text}, nil
}

func (d *Document) text(page requests.Page, i int) (string, error) {
	inst := d.inst
	tp, err := inst.FPDFText_LoadPage(&requests.FPDFText_LoadPage{Page: page})
	if err != nil {
		return "", fmt.Errorf("pdf: page %d text layer: %w", i+1, err)
	}
	defer inst.FPDFText_ClosePage(&requests.FPDFText_ClosePage{TextPage: tp.TextPage})
	n, err := inst.FPDFText_CountChars(&requests.FPDFText_CountChars{TextPage: tp.TextPage})
	if err != nil {
		return "", fmt.Errorf("pdf: page %d text layer: %w", i+1, err)
	}
	if n.Count <= 0 {
		return "", nil
	}
	if n.Count > maxTextChars {
		slog.Warn("pdf: text layer cut", "page", i+1, "chars", n.Count, "kept", maxTextChars)
	}
	t, err := inst.FPDFText_GetText(&requests.FPDFText_GetText{TextPage: tp.TextPage, Count: min(n.Count, maxTextChars)})
	if err != nil {
		return "", fmt.Errorf("pdf: page %d text layer: %w", i+1, err)
	}
	// PDFium ends the lines it finds with CRLF.
	s := strings.TrimRight(t.Text, "\x00")
	return strings.ReplaceAll(s, "\r\n", "\n"), nil
}

// guard runs f with the Renderer's timeout and ctx: when either ends first
// the running call is interrupted and, once f has returned, the instance
// is killed; an instance that trapped is killed as well, so its memory is
// never reused.
//
// Why the kill waits for f (as read in go-pdfium v1.21.4's
// pdfiumInstance.Kill and wazero v1.12.0's ModuleInstance and
// MemoryInstance). Kill cancels the instance's context and closes its
// wazero module at once, in the killing goroutine. Closing a module frees
// its resources: it clears the memory's allocator
// (MemoryInstance.expBuffer, an interface value, set to nil after Free)
// and the module's Sys, without a lock, while the interrupted call may
// still be running: its memory.grow reads expBuffer in Grow, its host
// functions read Sys. Those are data races on the fields (a torn read of
// the interface can hand Reallocate a nil receiver), and the Go memory
// model promises nothing about a racy read of a multiword value. So no
// kill runs beside a call. A call is interrupted by cancelling the
// context it runs with (wazero's WithCloseOnContextDone): wazero's
// watcher goroutine then only marks the module closed (a compare-and-swap)
// and unlinks it from the runtime's store under the store's lock,
// touching no resource of the module, and the call frees the resources
// itself, in its own goroutine, when it next checks that mark (at every
// loop iteration, so it returns promptly); every later call of f fails
// at once the same way. When f has returned, Kill finds the module
// closed, or closes a module nothing runs in.
func (d *Document) guard(ctx context.Context, what string, f func() error) error {
	d.running.Lock()
	defer d.running.Unlock()
	ctx, cancel := context.WithTimeout(ctx, d.r.opts.Timeout)
	defer cancel()
	call, interrupt := context.WithCancel(d.base)
	defer interrupt()
	d.interruptMu.Lock()
	if d.killed.Load() {
		d.interruptMu.Unlock()
		return fmt.Errorf("pdf: %s: the document's PDFium instance was discarded", what)
	}
	d.interrupt = interrupt
	d.interruptMu.Unlock()
	d.callCtx.Set(reflect.ValueOf(call))
	// Registered before the timer can fire: a memory freed from now on
	// stays mapped until f has returned.
	id := calls.begin()
	stop := context.AfterFunc(ctx, interrupt)
	err := func() error {
		defer calls.end(id)
		return f()
	}()
	d.callCtx.Set(reflect.ValueOf(d.base))
	d.interruptMu.Lock()
	d.interrupt = nil
	d.interruptMu.Unlock()
	if !stop() {
		// The timer fired: the call was interrupted (or had just ended),
		// the instance goes, whatever f returned.
		d.discard()
		return fmt.Errorf("pdf: %s: stopped after %v: %w", what, d.r.opts.Timeout, context.Cause(ctx))
	}
	if d.killed.Load() {
		// Renderer.Close interrupted the call; it kills the instance.
		return fmt.Errorf("pdf: %s: the renderer is closing", what)
	}
	if err != nil && trapped(err) {
		d.discard()
		// The trap's message is followed by a WebAssembly stack trace.
		msg, _, _ := strings.Cut(err.Error(), "\n")
		return fmt.Errorf("pdf: %s: PDFium crashed (a corrupt file or out of memory), its instance discarded: %s: %w", what, msg, ErrFormat)
	}
	return err
}

// callContext returns go-pdfium's field holding the context of an
// instance's calls (PdfiumImplementation.Context, in a package of its
// own that cannot be imported), which guard replaces for each call.
func callContext(inst pdfium.Pdfium) (reflect.Value, error) {
	v := reflect.ValueOf(inst.GetImplementation())
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() == reflect.Struct {
		f := v.FieldByName("Context")
		if f.IsValid() && f.CanSet() && f.Type() == reflect.TypeFor[context.Context]() && !f.IsNil() {
			return f, nil
		}
	}
	return reflect.Value{}, fmt.Errorf("pdf: go-pdfium's instance (%T) has no Context field to interrupt its calls with", inst.GetImplementation())
}

// trapped tells a failure of the WebAssembly instance (a trap, an exit, a
// recovered panic) from an ordinary PDFium error return.
func trapped(err error) bool {
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "wasm error") || strings.Contains(s, "panic occurred") ||
		strings.Contains(s, "module closed") || strings.Contains(s, "instance is closed")
}

// kill interrupts the call running, if any, waits for it to return and
// kills the instance.
func (d *Document) kill() {
	d.interruptMu.Lock()
	d.killed.Store(true)
	if d.interrupt != nil {
		d.interrupt()
	}
	d.interruptMu.Unlock()
	d.running.Lock()
	defer d.running.Unlock()
	d.discard()
}

// discard kills the instance; the pool replaces it for the next document.
// No call may be running in it (guard's comment says why).
func (d *Document) discard() {
	d.killed.Store(true)
	d.drop("killing", d.inst.Kill)
}

// Close frees the document and returns its instance to the pool.
func (d *Document) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	if d.killed.Load() {
		return nil
	}
	err := d.guard(context.Background(), "closing", func() error {
		_, err := d.inst.FPDF_CloseDocument(&requests.FPDF_CloseDocument{Document: d.doc})
		return err
	})
	d.release()
	return err
}

// release hands the instance back, or kills it if a kill was asked for
// (a killed instance never returns to the pool).
func (d *Document) release() {
	if d.killed.Load() {
		d.discard()
		return
	}
	d.drop("closing", d.inst.Close)
}

// drop forgets the document and ends its instance with end, once: a
// document both discarded and closed ends it only the first time.
func (d *Document) drop(what string, end func() error) {
	d.r.mu.Lock()
	defer d.r.mu.Unlock()
	delete(d.r.docs, d)
	if d.gone {
		return
	}
	d.gone = true
	if err := end(); err != nil {
		slog.Debug("pdf: "+what+" a PDFium instance", "err", err)
	}
}
