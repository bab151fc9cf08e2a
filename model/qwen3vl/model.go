// Package qwen3vl runs Qwen3-VL models (Qwen3-VL-Embedding, -Reranker and
// the instruct checkpoints they are fine-tuned from) stored as llama.cpp
// GGUF pairs: a "qwen3vl" language model and a "clip" mmproj whose
// projector is "qwen3vl_merger", as transformers computes them. The vision
// tower embeds 16-pixel patches with a bias, adds a learned position table
// resampled bilinearly to the image's grid, runs LayerNorm blocks with
// 2-D rotary positions and a GELU-tanh MLP, and besides its final merger
// taps DeepStack mergers after the blocks flagged in
// clip.vision.is_deepstack_layers; the decoder (package model/internal/vlm)
// is Qwen3 with per-head q/k RMSNorm and interleaved M-RoPE, adding DeepStack
// set k to the image rows after layer k.
//
// The model stops at the final hidden states (after the output norm):
// embeddings pool them (last token for Qwen3-VL-Embedding) and a reranker
// scores the last one with its classifier head (package model/heads).
// Files converted from bidirectional retrievers (nemotron-colembed-vl-v2)
// say model.KeyCausal = false and model.KeyOutputNorm = false: every token
// then attends to its whole sequence, which runs in one pass, and the rows
// are the last layer's output before the norm. Every
// dimension, head count and tap is read from the files' metadata.
package qwen3vl

import (
	"errors"
	"fmt"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/model/internal/vlm"
)

// Model is a loaded Qwen3-VL pair. Its methods may be called from several
// goroutines at once: all state is read-only after Load.
type Model struct {
	lmFile, mmFile *gguf.File
	lm             *vlm.Decoder
	vis            *visionModel // nil for a text-only model
	info           model.Info
}

// Model implements the engine's model contract.
var _ model.Model = (*Model)(nil)

// Load opens the LM GGUF and, when mmprojPath is not empty, its mmproj GGUF,
// and binds every weight after checking its shape against the metadata.
func Load(lmPath, mmprojPath string) (*Model, error) {
	m := &Model{}
	var err error
	if m.lmFile, err = gguf.Open(lmPath); err != nil {
		return nil, fmt.Errorf("qwen3vl: %w", err)
	}
	if arch, _ := m.lmFile.String("general.architecture"); arch != "qwen3vl" {
		m.Close()
		return nil, fmt.Errorf("qwen3vl: %s: general.architecture is %q, not a Qwen3-VL language model (qwen3vl)", lmPath, arch)
	}
	if m.lm, err = vlm.LoadDecoder(m.lmFile); err != nil {
		m.Close()
		return nil, fmt.Errorf("qwen3vl: %s: %w", lmPath, err)
	}
	// Still images have one frame pair: Qwen3-VL gives every frame
	// temporal position 0 (time is written as text between frames).
	m.lm.TemporalStride = 0
	m.info = model.Info{
		Arch:              m.lm.Arch,
		Hidden:            m.lm.Hidden,
		Layers:            m.lm.Layers(),
		ContextLength:     m.lm.Ctx,
		Vocab:             m.lm.Vocab,
		PatchSize:         16,
		MergeSize:         2,
		TemporalPatchSize: temporalPatchSize,
		ImageMean:         [3]float32{0.5, 0.5, 0.5},
		ImageStd:          [3]float32{0.5, 0.5, 0.5},
		FlopsPerToken:     m.lm.Flops(),
		Bidirectional:     !m.lm.Causal,
		OutputNorm:        m.lm.OutputNorm,
	}
	if mmprojPath == "" {
		return m, nil
	}
	if m.mmFile, err = gguf.Open(mmprojPath); err != nil {
		m.Close()
		return nil, fmt.Errorf("qwen3vl: %w", err)
	}
	if m.vis, err = loadVision(m.mmFile); err != nil {
		m.Close()
		return nil, fmt.Errorf("qwen3vl: %s: %w", mmprojPath, err)
	}
	v := m.vis
	switch {
	case v.outDim != m.lm.Hidden:
		err = fmt.Errorf("mmproj %s projects to %d values but the LM hidden width is %d: not a matching pair", mmprojPath, v.outDim, m.lm.Hidden)
	case len(v.deep) != m.lm.DeepStack:
		err = fmt.Errorf("mmproj %s has %d DeepStack taps but the LM adds %d (n_deepstack_layers): not a matching pair", mmprojPath, len(v.deep), m.lm.DeepStack)
	}
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("qwen3vl: %w", err)
	}
	m.lm.MergeSize = v.mergeSize
	(&Tower{vm: v}).Describe(&m.info)
	return m, nil
}

// Close releases the mapped files. The model must not be used afterwards.
func (m *Model) Close() error {
	var errs []error
	for _, f := range []*gguf.File{m.lmFile, m.mmFile} {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	m.lmFile, m.mmFile, m.lm, m.vis = nil, nil, nil, nil
	return errors.Join(errs...)
}

// Info describes the model.
func (m *Model) Info() model.Info { return m.info }

// NewState checks a sequence (ids, image placement and DeepStack rows) and
// computes its positions (model.Model).
func (m *Model) NewState(seq model.Sequence) (model.State, error) {
	if m.lm == nil {
		return nil, errors.New("qwen3vl: model is closed")
	}
	st, err := m.lm.NewState(seq)
	if err != nil {
		return nil, fmt.Errorf("qwen3vl: %w", err)
	}
	return st, nil
}

// ForwardChunks runs one decoder pass over chunks of several sequences
// (model.Model): every row is bit for bit what a pass over its whole
// sequence alone gives.
func (m *Model) ForwardChunks(chunks []model.Chunk) ([][]float32, error) {
	if m.lm == nil {
		return nil, errors.New("qwen3vl: model is closed")
	}
	out, err := m.lm.ForwardChunks(chunks)
	if err != nil {
		return nil, fmt.Errorf("qwen3vl: %w", err)
	}
	return out, nil
}

// Forward runs one sequence alone and returns its final hidden states.
func (m *Model) Forward(seq model.Sequence) ([]float32, error) {
	st, err := m.NewState(seq)
	if err != nil {
		return nil, err
	}
	out, err := m.ForwardChunks([]model.Chunk{{State: st, N: st.Len()}})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}
