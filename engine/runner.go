package engine

import (
	"fmt"

	"github.com/vembed/vembed/model"
)

// runner owns the model: the scheduler's goroutine calls it to run what a
// step names, one call at a time, so the kernels have every core and the
// model's scratch memory is used by one pass at once.
type runner struct {
	m model.Model
}

// vision advances a vision pass by up to stages stages.
func (r *runner) vision(p model.VisionPass, stages int) (err error) {
	defer recoverModel(&err)
	if err := p.Step(stages); err != nil {
		return fmt.Errorf("engine: vision encoder: %w", err)
	}
	return nil
}

// lm runs one language-model pass over chunks.
func (r *runner) lm(chunks []model.Chunk) (out [][]float32, err error) {
	defer recoverModel(&err)
	out, err = r.m.ForwardChunks(chunks)
	if err != nil {
		return nil, fmt.Errorf("engine: language model: %w", err)
	}
	return out, nil
}

// recoverModel turns a panic inside the model into an error for the
// requests of the step: the scheduler goroutine must survive a bug that a
// single request's shape provokes.
func recoverModel(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("engine: model failure: %v", p)
	}
}
