package convert

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/vembed/vembed/qwenlayout"
	"github.com/vembed/vembed/recipe"
)

// The Qwen3.5 retrievers (colpali-engine's ColQwen3.5, webAI's ColVec1.1)
// convert as llama.cpp converts Qwen3.5 (a qwen35 LM, a qwen3vl_merger
// mmproj without DeepStack; qwenlayout's naming table says how values
// change on the way) plus:
//   - the backbone read under the prefixes of Qwen3_5Model
//     (language_model., visual.), of Qwen3_5ForConditionalGeneration
//     (model.language_model., model.visual.) or a vlm. wrapper; mtp.*
//     (the next-token predictor) left out, as llama.cpp leaves it; any
//     other tensor refused;
//   - no LM head, token_embd standing for it;
//   - the head as the mvproj side-car: ColVec1.1's embedding_proj_layer
//     whole; ColQwen3.5's custom_text_proj in the form config.json says
//     (dim: the Linear whole; head_dims with mrl_prefix: its first W rows,
//     W a Matryoshka width, default the widest, normalized on their own as
//     the model normalizes each prefix; head_dims alone: the Linear
//     custom_text_proj.dW);
//   - the full-attention layers bidirectional (qwen35.attention.causal =
//     false): ColQwen3.5's callers and vLLM switch them so, ColVec1.1's
//     config.json says is_causal false;
//   - the image budget in merged 32x32 tokens: ColQwen3.5's processor's
//     max_num_visual_tokens (config.json, processor_config.json or
//     preprocessor_config.json), else preprocessor_config.json's size;
//     ColVec1.1's 1792 tokens; --max-visual-tokens overrides either;
//   - the query template, which the recipe reads: the text then ten
//     <|endoftext|>, colpali-engine's query augmentation, unless
//     --query-template says otherwise (ColVec1.1 publishes none); and
//     which rows the output keeps: every token's (colpali-engine's
//     default) unless --multivector-rows image keeps a page's image
//     tokens' (its mask_non_image_embeddings; ColVec1.1 publishes
//     neither).

// qwen35Sections is llama.cpp's M-RoPE sections for a Qwen3.5 config that
// states none.
var qwen35Sections = []int{11, 11, 10}

// Image budgets of the Qwen3.5 retrievers, in merged tokens of 32x32
// pixels (patch 16, 2x2 merge).
const (
	tokenPixels        = 32 * 32
	colvecVisualTokens = 1792
	// qwen35DefaultTokens is the budget when a ColQwen3.5 checkpoint
	// states none: ColQwen3's, colpali-engine's other Qwen3 processor.
	qwen35DefaultTokens = 1280
)

// isQwen35 reports a Qwen3.5 checkpoint (model_type qwen3_5*, or the
// hybrid decoder's fields).
func (c *hfConfig) isQwen35() bool {
	mt := strings.ToLower(c.ModelType + " " + c.outerModelType)
	return strings.Contains(mt, "qwen3_5") || c.LinValueHeads > 0 || c.FullAttnInterval > 0
}

