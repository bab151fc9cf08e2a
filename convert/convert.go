package convert

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/model/heads"
	"github.com/vembed/vembed/quantize"
	"github.com/vembed/vembed/qwenlayout"
	"github.com/vembed/vembed/recipe"
)

// Options control Convert.
type Options struct {
	// Layout is one of qwenlayout.Layouts, or "" to tell it from the checkpoint
	// (see the package doc).
	Layout string
	// Task picks jina-embeddings-v4's task adapter ("" for retrieval), or
	// "all" for one language model per task.
	Task string
	// Type is the language model's weight encoding: F32, F16 (default),
	// BF16, a block type (Q8_0, Q6_K, ...) or a llama.cpp mix (Q4_K_M, ...).
	Type string
	// MMProjType is the vision encoder's (default F16); block types keep
	// quantize.DefaultKeep's tensor groups in F16, as vembed quantize does.
	MMProjType string
	// Name is general.name and the files' base name (default: config.json's
	// _name_or_path, else the directory's name).
	Name string
	// Recipe overrides the vembed.recipe the layout implies, and lets a
	// checkpoint whose family is not recognised convert.
	Recipe string
	// Base is the base checkpoint of an adapter directory given as dir
	// (default: found by the adapter's base_model_name_or_path).
	Base string
	// Adapter is a LoRA adapter directory to merge into the checkpoint dir
	// (ColQwen's, which ships in its own repository).
	Adapter string
	// NoAdapter converts a ColQwen base without its adapter, which is
	// refused otherwise: its vectors are not the released model's.
	NoAdapter bool
	// QueryPrefix, when set, is ColQwen's query prefix stored in the LM
	// (default recipe.DefaultQueryPrefix, "Query: ").
	QueryPrefix *string
	// QueryTemplate, when set, is a Qwen3.5 retriever's query prompt
	// stored in the LM, the query's text standing for {query} (default
	// recipe.DefaultQueryTemplate).
	QueryTemplate *string
	// HeadDim picks ColQwen3.5's head width among its head_dims (default
	// the widest); a width of a single head must be its own.
	HeadDim int
	// Rows, when set, is a Qwen3.5 retriever's multi-vector rows: "all"
	// (every token's, the default) or "image" (a page's image tokens').
	Rows string
	// MaxVisualTokens overrides a Qwen3.5 retriever's image budget, in
	// merged tokens of 32x32 pixels.
	MaxVisualTokens int
	// Log receives progress and warnings; nil discards them.
	Log *slog.Logger
	// Progress, when set, hears of the values written to each file.
	Progress func(file string, done, total int64)
}

// Result lists the files Convert wrote.
type Result struct {
	Layout string
	// Tasks are the converted tasks, one per LM ("" without tasks).
	Tasks []string
	LMs   []string
	// MMProj is the vision encoder of the LMs whose task adapter leaves
	// the tower alone ("" when every task adapts it).
	MMProj string
	// MMProjs holds each LM's vision encoder: its task's own when the
	// task adapter has LoRA pairs on the tower (merged into it), else
	// MMProj.
	MMProjs []string
	MVProjs []string // one per LM when the layout has a multi-vector head
}

// layoutInfo is what a layout adds to the plain conversion.
type layoutInfo struct {
	recipe string
	// pixels, when set, is the family's fixed image budget, which its code
	// sets whatever preprocessor_config.json says (GME's processor, the
	// Qwen3-VL embedding code's).
	pixels  [2]int
	pooling int    // llama.cpp's LLAMA_POOLING_TYPE_*, -1 for none written
	head    string // multi-vector head (canonical name without .weight)
	adapter string // adapter directory, "" for none
	tasked  bool   // the adapter holds one pair per task
	// retriever marks the Qwen3-VL multi-vector families (retriever.go):
	// known prefixes only, the LM head dropped, the head's rows checked.
	retriever bool
	keys      []qwenlayout.KV // vembed keys of the LM beyond the recipe
}

// llama.cpp's pooling types.
const (
	poolingNone = 0
	poolingMean = 1
	poolingLast = 3
)

