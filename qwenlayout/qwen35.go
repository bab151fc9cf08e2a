package qwenlayout

import (
	"errors"
	"fmt"
	"math"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/quantize"
)

// Qwen3.5 as llama.cpp's converter writes it (Qwen3_5TextModel in
// convert_hf_to_gguf.py, architecture qwen35): a hybrid decoder whose
// layers are Gated DeltaNet (linear attention with a recurrent state)
// except every DeltaNet.Interval-th, a gated full-attention layer; and a
// Qwen3-VL tower without DeepStack taps (a qwen3vl_merger mmproj).
//
// The converter changes values on the way, which the naming table says per
// tensor (HFSource.Transform, HFSource.Heads):
//   - the (1+w) RMSNorm weights (input_layernorm, post_attention_layernorm,
//     q_norm, k_norm, the final norm) are stored with their 1 added; the
//     DeltaNet's gated norm (linear_attn.norm) is a plain weight, kept;
//   - A_log is stored as ssm_a = -exp(A_log);
//   - the checkpoint groups value heads by key head (value head h reads key
//     head h / (Vh/Kh)); the GGUF tiles them (value head h reads key head h
//     mod Kh), so the value rows of in_proj_qkv, the rows of in_proj_z,
//     in_proj_b, in_proj_a, the value channels of conv1d, dt_bias, A_log
//     and the input columns of out_proj are permuted head by head;
//   - conv1d's [C, 1, K] kernel loses its middle dimension.

// DeltaNetConfig holds what a Qwen3.5 decoder adds to the LM; a zero
// Interval means none (a qwen2vl or qwen3vl LM).
type DeltaNetConfig struct {
	// Interval is qwen35.full_attention_interval: layer i is gated full
	// attention when (i+1) % Interval == 0, a DeltaNet layer otherwise.
	Interval int
	// KeyHeads and ValueHeads are linear_num_key_heads (ssm.group_count)
	// and linear_num_value_heads (ssm.time_step_rank); KeyDim and
	// ValueDim their widths (ssm.state_size, ssm.inner_size / ValueHeads).
	KeyHeads, ValueHeads, KeyDim, ValueDim int
	// ConvKernel is the causal depthwise convolution's width.
	ConvKernel int
	// RopeDims is rope.dimension_count: the first RopeDims dimensions of
	// each attention head rotate (head_dim · partial_rotary_factor).
	RopeDims int
}

// Qwen35CausalKey is llama.cpp's key of the full-attention layers' mask in
// a qwen35 LM (absent: causal). The retrievers run bidirectional.
const Qwen35CausalKey = "qwen35.attention.causal"

// IsQwen35 reports a Qwen3.5 LM.
func (lm *LMConfig) IsQwen35() bool { return lm.DeltaNet.Interval > 0 }

// FullAttention reports whether layer i of a Qwen3.5 LM is gated full
// attention.
func (d DeltaNetConfig) FullAttention(i int) bool { return (i+1)%d.Interval == 0 }

// qkvWidth is the width of the DeltaNet's fused projection (and of its
// convolution's channels): q and k per key head, v per value head.
func (d DeltaNetConfig) qkvWidth() int64 {
	return int64(2*d.KeyHeads*d.KeyDim + d.ValueHeads*d.ValueDim)
}

