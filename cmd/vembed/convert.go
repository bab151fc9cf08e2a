package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/vembed/vembed/convert"
	"github.com/vembed/vembed/gguf"
)

func init() {
	register(&command{name: "convert", summary: "a Hugging Face Qwen2-VL / Qwen2.5-VL checkpoint's language model to GGUF, with a LoRA adapter merged", run: runConvert})
}

const convertUsage = `HF_DIR --out LM.gguf [--mmproj-out MMPROJ.gguf] [--mvproj-out MV.gguf] [--type F16|BF16|F32] [--adapter ADAPTER_DIR] [--recipe NAME]

Writes the checkpoint's language model (config.json, tokenizer.json,
safetensors, sharded or not) as llama.cpp names it, with the PEFT adapter in
ADAPTER_DIR (adapter_config.json + adapter_model.safetensors, e.g. one of
jina-embeddings-v4's task adapters) merged in float64 before the single
rounding, and with --mmproj-out the Qwen2.5-VL vision tower and merger as
llama.cpp's mmproj (fused qkv split, Conv3D patch embedding split along
time). Quantize the results with vembed quantize.`

func runConvert(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("convert", convertUsage, stderr)
	out := fs.String("out", "", "output `file`")
	mmOut := fs.String("mmproj-out", "", "also write the vision tower as an mmproj GGUF `file`")
	mvOut := fs.String("mvproj-out", "", "also write the multi-vector head (jina-v4's multi_vector_projector, ColQwen's custom_text_proj) as an mvproj `file`, the adapter merged")
	typ := fs.String("type", "F16", "weight type: F16, BF16 or F32")
	adapter := fs.String("adapter", "", "merge the PEFT LoRA adapter in `dir`")
	task := fs.String("task", "", "jina-embeddings-v4 layout: merge HF_DIR/adapters/`TASK` (retrieval, text-matching, code), or all: one LM (and mvproj) per task, named after --out")
	recipe := fs.String("recipe", "", "write vembed.recipe = `NAME` (jina-embeddings-v4, gme, ...) so serve picks the model's prompts and pooling")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 1:
		return usageError(fs, stderr, "give one HF_DIR (got %d arguments)", len(pos))
	case *out == "":
		return usageError(fs, stderr, "--out is required")
	}
	t, ok := map[string]gguf.Type{"F16": gguf.TypeF16, "BF16": gguf.TypeBF16, "F32": gguf.TypeF32}[strings.ToUpper(*typ)]
	if !ok {
		return usageError(fs, stderr, "--type %q: F16, BF16 or F32 (quantize the result with vembed quantize)", *typ)
	}
	o := convert.LMOptions{Type: t}
	if *recipe != "" {
		o.Extra = map[string]any{"vembed.recipe": *recipe}
	}
	if *task != "" {
		if *adapter != "" {
			return usageError(fs, stderr, "give --task or --adapter, not both")
		}
		written, err := convert.Tasks(pos[0], *task, *out, *mmOut, *mvOut, o)
		for _, w := range written {
			fmt.Fprintln(stdout, w)
		}
		return err
	}
	if *adapter != "" {
		a, err := convert.OpenAdapter(*adapter)
		if err != nil {
			return err
		}
		defer a.Close()
		o.Adapter = a
	}
	if err := convert.ConvertLM(pos[0], *out, o); err != nil {
		return err
	}
	fmt.Fprintln(stdout, *out)
	if *mmOut != "" {
		if err := convert.ConvertMMProj(pos[0], *mmOut, t); err != nil {
			return err
		}
		fmt.Fprintln(stdout, *mmOut)
	}
	if *mvOut != "" {
		task := ""
		if o.Adapter != nil {
			task = filepath.Base(filepath.Clean(*adapter))
		}
		if err := convert.ConvertMVProj(pos[0], *mvOut, o.Adapter, task); err != nil {
			return err
		}
		fmt.Fprintln(stdout, *mvOut)
	}
	return nil
}
