package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/index"
	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/search"
)

func init() {
	register(&command{name: "search", summary: "search an index written by vembed index: the best pages for a query (exact, or two-stage MaxSim)", run: runSearch})
}

const searchUsage = `--index DIR [QUERY...] [--text S | --image PATH | --input JSON] [--top-k N] [--filter GLOB]
       [--exact] [--json] [--instruction TEXT] [--model LM.gguf [--mmproj MMPROJ.gguf] [--mvproj MV.gguf]]
       [--reranker RERANKER.gguf [--reranker-mmproj MMPROJ.gguf]]

Embeds the query with the index's model (the files its manifest names, or
the demo model for an index the demo model wrote; --model to give them,
checked against the index's model identity) and its query prompt, and
prints the best --top-k items of every shard: score, path, page and the
start of the item's text. The words given without a flag make one text
query. Multi-vector indexes rank in two stages (sign bits, then exact
MaxSim over the best candidates); --exact scores every item exactly.`

// indexModel resolves the model of the index in dir: the model flags when
// given, else the files its manifest names (the demo model when the index
// was written with it); the files' identity must be the index's. cleanup
// is never nil.
func indexModel(ctx context.Context, mf *modelFlags, x *search.Index, cmd string, stderr io.Writer) (cfg engine.Config, cleanup func(), err error) {
	mans := x.Manifests()
	if mf.model == "" && len(mans) > 0 && len(mans[0].ModelFiles) == 3 && mans[0].ModelFiles[0] != "" {
		f := mans[0].ModelFiles
		mf.model, mf.mmproj, mf.mvproj = f[0], f[1], f[2]
	}
	cfg, cleanup, err = mf.resolve(ctx, cmd, stderr)
	if err != nil || len(mans) == 0 {
		// An index still at its first run has no manifest yet: the files
		// given are served as they are.
		return cfg, cleanup, err
	}
	id, err := index.ModelIdentity(kernels.Arithmetic(), cfg.Model, cfg.MMProj, cfg.MVProj)
	if err != nil {
		return cfg, cleanup, err
	}
	if m := mans[0]; id != m.ModelID {
		return cfg, cleanup, fmt.Errorf("the index %s was embedded by %s (identity %.16s, arithmetic %s); this model is %s (identity %.16s, arithmetic %s): its vectors would not compare; give the index's model files with --model, or index again",
			x.Dir(), m.Model, m.ModelID, m.Arithmetic, describeModel(cfg), id, kernels.Arithmetic())
	}
	return cfg, cleanup, nil
}

func describeModel(cfg engine.Config) string {
	if cfg.RandomWeights {
		return "the demo model"
	}
	return cfg.Model
}

// indexRequest is the embedding options the index's items were embedded
// with, from its manifest.
func indexRequest(x *search.Index) engine.Request {
	mans := x.Manifests()
	if len(mans) == 0 {
		return engine.Request{Multivector: x.Info().Multivector}
	}
	o := mans[0].Options
	str := func(k string) string { s, _ := o[k].(string); return s }
	num := func(k string) int { f, _ := o[k].(float64); return int(f) }
	multi, _ := o["multivector"].(bool)
	return engine.Request{Task: str("task"), Instruction: str("instruction"), Dimensions: num("dimensions"), Multivector: multi,
		MinPixels: num("min_pixels"), MaxPixels: num("max_pixels")}
}

// checkIndexModel refuses a model that cannot search the index: another
// width, or no multi-vector projector for a multi-vector index.
func checkIndexModel(info engine.Info, x *search.Index) error {
	in := x.Info()
	if in.Items == 0 && in.Dims == 0 {
		return nil
	}
	if in.Multivector && info.MultivectorDim != in.Dims {
		return fmt.Errorf("the index holds multi-vectors of %d dimensions; %s makes %d (give its --mvproj)", in.Dims, info.Name, info.MultivectorDim)
	}
	if !in.Multivector && in.Dims > info.Hidden {
		return fmt.Errorf("the index holds vectors of %d dimensions; %s makes %d", in.Dims, info.Name, info.Hidden)
	}
	return nil
}

