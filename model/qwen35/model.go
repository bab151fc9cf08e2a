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
	"fmt"

	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/model/internal/vlm"
	"github.com/vembed/vembed/model/qwen3vl"
)

// Model is a loaded Qwen3.5 pair. Its methods may be called from several
// goroutines at once: all state is read-only after Load.
type Model struct {
	vlm.Pair[*Decoder, *qwen3vl.Tower]
}

// Model implements the engine's model contract.
var _ model.Model = (*Model)(nil)

// Load opens the LM GGUF and, when mmprojPath is not empty, its mmproj GGUF,
// and binds every weight after checking its shape against the metadata.
func Load(lmPath, mmprojPath string) (*Model, error) {
	p, err := vlm.OpenPair("qwen35", lmPath, mmprojPath, LoadDecoder, qwen3vl.LoadTower)
	if err != nil {
		return nil, err
	}
	m := &Model{p}
	lm := m.LM
	m.Meta = model.Info{
		Arch:          "qwen35",
		Hidden:        lm.Hidden,
		Layers:        lm.Layers(),
		ContextLength: lm.Ctx,
		Vocab:         lm.Vocab,
		FlopsPerToken: lm.Flops(),
		Bidirectional: !lm.Causal,
		OutputNorm:    true,
	}
	if mmprojPath == "" {
		return m, nil
	}
	switch t := m.Vision; {
	case t.OutDim() != lm.Hidden:
		err = fmt.Errorf("mmproj %s projects to %d values but the LM hidden width is %d: not a matching pair", mmprojPath, t.OutDim(), lm.Hidden)
	case t.DeepStack() != 0:
		err = fmt.Errorf("mmproj %s has %d DeepStack taps; Qwen3.5 adds none: not a matching pair", mmprojPath, t.DeepStack())
	}
	if err != nil {
		return nil, m.Mismatch(err)
	}
	lm.MergeSize = m.Vision.MergeSize()
	m.Vision.Describe(&m.Meta)
	return m, nil
}
