// Package qwenvl runs Qwen2-VL and Qwen2.5-VL models stored as llama.cpp
// GGUF pairs (a "qwen2vl" language model and a "clip" mmproj vision tower)
// as the transformers reference computes them: the vision encoder with its
// 2-D rotary positions, window attention and patch merger, and the Qwen2
// decoder over one interleaved text+image sequence with M-RoPE positions.
//
// The model stops at the final hidden states (after the output norm); the
// LM head is never used, since embeddings pool hidden states (package
// model/heads). All arithmetic goes through package kernels; weights stay
// memory-mapped in their stored GGUF type.
package qwenvl

import (
	"errors"
	"fmt"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/model"
)

// Still images are cut into patches of 2 identical frames (the Conv3d's
// temporal kernel); the value is not stored in the GGUF.
const temporalPatchSize = 2

// Default preprocessing limits used when the mmproj does not store them:
// jina-embeddings-v4's (min 56·56, max 768 merged tokens of 28·28 px).
const (
	defaultMinPixels = 56 * 56
	defaultMaxPixels = 768 * 28 * 28
)

// Model is a loaded Qwen-VL model pair. Its methods may be called from
// several goroutines at once: all state is read-only after Load.
type Model struct {
	lmFile, mmFile *gguf.File
	lm             *textModel
	vis            *visionModel // nil for a text-only model
	info           Info
	imagePad       int32 // id of <|image_pad|>, -1 when the vocabulary lacks it
}

// Info describes a loaded model for the layers above.
type Info = model.Info

// Load opens the LM GGUF and, when mmprojPath is not empty, its mmproj GGUF,
// and binds every weight after checking its shape against the metadata.
func Load(lmPath, mmprojPath string) (*Model, error) {
	m := &Model{imagePad: -1}
	var err error
	if m.lmFile, err = gguf.Open(lmPath); err != nil {
		return nil, fmt.Errorf("qwenvl: %w", err)
	}
	if m.lm, err = loadText(m.lmFile); err != nil {
		m.Close()
		return nil, fmt.Errorf("qwenvl: %s: %w", lmPath, err)
	}
	m.info = Info{
		Arch:              m.lm.arch,
		Hidden:            m.lm.hidden,
		Layers:            len(m.lm.layers),
		ContextLength:     m.lm.ctx,
		Vocab:             m.lm.vocab,
		PatchSize:         14,
		MergeSize:         2,
		TemporalPatchSize: temporalPatchSize,
		MinPixels:         defaultMinPixels,
		MaxPixels:         defaultMaxPixels,
	}
	m.info.FlopsPerToken = m.lm.flops()
	m.imagePad = findToken(m.lmFile, "<|image_pad|>")
	if mmprojPath == "" {
		return m, nil
	}
	if m.mmFile, err = gguf.Open(mmprojPath); err != nil {
		m.Close()
		return nil, fmt.Errorf("qwenvl: %w", err)
	}
	if m.vis, err = loadVision(m.mmFile); err != nil {
		m.Close()
		return nil, fmt.Errorf("qwenvl: %s: %w", mmprojPath, err)
	}
	if out, hidden := m.vis.outDim, m.lm.hidden; out != hidden {
		m.Close()
		return nil, fmt.Errorf("qwenvl: mmproj %s projects to %d values but the LM hidden width is %d: not a matching pair", mmprojPath, out, hidden)
	}
	v := m.vis
	m.info.Projector = v.projector
	m.info.VisionWidth = v.width
	m.info.VisionLayers = len(v.blocks)
	m.info.PatchValues = v.patchVals
	m.info.FlopsPerPatchStage = v.flops() / int64(len(v.blocks)+2)
	m.info.PatchSize = v.patchSize
	m.info.MergeSize = v.mergeSize
	m.info.ImageMean, m.info.ImageStd = v.mean, v.std
	if v.minPixels > 0 {
		m.info.MinPixels = v.minPixels
	}
	if v.maxPixels > 0 {
		m.info.MaxPixels = v.maxPixels
	}
	m.info.HasVision = true
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
func (m *Model) Info() Info { return m.info }

// checkArch fails unless the file's general.architecture is want.
func checkArch(f *gguf.File, want, kind string) error {
	arch, err := f.String("general.architecture")
	if err != nil {
		return err
	}
	if arch != want {
		return fmt.Errorf("general.architecture is %q, not %q: not a Qwen-VL %s file", arch, want, kind)
	}
	return nil
}

// findToken returns the id of a token in the LM's vocabulary, or -1.
func findToken(f *gguf.File, tok string) int32 {
	toks, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return -1
	}
	for i, s := range toks {
		if s == tok {
			return int32(i)
		}
	}
	return -1
}

// Model implements the engine's model contract.
var _ model.Model = (*Model)(nil)

// matFlops is 2·rows·cols of each matrix (nil ones count 0).
func matFlops(ms ...*kernels.Matrix) int64 {
	var n int64
	for _, m := range ms {
		if m != nil {
			n += 2 * int64(m.Rows) * int64(m.Cols)
		}
	}
	return n
}

// flops is the weight-product work per token.
func (lm *textModel) flops() int64 {
	var n int64
	for _, l := range lm.layers {
		n += matFlops(l.q, l.k, l.v, l.o, l.mlp.gate, l.mlp.up, l.mlp.down)
	}
	return n
}

// flops is the weight-product work per patch of a whole pass.
func (vm *visionModel) flops() int64 {
	n := matFlops(vm.patch)
	for _, b := range vm.blocks {
		n += matFlops(b.q, b.k, b.v, b.out, b.mlp.gate, b.mlp.up, b.mlp.down)
	}
	u2 := int64(vm.mergeSize * vm.mergeSize)
	return n + (matFlops(vm.mm0)+matFlops(vm.mm2))/u2
}