// deltaNet reads the hybrid decoder's sizes; the layer pattern must be the
// one llama.cpp stores (full attention every full_attention_interval-th
// layer).
func (c *hfConfig) deltaNet() (qwenlayout.DeltaNetConfig, error) {
	t := c.textConfig
	d := qwenlayout.DeltaNetConfig{
		Interval: cmp.Or(t.FullAttnInterval, 4), KeyHeads: t.LinKeyHeads, ValueHeads: t.LinValueHeads,
		KeyDim: t.LinKeyDim, ValueDim: t.LinValueDim, ConvKernel: t.LinConv,
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"full_attention_interval", d.Interval}, {"linear_num_key_heads", d.KeyHeads}, {"linear_num_value_heads", d.ValueHeads},
		{"linear_key_head_dim", d.KeyDim}, {"linear_value_head_dim", d.ValueDim}, {"linear_conv_kernel_dim", d.ConvKernel}} {
		if f.v <= 0 || f.v > 1<<20 {
			return d, fmt.Errorf("convert: config.json: a Qwen3.5 text_config needs %s (got %d)", f.name, f.v)
		}
	}
	partial := cmp.Or(t.PartialRotary, 0.25)
	if !(partial > 0 && partial <= 1) {
		return d, fmt.Errorf("convert: config.json: partial_rotary_factor %v: want (0, 1]", partial)
	}
	d.RopeDims = int(float64(cmp.Or(t.HeadDim, t.Hidden/t.Heads)) * partial)
	if len(t.LayerTypes) > 0 {
		if len(t.LayerTypes) != t.Layers {
			return d, fmt.Errorf("convert: config.json: %d layer_types for %d layers", len(t.LayerTypes), t.Layers)
		}
		for i, lt := range t.LayerTypes {
			want := "linear_attention"
			if d.FullAttention(i) {
				want = "full_attention"
			}
			if lt != want {
				return d, fmt.Errorf("convert: config.json: layer %d is %q, but full_attention_interval %d makes it %q; llama.cpp stores only the interval", i, lt, d.Interval, want)
			}
		}
	}
	return d, nil
}

// detectQwen35 tells which Qwen3.5 retriever a checkpoint is: by its head,
// or config.json's architectures, or --layout.
func detectQwen35(dir string, cfg *hfConfig, src *source, o Options) (string, error) {
	found := ""
	archs := strings.ToLower(strings.ReplaceAll(strings.Join(cfg.Architectures, " "), "_", ""))
	switch {
	case hasTensor(src, "embedding_proj_layer.weight") || strings.Contains(archs, "colvec"):
		found = qwenlayout.LayoutColVec
	case len(colqwen35Heads(src)) > 0 || strings.Contains(archs, "colqwen35"):
		found = qwenlayout.LayoutColQwen35
	}
	switch o.Layout {
	case "":
	case qwenlayout.LayoutColQwen35, qwenlayout.LayoutColVec:
		if found != "" && found != o.Layout {
			return "", fmt.Errorf("convert: %s is a %s checkpoint; --layout %s would convert it as another model", dir, found, o.Layout)
		}
		return o.Layout, nil
	default:
		return "", fmt.Errorf("convert: %s is a Qwen3.5 checkpoint; --layout %s is another family's (Qwen3.5 layouts: %s, %s)", dir, o.Layout, qwenlayout.LayoutColQwen35, qwenlayout.LayoutColVec)
	}
	if found == "" {
		return "", fmt.Errorf("convert: %s: a Qwen3.5 checkpoint without a retriever head (custom_text_proj or embedding_proj_layer); vembed converts the Qwen3.5 retrievers ColQwen3.5 and ColVec1.1 (a ColQwen3.5 adapter release: convert the adapter's directory, which finds this base, or give it with --adapter DIR)", dir)
	}
	return found, nil
}

func hasTensor(src *source, canon string) bool { _, ok := src.tensor(canon); return ok }

// colqwen35Heads lists the widths of ColQwen3.5's heads: custom_text_proj's
// rows (0 when it is a single Linear), or each custom_text_proj.dW's W.
func colqwen35Heads(src *source) []int {
	var out []int
	if t, ok := src.tensor("custom_text_proj.weight"); ok && len(t.Shape) == 2 {
		return []int{0}
	}
	for _, n := range src.names() {
		rest, ok := strings.CutPrefix(n, "custom_text_proj.d")
		if w, err := strconv.Atoi(strings.TrimSuffix(rest, ".weight")); ok && err == nil && strings.HasSuffix(rest, ".weight") {
			out = append(out, w)
		}
	}
	slices.Sort(out)
	return out
}

// qwen35Plan is what a Qwen3.5 retriever adds to the conversion.
type qwen35Plan struct {
	head string // the head's tensor prefix
	rows int    // its first rows the mvproj gets (0: all)
	keys []qwenlayout.KV
}