func detectLayout(dir string, cfg *hfConfig, src *source, o Options) (string, error) {
	if cfg.isQwen35() {
		return detectQwen35(dir, cfg, src, o)
	}
	if o.Layout == qwenlayout.LayoutColQwen35 || o.Layout == qwenlayout.LayoutColVec {
		return "", fmt.Errorf("convert: --layout %s: %s is not a Qwen3.5 checkpoint (model_type %q)", o.Layout, dir, cfg.outerModelType)
	}
	// A checkpoint naming a multi-vector retriever is that model, never a
	// plain Qwen3-VL: its head and decoder mode would be lost.
	named := cfg.retriever()
	if o.Layout != "" {
		if !slices.Contains(qwenlayout.Layouts(), o.Layout) {
			return "", fmt.Errorf("convert: unknown layout %q (have %v)", o.Layout, qwenlayout.Layouts())
		}
		if named != "" && o.Layout != named {
			return "", fmt.Errorf("convert: %s is a %s checkpoint (model_type %q, architectures %v); --layout %s would convert it as another model", dir, named, cfg.outerModelType, cfg.Architectures, o.Layout)
		}
		return o.Layout, nil
	}
	proj, err := cfg.projector()
	if err != nil {
		return "", err
	}
	if named != "" {
		if proj != qwenlayout.ProjectorQwen3VL {
			return "", fmt.Errorf("convert: %s names %s, a Qwen3-VL model, but its vision_config is not Qwen3-VL's", dir, named)
		}
		return named, nil
	}
	name := strings.ToLower(strings.Join([]string{o.Name, cfg.NameOrPath, dirName(dir), readme(dir)}, " "))
	if proj == qwenlayout.ProjectorQwen3VL {
		// As llama.cpp's converter tells a Qwen3-VL reranker: by name
		// (given, config.json's, the directory's), its README's title or a
		// sequence-classification architecture.
		// The retrievers' heads, when config.json does not name them.
		if _, ok := src.tensor("embedding_proj_layer.weight"); ok {
			return qwenlayout.LayoutColQwen3, nil
		}
		if _, ok := src.tensor("custom_text_proj.weight"); ok {
			return qwenlayout.LayoutOpsColQwen3, nil
		}
		if strings.Contains(name, "reranker") ||
			slices.ContainsFunc(cfg.Architectures, func(a string) bool { return strings.Contains(strings.ToLower(a), "sequenceclassification") }) {
			return qwenlayout.LayoutQwen3VLReranker, nil
		}
		return qwenlayout.LayoutQwen3VL, nil
	}
	_, head := src.tensor("custom_text_proj.weight")
	// GME ships a plain Qwen2-VL checkpoint: its name (given, in
	// config.json, the directory's, or the hub cache's models--org--name)
	// or its gme_inference.py tell it.
	switch {
	case cfg.isJina() || exists(filepath.Join(dir, "adapters", "adapter_config.json")):
		return qwenlayout.LayoutJinaV4, nil
	case head && proj == qwenlayout.ProjectorQwen2VL:
		return qwenlayout.LayoutColQwen2, nil
	case head:
		return qwenlayout.LayoutColQwen25, nil
	case strings.Contains(name, "gme") || exists(filepath.Join(dir, "gme_inference.py")):
		return qwenlayout.LayoutGME, nil
	}
	return "", nil // a plain Qwen2-VL / Qwen2.5-VL model
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// readme returns the first line of the checkpoint's README.md ("# Title"),
// or "".
func readme(dir string) string {
	f, err := os.Open(filepath.Join(dir, "README.md"))
	if err != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, 4096)
	n, _ := io.ReadFull(f, b)
	text := string(b[:n])
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "# ") {
			return line
		}
	}
	return ""
}

