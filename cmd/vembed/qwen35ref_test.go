package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/internal/fixtures"
	"github.com/vembed/vembed/internal/ref64"
)

// q35Ref is a float64 forward pass of Qwen3.5's text decoder written from
// transformers' modeling_qwen3_5 and the Hugging Face weights, sharing
// nothing with package model: the rows the converted retrievers must
// reproduce. Per layer x += mixer(rms(x)·(1+w)), x += SwiGLU(rms(x)·(1+w));
// the mixer is a Gated DeltaNet layer, or every interval-th layer gated
// full attention; the output is rms(x)·(1+w).
type q35Ref struct {
	c q35Config
	w func(name string) []float64 // an LM weight by its name under the decoder ("layers.0.mlp.up_proj.weight")
}

// q35Config is config.json's text_config as the reference reads it.
type q35Config struct {
	Hidden     int     `json:"hidden_size"`
	Layers     int     `json:"num_hidden_layers"`
	Heads      int     `json:"num_attention_heads"`
	KVHeads    int     `json:"num_key_value_heads"`
	HeadDim    int     `json:"head_dim"`
	FFN        int     `json:"intermediate_size"`
	Interval   int     `json:"full_attention_interval"`
	KeyHeads   int     `json:"linear_num_key_heads"`
	ValueHeads int     `json:"linear_num_value_heads"`
	KeyDim     int     `json:"linear_key_head_dim"`
	ValueDim   int     `json:"linear_value_head_dim"`
	Conv       int     `json:"linear_conv_kernel_dim"`
	Eps        float64 `json:"rms_norm_eps"`
	Theta      float64 `json:"rope_theta"`
	Partial    float64 `json:"partial_rotary_factor"`
	Rope       struct {
		Theta   float64 `json:"rope_theta"`
		Partial float64 `json:"partial_rotary_factor"`
	} `json:"rope_parameters"`
}

// readQ35Config reads a Qwen3.5 config.json's text_config.
func readQ35Config(t *testing.T, path string) q35Config {
	t.Helper()
	var cfg struct {
		Text q35Config `json:"text_config"`
	}
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &cfg)
	}
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Text
	if c.Theta == 0 {
		c.Theta = c.Rope.Theta
	}
	if c.Partial == 0 {
		c.Partial = c.Rope.Partial
	}
	return c
}

func (r *q35Ref) get(name string, n int) []float64 {
	v := r.w(name)
	if len(v) != n {
		panic(fmt.Sprintf("reference: %s has %d values, want %d", name, len(v), n))
	}
	return v
}

// linear is y = W·x for W of out rows.
func linear(w, x []float64, out int) []float64 {
	in := len(x)
	y := make([]float64, out)
	for o := range out {
		var s float64
		for i, xi := range x {
			s += w[o*in+i] * xi
		}
		y[o] = s
	}
	return y
}

// onePlus is a (1+w) norm's effective weight.
func onePlus(w []float64) []float64 {
	out := make([]float64, len(w))
	for i, v := range w {
		out[i] = v + 1
	}
	return out
}

func sigmoid(v float64) float64 { return 1 / (1 + math.Exp(-v)) }

// forward returns the final-norm hidden state of every token of ids.
func (r *q35Ref) forward(ids []int, causal bool) [][]float64 {
	c := r.c
	H, n := c.Hidden, len(ids)
	emb := r.w("embed_tokens.weight")
	x := make([][]float64, n)
	for t, id := range ids {
		x[t] = append([]float64(nil), emb[id*H:(id+1)*H]...)
	}
	for l := range c.Layers {
		p := fmt.Sprintf("layers.%d.", l)
		h := make([][]float64, n)
		for t := range x {
			h[t] = ref64.RMSNorm(x[t], onePlus(r.get(p+"input_layernorm.weight", H)), c.Eps)
		}
		var out [][]float64
		if (l+1)%c.Interval == 0 {
			out = r.attention(p+"self_attn.", h, causal)
		} else {
			out = r.deltaNet(p+"linear_attn.", h)
		}
		for t := range x {
			for i := range x[t] {
				x[t][i] += out[t][i]
			}
			g := ref64.RMSNorm(x[t], onePlus(r.get(p+"post_attention_layernorm.weight", H)), c.Eps)
			gate := linear(r.get(p+"mlp.gate_proj.weight", c.FFN*H), g, c.FFN)
			up := linear(r.get(p+"mlp.up_proj.weight", c.FFN*H), g, c.FFN)
			for i := range gate {
				gate[i] = ref64.SiLU(gate[i]) * up[i]
			}
			down := linear(r.get(p+"mlp.down_proj.weight", H*c.FFN), gate, H)
			for i := range x[t] {
				x[t][i] += down[i]
			}
		}
	}
	for t := range x {
		x[t] = ref64.RMSNorm(x[t], onePlus(r.get("norm.weight", H)), c.Eps)
	}
	return x
}

