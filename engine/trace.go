package engine

import "fmt"

// Tracing: a request with a Tracer bypasses every cache and receives its
// intermediates as each stage finishes (so that the times at which they
// arrive measure the stages): per image its grid (t, h, w in patches) and
// patches after preprocessing, the tower's output and the merger rows when
// the vision pass ends, per input its final hidden states when its last
// chunk is computed, with each image's placeholder span [first, end) in
// them.

func traceName(in, img int, what string) string {
	return fmt.Sprintf("input%d.image%d.%s", in, img, what)
}

// tracePatches sends every image's patches.
func (pr *prepared) tracePatches(tr Tracer) error {
	for _, it := range pr.inputs {
		for k, im := range it.images {
			rows := im.grid[0] * im.grid[1] * im.grid[2]
			if rows == 0 || len(im.patches) == 0 {
				continue
			}
			grid := []float32{float32(im.grid[0]), float32(im.grid[1]), float32(im.grid[2])}
			if err := tr.Tensor(traceName(it.index, k, "grid"), grid, 3); err != nil {
				return fmt.Errorf("engine: trace: %w", err)
			}
			if err := tr.Tensor(traceName(it.index, k, "patches"), im.patches, rows, len(im.patches)/rows); err != nil {
				return fmt.Errorf("engine: trace: %w", err)
			}
		}
	}
	return nil
}

// traceVision sends an image's tower output and merger rows.
func (e *Engine) traceVision(tr Tracer, it *input, im *imageItem, vitOut []float32) error {
	k := 0
	for i, x := range it.images {
		if x == im {
			k = i
		}
	}
	mi := e.mi
	if mi.VisionWidth > 0 && len(vitOut) > 0 {
		if err := tr.Tensor(traceName(it.index, k, "vit_out"), vitOut, len(vitOut)/mi.VisionWidth, mi.VisionWidth); err != nil {
			return fmt.Errorf("engine: trace: %w", err)
		}
	}
	if err := tr.Tensor(traceName(it.index, k, "merger_out"), im.enc.Rows, len(im.enc.Rows)/mi.Hidden, mi.Hidden); err != nil {
		return fmt.Errorf("engine: trace: %w", err)
	}
	return nil
}

// traceHidden sends an input's final hidden states.
func (e *Engine) traceHidden(tr Tracer, it *input, hidden []float32) error {
	n := len(it.prompt.IDs)
	if len(hidden) != n*e.mi.Hidden {
		return fmt.Errorf("engine: trace: %d hidden values for %d tokens", len(hidden), n)
	}
	if err := tr.Tensor(fmt.Sprintf("input%d.hidden_states", it.index), hidden, n, e.mi.Hidden); err != nil {
		return fmt.Errorf("engine: trace: %w", err)
	}
	// The prompt's token ids, exact as float32 (every id is below 2^24).
	ids := make([]float32, n)
	for i, id := range it.prompt.IDs {
		ids[i] = float32(id)
	}
	if err := tr.Tensor(fmt.Sprintf("input%d.token_ids", it.index), ids, n); err != nil {
		return fmt.Errorf("engine: trace: %w", err)
	}
	for k, sp := range it.prompt.Images {
		if err := tr.Tensor(traceName(it.index, k, "span"), []float32{float32(sp.First), float32(sp.End)}, 2); err != nil {
			return fmt.Errorf("engine: trace: %w", err)
		}
	}
	return nil
}