func infoOf(dir, layout string) layoutInfo {
	switch layout {
	case qwenlayout.LayoutJinaV4:
		return layoutInfo{recipe: "jina-embeddings-v4", pooling: poolingMean, head: "multi_vector_projector", adapter: filepath.Join(dir, "adapters"), tasked: true}
	case qwenlayout.LayoutColQwen2, qwenlayout.LayoutColQwen25:
		l := layoutInfo{recipe: "colqwen2", pooling: poolingNone, head: "custom_text_proj"}
		if exists(filepath.Join(dir, "adapter_config.json")) {
			l.adapter = dir
		}
		return l
	case qwenlayout.LayoutGME:
		return layoutInfo{recipe: "gme", pooling: poolingLast, pixels: [2]int{256 * 28 * 28, 1280 * 28 * 28}}
	case qwenlayout.LayoutQwen3VL:
		// llama.cpp writes no pooling type for Qwen3-VL-Embedding (vembed
		// reads qwen3vl without one as last-token pooling).
		return layoutInfo{recipe: "qwen3-vl-embedding", pooling: -1, pixels: [2]int{4 * 32 * 32, 1800 * 32 * 32}}
	case qwenlayout.LayoutQwen3VLReranker:
		// The reranker's rank keys come with its layout.
		return layoutInfo{recipe: "qwen3-vl-reranker", pooling: -1, pixels: [2]int{4 * 32 * 32, 1800 * 32 * 32}}
	case qwenlayout.LayoutColQwen3:
		return layoutInfo{recipe: recipe.ColQwen3Name, pooling: -1, head: "embedding_proj_layer", retriever: true}
	case qwenlayout.LayoutOpsColQwen3:
		return layoutInfo{recipe: recipe.OpsColQwen3Name, pooling: -1, head: "custom_text_proj", retriever: true}
	case qwenlayout.LayoutColQwen35:
		return layoutInfo{recipe: recipe.ColQwen35Name, pooling: -1}
	case qwenlayout.LayoutColVec:
		return layoutInfo{recipe: recipe.ColVecName, pooling: -1}
	case qwenlayout.LayoutNemotronColEmbed:
		return layoutInfo{recipe: recipe.NemotronName, pooling: -1, retriever: true, keys: []qwenlayout.KV{
			{Key: model.KeyCausal, Value: false},
			{Key: model.KeyOutputNorm, Value: false},
			{Key: heads.KeyMultiVectorSource, Value: "hidden"},
		}}
	}
	return layoutInfo{pooling: -1} // a checkpoint of no known family, converted with --recipe
}

// knownArchitectures names the checkpoints convert recognises, for the
// error that refuses another.
const knownArchitectures = "JinaEmbeddingsV4Model (jina-embeddings-v4), ColQwen2 / ColQwen2_5 (base + adapter), " +
	"Qwen2VLForConditionalGeneration named gme-* or with gme_inference.py (GME), " +
	"Qwen3VLForConditionalGeneration (Qwen3-VL-Embedding, -Reranker), " +
	"ColQwen3 (tomoro-colqwen3-embed), OpsColQwen3Model (Ops-ColQwen3), Qwen3VLNemotronEmbedModel (nemotron-colembed-vl-v2)"

func isColQwen(layout string) bool {
	return layout == qwenlayout.LayoutColQwen2 || layout == qwenlayout.LayoutColQwen25
}