// deltaNet is a Gated DeltaNet layer: the fused projection through a
// causal depthwise convolution and SiLU, L2-normalized q (scaled by
// 1/√dk) and k, and per value head (reading key head h / (Vh/Kh)) the
// delta rule S = e^g·S; S += k·(β(v − Sᵀk))ᵀ; o = Sᵀq, then o's gated
// RMSNorm (a plain weight) times ref64.SiLU(z), and out_proj.
func (r *q35Ref) deltaNet(p string, h [][]float64) [][]float64 {
	c := r.c
	H, n := c.Hidden, len(h)
	nk, nv, dk, dv, K := c.KeyHeads, c.ValueHeads, c.KeyDim, c.ValueDim, c.Conv
	C := 2*nk*dk + nv*dv
	wqkv, wz := r.get(p+"in_proj_qkv.weight", C*H), r.get(p+"in_proj_z.weight", nv*dv*H)
	wb, wa := r.get(p+"in_proj_b.weight", nv*H), r.get(p+"in_proj_a.weight", nv*H)
	wc := r.get(p+"conv1d.weight", C*K)
	alog, dt := r.get(p+"A_log", nv), r.get(p+"dt_bias", nv)
	wn, wo := r.get(p+"norm.weight", dv), r.get(p+"out_proj.weight", H*nv*dv)
	qkv := make([][]float64, n)
	for t := range h {
		qkv[t] = linear(wqkv, h[t], C)
	}
	mixed := make([][]float64, n)
	for t := range n {
		mixed[t] = make([]float64, C)
		for ch := range C {
			var s float64
			for j := range K {
				if src := t - (K - 1) + j; src >= 0 {
					s += wc[ch*K+j] * qkv[src][ch]
				}
			}
			mixed[t][ch] = ref64.SiLU(s)
		}
	}
	l2 := func(v []float64, scale float64) {
		var ss float64
		for _, x := range v {
			ss += x * x
		}
		s := scale / math.Sqrt(ss+1e-6)
		for i := range v {
			v[i] *= s
		}
	}
	beta, g, z := make([][]float64, n), make([][]float64, n), make([][]float64, n)
	for t := range n {
		for hk := range nk {
			l2(mixed[t][hk*dk:(hk+1)*dk], 1/math.Sqrt(float64(dk)))
			l2(mixed[t][nk*dk+hk*dk:nk*dk+(hk+1)*dk], 1)
		}
		b, a := linear(wb, h[t], nv), linear(wa, h[t], nv)
		beta[t], g[t] = make([]float64, nv), make([]float64, nv)
		for hv := range nv {
			beta[t][hv] = sigmoid(b[hv])
			g[t][hv] = -math.Exp(alog[hv]) * math.Log1p(math.Exp(a[hv]+dt[hv]))
		}
		z[t] = linear(wz, h[t], nv*dv)
	}
	o := make([][]float64, n)
	for t := range o {
		o[t] = make([]float64, nv*dv)
	}
	for hv := range nv {
		hk := hv / (nv / nk)
		S := make([]float64, dk*dv)
		for t := range n {
			q := mixed[t][hk*dk : (hk+1)*dk]
			k := mixed[t][nk*dk+hk*dk : nk*dk+(hk+1)*dk]
			v := mixed[t][2*nk*dk+hv*dv : 2*nk*dk+(hv+1)*dv]
			decay := math.Exp(g[t][hv])
			for i := range S {
				S[i] *= decay
			}
			for j := range dv {
				var u float64
				for i := range dk {
					u += S[i*dv+j] * k[i]
				}
				d := beta[t][hv] * (v[j] - u)
				for i := range dk {
					S[i*dv+j] += k[i] * d
				}
			}
			for j := range dv {
				var s float64
				for i := range dk {
					s += S[i*dv+j] * q[i]
				}
				o[t][hv*dv+j] = s
			}
		}
	}
	out := make([][]float64, n)
	for t := range n {
		for hv := range nv {
			normed := ref64.RMSNorm(o[t][hv*dv:(hv+1)*dv], wn, c.Eps)
			for j := range dv {
				o[t][hv*dv+j] = normed[j] * ref64.SiLU(z[t][hv*dv+j])
			}
		}
		out[t] = linear(wo, o[t], H)
	}
	return out
}