// qwen35Retriever checks a Qwen3.5 retriever checkpoint before anything is
// written and plans its head, keys and image budget (into base), the
// budget from the processor files in proc.
func qwen35Retriever(dir, proc string, src *source, cfg *hfConfig, base *qwenlayout.Config, layout string, o Options, log *slog.Logger) (qwen35Plan, error) {
	var p qwen35Plan
	var odd []string
	for _, n := range src.names() {
		switch {
		case strings.HasPrefix(n, "model."), strings.HasPrefix(n, "visual."), strings.HasPrefix(n, "lm_head."), strings.HasPrefix(n, "mtp."),
			strings.HasPrefix(n, "custom_text_proj."), strings.HasPrefix(n, "embedding_proj_layer."):
		default:
			odd = append(odd, src.real[n])
		}
	}
	if len(odd) > 0 {
		return p, fmt.Errorf("convert: %s: %d tensors under a prefix the %s layout does not have (%s); the backbone is read under language_model. / visual. (also model.language_model., model.visual., vlm.model.*)",
			dir, len(odd), layout, strings.Join(odd[:min(3, len(odd))], ", "))
	}
	base.LM.Untied = false // the LM head is unused: token_embd stands for it
	H := int64(base.LM.Hidden)
	head := func(name string) (int, error) {
		w, ok := src.tensor(name + ".weight")
		b, okb := src.tensor(name + ".bias")
		switch {
		case !ok:
			return 0, fmt.Errorf("convert: %s: a %s checkpoint without its head %s.weight", dir, layout, name)
		case len(w.Shape) != 2 || w.Shape[1] != H || w.Shape[0] <= 0:
			return 0, fmt.Errorf("convert: %s: the head %s.weight is %v, which does not fit the LM's width %d (want [rows, %d])", dir, name, w.Shape, H, H)
		case !okb || len(b.Shape) != 1 || b.Shape[0] != w.Shape[0]:
			return 0, fmt.Errorf("convert: %s: the head's %s.bias is missing or not [%d]", dir, name, w.Shape[0])
		}
		return int(w.Shape[0]), nil
	}
	want := o.HeadDim
	switch layout {
	case qwenlayout.LayoutColVec:
		p.head = "embedding_proj_layer"
		rows, err := head(p.head)
		if err != nil {
			return p, err
		}
		if d := cmp.Or(cfg.EmbedDim, cfg.Dim); d != 0 && d != rows {
			return p, fmt.Errorf("convert: %s: config.json's embedding width %d differs from the head's %d rows", dir, d, rows)
		}
		if want != 0 && want != rows {
			return p, fmt.Errorf("convert: --head-dim %d: ColVec1.1's head has one width, %d", want, rows)
		}
	case qwenlayout.LayoutColQwen35:
		dims := slices.Clone(cfg.HeadDims)
		slices.Sort(dims)
		dims = slices.Compact(dims)
		switch {
		case len(dims) > 0 && !cfg.MRLPrefix: // one Linear per width
			if len(dims) > 0 && dims[0] <= 0 {
				return p, fmt.Errorf("convert: config.json: head_dims %v: want positive widths", cfg.HeadDims)
			}
			w := cmp.Or(want, dims[len(dims)-1])
			if !slices.Contains(dims, w) {
				return p, fmt.Errorf("convert: --head-dim %d: the heads are %v (config.json's head_dims)", w, dims)
			}
			for _, d := range dims {
				rows, err := head(fmt.Sprintf("custom_text_proj.d%d", d))
				if err != nil {
					return p, err
				}
				if rows != d {
					return p, fmt.Errorf("convert: %s: the head custom_text_proj.d%d has %d rows", dir, d, rows)
				}
			}
			p.head = fmt.Sprintf("custom_text_proj.d%d", w)
		case len(dims) > 0: // Matryoshka prefixes of one Linear
			p.head = "custom_text_proj"
			rows, err := head(p.head)
			if err != nil {
				return p, err
			}
			if dims[0] <= 0 || dims[len(dims)-1] != rows {
				return p, fmt.Errorf("convert: %s: config.json's head_dims %v do not end at the head's %d rows", dir, cfg.HeadDims, rows)
			}
			w := cmp.Or(want, rows)
			if !slices.Contains(dims, w) {
				return p, fmt.Errorf("convert: --head-dim %d: the Matryoshka widths are %v (config.json's head_dims)", w, dims)
			}
			p.rows = w
		default:
			p.head = "custom_text_proj"
			rows, err := head(p.head)
			if err != nil {
				return p, err
			}
			if cfg.Dim != 0 && cfg.Dim != rows {
				return p, fmt.Errorf("convert: %s: config.json's dim %d differs from the head's %d rows", dir, cfg.Dim, rows)
			}
			if want != 0 && want != rows {
				return p, fmt.Errorf("convert: --head-dim %d: the head has one width, %d", want, rows)
			}
		}
	}

	if layout == qwenlayout.LayoutColVec && cfg.IsCausal != nil && *cfg.IsCausal {
		log.Warn("config.json says is_causal true: the full-attention layers stay causal")
	} else {
		p.keys = append(p.keys, qwenlayout.KV{Key: qwenlayout.Qwen35CausalKey, Value: false})
	}
	if o.QueryTemplate != nil {
		if err := recipe.CheckQueryTemplate(*o.QueryTemplate); err != nil {
			return p, fmt.Errorf("convert: --query-template: %w", err)
		}
		p.keys = append(p.keys, qwenlayout.KV{Key: recipe.QueryTemplateKey, Value: *o.QueryTemplate})
	}

	switch o.Rows {
	case "":
	case "all", "image":
		p.keys = append(p.keys, qwenlayout.KV{Key: recipe.RowsKey, Value: o.Rows})
	default:
		return p, fmt.Errorf("convert: --multivector-rows %q: all or image", o.Rows)
	}
	lo, hi, err := qwen35Budget(proc, cfg, layout, o.MaxVisualTokens, log)
	if err != nil {
		return p, err
	}
	base.Vision.MinPixels, base.Vision.MaxPixels = min(lo, hi), hi
	return p, nil
}

