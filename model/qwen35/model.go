// Package qwen35 runs Qwen3.5 models (the backbone of webAI-ColVec1/1.1 and
// colqwen3.5) stored as llama.cpp GGUF pairs: a "qwen35" language model
// and a "clip" mmproj whose projector is "qwen3vl_merger" (Qwen3-VL's
// tower, package model/qwen3vl, here without DeepStack taps).
//
// The decoder is hybrid: of every full_attention_interval layers, the last
// is gated full attention (query and gate interleaved per head, q/k
// RMSNorm, interleaved M-RoPE on the first rope.dimension_count dimensions
// of each head, output times sigmoid(gate)) and the others are Gated
// DeltaNet layers (a causal depthwise convolution and SiLU over the q|k|v
// projection, L2-normalized q and k, and per value head a d_k×d_v state
// updated by the gated delta rule, read out through a gated RMSNorm). Every
// layer ends with a SwiGLU MLP. In llama.cpp's layout value head h reads
// key head h mod n_k, the (1+w) norms carry their +1 and ssm_a is
// −exp(A_log).
//
// qwen35.attention.causal = false (as ColVec1.1 and colqwen3.5 run) lets
// the full-attention layers see every token of the sequence; the DeltaNet
// layers stay a forward scan. The model stops at the final hidden states
// (after the output norm).
package qwen35

import (
	"errors"
	"fmt"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/model/qwen3vl"
)

// Model is a loaded Qwen3.5 pair. Its methods may be called from several
// goroutines at once: all state is read-only after Load.
type Model struct {
	lmFile, mmFile *gguf.File
	lm             *Decoder
	tower          *qwen3vl.Tower // nil for a text-only model
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
		return nil, fmt.Errorf("qwen35: %w", err)
	}
	if m.lm, err = LoadDecoder(m.lmFile); err != nil {
		m.Close()
		return nil, fmt.Errorf("qwen35: %s: %w", lmPath, err)
	}
	m.info = model.Info{
		Arch:          "qwen35",
		Hidden:        m.lm.Hidden,
		Layers:        m.lm.Layers(),
		ContextLength: m.lm.Ctx,
		Vocab:         m.lm.Vocab,
		FlopsPerToken: m.lm.Flops(),
		Bidirectional: !m.lm.Causal,
		OutputNorm:    true,
	}
	if mmprojPath == "" {
		return m, nil
	}
	if m.mmFile, err = gguf.Open(mmprojPath); err != nil {
		m.Close()
		return nil, fmt.Errorf("qwen35: %w", err)
	}
	if m.tower, err = qwen3vl.LoadTower(m.mmFile); err != nil {
		m.Close()
		return nil, fmt.Errorf("qwen35: %s: %w", mmprojPath, err)
	}
	switch t := m.tower; {
	case t.OutDim() != m.lm.Hidden:
		err = fmt.Errorf("mmproj %s projects to %d values but the LM hidden width is %d: not a matching pair", mmprojPath, t.OutDim(), m.lm.Hidden)
	case t.DeepStack() != 0:
		err = fmt.Errorf("mmproj %s has %d DeepStack taps; Qwen3.5 adds none: not a matching pair", mmprojPath, t.DeepStack())
	}
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("qwen35: %w", err)
	}
	m.lm.MergeSize = m.tower.MergeSize()
	m.tower.Describe(&m.info)
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
	m.lmFile, m.mmFile, m.lm, m.tower = nil, nil, nil, nil
	return errors.Join(errs...)
}

// Info describes the model.
func (m *Model) Info() model.Info { return m.info }

// NewVisionPass checks the images and prepares a resumable pass of the
// tower over them (model.Model).
func (m *Model) NewVisionPass(imgs []model.ImageInput, trace bool) (model.VisionPass, error) {
	if m.tower == nil {
		return nil, errors.New("qwen35: the model has no vision tower (no mmproj loaded)")
	}
	return m.tower.NewVisionPass(imgs, trace)
}

// NewState checks a sequence (ids, image placement) and computes its
// positions (model.Model).
func (m *Model) NewState(seq model.Sequence) (model.State, error) {
	if m.lm == nil {
		return nil, errors.New("qwen35: model is closed")
	}
	st, err := m.lm.NewState(seq)
	if err != nil {
		return nil, fmt.Errorf("qwen35: %w", err)
	}
	return st, nil
}

// ForwardChunks runs one decoder pass over chunks of several sequences
// (model.Model): every row is bit for bit what a pass over its whole
// sequence alone gives.
func (m *Model) ForwardChunks(chunks []model.Chunk) ([][]float32, error) {
	if m.lm == nil {
		return nil, errors.New("qwen35: model is closed")
	}
	out, err := m.lm.ForwardChunks(chunks)
	if err != nil {
		return nil, fmt.Errorf("qwen35: %w", err)
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
