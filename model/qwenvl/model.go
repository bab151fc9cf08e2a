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
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/model/internal/vlm"
)

// Still images are cut into patches of 2 identical frames (the Conv3d's
// temporal kernel); the value is not stored in the GGUF.
const temporalPatchSize = 2

// Model is a loaded Qwen-VL model pair. Its methods may be called from
// several goroutines at once: all state is read-only after Load.
type Model struct {
	lmFile, mmFile *gguf.File
	lm             *vlm.Decoder
	vis            *visionModel // nil for a text-only model
	info           Info
}

// Info describes a loaded model for the layers above.
type Info = model.Info

// Load opens the LM GGUF and, when mmprojPath is not empty, its mmproj GGUF,
// and binds every weight after checking its shape against the metadata.
func Load(lmPath, mmprojPath string) (*Model, error) {
	m := &Model{}
	var err error
	if m.lmFile, err = gguf.Open(lmPath); err != nil {
		return nil, fmt.Errorf("qwenvl: %w", err)
	}
	if err = checkArch(m.lmFile, "qwen2vl", "language model"); err == nil {
		m.lm, err = vlm.LoadDecoder(m.lmFile)
	}
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("qwenvl: %s: %w", lmPath, err)
	}
	m.info = Info{
		Arch:              m.lm.Arch,
		Hidden:            m.lm.Hidden,
		Layers:            m.lm.Layers(),
		ContextLength:     m.lm.Ctx,
		Vocab:             m.lm.Vocab,
		PatchSize:         14,
		MergeSize:         2,
		TemporalPatchSize: temporalPatchSize,
	}
	m.info.FlopsPerToken = m.lm.Flops()
	m.info.Bidirectional, m.info.OutputNorm = !m.lm.Causal, m.lm.OutputNorm
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
	if out, hidden := m.vis.outDim, m.lm.Hidden; out != hidden {
		m.Close()
		return nil, fmt.Errorf("qwenvl: mmproj %s projects to %d values but the LM hidden width is %d: not a matching pair", mmprojPath, out, hidden)
	}
	v := m.vis
	vlm.TowerInfo{
		Projector: v.projector, Width: v.width, Layers: len(v.blocks), PatchValues: v.patchVals,
		PatchSize: v.patchSize, MergeSize: v.mergeSize, Flops: v.flops(),
		Mean: v.mean, Std: v.std, MinPixels: v.minPixels, MaxPixels: v.maxPixels,
	}.Describe(&m.info)
	m.lm.MergeSize = v.mergeSize
	if v.windowed {
		// Qwen2.5-VL scales the temporal position by seconds per frame,
		// which is 0 for still images; Qwen2-VL counts frames.
		m.lm.TemporalStride = 0
	}
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

// Model implements the engine's model contract.
var _ model.Model = (*Model)(nil)

// flops is the weight-product work per patch of a whole pass.
func (vm *visionModel) flops() int64 {
	n := vlm.Flops(vm.patch)
	for _, b := range vm.blocks {
		n += vlm.Flops(b.Q, b.K, b.V, b.Out, b.MLP.Gate, b.MLP.Up, b.MLP.Down)
	}
	u2 := int64(vm.mergeSize * vm.mergeSize)
	return n + (vlm.Flops(vm.mm0)+vlm.Flops(vm.mm2))/u2
}
