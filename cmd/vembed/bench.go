package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vembed/vembed/bench"
	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/kernels"
)

func init() {
	register(&command{
		name:    "bench",
		summary: "measure kernel GFLOPS per tier and weight type against the peak of the instructions each tier uses",
		run:     runBench,
	})
}

// benchCommands are the other benchmarks, "vembed bench NAME": each file
// of one registers it from init, so adding one never touches runBench.
var benchCommands = map[string]func(args []string, stdout, stderr io.Writer) error{}

// runBench is "vembed bench", the kernel benchmark and, with --model, the
// end-to-end one; "vembed bench NAME" runs benchCommands[NAME].
func runBench(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		if sub, ok := benchCommands[args[0]]; ok {
			return sub(args[1:], stdout, stderr)
		}
	}
	if len(args) > 0 && args[0] == "search" {
		return runBenchSearch(args[1:], stdout, stderr)
	}
	fs := newFlags("bench", "[--types F32,Q8_0,...] [--tiers avx2,...] [--m 512,32] [--k 2048] [--n 2048] [--time 300ms] [--rounds 5] [--attn-tokens 1024] [--model [--lm LM.gguf --mmproj MMPROJ.gguf] [--texts 32] [--text-tokens 128] [--images 448,896] [--repeat 1] [--cpuprofile FILE] [--memprofile FILE]]", stderr)
	typesFlag := fs.String("types", "F32,F16,BF16,Q4_0,Q4_1,Q5_0,Q5_1,Q8_0,Q2_K,Q3_K,Q4_K,Q5_K,Q6_K,Q8_K,IQ4_NL,IQ4_XS", "weight `types` to measure")
	tiersFlag := fs.String("tiers", "", "kernel `tiers` to measure (default: every available tier but the reference)")
	msFlag := fs.String("m", "512,32", "activation row `counts` (tokens) to measure")
	k := fs.Int("k", 2048, "input features")
	n := fs.Int("n", 2048, "output features")
	dur := fs.Duration("time", 300*time.Millisecond, "time per measurement round")
	rounds := fs.Int("rounds", 5, "measurement rounds; the median is reported")
	attnTok := fs.Int("attn-tokens", 1024, "tokens of the attention cases (0 skips them)")
	withModel := fs.Bool("model", false, "also run the end-to-end model benchmark")
	lm := fs.String("lm", "", "LM `GGUF` of the --model benchmark (default: a tiny synthetic model written to a temporary directory)")
	mmproj := fs.String("mmproj", "", "mmproj `GGUF` of the --model benchmark (required with --lm)")
	texts := fs.Int("texts", 32, "texts in the --model text batch")
	textTokens := fs.Int("text-tokens", 128, "prompt `tokens` of each text, the task prefix included")
	images := fs.String("images", "448,896", "square image `sizes` of the --model benchmark, one request each (empty: none)")
	repeat := fs.Int("repeat", 1, "runs of each --model measurement; the median is reported")
	imageFormat := fs.String("image-format", "jpeg", "encoding of the synthetic images: jpeg or png")
	pack := fs.Bool("pack", true, "pack Q8_0 weights at load for the VNNI tiers, as vembed serve does (false: as vembed embed does)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the measured --model runs to `file` (go tool pprof)")
	memProfile := fs.String("memprofile", "", "write an allocation profile to `file` after the --model runs (go tool pprof -sample_index=alloc_space)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		// "bench --model FILE" reads as a model file, but --model only
		// switches the model figures on: say so rather than drop FILE.
		return usageError(fs, stderr, "unexpected argument %q: give the model files as --lm LM.gguf --mmproj MMPROJ.gguf (--model turns the model figures on)", pos[0])
	}
	types, err := parseTypes(*typesFlag)
	if err != nil {
		return err
	}
	ms, err := parseInts(*msFlag)
	if err != nil {
		return usageError(fs, stderr, "--m: %v", err)
	}
	if !*withModel && (*cpuProfile != "" || *memProfile != "") {
		return errors.New("--cpuprofile and --memprofile profile the --model benchmark; add --model")
	}
	var tiers []kernels.Tier
	if *tiersFlag != "" {
		for _, name := range strings.Split(*tiersFlag, ",") {
			tiers = append(tiers, kernels.Tier(strings.TrimSpace(name)))
		}
	}
	cfg := bench.KernelConfig{Types: types, Tiers: tiers, Ms: ms, K: *k, N: *n, Time: *dur, Rounds: *rounds,
		AttnTokens: *attnTok, Log: stderr,
		NewBar: func(total int64, desc string) bench.Bar { return newBar(stderr, total, desc, false) }}
	if err := cfg.Check(); err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	var mcfg bench.ModelConfig
	if *withModel {
		var sizes []int
		if *images != "" { // empty: text only
			if sizes, err = parseInts(*images); err != nil {
				return fmt.Errorf("--images: %w", err)
			}
		}
		mcfg = bench.ModelConfig{LM: *lm, MMProj: *mmproj, Texts: *texts, TextTokens: *textTokens,
			ImageSizes: sizes, ImageFormat: *imageFormat, Repeat: *repeat, Unpacked: !*pack,
			CPUProfile: *cpuProfile, MemProfile: *memProfile, Log: stderr,
			Load: func(cfg engine.Config) (*engine.Engine, error) { return loadEngine(stderr, oneCaller(cfg)) }}
		// Checked before the kernels' minutes, not after them.
		if err := mcfg.Check(); err != nil {
			return usageError(fs, stderr, "%v", err)
		}
	}
	rep, err := bench.Kernels(cfg)
	if err != nil {
		return err
	}
	if *withModel {
		// bench.Kernels has put back the tier a user gets, which the
		// model runs on.
		figs, err := bench.Model(mcfg)
		if err != nil {
			return fmt.Errorf("model benchmark: %w", err)
		}
		rep.Model = figs
	}
	printBenchTables(stdout, rep)
	line, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", line)
	return err
}

