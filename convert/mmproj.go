package convert

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/safetensors"
)

// VisionConfig is the vision tower's part of a Qwen2.5-VL config.json.
type VisionConfig struct {
	Depth        int   `json:"depth"`
	Hidden       int   `json:"hidden_size"`
	FFN          int   `json:"intermediate_size"`
	Heads        int   `json:"num_heads"`
	PatchSize    int   `json:"patch_size"`
	Temporal     int   `json:"temporal_patch_size"`
	MergeSize    int   `json:"spatial_merge_size"`
	OutHidden    int   `json:"out_hidden_size"`
	FullAttnRows []int `json:"fullatt_block_indexes"`
}

// visionNames maps the tower's Hugging Face names (after the "visual." or
// "model.visual." prefix) to llama.cpp's mmproj names; qkv and the patch
// embedding are split by ConvertMMProj.
var visionNames = []struct {
	re   *regexp.Regexp
	gguf string
}{
	{regexp.MustCompile(`^blocks\.(\d+)\.norm1\.(weight|bias)$`), "v.blk.$1.ln1.$2"},
	{regexp.MustCompile(`^blocks\.(\d+)\.norm2\.(weight|bias)$`), "v.blk.$1.ln2.$2"},
	{regexp.MustCompile(`^blocks\.(\d+)\.attn\.proj\.(weight|bias)$`), "v.blk.$1.attn_out.$2"},
	{regexp.MustCompile(`^blocks\.(\d+)\.mlp\.gate_proj\.(weight|bias)$`), "v.blk.$1.ffn_gate.$2"},
	{regexp.MustCompile(`^blocks\.(\d+)\.mlp\.up_proj\.(weight|bias)$`), "v.blk.$1.ffn_up.$2"},
	{regexp.MustCompile(`^blocks\.(\d+)\.mlp\.down_proj\.(weight|bias)$`), "v.blk.$1.ffn_down.$2"},
	{regexp.MustCompile(`^merger\.ln_q\.(weight|bias)$`), "v.post_ln.$1"},
	{regexp.MustCompile(`^merger\.mlp\.0\.(weight|bias)$`), "mm.0.$1"},
	{regexp.MustCompile(`^merger\.mlp\.2\.(weight|bias)$`), "mm.2.$1"},
}

var qkvName = regexp.MustCompile(`^blocks\.(\d+)\.attn\.qkv\.(weight|bias)$`)