// validateQwen35 checks what only a Qwen3.5 LM needs.
func (c *Config) validateQwen35() error {
	lm, d := c.LM, c.LM.DeltaNet
	for _, chk := range []struct {
		what string
		v    int
	}{
		{"LM.DeltaNet.Interval", d.Interval}, {"LM.DeltaNet.KeyHeads", d.KeyHeads}, {"LM.DeltaNet.ValueHeads", d.ValueHeads},
		{"LM.DeltaNet.KeyDim", d.KeyDim}, {"LM.DeltaNet.ValueDim", d.ValueDim}, {"LM.DeltaNet.ConvKernel", d.ConvKernel},
		{"LM.DeltaNet.RopeDims", d.RopeDims},
	} {
		if chk.v <= 0 || chk.v > maxDim {
			return fmt.Errorf("qwenlayout: %s = %d out of range [1, %d]", chk.what, chk.v, maxDim)
		}
	}
	switch {
	case c.Projector != ProjectorQwen3VL:
		return fmt.Errorf("qwenlayout: a Qwen3.5 LM goes with a %s tower, not %s", ProjectorQwen3VL, c.Projector)
	case len(c.Vision.DeepStack) > 0:
		return errors.New("qwenlayout: a Qwen3.5 tower has no DeepStack taps")
	case d.ValueHeads%d.KeyHeads != 0:
		return fmt.Errorf("qwenlayout: %d DeltaNet value heads are not a multiple of its %d key heads", d.ValueHeads, d.KeyHeads)
	case d.RopeDims%2 != 0 || d.RopeDims > lm.HeadWidth():
		return fmt.Errorf("qwenlayout: rope.dimension_count %d: want an even count up to the head width %d", d.RopeDims, lm.HeadWidth())
	case d.ConvKernel > 64:
		return fmt.Errorf("qwenlayout: DeltaNet convolution of width %d (the releases have 4)", d.ConvKernel)
	case lm.Pooling != "":
		return fmt.Errorf("qwenlayout: LM.Pooling %q: a Qwen3.5 LM gets no pooling type", lm.Pooling)
	}
	return nil
}

// qwen35LMLayout plans a qwen35 LM file, tensors in the order of the
// shared fixtures' file (which llama.cpp loads by name).
func (c *Config) qwen35LMLayout(spec quantize.Spec, tok []KV) *Layout {
	lm, d := c.LM, c.LM.DeltaNet
	H, F, hd := int64(lm.Hidden), int64(lm.FFN), int64(lm.HeadWidth())
	qDim, kvDim := hd*int64(lm.Heads), hd*int64(lm.KVHeads)
	vDim, nv := int64(d.ValueHeads*d.ValueDim), int64(d.ValueHeads)
	f := &Layout{}
	mat := func(name string, r quantize.Role, layer int, ne0, ne1 int64) {
		f.add(name, spec.Pick(r, ne0, layer, lm.Layers), false, ne0, ne1)
	}
	vec := func(name string, norm bool, n int64) { f.add(name, gguf.TypeF32, norm, n) }

	embRole := quantize.RoleOutput
	if lm.Untied {
		embRole = quantize.RoleOther
	}
	mat("token_embd.weight", embRole, 0, H, int64(lm.Vocab))
	vec("output_norm.weight", true, H)
	if lm.Untied {
		mat("output.weight", quantize.RoleOutput, 0, H, int64(lm.Vocab))
	}
	for i := range lm.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		vec(p+"attn_norm.weight", true, H)
		vec(p+"post_attention_norm.weight", true, H)
		if d.FullAttention(i) {
			// q_proj holds each head's query then its output gate.
			mat(p+"attn_q.weight", quantize.RoleOther, i, H, 2*qDim)
			mat(p+"attn_k.weight", quantize.RoleOther, i, H, kvDim)
			mat(p+"attn_v.weight", quantize.RoleAttnV, i, H, kvDim)
			mat(p+"attn_output.weight", quantize.RoleAttnOutput, i, qDim, H)
			vec(p+"attn_q_norm.weight", true, hd)
			vec(p+"attn_k_norm.weight", true, hd)
		} else {
			mat(p+"attn_qkv.weight", quantize.RoleOther, i, H, d.qkvWidth())
			mat(p+"attn_gate.weight", quantize.RoleOther, i, H, vDim)
			mat(p+"ssm_beta.weight", quantize.RoleOther, i, H, nv)
			mat(p+"ssm_alpha.weight", quantize.RoleOther, i, H, nv)
			// The converter and llama-quantize keep the convolution in F32.
			f.add(p+"ssm_conv1d.weight", gguf.TypeF32, false, int64(d.ConvKernel), d.qkvWidth())
			vec(p+"ssm_dt.bias", false, nv)
			vec(p+"ssm_a", false, nv)
			vec(p+"ssm_norm.weight", true, int64(d.ValueDim))
			mat(p+"ssm_out.weight", quantize.RoleAttnOutput, i, vDim, H)
		}
		mat(p+"ffn_gate.weight", quantize.RoleOther, i, H, F)
		mat(p+"ffn_up.weight", quantize.RoleOther, i, H, F)
		mat(p+"ffn_down.weight", quantize.RoleFFNDown, i, F, H)
	}

	const a = "qwen35."
	f.KVs = append(c.lmSizeKVs("qwen35", f.Tensors),
		KV{a + "attention.key_length", uint32(hd)},
		KV{a + "attention.value_length", uint32(hd)},
		KV{a + "attention.layer_norm_rms_epsilon", lm.RMSEps},
		KV{a + "rope.freq_base", lm.RopeTheta},
		KV{a + "rope.dimension_count", uint32(d.RopeDims)},
		KV{a + "rope.dimension_sections", lm.MRoPE[:]},
		KV{a + "ssm.conv_kernel", uint32(d.ConvKernel)},
		KV{a + "ssm.state_size", uint32(d.KeyDim)},
		KV{a + "ssm.group_count", uint32(d.KeyHeads)},
		KV{a + "ssm.time_step_rank", uint32(d.ValueHeads)},
		KV{a + "ssm.inner_size", uint32(vDim)},
		KV{a + "full_attention_interval", uint32(d.Interval)},
		KV{"general.file_type", spec.FileType()},
		KV{"general.quantization_version", uint32(quantizationVersion)},
	)
	f.KVs = append(f.KVs, tok...)
	f.KVs = append(f.KVs, lm.Extra...)
	if spec.Mix != "" || spec.Base.BlockSize() > 1 {
		quantizeLayout(f)
	}
	return f
}

