package qwenvl

import (
	"fmt"

	"github.com/vembed/vembed/model"
)

// ImageEmbedding places one image's merger rows into a token sequence:
// Rows holds GridT·GridH·GridW/MergeSize² rows of Hidden values in raster
// order of the merged grid, as EncodeImages returns them, starting at the
// placeholder token First.
type ImageEmbedding = model.ImageEmbedding

// Sequence is one input of ForwardBatch: token ids and the images placed in
// them.
type Sequence = model.Sequence

// Forward runs the decoder over one sequence of token ids in which every
// image's <|image_pad|> run is replaced by its rows, and returns the n×Hidden
// final hidden states (after the output norm). The whole sequence is one
// pass under one causal mask: image tokens attend causally like text.
func (m *Model) Forward(ids []int32, images []ImageEmbedding) ([]float32, error) {
	out, err := m.ForwardBatch([]Sequence{{IDs: ids, Images: images}})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// ForwardBatch runs several independent sequences in one pass: they are
// packed end to end, each with its own positions, under a causal mask that
// never crosses a sequence boundary, so each result equals Forward of that
// sequence alone while the matrix products run over all tokens at once.
func (m *Model) ForwardBatch(seqs []Sequence) ([][]float32, error) {
	if m.LM == nil {
		return nil, fmt.Errorf("qwenvl: model is closed")
	}
	chunks := make([]model.Chunk, len(seqs))
	for i, sq := range seqs {
		st, err := m.LM.NewState(sq)
		if err != nil {
			if len(seqs) == 1 {
				return nil, fmt.Errorf("qwenvl: %w", err)
			}
			return nil, fmt.Errorf("qwenvl: sequence %d: %w", i, err)
		}
		chunks[i] = model.Chunk{State: st, N: st.Len()}
	}
	return m.ForwardChunks(chunks)
}