// ConvertMMProj writes the vision tower and merger of a Qwen2.5-VL
// checkpoint as llama.cpp's mmproj GGUF (clip.projector_type
// qwen2.5vl_merger): the fused qkv split into thirds, the Conv3D patch
// embedding split along time into v.patch_embd.weight and .weight.1, the
// image mean and std from preprocessor_config.json.
func ConvertMMProj(dir, out string, t gguf.Type) error {
	switch t {
	case gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16:
	default:
		return fmt.Errorf("convert: mmproj type %s: write F32, F16 or BF16 and quantize the result", t)
	}
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	var cfg struct {
		Vision     VisionConfig `json:"vision_config"`
		Hidden     int          `json:"hidden_size"`
		RMSNormEps float64      `json:"rms_norm_eps"`
		TextConfig *struct {
			Hidden int `json:"hidden_size"`
		} `json:"text_config"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return fmt.Errorf("convert: %s/config.json: %w", dir, err)
	}
	v := cfg.Vision
	if v.Depth <= 0 || v.Hidden <= 0 || v.Heads <= 0 || v.PatchSize <= 0 {
		return fmt.Errorf("convert: %s/config.json: no usable vision_config (depth %d, hidden %d, heads %d, patch %d)", dir, v.Depth, v.Hidden, v.Heads, v.PatchSize)
	}
	proj := v.OutHidden
	if proj == 0 {
		proj = cfg.Hidden
		if cfg.TextConfig != nil {
			proj = cfg.TextConfig.Hidden
		}
	}
	if cfg.RMSNormEps == 0 {
		cfg.RMSNormEps = 1e-6
	}
	mean, std := []float32{0.48145466, 0.4578275, 0.40821073}, []float32{0.26862954, 0.26130258, 0.27577711}
	if pb, err := os.ReadFile(filepath.Join(dir, "preprocessor_config.json")); err == nil {
		var pc struct {
			Mean []float32 `json:"image_mean"`
			Std  []float32 `json:"image_std"`
		}
		if err := json.Unmarshal(pb, &pc); err != nil {
			return fmt.Errorf("convert: %s/preprocessor_config.json: %w", dir, err)
		}
		if len(pc.Mean) == 3 && len(pc.Std) == 3 {
			mean, std = pc.Mean, pc.Std
		}
	}
	ck, err := safetensors.OpenCheckpoint(dir)
	if err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	defer ck.Close()

	w := gguf.NewWriter()
	w.Add("general.architecture", "clip")
	w.Add("general.type", "mmproj")
	w.Add("general.name", filepath.Base(filepath.Clean(dir)))
	w.Add("general.file_type", uint32(fileType(t)))
	w.Add("clip.has_vision_encoder", true)
	w.Add("clip.vision.projection_dim", uint32(proj))
	w.Add("clip.vision.image_size", uint32(560))
	w.Add("clip.vision.patch_size", uint32(v.PatchSize))
	w.Add("clip.vision.embedding_length", uint32(v.Hidden))
	w.Add("clip.vision.feed_forward_length", uint32(v.FFN))
	w.Add("clip.vision.block_count", uint32(v.Depth))
	w.Add("clip.vision.attention.head_count", uint32(v.Heads))
	w.Add("clip.vision.image_mean", mean)
	w.Add("clip.vision.image_std", std)
	w.Add("clip.projector_type", "qwen2.5vl_merger")
	w.Add("clip.use_silu", true)
	if len(v.FullAttnRows) > 0 {
		w.Add("clip.vision.n_wa_pattern", uint32(v.FullAttnRows[0]+1))
	}
	w.Add("clip.vision.attention.layer_norm_epsilon", float32(cfg.RMSNormEps))

	prefixOf := func(name string) (string, bool) {
		for _, p := range []string{"model.visual.", "visual."} {
			if rest, ok := strings.CutPrefix(name, p); ok {
				return rest, true
			}
		}
		return "", false
	}
	var names []string
	for _, n := range ck.Names() {
		if _, ok := prefixOf(n); ok {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("convert: %s holds no vision tower (visual.* tensors)", dir)
	}
	sort.Strings(names)
	W := int64(v.Hidden)
	add := func(name string, ne []int64, typ gguf.Type, vals func() ([]float64, error)) error {
		return w.AddTensorFunc(name, typ, ne, func(dst io.Writer) error {
			x, err := vals()
			if err != nil {
				return err
			}
			return writeAs(dst, typ, x)
		})
	}
	typeOf := func(dims int, name string) gguf.Type {
		if dims < 2 || strings.Contains(name, "ln") {
			return gguf.TypeF32
		}
		return t
	}
	for _, hf := range names {
		rest, _ := prefixOf(hf)
		info, f, _ := ck.Tensor(hf)
		read := func() ([]float64, error) { return f.Float64(hf) }
		switch {
		case rest == "patch_embed.proj.weight":
			// [W, 3, T, p, p] → one [W, 3, p, p] kernel per temporal slice.
			s := info.Shape
			if len(s) != 5 || s[0] != W || s[1] != 3 {
				return fmt.Errorf("convert: %s: shape %v, want [%d, 3, T, p, p]", hf, s, W)
			}
			T, p := s[2], s[3]*s[4]
			for ti := range T {
				name := "v.patch_embd.weight"
				if ti > 0 {
					name += fmt.Sprintf(".%d", ti)
				}
				err := add(name, []int64{s[4], s[3], 3, W}, t, func() ([]float64, error) {
					all, err := read()
					if err != nil {
						return nil, err
					}
					outv := make([]float64, 0, W*3*p)
					for o := range W {
						for c := range int64(3) {
							base := ((o*3+c)*T + ti) * p
							outv = append(outv, all[base:base+p]...)
						}
					}
					return outv, nil
				})
				if err != nil {
					return fmt.Errorf("convert: %s: %w", name, err)
				}
			}
		case qkvName.MatchString(rest):
			m := qkvName.FindStringSubmatch(rest)
			kind := m[2]
			for third, qkv := range []string{"q", "k", "v"} {
				name := fmt.Sprintf("v.blk.%s.attn_%s.%s", m[1], qkv, kind)
				ne := []int64{W}
				if kind == "weight" {
					ne = []int64{W, W}
				}
				per := W
				if kind == "weight" {
					per = W * W
				}
				if info.Elements() != 3*per {
					return fmt.Errorf("convert: %s: %d values, want 3×%d", hf, info.Elements(), per)
				}
				err := add(name, ne, typeOf(len(ne), name), func() ([]float64, error) {
					all, err := read()
					if err != nil {
						return nil, err
					}
					return all[int64(third)*per : int64(third+1)*per], nil
				})
				if err != nil {
					return fmt.Errorf("convert: %s: %w", name, err)
				}
			}
		default:
			name := ""
			for _, m := range visionNames {
				if m.re.MatchString(rest) {
					name = m.re.ReplaceAllString(rest, m.gguf)
				}
			}
			if name == "" {
				return fmt.Errorf("convert: %s: a vision tensor this converter does not know", hf)
			}
			ne := make([]int64, len(info.Shape))
			for i, d := range info.Shape {
				ne[len(info.Shape)-1-i] = d
			}
			if err := add(name, ne, typeOf(len(ne), name), read); err != nil {
				return fmt.Errorf("convert: %s: %w", name, err)
			}
		}
	}
	if err := w.WriteFile(out); err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	return nil
}

// mvprojNames are the multi-vector heads of the supported layouts:
// jina-embeddings-v4's multi_vector_projector and ColQwen's
// custom_text_proj, with or without the "model." prefix.
var mvprojNames = []string{"multi_vector_projector", "model.multi_vector_projector", "custom_text_proj", "model.custom_text_proj"}

// ConvertMVProj writes a checkpoint's multi-vector head (with the
// adapter's update merged when it targets it) as the mvproj side-car
// package model/heads reads: mvproj.weight and mvproj.bias in F32 and the
// input and output widths; task names the merged adapter.
func ConvertMVProj(dir, out string, adapter *Adapter, task string) error {
	ck, err := safetensors.OpenCheckpoint(dir)
	if err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	defer ck.Close()
	for _, base := range mvprojNames {
		info, f, ok := ck.Tensor(base + ".weight")
		if !ok {
			continue
		}
		if len(info.Shape) != 2 {
			return fmt.Errorf("convert: %s.weight: shape %v, want [out, in]", base, info.Shape)
		}
		rows, cols := int(info.Shape[0]), int(info.Shape[1])
		w, err := f.Float64(base + ".weight")
		if err != nil {
			return err
		}
		if adapter != nil {
			if w, err = adapter.Merge(base+".weight", w, rows, cols); err != nil {
				return err
			}
		}
		gw := gguf.NewWriter()
		gw.Add("general.architecture", "mvproj")
		gw.Add("general.type", "mvproj")
		gw.Add("mvproj.input_dim", uint32(cols))
		gw.Add("mvproj.output_dim", uint32(rows))
		gw.Add("mvproj.normalize", true)
		if task != "" {
			gw.Add("mvproj.task", task)
		}
		if err := gw.AddTensorFunc("mvproj.weight", gguf.TypeF32, []int64{int64(cols), int64(rows)}, func(dst io.Writer) error {
			return writeAs(dst, gguf.TypeF32, w)
		}); err != nil {
			return err
		}
		if _, bf, ok := ck.Tensor(base + ".bias"); ok {
			b, err := bf.Float64(base + ".bias")
			if err != nil {
				return err
			}
			if len(b) != rows {
				return fmt.Errorf("convert: %s.bias: %d values for %d outputs", base, len(b), rows)
			}
			if err := gw.AddTensorFunc("mvproj.bias", gguf.TypeF32, []int64{int64(rows)}, func(dst io.Writer) error {
				return writeAs(dst, gguf.TypeF32, b)
			}); err != nil {
				return err
			}
		}
		if err := gw.WriteFile(out); err != nil {
			return fmt.Errorf("convert: %w", err)
		}
		return nil
	}
	return fmt.Errorf("convert: %s holds no multi-vector head (%v)", dir, mvprojNames)
}