// Transform is a change of values between a checkpoint tensor and its
// GGUF tensor.
type Transform int

const (
	// TransformNone copies values.
	TransformNone Transform = iota
	// TransformPlusOne adds 1: Qwen3.5's (1+w) RMSNorm weights.
	TransformPlusOne
	// TransformNegExp stores -exp(v): Qwen3.5's A_log as ssm_a.
	TransformNegExp
)

// Apply transforms values in place.
func (t Transform) Apply(vals []float64) {
	switch t {
	case TransformPlusOne:
		for i := range vals {
			vals[i]++
		}
	case TransformNegExp:
		for i, v := range vals {
			vals[i] = -math.Exp(v)
		}
	}
}

// HeadOrder is the value-head permutation of a Qwen3.5 DeltaNet tensor:
// the checkpoint's value heads grouped by key head ([K0: v0 .. v(r-1), K1:
// ...]) become the GGUF's tiled order ([v0 of K0, v0 of K1, ..., v1 of K0,
// ...]), Width rows (or columns) a head, after Skip rows (columns) kept in
// place (the q and k of the fused projection).
type HeadOrder struct {
	Skip             int
	KeyHeads, PerKey int
	Width            int
	Columns          bool // permute columns (out_proj's input) instead of rows
}

// Source returns the checkpoint index (row or column) of GGUF index i.
func (h HeadOrder) Source(i int) int {
	if i < h.Skip {
		return i
	}
	j := i - h.Skip
	head, within := j/h.Width, j%h.Width
	// GGUF head = v·KeyHeads + k holds the checkpoint's head k·PerKey + v.
	v, k := head/h.KeyHeads, head%h.KeyHeads
	return h.Skip + (k*h.PerKey+v)*h.Width + within
}

// Span is the count of indexes the order covers (Skip plus every head).
func (h HeadOrder) Span() int { return h.Skip + h.KeyHeads*h.PerKey*h.Width }
