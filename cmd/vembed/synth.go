package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/vembed/vembed/qwenlayout"
	"github.com/vembed/vembed/safetensors"
	"github.com/vembed/vembed/synth"
)

func init() {
	register(&command{
		name: "synth",
		// The presets and layouts are synth's and qwenlayout's, so new ones
		// show in the help.
		summary: "write a synthetic Qwen2-VL / Qwen2.5-VL / Qwen3-VL GGUF pair (presets: " + strings.Join(synth.Presets(), ", ") +
			"), a retrieval dataset, or a Hugging Face checkpoint (layouts: " + strings.Join(qwenlayout.Layouts(), ", ") + ")",
		run: runSynth,
	})
}

func runSynth(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("synth", "--out DIR [flags] | --dataset DIR [--docs N] [--queries N]", stderr)
	dataset := fs.String("dataset", "", "write a small retrieval dataset with rendered pages into `DIR` (BEIR in JSONL and Parquet, ViDoRe v1; --seed) instead of a model")
	docs := fs.Int("docs", 12, "pages of the --dataset corpus")
	queries := fs.Int("queries", 8, "queries of the --dataset, one per page at most")
	preset := fs.String("preset", "tiny", "model shapes: "+strings.Join(synth.Presets(), ", "))
	out := fs.String("out", "", "output directory (required)")
	lmType := fs.String("type", "", "LM weight type: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K, IQ4_XS, ... or a mix (Q4_K_M, Q4_K_S, Q5_K_M, Q5_K_S); default the preset's (F32)")
	mmType := fs.String("mmproj-type", "", "mmproj weight type (default the preset's, F32)")
	seed := fs.Uint64("seed", 0, "seed of the LM weights (mmproj uses seed+1, mvproj seed+2); default the preset's (1234)")
	std := fs.Float64("std", 0, "standard deviation of the weights; default the preset's (0.02)")
	mv := fs.Bool("mvproj", false, "also write the multi-vector projector side-car")
	vocabFrom := fs.String("vocab-from", "", "copy the tokenizer from this GGUF (its size must match the preset's vocabulary)")
	workers := fs.Int("workers", 0, "goroutines generating tensors; 0 keeps the default (2)")
	format := fs.String("format", "gguf", "gguf: a GGUF pair; hf: a Hugging Face checkpoint (see --layout, --dtype) for vembed convert")
	layout := fs.String("layout", qwenlayout.LayoutJinaV4, "--format hf: checkpoint layout, "+strings.Join(qwenlayout.Layouts(), ", ")+" (gme and colqwen2 need a Qwen2-VL preset: tiny-qwen2vl, the default for them, or qwen2vl-2b; qwen3-vl, qwen3-vl-reranker, colqwen3, ops-colqwen3 and nemotron-colembed-vl a Qwen3-VL one: tiny-qwen3vl, the default for them, or the 2B and 4B presets; colqwen3.5 and colvec1.1 a Qwen3.5 one: tiny-qwen35, the default for them)")
	dtype := fs.String("dtype", "BF16", "--format hf: weight dtype, BF16, F16 or F32")
	adapterDir := fs.String("adapter-dir", "", "--format hf, colqwen layouts: write the LoRA adapter into its own `DIR` as the releases ship it (adapter_config.json naming the base as synthetic/<--out's name>, its processor and tokenizer configs) instead of inside the base; convert DIR then finds the base beside it (colqwen3.5: a stock Qwen3.5 base, the head saved whole in the adapter)")
	adapterNewNames := fs.Bool("adapter-new-names", false, "--format hf, colqwen and jina-v4 layouts: name the adapter's modules as transformers 4.52+ does (model.language_model.*, model.visual.*)")
	headDims := fs.String("head-dims", "", "--format hf, colqwen3.5: the head in a Matryoshka form, one Linear per width of this comma list (`W1,W2,...`, ascending), or one Linear to the widest with --mrl-prefix")
	mrlPrefix := fs.Bool("mrl-prefix", false, "--format hf, colqwen3.5 with --head-dims: one Linear whose prefixes are the widths")
	adapterVision := fs.Bool("adapter-vision", false, "--format hf, colqwen and jina-v4 layouts: also put LoRA pairs on the vision tower's attention and MLP matrices (every task's, for jina-v4)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError(fs, stderr, "unexpected argument %q", pos[0])
	}
	if *dataset != "" {
		if err := synth.WriteDataset(*dataset, synth.DatasetOptions{Docs: *docs, Queries: *queries, Seed: *seed}); err != nil {
			return err
		}
		fmt.Fprintln(stdout, *dataset)
		fmt.Fprintln(stdout, filepath.Join(*dataset, "parquet"))
		fmt.Fprintln(stdout, filepath.Join(*dataset, "vidore", "test.parquet"))
		return nil
	}
	if *out == "" {
		return usageError(fs, stderr, "--out is required")
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var dims []int
	for _, w := range strings.Split(*headDims, ",") {
		if w = strings.TrimSpace(w); w == "" {
			continue
		}
		d, err := strconv.Atoi(w)
		if err != nil {
			return usageError(fs, stderr, "--head-dims %q: want a comma list of widths", *headDims)
		}
		dims = append(dims, d)
	}
	if *mrlPrefix && len(dims) == 0 {
		return usageError(fs, stderr, "--mrl-prefix goes with --head-dims")
	}
	for _, f := range []string{"adapter-dir", "adapter-new-names", "adapter-vision", "head-dims", "mrl-prefix"} {
		if set[f] && *format != "hf" {
			return usageError(fs, stderr, "--%s goes with --format hf", f)
		}
	}
	qwen3 := *layout == qwenlayout.LayoutQwen3VL || *layout == qwenlayout.LayoutQwen3VLReranker
	retriever := *layout == qwenlayout.LayoutColQwen3 || *layout == qwenlayout.LayoutOpsColQwen3 || *layout == qwenlayout.LayoutNemotronColEmbed
	if *format == "hf" && !set["preset"] {
		switch {
		case *layout == qwenlayout.LayoutGME || *layout == qwenlayout.LayoutColQwen2:
			*preset = "tiny-qwen2vl"
		case qwen3 || retriever:
			*preset = "tiny-qwen3vl"
		case *layout == qwenlayout.LayoutColQwen35 || *layout == qwenlayout.LayoutColVec:
			*preset = "tiny-qwen35"
		}
	}
	cfg, err := synth.Preset(*preset)
	if err != nil {
		return err
	}
	if *format == "hf" && qwen3 {
		// The checkpoints differ in name only; the reranker's
		// configuration has the rank head (and "yes" and "no" tokens).
		cfg.LM.Pooling = map[bool]string{true: "rank", false: "last"}[*layout == qwenlayout.LayoutQwen3VLReranker]
	}
	if *format == "hf" && retriever {
		cfg.LM.Pooling = ""
	}
	if *lmType != "" {
		cfg.LMType = *lmType
	}
	if *mmType != "" {
		cfg.MMProjType = *mmType
	}
	if set["seed"] {
		cfg.Seed = *seed
	}
	if set["std"] {
		if !(*std >= 0) || *std > math.MaxFloat32 {
			return errors.New("--std must be a finite non-negative number")
		}
		cfg.Std = float32(*std)
	}
	if *workers != 0 {
		cfg.Workers = *workers
	}
	cfg.VocabFrom = *vocabFrom

	cfg.Progress = synthProgress(stderr)
	start := time.Now()
	switch *format {
	case "hf":
		o := synth.HFOptions{Layout: *layout, DType: safetensors.DType(strings.ToUpper(*dtype)),
			AdapterDir: *adapterDir, AdapterNewNames: *adapterNewNames, AdapterVision: *adapterVision,
			HeadDims: dims, MRLPrefix: *mrlPrefix}
		if err := synth.WriteHF(*out, cfg, o); err != nil {
			return err
		}
		fmt.Fprintln(stdout, *out)
		if *adapterDir != "" {
			fmt.Fprintln(stdout, *adapterDir)
		}
		fmt.Fprintf(stderr, "wrote %s as a %s checkpoint in %.1fs\n", *preset, *layout, time.Since(start).Seconds())
		return nil
	case "gguf":
	default:
		return usageError(fs, stderr, "--format %q: gguf or hf", *format)
	}
	lm, mm, err := synth.WritePair(*out, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, lm)
	fmt.Fprintln(stdout, mm)
	if *mv {
		p := filepath.Join(*out, cfg.MVProjFileName())
		if err := synth.WriteMVProj(p, cfg); err != nil {
			return err
		}
		fmt.Fprintln(stdout, p)
	}
	fmt.Fprintf(stderr, "wrote %s in %.1fs\n", *preset, time.Since(start).Seconds())
	return nil
}

// synthProgress draws one bar of weights per file written (on a terminal).
func synthProgress(w io.Writer) func(file string, done, total int64) {
	var bar *progressbar.ProgressBar
	var cur string
	return func(file string, done, total int64) {
		if file != cur {
			cur = file
			bar = newBar(w, total, file, false)
		}
		bar.Set64(done)
	}
}