// Convert writes the GGUFs of the Hugging Face checkpoint in dir into
// outDir (created if missing): the language model (one per task with
// Task "all"), the vision encoder (mmproj) and the multi-vector head
// (mvproj) when the layout has one. Each tensor is read, merged with its
// LoRA update in float64 and rounded once to its type a block of rows at a
// time.
func Convert(ctx context.Context, dir, outDir string, o Options) (*Result, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	pp, err := locate(dir, o, log)
	if err != nil {
		return nil, err
	}
	dir = pp.base
	cfg, err := readConfig(dir)
	if err != nil {
		return nil, err
	}
	vocab, tmpl, err := readTokenizer(dir, cfg)
	if err != nil {
		return nil, err
	}
	base, err := cfg.layoutConfig(dir, len(vocab.Tokens))
	if err != nil {
		return nil, err
	}
	switch {
	case o.Name != "":
		base.Name, base.BaseName = o.Name, o.Name
	case pp.adapter != "":
		// The adapter is the released model (vidore/colqwen2.5-v0.2).
		base.Name = dirName(pp.adapter)
	}
	base.LMType, base.MMProjType = cmpOr(o.Type, "F16"), cmpOr(o.MMProjType, "F16")
	if err := base.Validate(); err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	src, err := openSource(dir)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	// A ColQwen3.5 adapter saves its head whole beside its LoRA pairs
	// (PEFT's modules_to_save, base_model.model.custom_text_proj): it
	// stands for the base's, which a Qwen3.5 base lacks.
	saved := map[string]bool{}
	if pp.adapter != "" && cfg.isQwen35() {
		names, err := src.addSaved(pp.adapter)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			saved[n] = true
		}
	}
	layout, err := detectLayout(dir, cfg, src, o)
	if err != nil {
		return nil, err
	}
	if layout == "" && o.Recipe == "" {
		return nil, fmt.Errorf("convert: %s: cannot tell which embedding model this %s checkpoint is (known: %s); name its recipe with --recipe (%s) or its layout with --layout",
			dir, strings.Join(cfg.Architectures, ", "), knownArchitectures, strings.Join(recipe.Known(), ", "))
	}
	info := infoOf(dir, layout)
	if o.Recipe != "" {
		if !slices.Contains(recipe.Known(), o.Recipe) {
			return nil, fmt.Errorf("convert: --recipe %q: known recipes are %s", o.Recipe, strings.Join(recipe.Known(), ", "))
		}
		info.recipe = o.Recipe
	}
	var warnings []string
	// ColQwen2/2.5 ship as base + adapter; ColQwen3.5 may too.
	adaptable := isColQwen(layout) || layout == qwenlayout.LayoutColQwen35 && pp.adapter != ""
	switch {
	case pp.adapter != "" && !adaptable:
		return nil, fmt.Errorf("convert: %s is a %s checkpoint, which takes no separate adapter (ColQwen bases do)", dir, cmpOr(layout, "plain"))
	case !adaptable:
	case pp.adapter != "":
		info.adapter = pp.adapter
		// Given with --base or --adapter (not found by the name): a base
		// of the right shapes but another name may be another model's,
		// whose merge gives wrong vectors without any error, so the file
		// says so as well as the log.
		if want := path.Base(adapterBaseName(pp.adapter)); !pp.found && want != "." && want != dirName(dir) && want != path.Base(cfg.NameOrPath) {
			w := fmt.Sprintf("the adapter %s names its base %q, but it was merged into %s (%s): if that is another model, the vectors are not the released model's",
				dirName(pp.adapter), adapterBaseName(pp.adapter), dirName(dir), cmpOr(cfg.NameOrPath, "no _name_or_path"))
			log.Warn("the adapter names another base", "base_model_name_or_path", adapterBaseName(pp.adapter), "base", dir)
			warnings = append(warnings, w)
		}
	case info.adapter != "": // an adapter saved inside the base directory
	case o.NoAdapter:
		w := "a ColQwen base converted without its LoRA adapter: its vectors are not the released model's"
		log.Warn(w)
		warnings = append(warnings, w)
	default:
		return nil, fmt.Errorf("convert: %s is a ColQwen base (%s) without its LoRA adapter, so every vector would be wrong: convert the adapter's directory instead (vembed convert ADAPTER_DIR finds this base), or give it with --adapter DIR; --no-adapter converts the base alone",
			dir, strings.Join(cfg.Architectures, ", "))
	}
	if o.NoAdapter && !isColQwen(layout) {
		return nil, fmt.Errorf("convert: --no-adapter: %s is not a ColQwen base", dir)
	}
	if o.QueryPrefix != nil && !isColQwen(layout) {
		return nil, fmt.Errorf("convert: --query-prefix: only ColQwen's recipe takes a query prefix")
	}
	mvRows := 0 // rows of the multi-vector head written to the mvproj
	if _, ok := src.tensor(info.head + ".weight"); !ok && layout == qwenlayout.LayoutColQwen3 {
		// ColQwen3 loads checkpoints saved with the older head name.
		if _, ok := src.tensor("custom_text_proj.weight"); ok {
			info.head = "custom_text_proj"
		}
	}
	qwen35 := layout == qwenlayout.LayoutColQwen35 || layout == qwenlayout.LayoutColVec
	switch {
	case qwen35 && o.Recipe != "":
		return nil, fmt.Errorf("convert: --recipe: the %s layout has its own recipe, %s", layout, info.recipe)
	case !qwen35 && (o.QueryTemplate != nil || o.HeadDim != 0 || o.MaxVisualTokens != 0 || o.Rows != ""):
		return nil, fmt.Errorf("convert: --query-template, --head-dim, --max-visual-tokens and --multivector-rows are for the Qwen3.5 retrievers (%s, %s)", qwenlayout.LayoutColQwen35, qwenlayout.LayoutColVec)
	}
	if qwen35 {
		// colpali-engine loads an adapter release's processor from the
		// adapter, as for ColQwen2.5.
		proc := dir
		if pp.adapter != "" && (exists(filepath.Join(pp.adapter, "preprocessor_config.json")) || exists(filepath.Join(pp.adapter, "processor_config.json"))) {
			proc = pp.adapter
		}
		plan, err := qwen35Retriever(dir, proc, src, cfg, &base, layout, o, log)
		if err != nil {
			return nil, err
		}
		info.head, mvRows, info.keys = plan.head, plan.rows, plan.keys
	} else if info.retriever {
		if mvRows, err = retrieverChecks(dir, src, cfg, &base, layout, info, log); err != nil {
			return nil, err
		}
		if layout == qwenlayout.LayoutNemotronColEmbed {
			kvs, warn, err := nemotronTruncation(dir, log)
			if err != nil {
				return nil, err
			}
			info.keys = append(info.keys, kvs...)
			warnings = append(warnings, warn...)
		}
	} else if info.pixels[1] > 0 {
		base.Vision.MinPixels, base.Vision.MaxPixels = info.pixels[0], info.pixels[1]
	} else {
		lo, hi, from, err := pixelBudget(pp.adapter, dir)
		switch {
		case err != nil:
			return nil, err
		case hi == 0:
			log.Warn("no image budget (min_pixels, max_pixels) in preprocessor_config.json: the mmproj gets none, and the recipe's default applies", "file", cmpOr(from, "none"))
		default:
			base.Vision.MinPixels, base.Vision.MaxPixels = lo, hi
		}
	}
	if err := base.Validate(); err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	naming := qwenlayout.HFNaming{Projector: base.Projector, DeepStack: base.Vision.DeepStack, Tied: !base.LM.Untied, DeltaNet: base.LM.DeltaNet}
	if layout == qwenlayout.LayoutQwen3VLReranker {
		base.LM.Pooling = "rank"
		naming.Yes, naming.No = slices.Index(vocab.Tokens, "yes"), slices.Index(vocab.Tokens, "no")
		if naming.Yes < 0 || naming.No < 0 {
			return nil, errors.New(`convert: a reranker's vocabulary needs the tokens "yes" and "no", whose LM head rows are its scores`)
		}
	}
	if info.head != "" && !info.retriever {
		if _, ok := src.tensor(info.head + ".weight"); !ok {
			return nil, fmt.Errorf("convert: layout %s: the checkpoint has no %s.weight", layout, info.head)
		}
	}
	tasks := []string{""}
	if info.tasked {
		if !exists(filepath.Join(info.adapter, "adapter_config.json")) {
			return nil, fmt.Errorf("convert: layout %s: no task adapters in %s", layout, info.adapter)
		}
		switch o.Task {
		case "all":
			if tasks, err = AdapterTasks(info.adapter); err != nil {
				return nil, err
			}
			if len(tasks) == 0 {
				return nil, fmt.Errorf("convert: %s holds no per-task LoRA pairs", info.adapter)
			}
		case "":
			tasks = []string{"retrieval"}
		default:
			tasks = []string{o.Task}
		}
	} else if o.Task != "" {
		return nil, fmt.Errorf("convert: --task: the %s layout has no task adapters", cmpOr(layout, "plain"))
	}
	// openAdapter opens a task's adapter checked against the checkpoint.
	openAdapter := func(task string) (*Adapter, error) {
		a, err := OpenAdapter(info.adapter, task)
		if err != nil {
			return nil, err
		}
		if err := a.check(src, func(n string) bool {
			// The tower's pairs are merged into the mmproj: the single
			// adapter's into the one mmproj, a task's into the task's.
			// A head the adapter saved whole takes no pair.
			return !saved[n] && (isDecoder(n) || info.head != "" && strings.HasPrefix(n, info.head+".") || strings.HasPrefix(n, "visual."))
		}); err != nil {
			a.Close()
			if pp.adapter != "" {
				err = fmt.Errorf("%w (the adapter does not fit the base %s; its base_model_name_or_path is %q: give the right base with --base DIR)", err, dir, adapterBaseName(pp.adapter))
			}
			return nil, err
		}
		return a, nil
	}
	if info.adapter != "" && len(tasks) > 1 {
		// Every task's adapter is checked before the first file is written.
		for _, task := range tasks {
			a, err := openAdapter(task)
			if err != nil {
				return nil, err
			}
			a.Close()
		}
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	c := converter{ctx: ctx, src: src, naming: naming, vocab: base.LM.Vocab, progress: o.Progress}
	res := &Result{Layout: layout}
	var extra []qwenlayout.KV
	if info.recipe != "" {
		extra = append(extra, qwenlayout.KV{Key: "vembed.recipe", Value: info.recipe})
	}
	if isColQwen(layout) {
		prefix := recipe.DefaultQueryPrefix
		if o.QueryPrefix != nil {
			prefix = *o.QueryPrefix
		}
		extra = append(extra, qwenlayout.KV{Key: recipe.QueryPrefixKey, Value: prefix})
	}
	extra = append(extra, info.keys...)
	if len(warnings) > 0 {
		extra = append(extra, qwenlayout.KV{Key: "vembed.warning", Value: strings.Join(warnings, "; ")})
	}
	if info.pooling >= 0 {
		extra = append(extra, qwenlayout.KV{Key: "qwen2vl.pooling_type", Value: uint32(info.pooling)})
	}
	var keep *Adapter // a single adapter, kept open for the tower's modules
	defer func() {
		if keep != nil {
			keep.Close()
		}
	}()
	shared := false // an LM runs with the tower no task adapter changed
	for _, task := range tasks {
		cfg := base
		if len(tasks) > 1 {
			cfg.Name = base.Name + "-" + task
		}
		c.adapter = nil
		if info.adapter != "" {
			if c.adapter, err = openAdapter(task); err != nil {
				return res, err
			}
		}
		// A task adapter with pairs on the tower gets its own mmproj, and
		// both files name the task so that the engine refuses another
		// task's (or an unadapted) tower with this LM.
		ownTower := info.tasked && c.adapter != nil && c.adapter.AdaptsTower()
		lmExtra := extra
		if ownTower {
			lmExtra = append(slices.Clip(extra), qwenlayout.KV{Key: recipe.VisionAdapterKey, Value: task})
		}
		lm, err := c.writeLM(cfg, outDir, qwenlayout.VocabKVs(vocab, tmpl), lmExtra)
		if err == nil {
			res.LMs, res.Tasks = append(res.LMs, lm), append(res.Tasks, task)
			log.Info("wrote the language model", "file", lm, "task", task)
			if info.head != "" {
				var mv string
				if mv, err = c.writeMVProj(cfg, outDir, info.head, task, mvRows); err == nil {
					res.MVProjs = append(res.MVProjs, mv)
					log.Info("wrote the multi-vector head", "file", mv)
				}
			}
		}
		if err == nil {
			mm := ""
			if ownTower {
				if mm, err = c.writeMMProj(cfg, outDir, qwenlayout.KV{Key: recipe.VisionAdapterKey, Value: task}); err == nil {
					log.Info("wrote the vision encoder with the task's tower LoRA", "file", mm, "task", task)
				}
			}
			shared = shared || !ownTower
			res.MMProjs = append(res.MMProjs, mm)
		}
		if c.adapter != nil && info.tasked {
			c.adapter.Close()
		} else {
			keep = c.adapter
		}
		if err != nil {
			return res, err
		}
	}
	if shared {
		c.adapter = keep // nil for task adapters: their towers are written above
		if res.MMProj, err = c.writeMMProj(base, outDir); err != nil {
			return res, err
		}
		log.Info("wrote the vision encoder", "file", res.MMProj)
		for i, mm := range res.MMProjs {
			if mm == "" {
				res.MMProjs[i] = res.MMProj
			}
		}
	}
	var unused []string
	for _, n := range src.unused() {
		// A tied head duplicates the embeddings; a reranker keeps two rows
		// of the head; a retriever's LM head, next-token predictor (mtp)
		// and other head widths go unused by design.
		cn := canonical(n)
		if qwen35 && (cn == "lm_head.weight" || strings.HasPrefix(cn, "mtp.") || strings.HasPrefix(cn, "custom_text_proj.")) {
			continue
		}
		if !(cn == "lm_head.weight" && (!base.LM.Untied || base.LM.Pooling == "rank")) {
			unused = append(unused, n)
		}
	}
	if len(unused) > 0 {
		log.Warn("checkpoint tensors left out of every file", "count", len(unused), "first", unused[:min(5, len(unused))])
	}
	return res, nil
}

