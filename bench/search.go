package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/eval"
	"github.com/vembed/vembed/index"
	"github.com/vembed/vembed/internal/diskfree"
	"github.com/vembed/vembed/internal/memstat"
	"github.com/vembed/vembed/search"
	"github.com/vembed/vembed/synth"
)

// SearchConfig configures "vembed bench search": synthetic indexes of
// clustered vectors, searched by package search and by exact float32
// brute force (eval.Score) with the same queries.
//
// The vectors: items belong to one of Clusters topics. A single vector
// is its topic's centre plus Gaussian noise of the same scale; a page's
// token vectors are each 0.6 x one of its topic's 32 token centres +
// 0.4 x one of the page's own 8 token centres + noise of scale 0.5,
// normalized, as late-interaction pages mix the vocabulary of their topic
// with their own. A query is built for a random item: a single vector
// from its topic's centre and noise; QueryTokens token vectors drawn like
// the page's tokens (its topic's and its own centres), so that its best
// pages are that page and its topic's.
type SearchConfig struct {
	// Single is the single-vector case's item count (0: none), of
	// SingleDims dimensions.
	Single, SingleDims int
	// Pages are the multi-vector cases' page counts, each of Tokens
	// tokens of Dims dimensions.
	Pages        []int
	Tokens, Dims int
	QueryTokens  int
	// Queries per case.
	Queries int
	// Candidates are the first stage's counts to measure, a row each
	// (none: search's default).
	Candidates []int
	// Sidecars are the element types of the multi-vector cases'
	// sidecars, each page count measured with each (none: float32).
	Sidecars []index.SidecarType
	Clusters int
	// Dir holds the indexes (default: a temporary folder, removed).
	Dir string
	// DemoQueries is the number of text queries the demo model embeds,
	// for the query's own embedding time (0: none).
	DemoQueries int
	// RerankQueries is the number of searches whose best RerankDepth
	// hits the tiny synthetic Qwen3-VL reranker rescores on their text,
	// for the rerank stage's cost (0: none).
	RerankQueries, RerankDepth int
	Load                       Loader
	Log                        io.Writer
}

// SearchFigure is one case's figures.
type SearchFigure struct {
	Case       string `json:"case"`
	Items      int    `json:"items"`
	Tokens     int    `json:"tokens,omitempty"`
	Dims       int    `json:"dims"`
	Threads    int    `json:"threads"`
	Queries    int    `json:"queries"`
	Candidates int    `json:"candidates,omitempty"`
	// Sidecar is the multi-vector case's sidecar element type, and
	// SidecarBytes its sidecars' size on disk.
	Sidecar      string  `json:"sidecar,omitempty"`
	SidecarBytes int64   `json:"sidecar_bytes,omitempty"`
	LoadS        float64 `json:"load_s"`
	P50ms        float64 `json:"p50_ms"`
	P95ms        float64 `json:"p95_ms"`
	QPS          float64 `json:"queries_per_s"`
	// ExactP50ms is search's one-stage path (Options.Exact) per query;
	// EvalMsPerQuery eval.Score's time over the same queries, batched,
	// per query (its Parquet reading not counted).
	ExactP50ms     float64 `json:"exact_p50_ms,omitempty"`
	EvalMsPerQuery float64 `json:"eval_ms_per_query"`
	// Recall10 is the share of eval.Score's top 10 in search's top 10.
	Recall10 float64 `json:"recall_at_10"`
	// RSS is the resident memory the loaded index added (after the
	// queries); Float32Bytes the vectors' size in float32.
	RSS          int64   `json:"rss_bytes"`
	Float32Bytes int64   `json:"float32_bytes"`
	RSSShare     float64 `json:"rss_share_of_float32"`
}

// EmbedFigure is the query's own embedding time with a model.
type EmbedFigure struct {
	Model       string  `json:"model"`
	Multivector bool    `json:"multivector"`
	Queries     int     `json:"queries"`
	P50ms       float64 `json:"p50_ms"`
	P95ms       float64 `json:"p95_ms"`
}

// RerankFigure is the rerank stage's cost a query.
type RerankFigure struct {
	Model   string  `json:"model"`
	Depth   int     `json:"depth"`
	Queries int     `json:"queries"`
	P50ms   float64 `json:"p50_ms"`
	P95ms   float64 `json:"p95_ms"`
}

