package synth

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vembed/vembed/qwenlayout"
	"github.com/vembed/vembed/safetensors"
)

// LoRATargets is the target_modules pattern of the synthetic adapters, in
// colpali-engine's form: the decoder's projections (the tower's names hold
// no "model") and the multi-vector head.
const LoRATargets = `(.*(model).*(down_proj|gate_proj|up_proj|k_proj|q_proj|v_proj|o_proj).*$|.*(custom_text_proj|multi_vector_projector).*$)`

// HFOptions control WriteHF.
type HFOptions struct {
	// Layout is one of Layouts (default qwenlayout.LayoutJinaV4).
	Layout string
	// DType of the weights: BF16 (default, as the published checkpoints),
	// F16 or F32.
	DType safetensors.DType
	// ShardBytes bounds the data of one shard (default 2 GB); a checkpoint
	// of more than one shard gets model.safetensors.index.json.
	ShardBytes int64
	// Rank and Alpha of the LoRA adapters (default 32 and 32, as
	// jina-embeddings-v4's and ColQwen's).
	Rank  int
	Alpha float64

	// AdapterDir, for the ColQwen layouts, writes the adapter into its own
	// directory, as the releases ship it (a base repository and an adapter
	// repository whose base_model_name_or_path names it, here
	// "synthetic/<the base directory's name>"), with its
	// preprocessor_config.json and tokenizer_config.json; "" writes it
	// inside the base.
	AdapterDir string
	// AdapterNewNames names the adapter's modules as transformers 4.52+
	// does (model.language_model.*, model.visual.*), the names
	// target_modules is matched against: LoRATargets then reaches the
	// tower's MLPs too, which PEFT adapts (AdapterVision).
	AdapterNewNames bool
	// AdapterVision adds LoRA pairs on the vision tower's attention (the
	// fused qkv and the output projection) and MLP matrices, for every
	// task of a multi-task adapter.
	AdapterVision bool

	// HeadDims, for ColQwen3.5, writes its head in a Matryoshka form:
	// one Linear to the widest width with MRLPrefix, else one Linear per
	// width (custom_text_proj.d<W>); nil writes one Linear of
	// MVProj.OutputDim rows.
	HeadDims  []int
	MRLPrefix bool
}

// hfModel is one layout's naming and files.
type hfModel struct {
	lmPrefix, visionPrefix string // replacing "model." and "visual."
	headPrefix             string // replacing "lm_head.", "" to keep it
	head                   string // multi-vector head, "" for none
	headRows               int    // the head's rows when not MVProj.OutputDim (Ops-ColQwen3: H)
	adapter                string // adapter directory relative to the checkpoint, "" for none
	tasks                  []string
	// savedHead: the head is not in the base but saved whole in the
	// adapter (ColQwen3.5's adapter releases).
	savedHead bool
}

