package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/vembed/vembed/client"
	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/eval"
	"github.com/vembed/vembed/internal/atomicfile"
)

func init() {
	register(&command{name: "eval", summary: "retrieval quality (nDCG, recall, MAP, MRR) of a model on BEIR and ViDoRe datasets, in-process or against a server", run: runEval})
}

const evalUsage = `--dataset DIR[,DIR...] [--split test] [--model LM.gguf [--mmproj MMPROJ.gguf] [--mvproj MV.gguf] | --url URL]
       [--multivector] [--dimensions N] [--k 1,5,10] [--json] [--skip-bad] [--cache-dir DIR]
       [--query-task T --doc-task T | --query-instruction S --doc-instruction S]

A dataset is a BEIR directory (corpus, queries, qrels/SPLIT in JSONL/TSV or
Parquet) or a ViDoRe v1 Parquet table (a file or a directory of shards).
Embeds each dataset's queries (task retrieval.query) and corpus (retrieval.passage),
or with instructions for a model that takes them instead of tasks,
ranks the whole corpus for every query (cosine, or MaxSim with --multivector) and
prints nDCG@k, recall@k, MAP@k and MRR@k per dataset and their average
(trec_eval's definitions: package eval). Corpus embeddings are kept in the cache
directory as they are computed: an interrupted run resumes, a second run embeds
only the queries. Without --model or --url it uses the demo model.`

