package engine

import (
	"fmt"
	"strings"

	"github.com/vembed/vembed/recipe"
	"github.com/vembed/vembed/tokenizer"
)

// ImageGrid says where the merged patches of a w x h image lie among the
// multi-vector rows of an input made of that image alone, embedded with
// req's options (task or instruction, pixel bounds): rows x cols patches
// in row-major order, the first at row first. Search draws its similarity
// maps with it over the page as it was embedded.
func (e *Engine) ImageGrid(req Request, w, h int) (first, rows, cols int, err error) {
	o, err := e.options(&req)
	if err != nil {
		return 0, 0, 0, err
	}
	if o.img.PatchSize == 0 {
		return 0, 0, 0, fmt.Errorf("engine: the model has no vision tower")
	}
	rw, rh, err := o.img.TargetSize(w, h)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("engine: a %dx%d image: %w", w, h, err)
	}
	f := o.img.Factor()
	rows, cols = rh/f, rw/f
	p, err := e.prompt(Input{}, []tokenizer.Part{{ImageTokens: rows * cols}}, o, "input")
	if err != nil {
		return 0, 0, 0, err
	}
	if len(p.Images) != 1 || p.Images[0].End-p.Images[0].First != rows*cols {
		return 0, 0, 0, fmt.Errorf("engine: the prompt of one image holds %d image spans", len(p.Images))
	}
	first = p.Images[0].First
	if k, ok := e.recipe.(recipe.RowKeeper); ok && k.KeepRows(p) != nil {
		// Only kept rows are output: the image's first row is the
		// count of kept rows before it.
		first = 0
		for _, r := range k.KeepRows(p) {
			first += max(0, min(r[1], p.Images[0].First)-r[0])
		}
	}
	return first, rows, cols, nil
}

// TextTokens returns the text of each token of the prompt of a text
// query embedded with req's options, in the order of its multi-vector
// rows (the prompt's markup included), so that a similarity map can name
// the query token it draws. Inputs with images are refused.
func (e *Engine) TextTokens(req Request, text string) ([]string, error) {
	o, err := e.options(&req)
	if err != nil {
		return nil, err
	}
	if _, err := e.checkText("input", text, o.limit, cutNone); err != nil {
		return nil, err
	}
	p, err := e.prompt(Input{}, []tokenizer.Part{{Text: text}}, o, "input")
	if err != nil {
		return nil, err
	}
	out := make([]string, len(p.IDs))
	for i, id := range p.IDs {
		s, err := e.tok.Decode([]int32{id})
		if err != nil {
			return nil, err
		}
		out[i] = strings.ToValidUTF8(s, "\uFFFD")
	}
	return out, nil
}