// isDecoder reports whether a canonical checkpoint name is the decoder's
// (rather than the tower's or a head's).
func isDecoder(canon string) bool {
	return strings.HasPrefix(canon, "model.") || strings.HasPrefix(canon, "lm_head.")
}

// converter fills planned tensors from a checkpoint.
type converter struct {
	ctx        context.Context
	src        *source
	naming     qwenlayout.HFNaming
	vocab      int
	adapter    *Adapter
	progress   func(file string, done, total int64)
	done, size int64
	file       string
}

func (c *converter) writeLM(cfg qwenlayout.Config, outDir string, tok []qwenlayout.KV, extra []qwenlayout.KV) (string, error) {
	l, err := cfg.LMLayout(tok)
	if err != nil {
		return "", fmt.Errorf("convert: %w", err)
	}
	l.KVs = append(l.KVs, extra...)
	path := filepath.Join(outDir, cfg.LMFileName())
	return path, c.write(path, l, c.planned)
}

func (c *converter) writeMMProj(cfg qwenlayout.Config, outDir string, extra ...qwenlayout.KV) (string, error) {
	l, err := cfg.MMProjLayout()
	if err != nil {
		return "", fmt.Errorf("convert: %w", err)
	}
	l.KVs = append(l.KVs, extra...)
	spec, err := quantize.ParseSpec(cfg.MMProjType)
	if err != nil {
		return "", fmt.Errorf("convert: %w", err)
	}
	patch := gguf.TypeF32
	for i, t := range l.Tensors {
		if spec.Quantized() && len(t.NE) >= 2 && slices.Contains(quantize.DefaultKeep, quantize.VisionGroup(t.Name)) {
			l.Tensors[i].Type = gguf.TypeF16
		}
		if t.Name == "v.patch_embd.weight" {
			patch = l.Tensors[i].Type
		}
	}
	// The flat patch weight (proj.weight viewed [W, 3·T·p·p]) lets the
	// engine embed patches with one matrix product; llama.cpp ignores it.
	W, p := int64(cfg.Vision.Width), int64(cfg.Vision.PatchSize)
	l.Tensors = append(l.Tensors, qwenlayout.TensorLayout{Name: "v.patch_embd.weight_flat", NE: []int64{3 * qwenlayout.TemporalPatch * p * p, W}, Type: patch})
	path := filepath.Join(outDir, cfg.MMProjFileName())
	return path, c.write(path, l, func(t qwenlayout.TensorLayout, dst io.Writer) error {
		if t.Name == "v.patch_embd.weight_flat" {
			return c.rows(dst, t, "visual.patch_embed.proj.weight", 0, false)
		}
		return c.planned(t, dst)
	})
}

