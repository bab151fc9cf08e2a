package convert

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/safetensors"
)

// TextConfig is the language model's part of a Hugging Face config.json
// (top level for Qwen2-VL / Qwen2.5-VL, "text_config" in newer exports).
type TextConfig struct {
	ModelType         string  `json:"model_type"`
	Layers            int     `json:"num_hidden_layers"`
	Context           int     `json:"max_position_embeddings"`
	Hidden            int     `json:"hidden_size"`
	FFN               int     `json:"intermediate_size"`
	Heads             int     `json:"num_attention_heads"`
	KVHeads           int     `json:"num_key_value_heads"`
	HeadDim           int     `json:"head_dim"`
	RopeTheta         float64 `json:"rope_theta"`
	RMSNormEps        float64 `json:"rms_norm_eps"`
	Vocab             int     `json:"vocab_size"`
	TieWordEmbeddings *bool   `json:"tie_word_embeddings"`
	BOS               *int    `json:"bos_token_id"`
	EOS               any     `json:"eos_token_id"` // a number or a list
	RopeScaling       struct {
		MRopeSection []int `json:"mrope_section"`
	} `json:"rope_scaling"`
}

// ReadTextConfig reads dir/config.json.
func ReadTextConfig(dir string) (*TextConfig, error) {
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	var top struct {
		TextConfig
		Text *TextConfig `json:"text_config"`
	}
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("convert: %s/config.json: %w", dir, err)
	}
	c := &top.TextConfig
	if top.Text != nil && top.Text.Hidden > 0 {
		c = top.Text
		if c.ModelType == "" {
			c.ModelType = top.ModelType
		}
	}
	switch {
	case c.Layers <= 0 || c.Hidden <= 0 || c.Heads <= 0 || c.FFN <= 0 || c.Vocab <= 0:
		return nil, fmt.Errorf("convert: %s/config.json: missing sizes (layers %d, hidden %d, heads %d, ffn %d, vocab %d)", dir, c.Layers, c.Hidden, c.Heads, c.FFN, c.Vocab)
	case c.Hidden%c.Heads != 0:
		return nil, fmt.Errorf("convert: %s/config.json: hidden %d is not a multiple of %d heads", dir, c.Hidden, c.Heads)
	}
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads
	}
	if c.RMSNormEps == 0 {
		c.RMSNormEps = 1e-6
	}
	if c.RopeTheta == 0 {
		c.RopeTheta = 1e6
	}
	return c, nil
}

// lmNames maps Hugging Face Qwen2-VL / Qwen2.5-VL language-model tensor
// names (with "model." or "model.language_model." prefixes) to llama.cpp's.
var lmNames = []struct {
	re   *regexp.Regexp
	gguf string
}{
	{regexp.MustCompile(`^model\.(?:language_model\.)?embed_tokens\.weight$`), "token_embd.weight"},
	{regexp.MustCompile(`^model\.(?:language_model\.)?norm\.weight$`), "output_norm.weight"},
	{regexp.MustCompile(`^lm_head\.weight$`), "output.weight"},
	{regexp.MustCompile(`^model\.(?:language_model\.)?layers\.(\d+)\.input_layernorm\.weight$`), "blk.$1.attn_norm.weight"},
	{regexp.MustCompile(`^model\.(?:language_model\.)?layers\.(\d+)\.post_attention_layernorm\.weight$`), "blk.$1.ffn_norm.weight"},
	{regexp.MustCompile(`^model\.(?:language_model\.)?layers\.(\d+)\.self_attn\.q_proj\.(weight|bias)$`), "blk.$1.attn_q.$2"},
	{regexp.MustCompile(`^model\.(?:language_model\.)?layers\.(\d+)\.self_attn\.k_proj\.(weight|bias)$`), "blk.$1.attn_k.$2"},
	{regexp.MustCompile(`^model\.(?:language_model\.)?layers\.(\d+)\.self_attn\.v_proj\.(weight|bias)$`), "blk.$1.attn_v.$2"},
	{regexp.MustCompile(`^model\.(?:language_model\.)?layers\.(\d+)\.self_attn\.o_proj\.weight$`), "blk.$1.attn_output.weight"},
	{regexp.MustCompile(`^model\.(?:language_model\.)?layers\.(\d+)\.mlp\.gate_proj\.weight$`), "blk.$1.ffn_gate.weight"},
	{regexp.MustCompile(`^model\.(?:language_model\.)?layers\.(\d+)\.mlp\.up_proj\.weight$`), "blk.$1.ffn_up.weight"},
	{regexp.MustCompile(`^model\.(?:language_model\.)?layers\.(\d+)\.mlp\.down_proj\.weight$`), "blk.$1.ffn_down.weight"},
}

