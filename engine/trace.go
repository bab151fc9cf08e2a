package engine

import "fmt"

// trace sends a traced request's intermediates to its Tracer: per image
// its patches, the tower's output and the merger rows, per input its final
// hidden states. Traced requests bypass every cache, so these are always
// freshly computed.
func (e *Engine) trace(pr *prepared, tr Tracer) error {
	mi := e.mi
	for _, it := range pr.inputs {
		for k, im := range it.images {
			name := func(what string) string { return fmt.Sprintf("input%d.image%d.%s", it.index, k, what) }
			rows := im.grid[0] * im.grid[1] * im.grid[2]
			for _, t := range []struct {
				name  string
				data  []float32
				width int
			}{
				{"patches", im.tracePatches, len(im.tracePatches) / max(rows, 1)},
				{"vit_out", im.vitOut, mi.VisionWidth},
				{"merger_out", im.enc.Rows, mi.Hidden},
			} {
				if len(t.data) == 0 || t.width <= 0 {
					continue
				}
				if err := tr.Tensor(name(t.name), t.data, len(t.data)/t.width, t.width); err != nil {
					return fmt.Errorf("engine: trace: %w", err)
				}
			}
		}
		if n := len(it.prompt.IDs); len(it.hidden) == n*mi.Hidden {
			if err := tr.Tensor(fmt.Sprintf("input%d.hidden_states", it.index), it.hidden, n, mi.Hidden); err != nil {
				return fmt.Errorf("engine: trace: %w", err)
			}
		}
	}
	return nil
}

// hidden keeps a traced sequence's hidden states on its input.
func (pr *prepared) hidden(sq *seqJob) {
	if sq.out != nil && sq.out.trace {
		sq.in.hidden = sq.out.keep
	}
}
