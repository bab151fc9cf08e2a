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
	"fmt"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/model/internal/vlm"
)

// Model is a loaded Qwen3-VL pair. Its methods may be called from several
// goroutines at once: all state is read-only after Load.
type Model struct {
	vlm.Pair[*vlm.Decoder, *visionModel]
}

// Model implements the engine's model contract.
var _ model.Model = (*Model)(nil)

// Load opens the LM GGUF and, when mmprojPath is not empty, its mmproj GGUF,
// and binds every weight after checking its shape against the metadata.
func Load(lmPath, mmprojPath string) (*Model, error) {
	p, err := vlm.OpenPair("qwen3vl", lmPath, mmprojPath, loadLM, loadVision)
	if err != nil {
		return nil, err
	}
	m := &Model{p}
	lm := m.LM
	// Still images have one frame pair: Qwen3-VL gives every frame
	// temporal position 0 (time is written as text between frames).
	lm.TemporalStride = 0
	m.Meta = model.Info{
		Arch:              lm.Arch,
		Hidden:            lm.Hidden,
		Layers:            lm.Layers(),
		ContextLength:     lm.Ctx,
		Vocab:             lm.Vocab,
		PatchSize:         16,
		MergeSize:         2,
		TemporalPatchSize: temporalPatchSize,
		ImageMean:         [3]float32{0.5, 0.5, 0.5},
		ImageStd:          [3]float32{0.5, 0.5, 0.5},
		FlopsPerToken:     lm.Flops(),
		Bidirectional:     !lm.Causal,
		OutputNorm:        lm.OutputNorm,
	}
	if mmprojPath == "" {
		return m, nil
	}
	v := m.Vision
	switch {
	case v.outDim != lm.Hidden:
		err = fmt.Errorf("mmproj %s projects to %d values but the LM hidden width is %d: not a matching pair", mmprojPath, v.outDim, lm.Hidden)
	case len(v.deep) != lm.DeepStack:
		err = fmt.Errorf("mmproj %s has %d DeepStack taps but the LM adds %d (n_deepstack_layers): not a matching pair", mmprojPath, len(v.deep), lm.DeepStack)
	}
	if err != nil {
		return nil, m.Mismatch(err)
	}
	lm.MergeSize = v.mergeSize
	(&Tower{vm: v}).Describe(&m.Meta)
	return m, nil
}

// loadLM binds the decoder of a Qwen3-VL language model file.
func loadLM(f *gguf.File) (*vlm.Decoder, error) {
	if arch, _ := f.String("general.architecture"); arch != "qwen3vl" {
		return nil, fmt.Errorf("general.architecture is %q, not a Qwen3-VL language model (qwen3vl)", arch)
	}
	return vlm.LoadDecoder(f)
}
