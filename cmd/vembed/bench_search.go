package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/vembed/vembed/bench"
	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/index"
)

// runBenchSearch is "vembed bench search": package search against exact
// float32 brute force on synthetic indexes (bench.SearchConfig says how
// the vectors are made).
func runBenchSearch(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench search", "[--single 100000] [--single-dims 2048] [--pages 10000[,100000]] [--tokens 768] [--dims 128] [--query-tokens 20] [--queries 50] [--candidates N,...] [--sidecar float32[,float16]] [--dir DIR] [--demo-queries 20] [--rerank-queries 10] [--rerank-depth 20] [--json]", stderr)
	single := fs.Int("single", 100000, "items of the single-vector case (0: none)")
	singleDims := fs.Int("single-dims", 2048, "dimensions of the single vectors")
	pages := fs.String("pages", "10000", "page counts of the multi-vector cases, comma-separated (empty: none; 100000 writes about 40 GB of parts and a sidecar of 41 GB in float32, 21 GB in float16)")
	tokens := fs.Int("tokens", 768, "token vectors a page")
	dims := fs.Int("dims", 128, "dimensions of a token vector")
	qtok := fs.Int("query-tokens", 20, "token vectors a query")
	queries := fs.Int("queries", 50, "queries a case")
	cands := fs.String("candidates", "", "pages the first stage passes to exact MaxSim, comma-separated counts measured in turn (default: search's)")
	sidecars := fs.String("sidecar", "float32", "element types of the multi-vector cases' sidecars, comma-separated, each page count measured with each (float32, float16)")
	dir := fs.String("dir", "", "keep the synthetic indexes in `DIR` and reuse them in later runs (default: a temporary folder, removed)")
	demo := fs.Int("demo-queries", 20, "short text queries embedded by the demo model, for the query's own time (0: none)")
	rerankQ := fs.Int("rerank-queries", 10, "searches whose best --rerank-depth hits the tiny synthetic Qwen3-VL reranker rescores, for the rerank stage's cost (0: none)")
	rerankDepth := fs.Int("rerank-depth", 20, "hits a reranked search rescores")
	asJSON := fs.Bool("json", false, "print the figures as JSON only")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError(fs, stderr, "unexpected argument %q", pos[0])
	}
	var pageCounts []int
	if *pages != "" {
		if pageCounts, err = parseInts(*pages); err != nil {
			return usageError(fs, stderr, "--pages: %v", err)
		}
	}
	var candCounts []int
	if *cands != "" {
		if candCounts, err = parseInts(*cands); err != nil {
			return usageError(fs, stderr, "--candidates: %v", err)
		}
	}
	var types []index.SidecarType
	for _, v := range strings.Split(*sidecars, ",") {
		t, err := index.ParseSidecarType(strings.TrimSpace(v))
		if err != nil {
			return usageError(fs, stderr, "--sidecar: %v", err)
		}
		types = append(types, t)
	}
	cfg := bench.SearchConfig{Sidecars: types, Single: *single, SingleDims: *singleDims, Pages: pageCounts, Tokens: *tokens, Dims: *dims,
		QueryTokens: *qtok, Queries: *queries, Candidates: candCounts, Dir: *dir, DemoQueries: *demo, RerankQueries: *rerankQ, RerankDepth: *rerankDepth, Log: stderr,
		Load: func(c engine.Config) (*engine.Engine, error) { return loadEngine(stderr, c) }}
	rep, err := bench.Search(cfg)
	if err != nil {
		return err
	}
	if !*asJSON {
		bench.PrintSearch(stdout, rep)
	}
	b, _ := json.Marshal(map[string]any{"bench_search": rep})
	fmt.Fprintln(stdout, string(b))
	return nil
}