// SearchReport is what Search measured.
type SearchReport struct {
	Cases  []SearchFigure `json:"cases"`
	Embed  []EmbedFigure  `json:"embed,omitempty"`
	Rerank *RerankFigure  `json:"rerank,omitempty"`
}

func (c *SearchConfig) defaults() {
	c.SingleDims = cmp.Or(c.SingleDims, 2048)
	c.Tokens = cmp.Or(c.Tokens, 768)
	c.Dims = cmp.Or(c.Dims, 128)
	c.QueryTokens = cmp.Or(c.QueryTokens, 20)
	c.Queries = cmp.Or(c.Queries, 50)
	c.Clusters = cmp.Or(c.Clusters, 64)
}

// Search runs the cases of c.
func Search(c SearchConfig) (*SearchReport, error) {
	c.defaults()
	if c.Single < 0 || c.Queries < 1 || c.Tokens < 1 || c.Dims < 1 || c.QueryTokens < 1 {
		return nil, fmt.Errorf("bench search: --single, --queries, --tokens, --dims and --query-tokens must be positive")
	}
	log := logTo(c.Log)
	dir := c.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "vembed-bench-search-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	if len(c.Sidecars) == 0 {
		c.Sidecars = []index.SidecarType{index.SidecarFloat32}
	}
	var cases []benchCase
	if c.Single > 0 {
		cases = append(cases, benchCase{dir: filepath.Join(dir, "single"), items: c.Single})
	}
	for _, n := range c.Pages {
		for _, typ := range c.Sidecars {
			name := fmt.Sprintf("multi-%d", n)
			if typ != index.SidecarFloat32 {
				name += "-" + typ.String()
			}
			cases = append(cases, benchCase{dir: filepath.Join(dir, name), items: n, multi: true, sidecar: typ})
		}
	}
	if err := c.checkDisk(dir, cases, log); err != nil {
		return nil, err
	}
	rep := &SearchReport{Cases: []SearchFigure{}}
	exact := map[int]exactRun{} // by page count: the sidecar changes no vector of the parts
	for _, bc := range cases {
		f, err := c.runCase(bc, exact, log)
		if err != nil {
			return nil, err
		}
		rep.Cases = append(rep.Cases, f...)
	}
	if c.DemoQueries > 0 {
		figs, err := c.demoEmbed()
		if err != nil {
			return nil, err
		}
		rep.Embed = figs
	}
	if c.RerankQueries > 0 {
		f, err := c.rerankCost()
		if err != nil {
			return nil, err
		}
		rep.Rerank = f
	}
	return rep, nil
}

// rerankCost measures search.Rerank with the tiny synthetic Qwen3-VL
// reranker over RerankDepth hits holding the bench's item texts.
func (c *SearchConfig) rerankCost() (*RerankFigure, error) {
	dir, err := os.MkdirTemp("", "vembed-bench-reranker-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cfg, err := synth.Preset("tiny-qwen3vl")
	if err != nil {
		return nil, err
	}
	cfg.LM.Pooling, cfg.Name = "rank", cfg.Name+"-reranker"
	lm, mmproj, err := synth.WritePair(dir, cfg)
	if err != nil {
		return nil, err
	}
	eng, err := c.Load.load(engine.Config{Model: lm, MMProj: mmproj, RandomWeights: true})
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	depth := cmp.Or(c.RerankDepth, 20)
	var lat []float64
	for q := range c.RerankQueries + 1 {
		hits := make([]search.Hit, depth)
		for i := range hits {
			hits[i] = search.Hit{Meta: search.Meta{ID: fmt.Sprint(i), Text: fmt.Sprintf("synthetic item %d of topic %d, a page of the report", q*depth+i, i%7)}}
		}
		t := time.Now()
		if _, _, err := search.Rerank(context.Background(), eng, nil, engine.TextInput(fmt.Sprintf("which page shows topic %d?", q)), hits, 10); err != nil {
			return nil, err
		}
		if q > 0 {
			lat = append(lat, float64(time.Since(t).Microseconds())/1000)
		}
	}
	return &RerankFigure{Model: eng.Info().Name, Depth: depth, Queries: c.RerankQueries, P50ms: round4(percentile(lat, 50)), P95ms: round4(percentile(lat, 95))}, nil
}

// gen makes the clustered vectors of a case, deterministically.
type gen struct {
	c      *SearchConfig
	multi  bool
	dims   int
	topics [][]float32 // single: one centre a topic; multi: 32 a topic
}

const tokenCentres, pageCentres = 32, 8

func newGen(c *SearchConfig, multi bool) *gen {
	g := &gen{c: c, multi: multi, dims: c.SingleDims}
	if multi {
		g.dims = c.Dims
	}
	r := rand.New(rand.NewPCG(1, 2))
	n := c.Clusters
	if multi {
		n *= tokenCentres
	}
	for range n {
		g.topics = append(g.topics, gauss(r, g.dims, 1))
	}
	return g
}

func gauss(r *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * scale)
	}
	return v
}