// qwen35Budget is a Qwen3.5 retriever's image budget in pixels.
func qwen35Budget(dir string, cfg *hfConfig, layout string, flagTokens int, log *slog.Logger) (lo, hi int, err error) {
	if flagTokens < 0 || flagTokens > qwenlayout.MaxImagePixels/tokenPixels {
		return 0, 0, fmt.Errorf("convert: --max-visual-tokens %d: want 1..%d", flagTokens, qwenlayout.MaxImagePixels/tokenPixels)
	}
	lo, hi, err = retrieverBudget(dir, log)
	if err != nil {
		return 0, 0, err
	}
	lo = cmp.Or(lo, retrieverMinPixels)
	tokens := flagTokens
	if tokens == 0 && layout == qwenlayout.LayoutColVec {
		tokens = colvecVisualTokens
	}
	if tokens == 0 {
		tokens = cfg.MaxVisualTokens
	}
	if tokens == 0 {
		if tokens, err = processorVisualTokens(dir); err != nil {
			return 0, 0, err
		}
	}
	switch {
	case tokens > qwenlayout.MaxImagePixels/tokenPixels || tokens < 0:
		return 0, 0, fmt.Errorf("convert: %s: max_num_visual_tokens %d: want 1..%d", dir, tokens, qwenlayout.MaxImagePixels/tokenPixels)
	case tokens > 0:
		hi = tokens * tokenPixels
	case hi == 0:
		hi = qwen35DefaultTokens * tokenPixels
		log.Warn("no image budget in the checkpoint: the mmproj gets 1280 visual tokens (1,310,720 pixels); --max-visual-tokens sets another", "layout", layout)
	}
	return min(lo, hi), hi, nil
}