// writeMVProj writes the head as the mvproj side-car: its first rows rows
// (0: all), bias included; a linear layer's output cut to its first rows
// is the linear layer of those rows.
func (c *converter) writeMVProj(cfg qwenlayout.Config, outDir, head, task string, rows int) (string, error) {
	t, _ := c.src.tensor(head + ".weight")
	b, ok := c.src.tensor(head + ".bias")
	switch {
	case len(t.Shape) != 2 || t.Shape[1] != int64(cfg.LM.Hidden):
		return "", fmt.Errorf("convert: %s.weight is %v, want [out, %d]", head, t.Shape, cfg.LM.Hidden)
	case !ok || len(b.Shape) != 1 || b.Shape[0] != t.Shape[0]:
		return "", fmt.Errorf("convert: %s.bias is missing or not [%d]", head, t.Shape[0])
	case int64(rows) > t.Shape[0]:
		return "", fmt.Errorf("convert: %d rows of the %d of %s", rows, t.Shape[0], head)
	}
	if rows == 0 {
		rows = int(t.Shape[0])
	}
	cfg.MVProj = qwenlayout.MVProjConfig{OutputDim: rows, Task: task, Normalize: true, Type: "F32"}
	l, err := cfg.MVProjLayout()
	if err != nil {
		return "", fmt.Errorf("convert: %w", err)
	}
	path := filepath.Join(outDir, cfg.MVProjFileName())
	return path, c.write(path, l, func(t qwenlayout.TensorLayout, dst io.Writer) error {
		name := head + strings.TrimPrefix(t.Name, "mvproj")
		if len(t.NE) == 1 && c.adapter == nil { // the bias, whose first rows values are the cut's
			vals, err := c.src.values(name, 0, t.NE[0])
			if err != nil {
				return err
			}
			return c.emit(dst, t.Type, vals)
		}
		return c.rows(dst, t, name, 0, true)
	})
}