// LMName returns the GGUF name of a language-model tensor, or "" for a
// tensor that is not one (vision, projector).
func LMName(hf string) string {
	for _, m := range lmNames {
		if m.re.MatchString(hf) {
			return m.re.ReplaceAllString(hf, m.gguf)
		}
	}
	return ""
}

// LMOptions control ConvertLM.
type LMOptions struct {
	// Type is the type of the weight matrices: F32, F16 or BF16 (norms
	// and biases stay F32, as llama.cpp's converter writes them).
	Type gguf.Type
	// Adapter, when set, is merged into the weights first.
	Adapter *Adapter
	// Name is general.name (default: the directory's name).
	Name string
	// Extra metadata written after the model's (vembed.recipe, the
	// pooling type).
	Extra map[string]any
}

// ConvertLM writes the language-model GGUF of the Qwen2-VL / Qwen2.5-VL
// checkpoint in dir to out: llama.cpp's keys and tensor names, the
// tokenizer from tokenizer.json, tensors streamed one at a time (each
// merged with the adapter in float64 and rounded once).
func ConvertLM(dir, out string, o LMOptions) error {
	cfg, err := ReadTextConfig(dir)
	if err != nil {
		return err
	}
	switch o.Type {
	case gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16:
	default:
		return fmt.Errorf("convert: LM type %s: write F32, F16 or BF16 and quantize the result (vembed quantize)", o.Type)
	}
	ck, err := safetensors.OpenCheckpoint(dir)
	if err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	defer ck.Close()
	tok, err := ReadTokenizer(dir, cfg)
	if err != nil {
		return err
	}
	w := gguf.NewWriter()
	const arch = "qwen2vl"
	name := o.Name
	if name == "" {
		name = filepath.Base(filepath.Clean(dir))
	}
	headDim := cfg.Hidden / cfg.Heads
	sections := append([]int(nil), cfg.RopeScaling.MRopeSection...)
	if len(sections) == 0 {
		q := headDim / 2
		sections = []int{q / 4, q * 3 / 8, q * 3 / 8}
	}
	for len(sections) < 4 {
		sections = append(sections, 0)
	}
	secs := make([]int32, 4)
	for i := range secs {
		secs[i] = int32(sections[i])
	}
	w.Add("general.architecture", arch)
	w.Add("general.type", "model")
	w.Add("general.name", name)
	w.Add(arch+".block_count", uint32(cfg.Layers))
	w.Add(arch+".context_length", uint32(cfg.Context))
	w.Add(arch+".embedding_length", uint32(cfg.Hidden))
	w.Add(arch+".feed_forward_length", uint32(cfg.FFN))
	w.Add(arch+".attention.head_count", uint32(cfg.Heads))
	w.Add(arch+".attention.head_count_kv", uint32(cfg.KVHeads))
	w.Add(arch+".rope.freq_base", float32(cfg.RopeTheta))
	w.Add(arch+".attention.layer_norm_rms_epsilon", float32(cfg.RMSNormEps))
	w.Add(arch+".rope.dimension_sections", secs)
	if cfg.HeadDim > 0 && cfg.HeadDim != headDim {
		w.Add(arch+".attention.key_length", uint32(cfg.HeadDim))
		w.Add(arch+".attention.value_length", uint32(cfg.HeadDim))
	}
	w.Add("general.file_type", uint32(fileType(o.Type)))
	tok.add(w)
	keys := make([]string, 0, len(o.Extra))
	for k := range o.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w.Add(k, o.Extra[k])
	}

	// Tensors in llama.cpp's order: embeddings, then block by block, then
	// the final norm (and an untied head).
	type entry struct{ hf, gguf string }
	var entries []entry
	seen := map[string]bool{}
	for _, hf := range ck.Names() {
		if g := LMName(hf); g != "" {
			if seen[g] {
				return fmt.Errorf("convert: two checkpoint tensors map to %s", g)
			}
			seen[g] = true
			entries = append(entries, entry{hf, g})
		}
	}
	if !seen["token_embd.weight"] || !seen["output_norm.weight"] {
		return fmt.Errorf("convert: %s holds no Qwen2-VL language model (no embed_tokens or final norm)", dir)
	}
	sort.SliceStable(entries, func(i, j int) bool { return lmOrder(entries[i].gguf) < lmOrder(entries[j].gguf) })
	for _, e := range entries {
		t, f, _ := ck.Tensor(e.hf)
		if e.gguf == "output.weight" && (cfg.TieWordEmbeddings == nil || *cfg.TieWordEmbeddings) {
			continue // tied: llama.cpp reuses token_embd
		}
		typ := o.Type
		if len(t.Shape) < 2 || strings.HasSuffix(e.gguf, "_norm.weight") {
			typ = gguf.TypeF32
		}
		ne := make([]int64, len(t.Shape))
		for i, d := range t.Shape {
			ne[len(t.Shape)-1-i] = d
		}
		hf := e.hf
		rows, cols := 1, int(t.Elements())
		if len(t.Shape) == 2 {
			rows, cols = int(t.Shape[0]), int(t.Shape[1])
		}
		fill := func(dst io.Writer) error {
			if o.Adapter != nil && len(t.Shape) == 2 && o.Adapter.Touches(hf, rows) {
				vals, err := f.Float64(hf)
				if err != nil {
					return err
				}
				if vals, err = o.Adapter.Merge(hf, vals, rows, cols); err != nil {
					return err
				}
				return writeAs(dst, typ, vals)
			}
			// Untouched by an adapter: a block of rows at a time, so that
			// the embedding table (622 MB in bf16, 2.5 GB widened) never
			// sits in memory whole.
			per := int64(max(1, (1<<20)/max(cols, 1))) * int64(cols)
			for s := int64(0); s < t.Elements(); s += per {
				vals, err := f.Float64Range(hf, s, min(per, t.Elements()-s))
				if err != nil {
					return err
				}
				if err := writeAs(dst, typ, vals); err != nil {
					return err
				}
			}
			return nil
		}
		if err := w.AddTensorFunc(e.gguf, typ, ne, fill); err != nil {
			return fmt.Errorf("convert: %s: %w", e.gguf, err)
		}
	}
	if err := w.WriteFile(out); err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	return nil
}