// processorVisualTokens reads max_num_visual_tokens from the processor's
// files (0 when none states it).
func processorVisualTokens(dir string) (int, error) {
	for _, name := range []string{"processor_config.json", "preprocessor_config.json"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			return 0, fmt.Errorf("convert: %w", err)
		}
		n, err := parseVisualTokens(b)
		if err != nil {
			return 0, fmt.Errorf("convert: %s: %w; fix the file", filepath.Join(dir, name), err)
		}
		if n > 0 {
			return n, nil
		}
	}
	return 0, nil
}

// parseVisualTokens reads a processor file's max_num_visual_tokens (0 when
// absent).
func parseVisualTokens(b []byte) (int, error) {
	var pc struct {
		N *float64 `json:"max_num_visual_tokens"`
	}
	if err := json.Unmarshal(b, &pc); err != nil {
		return 0, err
	}
	switch {
	case pc.N == nil:
		return 0, nil
	case *pc.N != math.Trunc(*pc.N) || *pc.N < 1 || *pc.N > qwenlayout.MaxImagePixels/tokenPixels:
		return 0, fmt.Errorf("max_num_visual_tokens %v: want a whole number from 1 to %d", *pc.N, qwenlayout.MaxImagePixels/tokenPixels)
	}
	return int(*pc.N), nil
}

// merge adds an adapter's update to whole rows of a checkpoint matrix,
// from row r0, before any reordering.
func (c *converter) merge(name string, vals []float64, r0, cols int64) error {
	if c.adapter == nil || !c.adapter.touches(name) {
		return nil
	}
	return c.adapter.mergeRows(name, vals, int(r0), int(cols))
}

// transformed fills a tensor whose values change on the way (Qwen3.5's):
// whole heads of rows in the GGUF's order, or each row's columns (and a
// vector's values) permuted, then the value transform.
func (c *converter) transformed(dst io.Writer, t qwenlayout.TensorLayout, src qwenlayout.HFSource) error {
	cols := t.NE[0]
	n := t.Elements()
	rows := n / cols
	h := src.Heads
	if h != nil && int64(h.Span()) != map[bool]int64{true: cols, false: rows}[h.Columns || len(t.NE) == 1] {
		return fmt.Errorf("the head order covers %d of %v", h.Span(), t.NE)
	}
	if h != nil && !h.Columns && len(t.NE) > 1 {
		for r := int64(0); r < rows; {
			if err := c.ctx.Err(); err != nil {
				return err
			}
			s := int64(h.Source(int(r)))
			k := int64(1) // a run of rows in the checkpoint's order
			for r+k < rows && int64(h.Source(int(r+k))) == s+k && k*cols < 1<<20 {
				k++
			}
			vals, err := c.src.values(src.Name, s*cols, k*cols)
			if err != nil {
				return err
			}
			if err := c.merge(src.Name, vals, s, cols); err != nil {
				return err
			}
			src.Transform.Apply(vals)
			if err := c.emit(dst, t.Type, vals); err != nil {
				return err
			}
			r += k
		}
		return nil
	}
	per := max(1, (1<<20)/cols) * cols
	row := make([]float64, cols)
	for s := int64(0); s < n; s += per {
		if err := c.ctx.Err(); err != nil {
			return err
		}
		vals, err := c.src.values(src.Name, s, min(per, n-s))
		if err != nil {
			return err
		}
		if len(t.NE) > 1 {
			if err := c.merge(src.Name, vals, s/cols, cols); err != nil {
				return err
			}
		}
		if h != nil {
			for a := int64(0); a < int64(len(vals)); a += cols {
				copy(row, vals[a:a+cols])
				for j := range row {
					vals[a+int64(j)] = row[h.Source(j)]
				}
			}
		}
		src.Transform.Apply(vals)
		if err := c.emit(dst, t.Type, vals); err != nil {
			return err
		}
	}
	return nil
}