// write streams a planned file.
func (c *converter) write(path string, l *qwenlayout.Layout, fill qwenlayout.Fill) error {
	c.file, c.done, c.size = filepath.Base(path), 0, 0
	for _, t := range l.Tensors {
		c.size += t.Elements()
	}
	if err := qwenlayout.WriteFile(path, l, fill); err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	return nil
}

// planned fills a tensor of an LM or mmproj layout from its checkpoint
// source, checking the shape first.
func (c *converter) planned(t qwenlayout.TensorLayout, dst io.Writer) error {
	src, ok := qwenlayout.HFSourceOf(t.Name, c.naming)
	if !ok {
		return errors.New("no checkpoint source for this tensor")
	}
	hf, ok := c.src.tensor(src.Name)
	if !ok {
		return fmt.Errorf("the checkpoint has no %s", src.Name)
	}
	want, err := qwenlayout.HFTensors(&qwenlayout.Layout{Tensors: []qwenlayout.TensorLayout{t}}, c.naming, c.vocab)
	if err != nil {
		return err
	}
	if !slices.Equal(hf.Shape, want[0].Shape) {
		return fmt.Errorf("checkpoint tensor %s is %v, config.json implies %v", src.Name, hf.Shape, want[0].Shape)
	}
	if src.Transform != qwenlayout.TransformNone || src.Heads != nil {
		return c.transformed(dst, t, src)
	}
	if src.Rows != nil {
		// Whole rows of the head, in order, merged with the adapter's
		// update of those rows when there is one.
		cols := t.NE[0]
		var out []float64
		for _, r := range src.Rows {
			vals, err := c.src.values(src.Name, int64(r)*cols, cols)
			if err != nil {
				return err
			}
			if c.adapter != nil && c.adapter.touches(src.Name) {
				if err := c.adapter.mergeRows(src.Name, vals, r, int(cols)); err != nil {
					return err
				}
			}
			out = append(out, vals...)
		}
		return c.emit(dst, t.Type, out)
	}
	if src.Temporal {
		all, err := c.src.values(src.Name, 0, hf.Elements())
		if err != nil {
			return err
		}
		// [W, 3, T, p, p] → the T-th [W, 3, p, p] kernel.
		W, T, pp := hf.Shape[0], hf.Shape[2], hf.Shape[3]*hf.Shape[4]
		out := make([]float64, 0, W*3*pp)
		for o := range W {
			for ch := range int64(3) {
				at := ((o*3+ch)*T + int64(src.Part)) * pp
				out = append(out, all[at:at+pp]...)
			}
		}
		return c.emit(dst, t.Type, out)
	}
	return c.rows(dst, t, src.Name, int64(src.Part)*t.Elements(), true)
}