// lmOrder sorts tensor names as llama.cpp writes them.
func lmOrder(name string) string {
	switch {
	case name == "token_embd.weight":
		return "0"
	case strings.HasPrefix(name, "blk."):
		var n int
		var rest string
		fmt.Sscanf(name, "blk.%d.%s", &n, &rest)
		return fmt.Sprintf("1%06d%s", n, rest)
	}
	return "2" + name
}

func fileType(t gguf.Type) int {
	switch t {
	case gguf.TypeF16:
		return 1
	case gguf.TypeBF16:
		return 32
	}
	return 0
}

// writeAs writes float64 values rounded once to t (F32, F16 or BF16).
func writeAs(dst io.Writer, t gguf.Type, vals []float64) error {
	const chunk = 1 << 16
	for i := 0; i < len(vals); i += chunk {
		part := vals[i:min(i+chunk, len(vals))]
		f32 := make([]float32, len(part))
		for j, v := range part {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("convert: a weight is not finite (%v)", v)
			}
			f32[j] = float32(v)
		}
		var b []byte
		switch t {
		case gguf.TypeF32:
			b = make([]byte, 0, 4*len(f32))
			for _, v := range f32 {
				u := math.Float32bits(v)
				b = append(b, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
			}
		default:
			var err error
			if b, err = gguf.Quantize(t, f32); err != nil {
				return err
			}
		}
		if _, err := dst.Write(b); err != nil {
			return err
		}
	}
	return nil
}