// attention is the gated full-attention layer: q_proj gives each head's
// query and then its gate; q and k get a (1+w) RMSNorm per head, the
// first rot dimensions rotate (rotate_half pairs, text positions 0..n-1,
// where M-RoPE's three positions agree), softmax attention with GQA,
// causal or not, the output times sigmoid(gate), o_proj.
func (r *q35Ref) attention(p string, h [][]float64, causal bool) [][]float64 {
	c := r.c
	H, n, hd := c.Hidden, len(h), c.HeadDim
	nh, nkv := c.Heads, c.KVHeads
	wq, wk := r.get(p+"q_proj.weight", 2*nh*hd*H), r.get(p+"k_proj.weight", nkv*hd*H)
	wv, wo := r.get(p+"v_proj.weight", nkv*hd*H), r.get(p+"o_proj.weight", H*nh*hd)
	qn, kn := r.get(p+"q_norm.weight", hd), r.get(p+"k_norm.weight", hd)
	rot := int(float64(hd) * c.Partial)
	rope := func(v []float64, pos int) {
		half := rot / 2
		for i := range half {
			a := float64(pos) * math.Pow(c.Theta, -2*float64(i)/float64(rot))
			cs, sn := math.Cos(a), math.Sin(a)
			x1, x2 := v[i], v[i+half]
			v[i], v[i+half] = x1*cs-x2*sn, x2*cs+x1*sn
		}
	}
	q, gate, k, v := make([][]float64, n), make([][]float64, n), make([][]float64, n), make([][]float64, n)
	for t := range n {
		qg := linear(wq, h[t], 2*nh*hd)
		q[t], gate[t] = make([]float64, nh*hd), make([]float64, nh*hd)
		for i := range nh {
			copy(q[t][i*hd:], ref64.RMSNorm(qg[2*i*hd:(2*i+1)*hd], onePlus(qn), c.Eps))
			copy(gate[t][i*hd:], qg[(2*i+1)*hd:(2*i+2)*hd])
			rope(q[t][i*hd:(i+1)*hd], t)
		}
		kk := linear(wk, h[t], nkv*hd)
		k[t] = make([]float64, nkv*hd)
		for i := range nkv {
			copy(k[t][i*hd:], ref64.RMSNorm(kk[i*hd:(i+1)*hd], onePlus(kn), c.Eps))
			rope(k[t][i*hd:(i+1)*hd], t)
		}
		v[t] = linear(wv, h[t], nkv*hd)
	}
	o := ref64.Attend(q, k, v, nh, nkv, func(i, j int) bool { return !causal || j <= i })
	out := make([][]float64, n)
	for t := range n {
		for j := range o[t] {
			o[t][j] *= sigmoid(gate[t][j])
		}
		out[t] = linear(wo, o[t], H)
	}
	return out
}

// TestQwen35Reference holds the float64 reference to the shared
// fixtures' Qwen3.5 text cases (whose rows llama.cpp reproduces), causal
// and bidirectional, from the fixtures' Hugging Face weights: every
// hidden row within cosine 1 - 1e-9, so the reference the retrievers' tests
// compare with is itself right.
func TestQwen35Reference(t *testing.T) {
	dir := fixtures.Dir(t, "qwen35")
	weights := fixtures.ReadNPZ(t, filepath.Join(dir, "hf-weights.npz"))
	f, err := gguf.Open(filepath.Join(dir, "qwen35-a-lm.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	emb, err := f.Tensor("token_embd.weight").Float32s() // the npz leaves them out
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	ref := &q35Ref{c: readQ35Config(t, filepath.Join(dir, "config.json")), w: func(name string) []float64 {
		vals := emb
		if name != "embed_tokens.weight" {
			a, ok := weights["model.language_model."+name]
			if !ok {
				panic("reference: no weight " + name)
			}
			vals = a.Values
		}
		out := make([]float64, len(vals))
		for i, v := range vals {
			out[i] = float64(v)
		}
		return out
	}}
	var ix struct {
		Cases []struct {
			ID     string `json:"id"`
			Kind   string `json:"kind"`
			Causal bool   `json:"causal"`
		} `json:"cases"`
	}
	fixtures.ReadJSON(t, filepath.Join(dir, "index.json"), &ix)
	n := 0
	for _, cs := range ix.Cases {
		if cs.Kind != "text" {
			continue
		}
		n++
		var c struct {
			IDs []int `json:"ids"`
		}
		fixtures.ReadJSON(t, filepath.Join(dir, "cases", cs.ID, "case.json"), &c)
		want := fixtures.ReadF32(t, filepath.Join(dir, "cases", cs.ID), fixtures.Raw{File: "hidden.f32", Shape: []int{len(c.IDs), ref.c.Hidden}})
		got := ref.forward(c.IDs, cs.Causal)
		flat := make([]float32, 0, len(want))
		for _, row := range got {
			for _, v := range row {
				flat = append(flat, float32(v))
			}
		}
		if w := fixtures.WorstRowCosine(flat, want, ref.c.Hidden); !(w >= 1-1e-9) {
			t.Errorf("%s: worst row cosine %.12f to the fixture", cs.ID, w)
		}
	}
	if n == 0 {
		t.Fatal("no text case in the fixtures")
	}
}