func parseTypes(s string) ([]gguf.Type, error) {
	var out []gguf.Type
	for _, name := range strings.Split(s, ",") {
		t, err := gguf.ParseType(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("bad count %q", f)
		}
		out = append(out, v)
	}
	return out, nil
}

func printBenchTables(w io.Writer, rep *bench.Report) {
	fmt.Fprintf(w, "kernel tier in use: %s; kernels use %d thread(s)\n", rep.Tier, rep.Threads)
	bench.PrintDefault(w, rep.Default)
	fmt.Fprintln(w, "peaks (billions of operations a second, a multiply-add counting two):")
	for _, u := range slices.Sorted(maps.Keys(rep.Peaks)) {
		fmt.Fprintf(w, "  %-13s", u)
		for _, th := range slices.Sorted(maps.Keys(rep.Peaks[u])) {
			fmt.Fprintf(w, " %s thread(s) %.1f;", th, rep.Peaks[u][th])
		}
		fmt.Fprintf(w, " per CPU-second of one core %.1f\n", rep.CorePeaks[u])
	}
	fmt.Fprintln(w, "% peak (cpu): GFLOPS per CPU-second used over the per-core peak of the unit; % peak (wall): wall GFLOPS over the unit's peak probes around it")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tier\ttype\tM\tK\tN\tGFLOPS\tpeak unit\t% peak (cpu)\t% peak (wall)\t")
	for _, g := range rep.GEMM {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.1f\t%s\t%.1f\t%.1f\t\n", g.Tier, g.Type, g.M, g.K, g.N, g.GFLOPS, g.Unit, g.PctPeakCPU, g.PctPeakWall)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tier\tattention\tGFLOPS\tpeak unit\t% peak (cpu)\t% peak (wall)\t")
	for _, a := range rep.Attention {
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%s\t%.1f\t%.1f\t\n", a.Tier, a.Case, a.GFLOPS, a.Unit, a.PctPeakCPU, a.PctPeakWall)
	}
	tw.Flush()
	if len(rep.Model) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "model\tmeasure\tvalue\tunit\t")
		for _, f := range rep.Model {
			fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t\n", f.Model, f.Name, f.Value, f.Unit)
		}
		tw.Flush()
	}
	fmt.Fprintln(w)
}