func unit(v []float32) []float32 {
	var ss float64
	for _, x := range v {
		// A product is converted before it is added to (float64(a*b) + c): that
		// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
		// every build computes the same bits (kernels.TestNoFusedMultiplyAdd).
		ss += float64(float64(x) * float64(x))
	}
	inv := float32(1 / math.Sqrt(ss))
	for i := range v {
		v[i] *= inv
	}
	return v
}

// item returns item i's topic and its vectors (a fresh random stream per
// item, so that a query can rebuild an item's own centres).
func (g *gen) item(i int) (topic int, single []float32, tokens [][]float32) {
	r := rand.New(rand.NewPCG(uint64(i), 99))
	topic = r.IntN(g.c.Clusters)
	if !g.multi {
		v := gauss(r, g.dims, 1)
		for k, x := range g.topics[topic] {
			v[k] += x
		}
		return topic, v, nil
	}
	own := make([][]float32, pageCentres)
	for k := range own {
		own[k] = gauss(r, g.dims, 1)
	}
	tokens = make([][]float32, g.c.Tokens)
	for t := range tokens {
		tokens[t] = g.token(r, topic, own)
	}
	return topic, nil, tokens
}

func (g *gen) token(r *rand.Rand, topic int, own [][]float32) []float32 {
	a := g.topics[topic*tokenCentres+r.IntN(tokenCentres)]
	b := own[r.IntN(len(own))]
	v := gauss(r, g.dims, 0.5)
	for k := range v {
		v[k] += float32(0.6*a[k]) + float32(0.4*b[k])
	}
	return unit(v)
}

// query builds query q for a random item: its topic's (and, for pages,
// its own) centres plus noise.
func (g *gen) query(q, items int) eval.Vectors {
	r := rand.New(rand.NewPCG(uint64(q), 7))
	target := r.IntN(items)
	tr := rand.New(rand.NewPCG(uint64(target), 99))
	topic := tr.IntN(g.c.Clusters)
	if !g.multi {
		v := gauss(r, g.dims, 1)
		for k, x := range g.topics[topic] {
			v[k] += x
		}
		return eval.Vectors{Single: v}
	}
	own := make([][]float32, pageCentres)
	for k := range own {
		own[k] = gauss(tr, g.dims, 1)
	}
	rows := make([][]float32, g.c.QueryTokens)
	for t := range rows {
		rows[t] = g.token(r, topic, own)
	}
	return eval.Vectors{Multi: rows}
}

// benchPartRows is the rows of one part of a synthetic index.
const benchPartRows = 256

// benchCase is one index the bench writes and searches.
type benchCase struct {
	dir     string
	items   int
	multi   bool
	sidecar index.SidecarType
}

// exactRun is eval.Score's top 10 of a case's queries, and its time.
type exactRun struct {
	want [][]string
	took time.Duration
}

// written reports a case whose index a kept --dir already holds.
func (bc benchCase) written() bool {
	_, err := os.Stat(filepath.Join(bc.dir, "complete"))
	return err == nil
}