func (o HFOptions) model() (hfModel, string, error) {
	switch o.Layout {
	case qwenlayout.LayoutJinaV4, "":
		return hfModel{lmPrefix: "model.", visionPrefix: "visual.", head: "multi_vector_projector", adapter: "adapters", tasks: qwenlayout.JinaTasks}, qwenlayout.ProjectorQwen25VL, nil
	case qwenlayout.LayoutColQwen25:
		// colpali-engine on recent transformers: a Qwen2_5_VLModel subclass,
		// so neither "model." nor lm_head.
		return hfModel{lmPrefix: "language_model.", visionPrefix: "visual.", head: "custom_text_proj", adapter: "."}, qwenlayout.ProjectorQwen25VL, nil
	case qwenlayout.LayoutColQwen2:
		return hfModel{lmPrefix: "model.", visionPrefix: "visual.", head: "custom_text_proj", adapter: "."}, qwenlayout.ProjectorQwen2VL, nil
	case qwenlayout.LayoutGME:
		return hfModel{lmPrefix: "model.", visionPrefix: "visual."}, qwenlayout.ProjectorQwen2VL, nil
	case qwenlayout.LayoutQwen3VL, qwenlayout.LayoutQwen3VLReranker, qwenlayout.LayoutNemotronColEmbed:
		return hfModel{lmPrefix: "model.language_model.", visionPrefix: "model.visual."}, qwenlayout.ProjectorQwen3VL, nil
	case qwenlayout.LayoutColQwen3:
		return hfModel{lmPrefix: "vlm.model.language_model.", visionPrefix: "vlm.model.visual.", headPrefix: "vlm.lm_head.", head: "embedding_proj_layer"}, qwenlayout.ProjectorQwen3VL, nil
	case qwenlayout.LayoutOpsColQwen3:
		return hfModel{lmPrefix: "language_model.", visionPrefix: "visual.", head: "custom_text_proj", headRows: -1}, qwenlayout.ProjectorQwen3VL, nil
	case qwenlayout.LayoutColQwen35:
		// colpali-engine's ColQwen3_5 is a Qwen3_5Model: neither "model."
		// nor an LM head.
		return hfModel{lmPrefix: "language_model.", visionPrefix: "visual.", head: "custom_text_proj"}, qwenlayout.ProjectorQwen3VL, nil
	case qwenlayout.LayoutColVec:
		// ColVec1.1's names are not published; these are
		// Qwen3_5ForConditionalGeneration's (the converter takes either).
		return hfModel{lmPrefix: "model.language_model.", visionPrefix: "model.visual.", head: "embedding_proj_layer"}, qwenlayout.ProjectorQwen3VL, nil
	}
	return hfModel{}, "", fmt.Errorf("synth: unknown checkpoint layout %q (have %v)", o.Layout, qwenlayout.Layouts())
}

func (m hfModel) rename(canonical string) string {
	if rest, ok := strings.CutPrefix(canonical, "model."); ok {
		return m.lmPrefix + rest
	}
	if rest, ok := strings.CutPrefix(canonical, "visual."); ok {
		return m.visionPrefix + rest
	}
	if rest, ok := strings.CutPrefix(canonical, "lm_head."); ok && m.headPrefix != "" {
		return m.headPrefix + rest
	}
	return canonical
}

