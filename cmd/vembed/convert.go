package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/vembed/vembed/convert"
	"github.com/vembed/vembed/qwenlayout"
)

func init() {
	// The layouts are qwenlayout's, so a new one shows in the help.
	register(&command{name: "convert", summary: "a Hugging Face Qwen2-VL / Qwen2.5-VL / Qwen3-VL checkpoint to GGUF, adapters and multi-vector head merged; layouts: " +
		strings.Join(qwenlayout.Layouts(), ", "), run: runConvert})
	convertCheckpoint = func(ctx context.Context, dir, outDir string, log *slog.Logger) (checkpointFiles, error) {
		res, err := convert.Convert(ctx, dir, outDir, convert.Options{Log: log})
		if err != nil {
			return checkpointFiles{}, err
		}
		f := checkpointFiles{model: res.LMs[0], mmproj: res.MMProjs[0]}
		if len(res.MVProjs) > 0 {
			f.mvproj = res.MVProjs[0]
		}
		return f, nil
	}
}

const convertUsage = `HF_DIR|ADAPTER_DIR --out DIR [--task TASK|all] [--type F16] [--mmproj-type F16] [--layout L] [--name NAME] [--recipe NAME]
       [--base DIR] [--adapter DIR] [--no-adapter] [--query-prefix TEXT]
       [--head-dim W] [--max-visual-tokens N] [--query-template TEXT] [--multivector-rows all|image]

Writes the checkpoint's language model, vision encoder (mmproj) and, for
jina-embeddings-v4 and ColQwen, multi-vector head (mvproj) as GGUFs into
DIR, keys and tensor names as llama.cpp's converter writes them, LoRA
adapters merged in float64 before the single rounding. jina-embeddings-v4
gets one language model per task with --task all, and one mmproj per task
when its adapter has LoRA pairs on the vision tower (transformers 4.52+
module names); each task's files are printed together. A ColQwen adapter
directory (adapter_config.json) finds its base by base_model_name_or_path:
beside it, as a path, or in the Hugging Face cache (vembed pull ORG/NAME);
--base DIR names it. The image budget of preprocessor_config.json (the
adapter's first), or the family's own (GME, Qwen3-VL), goes into the mmproj.
The Qwen3.5 retrievers (colqwen3.5, colvec1.1) become a qwen35 LM with
bidirectional full-attention layers, an mmproj and their head as the
mvproj: ColQwen3.5's at one of its Matryoshka widths (--head-dim, default
the widest), the image budget in visual tokens of 32x32 pixels.`

func runConvert(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("convert", convertUsage, stderr)
	out := fs.String("out", "", "output `DIR`")
	task := fs.String("task", "", "jina-embeddings-v4's task adapter to merge (retrieval, text-matching, code; default retrieval), or all: one LM and mvproj per task")
	typ := fs.String("type", "F16", "LM weight type: F32, F16, BF16, Q8_0, Q6_K, Q4_K, ... or a llama.cpp mix (Q4_K_M, Q5_K_M, ...)")
	mmType := fs.String("mmproj-type", "F16", "vision encoder weight type (block types keep the patch embedding, attn_out and the merger in F16, as vembed quantize does)")
	layout := fs.String("layout", "", "checkpoint layout ("+strings.Join(qwenlayout.Layouts(), ", ")+"); default: told from the checkpoint")
	name := fs.String("name", "", "model name (general.name and file names; default from config.json or HF_DIR)")
	recipe := fs.String("recipe", "", "override vembed.recipe (jina-embeddings-v4, gme, colqwen2, ...); needed for a checkpoint of no known family")
	base := fs.String("base", "", "the base checkpoint `DIR` of the adapter HF_DIR (default: found by its base_model_name_or_path)")
	adapter := fs.String("adapter", "", "a LoRA adapter `DIR` to merge into HF_DIR (a ColQwen base's)")
	noAdapter := fs.Bool("no-adapter", false, "convert a ColQwen base without its adapter (its vectors are not the released model's)")
	prefix := fs.String("query-prefix", "", "ColQwen's query prefix stored in the LM (default \"Query: \", what the public checkpoints were trained with; colpali-engine 0.3.13+ uses none: --query-prefix '')")
	headDim := fs.Int("head-dim", 0, "colqwen3.5: the head width `W` among its head_dims (Matryoshka prefixes or independent heads; default the widest)")
	visualTokens := fs.Int("max-visual-tokens", 0, "colqwen3.5, colvec1.1: the image budget in visual tokens of 32x32 pixels (default: the checkpoint's max_num_visual_tokens, else its preprocessor's size; ColVec1.1's 1792)")
	queryTemplate := fs.String("query-template", "", "colqwen3.5, colvec1.1: the query prompt, {query} standing for the text (default \"{query}\" then ten <|endoftext|>, colpali-engine's)")
	rows := fs.String("multivector-rows", "", "colqwen3.5, colvec1.1: the rows of a multi-vector output, all (every token's, the default) or image (a page's image tokens' only)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 1:
		return usageError(fs, stderr, "give one HF_DIR (got %d arguments)", len(pos))
	case *out == "":
		return usageError(fs, stderr, "--out DIR is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	o := convert.Options{
		Layout: *layout, Task: *task, Type: *typ, MMProjType: *mmType, Name: *name, Recipe: *recipe,
		Base: *base, Adapter: *adapter, NoAdapter: *noAdapter, HeadDim: *headDim, MaxVisualTokens: *visualTokens, Rows: *rows,
		Log: slog.New(slog.NewTextHandler(stderr, nil)), Progress: synthProgress(stderr),
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "query-prefix":
			o.QueryPrefix = prefix
		case "query-template":
			o.QueryTemplate = queryTemplate
		}
	})
	res, err := convert.Convert(ctx, pos[0], *out, o)
	if res != nil {
		for i, lm := range res.LMs {
			fmt.Fprintln(stdout, lm)
			if i < len(res.MVProjs) {
				fmt.Fprintln(stdout, res.MVProjs[i])
			}
			if i < len(res.MMProjs) && res.MMProjs[i] != res.MMProj {
				fmt.Fprintln(stdout, res.MMProjs[i]) // the task's own tower
			}
		}
		if res.MMProj != "" {
			fmt.Fprintln(stdout, res.MMProj)
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "converted %s (layout %s) in %.1fs\n", pos[0], cmpOr(res.Layout, "plain"), time.Since(start).Seconds())
	return nil
}