func runSearch(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("search", searchUsage, stderr)
	var mf modelFlags
	mf.register(fs)
	dir := fs.String("index", "", "the index `DIR` (vembed index --out)")
	var specs []inputSpec
	fs.Var(inputFlag{"text", &specs}, "text", "the query as text")
	fs.Var(inputFlag{"image", &specs}, "image", "the query as an image file")
	fs.Var(inputFlag{"input", &specs}, "input", "the query as JSON: a string, an item object or a list of parts (interleaved)")
	topK := fs.Int("top-k", 10, fmt.Sprintf("hits to print (1 to %d)", search.MaxTopK))
	filter := fs.String("filter", "", "only items whose path matches this glob (a pattern without a slash also matches the file name)")
	exact := fs.Bool("exact", false, "multi-vector index: exact MaxSim over every item (one stage)")
	asJSON := fs.Bool("json", false, "print the hits as JSON")
	instruction := fs.String("instruction", "", "the query's instruction, for models that take one (default: the model's query prompt)")
	reranker := fs.String("reranker", "", "rerank the best --rerank-depth hits with this reranker GGUF (Qwen3-VL-Reranker) on their text, or their page image where they have none")
	rerankMMProj := fs.String("reranker-mmproj", "", "the reranker's vision tower, for pages without text")
	depth := fs.Int("rerank-depth", 20, "hits the reranker rescores (or --top-k when larger)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *dir == "" {
		return usageError(fs, stderr, "--index DIR is required")
	}
	if len(pos) > 0 {
		specs = append([]inputSpec{{"text", strings.Join(pos, " ")}}, specs...)
	}
	if len(specs) != 1 {
		return usageError(fs, stderr, "give one query: words, --text, --image or --input (an interleaved query is one --input)")
	}
	if *topK < 1 || *topK > search.MaxTopK {
		return usageError(fs, stderr, "--top-k %d: want 1 to %d", *topK, search.MaxTopK)
	}
	in, err := parseSpec(specs[0])
	if err != nil {
		return err
	}
	x, err := search.Open(*dir, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	defer x.Close()
	ctx := context.Background()
	cfg, cleanup, err := indexModel(ctx, &mf, x, "search", stderr)
	defer cleanup()
	if err != nil {
		return err
	}
	eng, err := loadEngine(stderr, oneCaller(cfg))
	if err != nil {
		return err
	}
	defer eng.Close()
	if err := checkIndexModel(eng.Info(), x); err != nil {
		return err
	}
	info := x.Info()
	if info.Items == 0 {
		return fmt.Errorf("the index %s holds no items yet", *dir)
	}
	ireq := indexRequest(x)
	req := engine.Request{Inputs: []engine.Input{in}, Multivector: info.Multivector, Instruction: *instruction}
	if !info.Multivector {
		req.Dimensions = ireq.Dimensions
	}
	resp, err := search.EmbedQuery(ctx, eng, req)
	if err != nil {
		return fmt.Errorf("embedding the query: %w", err)
	}
	q := search.Query{Single: resp.Embeddings[0].Vector, Multi: resp.Embeddings[0].Multi}
	k := *topK
	if *reranker != "" {
		k = max(k, *depth)
	}
	res, err := x.Search(q, search.Options{TopK: k, Filter: *filter, Exact: *exact})
	if err != nil {
		return err
	}
	hits := res.Hits
	var rerankScores []float64
	if *reranker != "" && len(hits) > 0 {
		hits, rerankScores, err = rerankCLI(ctx, stderr, *reranker, *rerankMMProj, x, in, hits, *topK)
		if err != nil {
			return err
		}
	}
	return printHits(stdout, hits, rerankScores, *asJSON)
}

// rerankCLI rescores hits with a reranker model (search.RerankDocument
// chooses each page's text or image) and returns the best k.
func rerankCLI(ctx context.Context, stderr io.Writer, model, mmproj string, x *search.Index, query engine.Input, hits []search.Hit, k int) ([]search.Hit, []float64, error) {
	rr, err := loadEngine(stderr, oneCaller(engine.Config{Model: model, MMProj: mmproj}))
	if err != nil {
		return nil, nil, fmt.Errorf("--reranker: %w", err)
	}
	defer rr.Close()
	if !rr.Info().Reranker {
		return nil, nil, fmt.Errorf("--reranker: %s is not a reranker model", rr.Info().Name)
	}
	pages := search.NewPages(x, nil)
	defer pages.Close()
	return search.Rerank(ctx, rr, pages, query, hits, k)
}

type jsonHit struct {
	ID          string   `json:"id"`
	Path        string   `json:"path"`
	Page        int      `json:"page"`
	Score       float64  `json:"score"`
	RerankScore *float64 `json:"rerank_score,omitempty"`
	Snippet     string   `json:"snippet"`
	Width       int      `json:"width"`
	Height      int      `json:"height"`
}

func printHits(w io.Writer, hits []search.Hit, rerank []float64, asJSON bool) error {
	if asJSON {
		out := make([]jsonHit, len(hits))
		for i, h := range hits {
			out[i] = jsonHit{ID: h.ID, Path: h.Path, Page: int(h.Page), Score: h.Score, Snippet: search.Snippet(h.Text), Width: int(h.Width), Height: int(h.Height)}
			if rerank != nil {
				out[i].RerankScore = &rerank[i]
			}
		}
		b, err := json.Marshal(map[string]any{"hits": out})
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "score\tpath\tpage\ttext"
	if rerank != nil {
		head = "rerank\tscore\tpath\tpage\ttext"
	}
	fmt.Fprintln(tw, head)
	for i, h := range hits {
		if rerank != nil {
			fmt.Fprintf(tw, "%.4f\t", rerank[i])
		}
		snip := search.Snippet(h.Text)
		if len(snip) > 80 {
			snip = snip[:80]
			snip = strings.ToValidUTF8(snip, "") + "…"
		}
		fmt.Fprintf(tw, "%.4f\t%s\t%d\t%s\n", h.Score, h.Path, h.Page, snip)
	}
	return tw.Flush()
}