// diskBytes estimates what the case writes: its parts (float32 values,
// which zstd does not shrink: random mantissas; the lists' levels and
// the other columns add 1.6% at 768 tokens x 128, measured on 512 pages,
// counted as 2%) and its sidecars.
func (c *SearchConfig) diskBytes(bc benchCase) (parts, sidecars int64) {
	n := int64(bc.items)
	if !bc.multi {
		return n * int64(c.SingleDims) * 4 * 102 / 100, 0
	}
	tokens := n * int64(c.Tokens)
	words := int64(c.Dims+63) / 64
	nParts := (n + benchPartRows - 1) / benchPartRows
	sidecars = nParts*(64+64+8+64) + 8*n + tokens*(8*words+int64(c.Dims)*int64(bc.sidecar.Size()))
	return tokens * int64(c.Dims) * 4 * 102 / 100, sidecars
}

// diskMargin is the space left free beyond a run's estimate.
const diskMargin = 1 << 30

// checkDisk prints what the cases will write and refuses, before writing
// anything, when the folder's filesystem has not that much free (plus
// diskMargin), instead of filling the disk halfway through.
func (c *SearchConfig) checkDisk(dir string, cases []benchCase, log io.Writer) error {
	var parts, sidecars int64
	for _, bc := range cases {
		if bc.written() {
			continue
		}
		p, s := c.diskBytes(bc)
		parts += p
		sidecars += s
	}
	if parts+sidecars == 0 {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	gb := func(n int64) string { return fmt.Sprintf("%.2f GB", float64(n)/1e9) }
	free, err := diskfree.Bytes(dir)
	if err != nil {
		fmt.Fprintf(log, "bench search: the cases will write about %s in %s (parts %s, sidecars %s); free space unknown: %v\n", gb(parts+sidecars), dir, gb(parts), gb(sidecars), err)
		return nil
	}
	fmt.Fprintf(log, "bench search: the cases will write about %s in %s (parts %s, sidecars %s); %s free\n", gb(parts+sidecars), dir, gb(parts), gb(sidecars), gb(free))
	if parts+sidecars+diskMargin > free {
		return fmt.Errorf("bench search: the cases need about %s (parts %s, sidecars %s) and 1 GB to spare in %s, whose filesystem has %s free: give --dir on a larger one, fewer --pages, or --sidecar float16", gb(parts+sidecars), gb(parts), gb(sidecars), dir, gb(free))
	}
	return nil
}

// write writes the case's index (parts and sidecars) unless dir holds it
// already (a kept --dir).
func (g *gen) write(dir string, items int, sidecar index.SidecarType, log io.Writer) error {
	done := filepath.Join(dir, "complete")
	if _, err := os.Stat(done); err == nil {
		return nil
	}
	os.RemoveAll(dir)
	start := time.Now()
	for first := 0; first < items; first += benchPartRows {
		n := min(benchPartRows, items-first)
		rows := make([]index.Row, n)
		for k := range rows {
			i := first + k
			topic, single, tokens := g.item(i)
			rows[k] = index.Row{ID: fmt.Sprintf("item-%07d", i), Path: fmt.Sprintf("topic-%02d/doc-%07d.pdf", topic, i), Page: 1,
				Model: "bench", Embedding: single, Vectors: tokens, Text: fmt.Sprintf("synthetic item %d of topic %d", i, topic)}
			if g.multi {
				rows[k].Width, rows[k].Height = 1700, 2200
			}
		}
		if err := index.WritePart(dir, fmt.Sprintf("s0of1-g000001-%06d.parquet", first/benchPartRows+1), rows, sidecar); err != nil {
			return err
		}
		fmt.Fprintf(log, "\rwriting %s: %d of %d items (%.0f s)", filepath.Base(dir), first+n, items, time.Since(start).Seconds())
	}
	fmt.Fprintln(log)
	return os.WriteFile(done, nil, 0o644)
}

func (c *SearchConfig) runCase(bc benchCase, exact map[int]exactRun, log io.Writer) ([]SearchFigure, error) {
	dir, items, multi := bc.dir, bc.items, bc.multi
	g := newGen(c, multi)
	if err := g.write(dir, items, bc.sidecar, log); err != nil {
		return nil, err
	}
	qs := make([]eval.Vectors, c.Queries)
	for i := range qs {
		qs[i] = g.query(i, items)
	}
	base := SearchFigure{Items: items, Dims: g.dims, Threads: runtime.GOMAXPROCS(0), Queries: c.Queries}
	if multi {
		base.Case = fmt.Sprintf("multi-vector %d pages x %d tokens x %d, %s", items, c.Tokens, c.Dims, bc.sidecar)
		base.Tokens = c.Tokens
		base.Float32Bytes = int64(items) * int64(c.Tokens) * int64(c.Dims) * 4
		base.Sidecar = bc.sidecar.String()
		cars, _ := filepath.Glob(filepath.Join(dir, index.SidecarDir, "*.mv"))
		for _, f := range cars {
			if st, err := os.Stat(f); err == nil {
				base.SidecarBytes += st.Size()
			}
		}
	} else {
		base.Case = fmt.Sprintf("single-vector %d x %d", items, g.dims)
		base.Float32Bytes = int64(items) * int64(g.dims) * 4
	}

	// Exact float32 brute force first (eval.Score, part by part, so that
	// memory holds one part's vectors at a time), for the recall; once
	// per page count, whatever the sidecar (the parts are the same).
	key := items
	if !multi {
		key = -1
	}
	ex, ok := exact[key]
	if !ok {
		want, took, err := evalTop(dir, qs, multi, 10, log)
		if err != nil {
			return nil, err
		}
		ex = exactRun{want, took}
		exact[key] = ex
	}
	want := ex.want
	base.EvalMsPerQuery = round4(ex.took.Seconds() * 1000 / float64(len(qs)))

	runtime.GC()
	debug.FreeOSMemory()
	before, _ := currentRSS()
	start := time.Now()
	x, err := search.Open(dir, nil)
	if err != nil {
		return nil, err
	}
	defer x.Close()
	base.LoadS = round4(time.Since(start).Seconds())
	cands := c.Candidates
	if !multi || len(cands) == 0 {
		cands = []int{0}
	}
	var out []SearchFigure
	for _, cand := range cands {
		f := base
		if multi {
			f.Candidates = search.Candidates(items, search.Options{TopK: 10, Candidates: cand})
		}
		var lat []float64
		found := 0
		all := time.Now()
		for i, q := range qs {
			t := time.Now()
			res, err := x.Search(search.Query{Single: q.Single, Multi: q.Multi}, search.Options{TopK: 10, Candidates: cand})
			if err != nil {
				return nil, err
			}
			lat = append(lat, float64(time.Since(t).Microseconds())/1000)
			for _, h := range res.Hits {
				if slices.Contains(want[i], h.ID) {
					found++
				}
			}
		}
		f.QPS = round4(float64(len(qs)) / time.Since(all).Seconds())
		f.P50ms, f.P95ms = round4(percentile(lat, 50)), round4(percentile(lat, 95))
		f.Recall10 = round4(float64(found) / float64(10*len(qs)))
		runtime.GC()
		debug.FreeOSMemory()
		if now, ok := currentRSS(); ok {
			f.RSS = now - before
			f.RSSShare = round4(float64(f.RSS) / float64(f.Float32Bytes))
		}
		out = append(out, f)
	}
	if multi {
		var ex []float64
		for _, q := range qs[:min(len(qs), 5)] {
			t := time.Now()
			if _, err := x.Search(search.Query{Multi: q.Multi}, search.Options{TopK: 10, Exact: true}); err != nil {
				return nil, err
			}
			ex = append(ex, float64(time.Since(t).Microseconds())/1000)
		}
		for i := range out {
			out[i].ExactP50ms = round4(percentile(ex, 50))
		}
	}
	runtime.KeepAlive(x)
	return out, nil
}

// evalTop is eval.Score's top k ids of each query over the index's parts
// (ties by id, descending), and the time eval.Score took.
func evalTop(dir string, qs []eval.Vectors, multi bool, k int, log io.Writer) ([][]string, time.Duration, error) {
	parts, err := filepath.Glob(filepath.Join(dir, index.PartsDir, "*.parquet"))
	if err != nil {
		return nil, 0, err
	}
	type cand struct {
		id    string
		score float64
	}
	best := make([][]cand, len(qs))
	var spent time.Duration
	for pi, p := range parts {
		rows, err := index.ReadPart(p)
		if err != nil {
			return nil, 0, err
		}
		docs := make([]eval.Vectors, len(rows))
		for i, r := range rows {
			docs[i] = eval.Vectors{Single: r.Embedding, Multi: r.Vectors}
		}
		t := time.Now()
		scores, err := eval.Score(qs, docs, multi)
		spent += time.Since(t)
		if err != nil {
			return nil, 0, err
		}
		for q, row := range scores {
			for d, s := range row {
				best[q] = append(best[q], cand{rows[d].ID, s})
			}
			slices.SortFunc(best[q], func(a, b cand) int {
				if a.score != b.score {
					return cmp.Compare(b.score, a.score)
				}
				return strings.Compare(b.id, a.id)
			})
			best[q] = best[q][:min(k, len(best[q]))]
		}
		fmt.Fprintf(log, "\rexact scoring (eval.Score): part %d of %d", pi+1, len(parts))
	}
	fmt.Fprintln(log)
	out := make([][]string, len(qs))
	for q, b := range best {
		for _, c := range b {
			out[q] = append(out[q], c.id)
		}
	}
	return out, spent, nil
}

// demoEmbed measures the demo model's embedding of a short text query,
// single- and multi-vector.
func (c *SearchConfig) demoEmbed() ([]EmbedFigure, error) {
	dir, err := os.MkdirTemp("", "vembed-bench-demo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	m, err := synth.WriteDemo(dir)
	if err != nil {
		return nil, err
	}
	eng, err := c.Load.load(engine.Config{Model: m.LM, MMProj: m.MMProj, MVProj: m.MVProj, RandomWeights: true})
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	var out []EmbedFigure
	for _, multi := range []bool{false, true} {
		var lat []float64
		for i := range c.DemoQueries + 1 {
			req := engine.Request{Inputs: []engine.Input{engine.TextInput(fmt.Sprintf("which page shows the revenue of quarter %d?", i))}, Multivector: multi}
			t := time.Now()
			if _, err := search.EmbedQuery(context.Background(), eng, req); err != nil {
				return nil, err
			}
			if i > 0 { // the first warms the caches of the engine
				lat = append(lat, float64(time.Since(t).Microseconds())/1000)
			}
		}
		out = append(out, EmbedFigure{Model: eng.Info().Name, Multivector: multi, Queries: c.DemoQueries,
			P50ms: round4(percentile(lat, 50)), P95ms: round4(percentile(lat, 95))})
	}
	return out, nil
}

// PrintSearch writes the report as tables.
func PrintSearch(w io.Writer, r *SearchReport) {
	fmt.Fprintf(w, "%-54s %8s %8s %8s %9s %10s %9s %9s %10s %8s\n", "case", "load s", "p50 ms", "p95 ms", "queries/s", "exact p50", "eval ms/q", "recall@10", "RSS MiB", "RSS/f32")
	for _, f := range r.Cases {
		ex := "-"
		if f.ExactP50ms > 0 {
			ex = fmt.Sprintf("%.4g", f.ExactP50ms)
		}
		fmt.Fprintf(w, "%-54s %8.4g %8.4g %8.4g %9.4g %10s %9.4g %9.4g %10.1f %8.4g\n", f.Case, f.LoadS, f.P50ms, f.P95ms, f.QPS, ex, f.EvalMsPerQuery, f.Recall10, float64(f.RSS)/(1<<20), f.RSSShare)
	}
	for _, e := range r.Embed {
		kind := "single vector"
		if e.Multivector {
			kind = "multi-vector"
		}
		fmt.Fprintf(w, "query embedding, %s (%s), %d short texts: p50 %.4g ms, p95 %.4g ms\n", e.Model, kind, e.Queries, e.P50ms, e.P95ms)
	}
	if f := r.Rerank; f != nil {
		fmt.Fprintf(w, "rerank stage, %s, %d hits on their text, %d queries: p50 %.4g ms, p95 %.4g ms a query\n", f.Model, f.Depth, f.Queries, f.P50ms, f.P95ms)
	}
}

// currentRSS is the process's resident set now (Linux only).
func currentRSS() (int64, bool) {
	kib, err := memstat.ResidentKiB()
	return int64(kib) << 10, err == nil
}
