package index

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/pdf"
)

// pdfDoc is an open document shared by the items of its pages: the
// walk holds one reference while it emits them, each page item one until
// it is rendered (or passed over); the last release closes the document,
// giving its WebAssembly instance back to the renderer's pool.
type pdfDoc struct {
	doc  *pdf.Document
	refs atomic.Int32
}

func (d *pdfDoc) release() {
	if d.refs.Add(-1) == 0 {
		d.doc.Close()
	}
}

// pdfFile produces a PDF's page items. A document whose page count the
// store knows and whose pages are all finished is not opened at all (a
// run over an unchanged corpus costs hashing, not parsing).
func (r *run) pdfFile(ctx context.Context, path string, data []byte, emit func(item) error) error {
	sha := sha256Hex(data)
	pageItem := func(n int) item {
		return item{row: Row{ID: ItemID(sha, n), Path: path, Page: n, SHA256: sha}, pixels: true}
	}
	if n, ok, err := r.store.pageCount(sha); err != nil {
		return err
	} else if ok {
		all := true
		for p := 1; p <= n && all; p++ {
			it := pageItem(p)
			k := itemKey(it.row.ID, sha, r.o.ModelID, r.opt)
			if k.shard(r.o.Shards) != r.o.Shard {
				continue
			}
			done, err := r.store.has(k)
			if err != nil {
				return err
			}
			all = done
		}
		if all {
			for p := 1; p <= n; p++ {
				if err := emit(pageItem(p)); err != nil {
					return err
				}
				r.fileAt(int64(p), int64(n))
			}
			return nil
		}
	}
	r.pdfOnce.Do(func() {
		if r.pdf, r.pdfErr = r.o.PDF(); r.pdfErr != nil {
			r.pdfErr = fmt.Errorf("starting the PDF renderer: %w", r.pdfErr)
		}
	})
	if r.pdfErr != nil {
		r.problem(path, 0, r.pdfErr)
		return nil
	}
	doc, err := r.pdf.Open(ctx, data, r.o.Password)
	if err != nil {
		if ctx.Err() != nil {
			return errStop
		}
		if errors.Is(err, pdf.ErrEncrypted) {
			err = fmt.Errorf("%w (give --password)", err)
		}
		r.problem(path, 0, err)
		return nil
	}
	n := doc.NumPages()
	if n == 0 {
		doc.Close()
		r.problem(path, 0, errors.New("the PDF has no pages"))
		return nil
	}
	if err := r.store.setPageCount(sha, n); err != nil {
		doc.Close()
		return err
	}
	d := &pdfDoc{doc: doc}
	d.refs.Store(1)
	defer d.release()
	for p := 1; p <= n; p++ {
		it := pageItem(p)
		it.doc = d
		d.refs.Add(1)
		if err := emit(it); err != nil {
			return err
		}
		r.fileAt(int64(p), int64(n))
	}
	return nil
}

// render draws a page item's page and fills its input (the decoded
// pixels, which the engine takes as they are), size and text layer.
func (r *run) render(ctx context.Context, it *item) error {
	page, err := it.doc.doc.Render(ctx, it.row.Page-1, r.o.DPI)
	if err != nil {
		return err
	}
	b := page.Image.Bounds()
	it.row.Width, it.row.Height = b.Dx(), b.Dy()
	it.row.Text = page.Text
	it.input = engine.Input{Parts: []engine.Part{engine.Pixels(page.Image)}}
	return nil
}