// WriteHF writes cfg as a Hugging Face checkpoint in the given layout into
// dir: config.json, tokenizer.json, tokenizer_config.json,
// preprocessor_config.json, the weights in safetensors shards (with
// model.safetensors.index.json when there are several), and the layout's
// multi-vector head and LoRA adapters, all drawn at random from cfg.Seed
// (weights N(0, Std²), norms 1 + Std·N(0, 1), LoRA A and B N(0, (2.5·Std)²)
// so that merging them matters). Values are generated and written a block
// of rows at a time.
func WriteHF(dir string, cfg Config, o HFOptions) error {
	m, projector, err := o.model()
	if err != nil {
		return err
	}
	if o.Layout == qwenlayout.LayoutColQwen35 && o.AdapterDir != "" {
		// A ColQwen3.5 adapter release: a stock Qwen3.5 base without a
		// head, and the adapter with the LoRA pairs and the head saved
		// whole (modules_to_save), under ColQwen3_5's module names.
		m = hfModel{lmPrefix: "model.language_model.", visionPrefix: "model.visual.", head: "custom_text_proj", adapter: ".", savedHead: true}
	}
	// The adapter options are checked before anything is written.
	switch {
	case m.adapter == "" && (o.AdapterDir != "" || o.AdapterNewNames || o.AdapterVision):
		return fmt.Errorf("synth: layout %s has no adapter: AdapterDir, AdapterNewNames and AdapterVision are for ColQwen and jina-v4", o.Layout)
	case o.AdapterDir != "" && m.adapter != ".":
		return fmt.Errorf("synth: layout %s keeps its adapters inside the checkpoint; AdapterDir is for ColQwen", o.Layout)
	}
	if cfg.Projector != projector {
		return fmt.Errorf("synth: layout %s needs a %s tower, the configuration has %s (pick a %s preset)", cmpOr(o.Layout, qwenlayout.LayoutJinaV4), projector, cfg.Projector, map[string]string{qwenlayout.ProjectorQwen2VL: "Qwen2-VL", qwenlayout.ProjectorQwen25VL: "Qwen2.5-VL", qwenlayout.ProjectorQwen3VL: "Qwen3-VL"}[projector])
	}
	if q35 := o.Layout == qwenlayout.LayoutColQwen35 || o.Layout == qwenlayout.LayoutColVec; q35 != cfg.LM.IsQwen35() {
		return fmt.Errorf("synth: layout %s with a Qwen3.5 LM %v: the Qwen3.5 layouts and a Qwen3.5 LM go together (pick tiny-qwen35 for them)", o.Layout, cfg.LM.IsQwen35())
	}
	if len(o.HeadDims) > 0 && m.savedHead {
		return fmt.Errorf("synth: an adapter release of ColQwen3.5 gets a single head (its base's config.json has no head_dims)")
	}
	if len(o.HeadDims) > 0 && o.Layout != qwenlayout.LayoutColQwen35 {
		return fmt.Errorf("synth: HeadDims are ColQwen3.5's head forms, not layout %s's", o.Layout)
	}
	for i, d := range o.HeadDims {
		if d <= 0 || d > cfg.LM.Hidden || i > 0 && d <= o.HeadDims[i-1] {
			return fmt.Errorf("synth: head widths %v: want ascending widths up to the LM's %d", o.HeadDims, cfg.LM.Hidden)
		}
	}
	if rank := o.Layout == qwenlayout.LayoutQwen3VLReranker; rank != (cfg.LM.Pooling == "rank") {
		return fmt.Errorf("synth: layout %s with LM pooling %q: the reranker layout and the rank pooling go together (pick qwen3-vl-reranker-2b for it, an embedding preset otherwise)", o.Layout, cfg.LM.Pooling)
	}
	if cfg.VocabFrom != "" {
		return fmt.Errorf("synth: a checkpoint gets the small vocabulary; VocabFrom is not supported")
	}
	cfg.LMType, cfg.MMProjType = "F32", "F32"
	if err := cfg.Validate(); err != nil {
		return err
	}
	if o.DType == "" {
		o.DType = safetensors.BF16
	}
	switch o.DType {
	case safetensors.BF16, safetensors.F16, safetensors.F32:
	default:
		return fmt.Errorf("synth: checkpoint dtype %s: want BF16, F16 or F32", o.DType)
	}
	if o.ShardBytes <= 0 {
		o.ShardBytes = 2 << 30
	}
	if o.Rank <= 0 {
		o.Rank = 32
	}
	if o.Alpha == 0 {
		o.Alpha = 32
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	vocab, err := cfg.smallVocab()
	if err != nil {
		return err
	}
	if err := writeHFJSON(dir, cfg, m, o, vocab); err != nil {
		return err
	}

	lm, err := cfg.LMLayout([]qwenlayout.KV{})
	if err != nil {
		return err
	}
	mm, err := cfg.MMProjLayout()
	if err != nil {
		return err
	}
	var ts []qwenlayout.HFTensor
	naming := qwenlayout.HFNaming{Projector: projector, DeepStack: cfg.Vision.DeepStack, Tied: !cfg.LM.Untied, DeltaNet: cfg.LM.DeltaNet}
	for _, l := range []*qwenlayout.Layout{lm, mm} {
		part, err := qwenlayout.HFTensors(l, naming, cfg.LM.Vocab)
		if err != nil {
			return err
		}
		ts = append(ts, part...)
	}
	for i := range ts {
		ts[i].Name = m.rename(ts[i].Name)
	}
	var saved []qwenlayout.HFTensor // written into the adapter
	if cfg.LM.IsQwen35() {
		if m.savedHead {
			saved = qwen35Head(cfg, o, m.head)
		} else {
			ts = append(ts, qwen35Head(cfg, o, m.head)...)
		}
	} else if m.head != "" {
		H, D := int64(cfg.LM.Hidden), int64(cfg.MVProj.OutputDim)
		if m.headRows < 0 { // a square head, of which the model uses the first OutputDim rows
			D = H
		}
		ts = append(ts, qwenlayout.HFTensor{Name: m.head + ".weight", Shape: []int64{D, H}}, qwenlayout.HFTensor{Name: m.head + ".bias", Shape: []int64{D}})
	}
	slices.SortFunc(ts, func(a, b qwenlayout.HFTensor) int { return strings.Compare(a.Name, b.Name) })
	g := hfGen{seed: cfg.Seed, std: float64(cfg.Std), dtype: o.DType, progress: cfg.Progress}
	if err := g.writeShards(dir, "model", ts, o.ShardBytes); err != nil {
		return err
	}
	if m.adapter != "" {
		ad := filepath.Join(dir, m.adapter)
		if o.AdapterDir != "" {
			ad = o.AdapterDir
		}
		if err := writeAdapter(ad, dir, cfg, m, o, ts, saved); err != nil {
			return err
		}
		if o.AdapterDir != "" {
			for _, f := range []string{"preprocessor_config.json", "tokenizer_config.json"} {
				b, err := os.ReadFile(filepath.Join(dir, f))
				if err == nil {
					err = os.WriteFile(filepath.Join(ad, f), b, 0o644)
				}
				if err != nil {
					return fmt.Errorf("synth: %w", err)
				}
			}
		}
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// hfGen draws checkpoint tensors.
type hfGen struct {
	seed     uint64
	std      float64
	dtype    safetensors.DType
	progress func(file string, done, total int64)
}

// write streams tensors into one safetensors file.
func (g hfGen) write(path string, ts []qwenlayout.HFTensor) error {
	specs := make([]safetensors.Spec, len(ts))
	var total, done int64
	for i, t := range ts {
		specs[i] = safetensors.Spec{Name: t.Name, DType: g.dtype, Shape: t.Shape}
		total += qwenlayout.Elements(t.Shape)
	}
	vals := make([]float32, 0, chunkValues)
	return safetensors.WriteStream(path, specs, nil, func(i int, put func([]float32) error) error {
		t := ts[i]
		n := qwenlayout.Elements(t.Shape)
		base := 0.0
		if t.Norm {
			base = 1
		}
		for idx, s := int64(0), int64(0); s < n; idx, s = idx+1, s+chunkValues {
			rng := tensorStream(g.seed, t.Name, idx)
			vals = vals[:min(chunkValues, n-s)]
			for j := range vals {
				// A product is converted before it is added to (float64(a*b) + c): that
				// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
				// every build computes the same bits (kernels.TestNoFusedMultiplyAdd).
				vals[j] = float32(base + float64(g.std*rng.NormFloat64()))
			}
			if err := put(vals); err != nil {
				return err
			}
			done += int64(len(vals))
			if g.progress != nil {
				g.progress(filepath.Base(path), done, total)
			}
		}
		return nil
	})
}

// writeShards writes ts (sorted by name) as name.safetensors, or as
// name-0000i-of-0000n.safetensors with name.safetensors.index.json when
// they exceed one shard.
func (g hfGen) writeShards(dir, name string, ts []qwenlayout.HFTensor, shardBytes int64) error {
	var shards [][]qwenlayout.HFTensor
	var size, total int64
	for _, t := range ts {
		b := qwenlayout.Elements(t.Shape) * g.dtype.Size()
		if len(shards) == 0 || (size+b > shardBytes && size > 0) {
			shards = append(shards, nil)
			size = 0
		}
		shards[len(shards)-1] = append(shards[len(shards)-1], t)
		size += b
		total += b
	}
	if len(shards) == 1 {
		return g.write(filepath.Join(dir, name+".safetensors"), shards[0])
	}
	weightMap := map[string]string{}
	for i, s := range shards {
		file := fmt.Sprintf("%s-%05d-of-%05d.safetensors", name, i+1, len(shards))
		if err := g.write(filepath.Join(dir, file), s); err != nil {
			return err
		}
		for _, t := range s {
			weightMap[t.Name] = file
		}
	}
	return writeJSONFile(filepath.Join(dir, name+".safetensors.index.json"), map[string]any{
		"metadata":   map[string]any{"total_size": total},
		"weight_map": weightMap,
	})
}

// writeAdapter writes a PEFT LoRA adapter for every decoder projection and
// the multi-vector head: one A/B pair per module, or per task
// ("lora_A.<task>.weight", jina-embeddings-v4's multi-task form).
func writeAdapter(dir, base string, cfg Config, m hfModel, o HFOptions, ts, saved []qwenlayout.HFTensor) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	targets := []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
	if m.savedHead { // and the DeltaNet's projections
		targets = append(targets, "in_proj_qkv", "in_proj_z", "out_proj")
	}
	var lora []qwenlayout.HFTensor
	for _, t := range ts {
		module, ok := strings.CutSuffix(t.Name, ".weight")
		if !ok || len(t.Shape) != 2 {
			continue
		}
		target := module == m.head
		if strings.HasPrefix(module, m.lmPrefix+"layers.") {
			for _, x := range targets {
				target = target || strings.HasSuffix(module, "."+x)
			}
		}
		if o.AdapterVision && strings.HasPrefix(module, m.visionPrefix+"blocks.") {
			for _, x := range []string{"attn.qkv", "attn.proj", "mlp.fc1", "mlp.fc2", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"} {
				target = target || strings.HasSuffix(module, "."+x)
			}
		}
		if !target {
			continue
		}
		if m.savedHead { // ColQwen3_5, a Qwen3_5Model, names its decoder language_model.
			module = "language_model." + strings.TrimPrefix(module, m.lmPrefix)
		}
		if o.AdapterNewNames {
			if rest, ok := strings.CutPrefix(module, m.lmPrefix); ok {
				module = "model.language_model." + rest
			} else if rest, ok := strings.CutPrefix(module, m.visionPrefix); ok {
				module = "model.visual." + rest
			}
		}
		infixes := []string{""}
		if len(m.tasks) > 0 {
			infixes = nil
			for _, task := range m.tasks {
				infixes = append(infixes, "."+task)
			}
		}
		for _, in := range infixes {
			p := "base_model.model." + module
			lora = append(lora,
				qwenlayout.HFTensor{Name: p + ".lora_A" + in + ".weight", Shape: []int64{int64(o.Rank), t.Shape[1]}},
				qwenlayout.HFTensor{Name: p + ".lora_B" + in + ".weight", Shape: []int64{t.Shape[0], int64(o.Rank)}})
		}
	}
	for _, t := range saved { // PEFT saves modules_to_save under the wrapper's name
		lora = append(lora, qwenlayout.HFTensor{Name: "base_model.model." + t.Name, Shape: t.Shape})
	}
	slices.SortFunc(lora, func(a, b qwenlayout.HFTensor) int { return strings.Compare(a.Name, b.Name) })
	baseName := cfg.Name
	if o.AdapterDir != "" {
		baseName = "synthetic/" + filepath.Base(filepath.Clean(base))
	}
	g := hfGen{seed: cfg.Seed + 3, std: 2.5 * float64(cfg.Std), dtype: o.DType, progress: cfg.Progress}
	if err := g.write(filepath.Join(dir, "adapter_model.safetensors"), lora); err != nil {
		return err
	}
	return writeJSONFile(filepath.Join(dir, "adapter_config.json"), map[string]any{
		"peft_type":               "LORA",
		"base_model_name_or_path": baseName,
		"r":                       o.Rank,
		"lora_alpha":              o.Alpha,
		"lora_dropout":            0.0,
		"target_modules":          LoRATargets,
		"bias":                    "none",
		"use_rslora":              false,
		"use_dora":                false,
		"fan_in_fan_out":          false,
		"init_lora_weights":       "gaussian",
		"task_type":               "FEATURE_EXTRACTION",
	})
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	return nil
}

// writeHFJSON writes the checkpoint's configuration files.
func writeHFJSON(dir string, cfg Config, m hfModel, o HFOptions, v *qwenlayout.Vocab) error {
	lm, vi := cfg.LM, cfg.Vision
	id := func(tok string) int { return slices.Index(v.Tokens, tok) }
	name := cfg.Name
	if o.Layout == qwenlayout.LayoutGME && !strings.Contains(strings.ToLower(name), "gme") {
		name = "gme-" + name // what tells a GME checkpoint from a plain Qwen2-VL one
	}
	c := map[string]any{
		"_name_or_path":           name,
		"hidden_size":             lm.Hidden,
		"intermediate_size":       lm.FFN,
		"num_hidden_layers":       lm.Layers,
		"num_attention_heads":     lm.Heads,
		"num_key_value_heads":     lm.KVHeads,
		"max_position_embeddings": lm.ContextLength,
		"rms_norm_eps":            lm.RMSEps,
		"rope_theta":              lm.RopeTheta,
		"vocab_size":              lm.Vocab,
		"tie_word_embeddings":     !lm.Untied,
		"hidden_act":              "silu",
		"bos_token_id":            v.BOS,
		"eos_token_id":            v.EOS,
		"vision_start_token_id":   id("<|vision_start|>"),
		"vision_end_token_id":     id("<|vision_end|>"),
		"image_token_id":          id("<|image_pad|>"),
		"video_token_id":          id("<|video_pad|>"),
		"rope_scaling":            map[string]any{"type": "mrope", "rope_type": "default", "mrope_section": lm.MRoPE[:3]},
		"torch_dtype":             torchDType(o.DType),
	}
	if cfg.LM.IsQwen35() {
		c = qwen35HFConfig(cfg, v, o, id)
		if !m.savedHead { // an adapter release's base is stock Qwen3.5
			qwen35Release(c, cfg, o)
		}
	} else if cfg.Projector == qwenlayout.ProjectorQwen3VL {
		c = qwen3HFConfig(cfg, v, o, id)
	} else if cfg.Projector == qwenlayout.ProjectorQwen2VL {
		c["model_type"] = "qwen2_vl"
		c["architectures"] = []string{"Qwen2VLForConditionalGeneration"}
		c["vision_config"] = map[string]any{
			"depth": vi.Blocks, "embed_dim": vi.Width, "num_heads": vi.Heads,
			"mlp_ratio": float64(vi.FFN) / float64(vi.Width), "hidden_size": lm.Hidden,
			"in_chans": 3, "patch_size": vi.PatchSize, "spatial_merge_size": 2, "temporal_patch_size": qwenlayout.TemporalPatch,
			"hidden_act": "quick_gelu",
		}
	} else {
		var full []int
		for i := vi.NWAPattern - 1; i < vi.Blocks; i += vi.NWAPattern {
			full = append(full, i)
		}
		c["model_type"] = "qwen2_5_vl"
		c["architectures"] = []string{"Qwen2_5_VLForConditionalGeneration"}
		c["vision_config"] = map[string]any{
			"depth": vi.Blocks, "hidden_size": vi.Width, "intermediate_size": vi.FFN, "num_heads": vi.Heads,
			"out_hidden_size": lm.Hidden, "in_chans": 3, "patch_size": vi.PatchSize, "spatial_merge_size": 2,
			"temporal_patch_size": qwenlayout.TemporalPatch, "window_size": 112, "fullatt_block_indexes": full,
			"hidden_act": "silu",
		}
	}
	switch o.Layout {
	case qwenlayout.LayoutJinaV4, "":
		c["architectures"] = []string{"JinaEmbeddingsV4Model"}
		c["task_names"] = qwenlayout.JinaTasks
		c["multi_vector_projector_dim"] = cfg.MVProj.OutputDim
		c["matryoshka_dims"] = []int{128, 256, 512, 1024, 2048}
		c["single_vector_pool_strategy"] = "mean"
	case qwenlayout.LayoutColQwen2, qwenlayout.LayoutColQwen25:
		c["architectures"] = []string{map[string]string{qwenlayout.LayoutColQwen2: "ColQwen2", qwenlayout.LayoutColQwen25: "ColQwen2_5"}[o.Layout]}
	case qwenlayout.LayoutColQwen3:
		c["model_type"], c["architectures"] = "colqwen3", []string{"ColQwen3"}
		c["embed_dim"], c["padding_side"] = cfg.MVProj.OutputDim, "left"
	case qwenlayout.LayoutOpsColQwen3:
		c["model_type"], c["architectures"] = "ops_colqwen3", []string{"OpsColQwen3Model"}
		c["dims"] = cfg.MVProj.OutputDim
	case qwenlayout.LayoutNemotronColEmbed:
		c["model_type"], c["architectures"] = "qwen3_vl_nemotron_embed", []string{"Qwen3VLNemotronEmbedModel"}
		c["pooling"] = "colbert"
		if err := writeJSONFile(filepath.Join(dir, "processor_config.json"), map[string]any{
			"processor_class": "Qwen3VLNemotronEmbedProcessor", "q_max_length": 512, "p_max_length": 4096,
			"query_prefix": "query:", "passage_prefix": "passage:", "reserve_tokens_for_images": 100,
		}); err != nil {
			return err
		}
	}
	if err := writeJSONFile(filepath.Join(dir, "config.json"), c); err != nil {
		return err
	}

	// tokenizer.json holds the tokens the vocabulary has; the converter
	// pads the ids up to vocab_size.
	vocab := map[string]int{}
	var added []map[string]any
	for i, t := range v.Tokens {
		switch v.Types[i] {
		case qwenlayout.TokenNormal:
			vocab[t] = i
		case qwenlayout.TokenControl, qwenlayout.TokenUserDefined:
			added = append(added, map[string]any{
				"id": i, "content": t, "single_word": false, "lstrip": false, "rstrip": false,
				"normalized": false, "special": v.Types[i] == qwenlayout.TokenControl,
			})
		}
	}
	tj := map[string]any{
		"version":        "1.0",
		"added_tokens":   added,
		"normalizer":     map[string]any{"type": "NFC"},
		"pre_tokenizer":  preTokenizer(cfg),
		"decoder":        map[string]any{"type": "ByteLevel"},
		"model":          map[string]any{"type": "BPE", "vocab": vocab, "merges": v.Merges, "byte_fallback": false},
		"post_processor": nil,
	}
	if err := writeJSONFile(filepath.Join(dir, "tokenizer.json"), tj); err != nil {
		return err
	}
	if err := writeJSONFile(filepath.Join(dir, "tokenizer_config.json"), map[string]any{
		"bos_token":        nil,
		"eos_token":        v.Tokens[v.EOS],
		"pad_token":        v.Tokens[v.PAD],
		"chat_template":    ChatTemplate,
		"model_max_length": lm.ContextLength,
		"tokenizer_class":  "Qwen2Tokenizer",
	}); err != nil {
		return err
	}
	minPixels, maxPixels := 3136, 12845056
	switch o.Layout {
	case qwenlayout.LayoutJinaV4, "":
		maxPixels = 602112
	case qwenlayout.LayoutQwen3VL, qwenlayout.LayoutQwen3VLReranker:
		minPixels, maxPixels = 4096, 1843200
	case qwenlayout.LayoutColQwen3, qwenlayout.LayoutOpsColQwen3, qwenlayout.LayoutNemotronColEmbed, qwenlayout.LayoutColQwen35, qwenlayout.LayoutColVec:
		// transformers' Qwen3-VL form: size.shortest_edge / longest_edge.
		minPixels, maxPixels = 65536, 1310720
		if vi.MaxPixels > 0 {
			minPixels, maxPixels = vi.MinPixels, vi.MaxPixels
		}
		return writeJSONFile(filepath.Join(dir, "preprocessor_config.json"), map[string]any{
			"image_processor_type": "Qwen2VLImageProcessorFast",
			"image_mean":           vi.ImageMean[:],
			"image_std":            vi.ImageStd[:],
			"patch_size":           vi.PatchSize,
			"merge_size":           2,
			"temporal_patch_size":  qwenlayout.TemporalPatch,
			"size":                 map[string]any{"shortest_edge": minPixels, "longest_edge": maxPixels},
			"do_resize":            true,
			"do_normalize":         true,
			"do_rescale":           true,
			"rescale_factor":       1.0 / 255,
		})
	}
	return writeJSONFile(filepath.Join(dir, "preprocessor_config.json"), map[string]any{
		"image_processor_type": "Qwen2VLImageProcessor",
		"image_mean":           vi.ImageMean[:],
		"image_std":            vi.ImageStd[:],
		"patch_size":           vi.PatchSize,
		"merge_size":           2,
		"temporal_patch_size":  qwenlayout.TemporalPatch,
		"min_pixels":           minPixels,
		"max_pixels":           maxPixels,
		"do_resize":            true,
		"do_normalize":         true,
		"do_rescale":           true,
		"rescale_factor":       1.0 / 255,
	})
}

// torchDType is config.json's name of a weight dtype.
func torchDType(d safetensors.DType) string {
	return map[safetensors.DType]string{safetensors.BF16: "bfloat16", safetensors.F16: "float16", safetensors.F32: "float32"}[d]
}

// qwen3HFConfig is a Qwen3VLForConditionalGeneration config.json: the
// decoder's sizes in text_config, the tower's in vision_config, tie at the
// top level.
func qwen3HFConfig(cfg Config, v *qwenlayout.Vocab, o HFOptions, id func(string) int) map[string]any {
	lm, vi := cfg.LM, cfg.Vision
	name := cfg.Name
	if o.Layout == qwenlayout.LayoutQwen3VLReranker && !strings.Contains(strings.ToLower(name), "reranker") {
		name = "qwen3-vl-reranker-" + name // what tells a reranker checkpoint
	}
	dtype := torchDType(o.DType)
	return map[string]any{
		"_name_or_path":         name,
		"architectures":         []string{"Qwen3VLForConditionalGeneration"},
		"model_type":            "qwen3_vl",
		"tie_word_embeddings":   !lm.Untied,
		"image_token_id":        id("<|image_pad|>"),
		"video_token_id":        id("<|video_pad|>"),
		"vision_start_token_id": id("<|vision_start|>"),
		"vision_end_token_id":   id("<|vision_end|>"),
		"text_config": map[string]any{
			"model_type":              "qwen3_vl_text",
			"hidden_size":             lm.Hidden,
			"intermediate_size":       lm.FFN,
			"num_hidden_layers":       lm.Layers,
			"num_attention_heads":     lm.Heads,
			"num_key_value_heads":     lm.KVHeads,
			"head_dim":                lm.HeadWidth(),
			"max_position_embeddings": lm.ContextLength,
			"rms_norm_eps":            lm.RMSEps,
			"rope_theta":              lm.RopeTheta,
			"rope_scaling":            map[string]any{"rope_type": "default", "mrope_interleaved": true, "mrope_section": lm.MRoPE[:3]},
			"vocab_size":              lm.Vocab,
			"tie_word_embeddings":     !lm.Untied,
			"hidden_act":              "silu",
			"attention_bias":          false,
			"bos_token_id":            v.BOS,
			"eos_token_id":            v.EOS,
			"dtype":                   dtype,
		},
		"vision_config": map[string]any{
			"model_type":               "qwen3_vl",
			"depth":                    vi.Blocks,
			"hidden_size":              vi.Width,
			"intermediate_size":        vi.FFN,
			"num_heads":                vi.Heads,
			"out_hidden_size":          lm.Hidden,
			"in_channels":              3,
			"patch_size":               vi.PatchSize,
			"spatial_merge_size":       2,
			"temporal_patch_size":      qwenlayout.TemporalPatch,
			"num_position_embeddings":  vi.PositionSide * vi.PositionSide,
			"deepstack_visual_indexes": vi.DeepStack,
			"hidden_act":               "gelu_pytorch_tanh",
		},
		"dtype": dtype,
	}
}
