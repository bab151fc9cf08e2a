package engine

import (
	"context"
	"fmt"

	"github.com/vembed/vembed/model/qwenvl"
)

// executor runs model calls one at a time. The model itself is safe for
// concurrent use, but its kernels already use every core, so running two
// calls at once only adds memory and cache pressure.
//
// This is where batching plugs in: a scheduler goroutine that owns the
// model will replace the semaphore, packing the images of several waiting
// requests into one vision pass and their sequences into one decoder pass,
// behind the same encode/forwardBatch signatures.
type executor struct {
	model *qwenvl.Model
	slot  chan struct{}
}

func newExecutor(m *qwenvl.Model) *executor {
	return &executor{model: m, slot: make(chan struct{}, 1)}
}

// acquire waits for the model, or for ctx to end.
func (x *executor) acquire(ctx context.Context) error {
	select {
	case x.slot <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (x *executor) release() { <-x.slot }

// encode runs all images through the vision encoder in one pass and returns
// their merger rows; trace, when set, also receives the ViT outputs.
func (x *executor) encode(ctx context.Context, imgs []qwenvl.ImageInput, trace visionTrace) ([][]float32, error) {
	if len(imgs) == 0 {
		return nil, nil
	}
	if err := x.acquire(ctx); err != nil {
		return nil, err
	}
	defer x.release()
	if trace == nil {
		rows, err := x.model.EncodeImages(imgs)
		if err != nil {
			return nil, fmt.Errorf("engine: vision encoder: %w", err)
		}
		return rows, nil
	}
	rows, tr, err := x.model.EncodeImagesTrace(imgs)
	if err != nil {
		return nil, fmt.Errorf("engine: vision encoder: %w", err)
	}
	if err := trace(tr.VitOut, tr.MergerOut); err != nil {
		return nil, err
	}
	return rows, nil
}

// forwardBatch runs the decoder over several independent sequences in one
// packed pass and returns each sequence's hidden states.
func (x *executor) forwardBatch(ctx context.Context, seqs []qwenvl.Sequence) ([][]float32, error) {
	if err := x.acquire(ctx); err != nil {
		return nil, err
	}
	defer x.release()
	hidden, err := x.model.ForwardBatch(seqs)
	if err != nil {
		return nil, fmt.Errorf("engine: language model: %w", err)
	}
	if len(hidden) != len(seqs) {
		return nil, fmt.Errorf("engine: language model: %d results for %d sequences", len(hidden), len(seqs))
	}
	return hidden, nil
}