// rows streams tensor t from the checkpoint tensor name starting at value
// offset, a block of whole rows at a time, merging the adapter's update
// when merge is set.
func (c *converter) rows(dst io.Writer, t qwenlayout.TensorLayout, name string, offset int64, merge bool) error {
	hf, ok := c.src.tensor(name)
	if !ok {
		return fmt.Errorf("the checkpoint has no %s", name)
	}
	n, cols := t.Elements(), t.NE[0]
	if offset+n > hf.Elements() || hf.Elements()%cols != 0 {
		return fmt.Errorf("checkpoint tensor %s is %v, too small for %v", name, hf.Shape, t.NE)
	}
	merge = merge && c.adapter != nil && c.adapter.touches(name)
	per := max(1, (1<<20)/cols) * cols
	for s := int64(0); s < n; s += per {
		if err := c.ctx.Err(); err != nil {
			return err
		}
		vals, err := c.src.values(name, offset+s, min(per, n-s))
		if err != nil {
			return err
		}
		if merge {
			if err := c.adapter.mergeRows(name, vals, int((offset+s)/cols), int(cols)); err != nil {
				return err
			}
		}
		if err := c.emit(dst, t.Type, vals); err != nil {
			return err
		}
	}
	return nil
}

// emit rounds float64 values once to typ (through float32, which holds
// every F16 and BF16 value and, at 24 bits, rounds no differently from a
// direct rounding: 24 ≥ 2·11 + 2) and writes them; block types encode
// the whole rows given as gguf.Quantize does.
func (c *converter) emit(dst io.Writer, typ gguf.Type, vals []float64) error {
	f32 := make([]float32, len(vals))
	for i, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > math.MaxFloat32 {
			return fmt.Errorf("a weight is not a finite float32 (%v)", v)
		}
		f32[i] = float32(v)
	}
	var b []byte
	if typ == gguf.TypeF32 {
		b = make([]byte, 4*len(f32))
		for i, v := range f32 {
			u := math.Float32bits(v)
			b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
		}
	} else {
		var err error
		if b, err = gguf.Quantize(typ, f32); err != nil {
			return err
		}
	}
	if _, err := dst.Write(b); err != nil {
		return err
	}
	c.done += int64(len(vals))
	if c.progress != nil {
		c.progress(c.file, c.done, c.size)
	}
	return nil
}
