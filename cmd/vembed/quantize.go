package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/quantize"
)

func init() {
	register(&command{name: "quantize", summary: "re-encodes an LM or mmproj GGUF in another weight type or mix", run: runQuantize})
}

const quantizeUsage = `IN.gguf OUT.gguf [--type T] [--keep GROUPS] [--threads N] [--dry-run]

Writes IN's tensors re-encoded as T: a ggml type (F32, F16, BF16, Q8_0, Q6_K,
Q5_K, Q4_K, Q3_K, Q2_K, Q5_0, Q5_1, Q4_0, Q4_1, IQ4_NL, IQ4_XS: every matrix in
that type, with llama-quantize's fallback types for rows it cannot hold) or
one of llama-quantize's mixes (` + quantize.MixNames + `).
Norms, biases and other vectors keep their type. A vision encoder (mmproj)
keeps the groups named by --keep in its input precision; the rest takes T.
Input already quantized is dequantized and quantized again (with a warning).
OUT is written through a temporary file and appears only when complete.`

func runQuantize(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("quantize", quantizeUsage, stderr)
	typ := fs.String("type", "", "target weight type or mix (default: Q4_K_M for a language model, "+quantize.DefaultVisionType+" for an mmproj)")
	keep := fs.String("keep", "", "mmproj tensor groups kept in input precision, comma-separated or none (default: "+groupNames(quantize.DefaultKeep)+"; groups: patch, position, attn_qkv, attn_out, ffn_up, ffn_down, merger, other)")
	threads := fs.Int("threads", runtime.GOMAXPROCS(0), "encoding goroutines")
	dry := fs.Bool("dry-run", false, "print the per-tensor plan and write nothing")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 && !(*dry && len(pos) == 1) {
		return usageError(fs, stderr, "give IN.gguf and OUT.gguf (got %d arguments)", len(pos))
	}
	in := pos[0]
	arch, err := fileArch(in)
	if err != nil {
		return err
	}
	if *typ == "" {
		*typ = "Q4_K_M"
		if arch == "clip" {
			*typ = quantize.DefaultVisionType
		}
	}
	spec, err := quantize.ParseSpec(*typ)
	if err != nil {
		return err
	}
	opts := quantize.Options{Spec: spec, Workers: *threads, Log: slog.New(slog.NewTextHandler(stderr, nil))}
	if *keep != "" {
		if opts.Keep, err = quantize.ParseGroups(*keep); err != nil {
			return err
		}
	}
	if *dry {
		f, err := gguf.Open(in)
		if err != nil {
			return err
		}
		defer f.Close()
		rep, err := quantize.Plan(f, opts)
		if err != nil {
			return err
		}
		for _, p := range rep.Tensors {
			fmt.Fprintf(stdout, "%-40s %-22s %-7s -> %-7s %s\n", p.Name, fmt.Sprint(p.Dims), p.From, p.To, p.Why)
		}
		return nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	bar := newByteBar(stderr, 1, "quantize "+spec.Name)
	opts.Progress = func(done, total int64) {
		bar.ChangeMax64(total)
		bar.Set64(done)
	}
	rep, err := quantize.File(ctx, in, pos[1], opts)
	if err != nil {
		return err
	}
	bar.Finish()
	fmt.Fprintf(stderr, "%s: %d tensors, %.1f MiB -> %.1f MiB (%s", pos[1], len(rep.Tensors),
		float64(rep.InBytes)/(1<<20), float64(rep.OutBytes)/(1<<20), spec.Name)
	if rep.Arch == "clip" && spec.Quantized() {
		fmt.Fprintf(stderr, ", kept: %s", groupNames(rep.VisionKeptGroup))
	}
	if rep.Fallbacks > 0 {
		fmt.Fprintf(stderr, ", %d fallbacks", rep.Fallbacks)
	}
	fmt.Fprintln(stderr, ")")
	return nil
}

func fileArch(path string) (string, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	arch, err := f.String("general.architecture")
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return arch, nil
}

func groupNames(gs []quantize.Group) string {
	if len(gs) == 0 {
		return "none"
	}
	s := make([]string, len(gs))
	for i, g := range gs {
		s[i] = string(g)
	}
	return strings.Join(s, ",")
}
