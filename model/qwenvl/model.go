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
	vlm.Pair[*vlm.Decoder, *visionModel]
}

// Info describes a loaded model for the layers above.
type Info = model.Info

// Load opens the LM GGUF and, when mmprojPath is not empty, its mmproj GGUF,
// and binds every weight after checking its shape against the metadata.
func Load(lmPath, mmprojPath string) (*Model, error) {
	p, err := vlm.OpenPair("qwenvl", lmPath, mmprojPath, loadLM, loadVision)
	if err != nil {
		return nil, err
	}
	m := &Model{p}
	lm := m.LM
	m.Meta = Info{
		Arch:              lm.Arch,
		Hidden:            lm.Hidden,
		Layers:            lm.Layers(),
		ContextLength:     lm.Ctx,
		Vocab:             lm.Vocab,
		PatchSize:         14,
		MergeSize:         2,
		TemporalPatchSize: temporalPatchSize,
	}
	m.Meta.FlopsPerToken = lm.Flops()
	m.Meta.Bidirectional, m.Meta.OutputNorm = !lm.Causal, lm.OutputNorm
	if mmprojPath == "" {
		return m, nil
	}
	v := m.Vision
	if out, hidden := v.outDim, lm.Hidden; out != hidden {
		return nil, m.Mismatch(fmt.Errorf("mmproj %s projects to %d values but the LM hidden width is %d: not a matching pair", mmprojPath, out, hidden))
	}
	vlm.TowerInfo{
		Projector: v.projector, Width: v.width, Layers: len(v.blocks), PatchValues: v.patchVals,
		PatchSize: v.patchSize, MergeSize: v.mergeSize, Flops: v.flops(),
		Mean: v.mean, Std: v.std, MinPixels: v.minPixels, MaxPixels: v.maxPixels,
	}.Describe(&m.Meta)
	lm.MergeSize = v.mergeSize
	if v.windowed {
		// Qwen2.5-VL scales the temporal position by seconds per frame,
		// which is 0 for still images; Qwen2-VL counts frames.
		lm.TemporalStride = 0
	}
	return m, nil
}

// loadLM binds the decoder of a Qwen2-VL language model file.
func loadLM(f *gguf.File) (*vlm.Decoder, error) {
	if err := checkArch(f, "qwen2vl", "language model"); err != nil {
		return nil, err
	}
	return vlm.LoadDecoder(f)
}

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