func runEval(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("eval", evalUsage, stderr)
	mf := modelFlags{pack: true}
	mf.register(fs)
	datasets := fs.String("dataset", "", "comma-separated datasets: BEIR-layout `directories` or ViDoRe v1 Parquet tables")
	split := fs.String("split", "test", "qrels split (qrels/SPLIT.tsv)")
	url := fs.String("url", "", "evaluate a running vembed server at `URL` instead of loading a model")
	key := fs.String("api-key", os.Getenv("VEMBED_API_KEY"), "API key for --url")
	multi := fs.Bool("multivector", false, "score by MaxSim of multi-vectors")
	dims := fs.Int("dimensions", 0, "Matryoshka size (0: full width)")
	ksFlag := fs.String("k", "1,5,10", "comma-separated cut-offs")
	asJSON := fs.Bool("json", false, "print one JSON line instead of the table")
	trecDir := fs.String("trec", "", "also write each dataset's run and qrels in trec_eval's formats into `DIR`")
	skipBad := fs.Bool("skip-bad", false, "count unreadable rows and undecodable images as failed and go on")
	queryTask := fs.String("query-task", "retrieval.query", "task of the queries")
	docTask := fs.String("doc-task", "retrieval.passage", "task of the documents")
	queryInstr := fs.String("query-instruction", eval.DefaultQueryInstruction, "instruction of the queries, for models that take one instead of a task (Qwen3-VL-Embedding)")
	docInstr := fs.String("doc-instruction", "", "instruction of the documents for such models (default: the model's)")
	cacheDir := fs.String("cache-dir", defaultEvalCache(), "keep corpus embeddings here and reuse them (empty: keep none)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError(fs, stderr, "unexpected argument %q", pos[0])
	}
	if *datasets == "" {
		return usageError(fs, stderr, "--dataset is required")
	}
	ks, err := parseInts(*ksFlag)
	if err != nil || len(ks) == 0 {
		return usageError(fs, stderr, "--k: want comma-separated positive integers")
	}
	var emb eval.Embedder
	if *url != "" {
		if mf.model != "" {
			return usageError(fs, stderr, "give --model or --url, not both")
		}
		emb = eval.Server{C: client.New(*url, client.WithAPIKey(*key)), URL: *url}
	} else {
		cfg := mf.config()
		if mf.model == "" {
			dir, err := os.MkdirTemp("", "vembed-demo-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			if err := writeDemoModel(dir, &cfg); err != nil {
				return err
			}
			fmt.Fprintln(stderr, "vembed eval: no --model given: using the DEMO model with RANDOM WEIGHTS; its scores mean nothing")
		} else {
			if err := mf.resolveRefs(context.Background(), stderr, nil); err != nil {
				return err
			}
			cfg = mf.config()
		}
		mf.applyPacking()
		e, err := engine.New(oneCaller(cfg))
		if err != nil {
			return err
		}
		defer e.Close()
		emb = eval.Engine{E: e}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var reports []*eval.Report
	for _, dir := range strings.Split(*datasets, ",") {
		d, err := eval.Load(strings.TrimSpace(dir), *split, *skipBad)
		if err != nil {
			return err
		}
		d.Name = filepath.Clean(strings.TrimSpace(dir)) // as given: the table names each dataset
		bar := newBar(stderr, int64(len(d.Corpus)+len(d.Queries)), d.Name, false)
		rep, err := eval.EvaluateDataset(ctx, d, emb, eval.Options{
			Ks: ks, Multivector: *multi, Dimensions: *dims, CacheDir: *cacheDir, SkipBad: *skipBad,
			QueryTask: *queryTask, DocTask: *docTask, QueryInstruction: *queryInstr, DocInstruction: *docInstr,
			Progress: func(done, total int) { bar.ChangeMax(total); bar.Set(done) },
		})
		if err != nil {
			bar.Exit()
			if ctx.Err() != nil && *cacheDir != "" {
				fmt.Fprintln(stderr, "vembed eval: stopped; the documents embedded so far are kept in", *cacheDir)
			}
			return err
		}
		bar.Finish()
		for _, f := range rep.Failed {
			fmt.Fprintln(stderr, "vembed eval: failed:", f)
		}
		if rep.Unjudged > 0 {
			fmt.Fprintf(stderr, "vembed eval: %s: %d queries without judgments in split %s left out\n", d.Name, rep.Unjudged, *split)
		}
		if rep.CorpusReused > 0 {
			fmt.Fprintf(stderr, "vembed eval: %s: %d of %d documents' embeddings reused from %s\n", d.Name, rep.CorpusReused, len(d.Corpus), *cacheDir)
		}
		if *trecDir != "" {
			if err := writeTREC(*trecDir, len(reports), d, rep); err != nil {
				return err
			}
		}
		reports = append(reports, rep)
	}
	return printEval(stdout, reports, *asJSON, evalRun{Model: emb.Identity(), Multivector: *multi, Dimensions: *dims, Ks: ks})
}

// evalRun records, in the JSON line, what produced the figures.
type evalRun struct {
	Model       string `json:"model"`
	Multivector bool   `json:"multivector"`
	Dimensions  int    `json:"dimensions,omitempty"`
	Ks          []int  `json:"k"`
}

func printEval(w io.Writer, reports []*eval.Report, asJSON bool, how evalRun) error {
	avg := eval.Scores{}
	for _, r := range reports {
		for m, v := range r.Result.Mean {
			avg[m] += v / float64(len(reports))
		}
	}
	if asJSON {
		type entry struct {
			Dataset string      `json:"dataset"`
			Queries int         `json:"queries"`
			Missing int         `json:"missing"`
			Failed  int         `json:"failed"`
			Reused  int         `json:"corpus_reused"`
			Scores  eval.Scores `json:"scores"`
		}
		out := struct {
			evalRun
			Datasets []entry     `json:"datasets"`
			Average  eval.Scores `json:"average"`
		}{evalRun: how, Average: avg}
		for _, r := range reports {
			out.Datasets = append(out.Datasets, entry{r.Dataset, r.Result.Queries, len(r.Result.Missing), len(r.Failed), r.CorpusReused, r.Result.Mean})
		}
		b, err := json.Marshal(out)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	var names []string
	for m := range avg {
		names = append(names, m)
	}
	sort.Slice(names, func(i, j int) bool { return metricOrder(names[i]) < metricOrder(names[j]) })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "dataset\tqueries\tfailed")
	for _, m := range names {
		fmt.Fprint(tw, "\t", m)
	}
	fmt.Fprintln(tw)
	row := func(name string, q, failed int, s eval.Scores) {
		fmt.Fprintf(tw, "%s\t%d\t%d", name, q, failed)
		for _, m := range names {
			fmt.Fprintf(tw, "\t%.4f", s[m])
		}
		fmt.Fprintln(tw)
	}
	for _, r := range reports {
		row(r.Dataset, r.Result.Queries, len(r.Failed), r.Result.Mean)
	}
	if len(reports) > 1 {
		queries, failed := 0, 0
		for _, r := range reports {
			queries, failed = queries+r.Result.Queries, failed+len(r.Failed)
		}
		row("average", queries, failed, avg)
	}
	return tw.Flush()
}

// metricOrder sorts ndcg, recall, map and mrr, each by cut-off.
func metricOrder(m string) string {
	name, k, _ := strings.Cut(m, "@")
	rank := map[string]string{"ndcg": "0", "recall": "1", "map": "2", "mrr": "3"}[name]
	return rank + fmt.Sprintf("%06s", k)
}

// defaultEvalCache is the user cache directory's vembed/eval, or none
// when the system has no cache directory.
func defaultEvalCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "vembed", "eval")
}

// writeTREC writes dataset i's run and qrels as DIR/i-NAME.run and
// DIR/i-NAME.qrels.
func writeTREC(dir string, i int, d *eval.Dataset, rep *eval.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--trec: %w", err)
	}
	base := filepath.Join(dir, fmt.Sprintf("%d-%s", i, strings.NewReplacer("/", "_", "\\", "_", " ", "_").Replace(d.Name)))
	if err := atomicfile.Write(base+".run", func(w io.Writer) error { return eval.WriteTREC(w, rep.Run, "vembed") }); err != nil {
		return fmt.Errorf("--trec: %w", err)
	}
	if err := atomicfile.Write(base+".qrels", func(w io.Writer) error { return eval.WriteQrels(w, d.Qrels) }); err != nil {
		return fmt.Errorf("--trec: %w", err)
	}
	return nil
}
