package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/vembed/vembed/bench"
)

const benchRegressUsage = `--lm LM.gguf --mmproj MMPROJ.gguf (--against OLD_VEMBED | --baseline FIGURES.json)
       [--rounds 3] [--texts 8] [--text-tokens 137] [--image 448] [--max-ratio 1.05] [--binary VEMBED]`

func init() { benchCommands["regress"] = runBenchRegress }

// runBenchRegress is "vembed bench regress", whole "vembed embed"
// processes of this binary against a baseline (bench.Regress says why).
func runBenchRegress(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench regress", benchRegressUsage, stderr)
	lm := fs.String("lm", "", "language-model `GGUF`")
	mmproj := fs.String("mmproj", "", "vision-tower `GGUF`")
	against := fs.String("against", "", "baseline `binary` (the previous release's vembed), run alternately with this one")
	baseline := fs.String("baseline", "", "`file` holding the JSON line of an earlier run on this machine (e.g. of the previous release), to compare with instead of running a baseline binary")
	rounds := fs.Int("rounds", 3, "alternated runs of each case per binary; medians are reported")
	texts := fs.Int("texts", 8, "texts of the text case, in one embed call")
	textTokens := fs.Int("text-tokens", 137, "prompt `tokens` of each text, the task prefix included")
	size := fs.Int("image", 448, "side in pixels of the square image of the image case")
	maxRatio := fs.Float64("max-ratio", 1.05, "fail when a case takes more than this times the baseline's CPU time")
	binary := fs.String("binary", "", "the vembed `binary` to measure (default: this one)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError(fs, stderr, "unexpected argument %q", pos[0])
	}
	cfg := bench.RegressConfig{LM: *lm, MMProj: *mmproj, Binary: *binary, Against: *against, Baseline: *baseline,
		Rounds: *rounds, Texts: *texts, TextTokens: *textTokens, Image: *size, MaxRatio: *maxRatio, Log: stderr}
	if err := cfg.Check(); err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	rep, regressions, err := bench.Regress(cfg)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\twall s\tCPU s\tbaseline wall s\tbaseline CPU s\tCPU ratio\twall ratio\tmin cosine\t")
	for _, f := range rep.Cases {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.3f\t%.3f\t%.6f\t\n", f.Case, f.WallS, f.CPUS, f.BaseWallS, f.BaseCPUS, f.CPURatio, f.WallRatio, f.MinCosine)
	}
	tw.Flush()
	line, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s\n", line)
	if len(regressions) > 0 {
		return fmt.Errorf("regression: %s", strings.Join(regressions, "; "))
	}
	return nil
}
