package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/vembed/vembed/bench"
	"github.com/vembed/vembed/engine"
)

func init() { benchCommands["serve"] = runBenchServe }

// runBenchServe is "vembed bench serve", the load benchmark of a server
// (bench.Serve says what each scenario measures).
func runBenchServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench serve", "[--url URL[,URL...] | --lm LM.gguf --mmproj MMPROJ.gguf] [--scenarios Q,T,I-0,I-50,I-50-text,repeat,M] [--clients 4] [--requests 24] [--image-sizes 448,640] [--large 896] [--q-rounds 1] [--images FILE|DIR,...] [--json]", stderr)
	urls := fs.String("url", "", "comma-separated `URLs` of running replicas, sent requests round robin (cache hit ratios are summed over their /metrics; with a shared cache, its ratio is the cross-replica one); default: an in-process server")
	lm := fs.String("lm", "", "LM `GGUF` of the in-process server (default: the tiny synthetic model)")
	mmproj := fs.String("mmproj", "", "mmproj `GGUF` of the in-process server")
	scen := fs.String("scenarios", "Q,T,I-0,I-50,I-50-text,repeat,M", "`scenarios` to run, in order")
	clients := fs.Int("clients", 4, "concurrent clients of the T and I scenarios")
	requests := fs.Int("requests", 24, "requests of the T and I scenarios")
	sizesFlag := fs.String("image-sizes", "448,640", "square image `sizes` of the I scenarios, used in turn")
	large := fs.Int("large", 896, "image `size` the M scenario's background clients send")
	qRounds := fs.Int("q-rounds", 1, "`rounds` of the Q scenario; the round with the median ratio is reported")
	asJSON := fs.Bool("json", false, "print only the JSON line")
	imagesFlag := fs.String("images", "", "comma-separated image `files or folders` that I-0 sends, each once in name order, instead of synthetic images (--requests is then their number)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	sizes, err := parseInts(*sizesFlag)
	if err != nil || len(sizes) == 0 {
		return fmt.Errorf("--image-sizes %q: want sizes like 448,640", *sizesFlag)
	}
	cfg := bench.ServeConfig{LM: *lm, MMProj: *mmproj, Scenarios: strings.Split(*scen, ","), Clients: *clients, Requests: *requests,
		Sizes: sizes, Large: *large, QRounds: *qRounds, Log: stderr,
		Load: func(c engine.Config) (*engine.Engine, error) { return loadEngine(stderr, c) }}
	if *urls != "" {
		cfg.URLs = strings.Split(*urls, ",")
	}
	if *imagesFlag != "" {
		cfg.Images = strings.Split(*imagesFlag, ",")
	}
	rows, err := bench.Serve(cfg)
	if err != nil {
		return err
	}
	if !*asJSON {
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "scenario\treq\treq/s\ttok/s\tp50 s\tp95 s\tp99 s\tsteps\tcpu s\tratio\tcpu ratio\tcache hits\tnote")
		for _, r := range rows {
			var hits []string
			for _, name := range slices.Sorted(maps.Keys(r.CacheHits)) {
				hits = append(hits, fmt.Sprintf("%s %.0f%%", name, 100*r.CacheHits[name]))
			}
			steps := "-"
			if r.Steps > 0 {
				steps = strconv.FormatInt(r.Steps, 10)
			}
			fmt.Fprintf(tw, "%s\t%d\t%.3g\t%.4g\t%.3g\t%.3g\t%.3g\t%s\t%.3g\t%.3g\t%.3g\t%s\t%s\n", r.Scenario, r.Requests, r.ReqPerSec, r.TokPerSec, r.P50, r.P95, r.P99, steps, r.CPUSeconds, r.Ratio, r.CPURatio, strings.Join(hits, ", "), r.Note)
		}
		tw.Flush()
	}
	line, _ := json.Marshal(map[string]any{"bench_serve": rows})
	fmt.Fprintln(stdout, string(line))
	return nil
}
