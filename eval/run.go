package eval

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"slices"
	"sort"
	"sync"

	"github.com/vembed/vembed/client"
	"github.com/vembed/vembed/engine"
)

// Vectors are one item's embedding: a single vector or a multi-vector.
type Vectors struct {
	Single []float32
	Multi  [][]float32
}

// Prompt selects how the model embeds: a task (jina-embeddings-v4's
// retrieval.query, ...) or, for models that take one instead, an
// instruction (Qwen3-VL-Embedding).
type Prompt struct {
	Task        string
	Instruction string
}

// DefaultQueryInstruction is the query instruction of models that take
// instructions, the one Qwen3-VL-Embedding's own examples give queries;
// documents get the model's default.
const DefaultQueryInstruction = "Retrieve images or text relevant to the user's query."

// Embedder embeds items with a prompt; the engine in-process and a server
// over HTTP both serve.
type Embedder interface {
	Embed(ctx context.Context, p Prompt, items []Item, multi bool, dims int) ([]Vectors, error)
	// Instructed reports a model that takes an instruction and no task.
	Instructed() bool
	// Identity names the model, so stored corpus embeddings are reused
	// only for the same one.
	Identity() string
}

// Engine embeds through an in-process engine (its batching and caches
// apply).
type Engine struct{ E *engine.Engine }

// Embed implements Embedder.
func (e Engine) Embed(ctx context.Context, p Prompt, items []Item, multi bool, dims int) ([]Vectors, error) {
	req := engine.Request{Task: p.Task, Instruction: p.Instruction, Multivector: multi, Dimensions: dims}
	for _, it := range items {
		var parts []engine.Part
		if it.Image != nil {
			parts = append(parts, engine.Image(it.Image))
		}
		if it.Text != "" {
			parts = append(parts, engine.Text(it.Text))
		}
		req.Inputs = append(req.Inputs, engine.Input{Parts: parts})
	}
	resp, err := e.E.Embed(ctx, req)
	if err != nil {
		return nil, err
	}
	out := make([]Vectors, len(resp.Embeddings))
	for i, em := range resp.Embeddings {
		out[i] = Vectors{Single: em.Vector, Multi: em.Multi}
	}
	return out, nil
}

// Instructed implements Embedder.
func (e Engine) Instructed() bool {
	i := e.E.Info()
	return i.Instruction && len(i.Tasks) == 0
}

// Identity implements Embedder.
func (e Engine) Identity() string {
	i := e.E.Info()
	return fmt.Sprintf("engine %s %s %s %d", i.Name, i.Arch, i.Recipe, i.Hidden)
}

// Server embeds through a vembed server's /v1/embeddings.
type Server struct {
	C   *client.Client
	URL string
}

// Embed implements Embedder.
func (s Server) Embed(ctx context.Context, p Prompt, items []Item, multi bool, dims int) ([]Vectors, error) {
	req := client.EmbedRequest{Task: p.Task, Instruction: p.Instruction, Multivector: multi, Dimensions: dims}
	for _, it := range items {
		var parts []client.Input
		if it.Image != nil {
			parts = append(parts, client.ImageBytes(it.Image))
		}
		if it.Text != "" {
			parts = append(parts, client.Text(it.Text))
		}
		req.Inputs = append(req.Inputs, client.Parts(parts...))
	}
	resp, err := s.C.Embed(ctx, req)
	if err != nil {
		return nil, err
	}
	if len(resp.Data) != len(items) {
		return nil, fmt.Errorf("eval: %d embeddings for %d inputs", len(resp.Data), len(items))
	}
	out := make([]Vectors, len(items))
	for _, d := range resp.Data {
		if d.Index < 0 || d.Index >= len(out) {
			return nil, fmt.Errorf("eval: embedding index %d out of range", d.Index)
		}
		out[d.Index] = Vectors{Single: d.Vector, Multi: d.Multi}
	}
	return out, nil
}

// Instructed implements Embedder: the served model lists no tasks.
func (s Server) Instructed() bool {
	models, err := s.C.Models(context.Background())
	return err == nil && len(models) > 0 && len(models[0].Tasks) == 0
}

// Identity implements Embedder.
func (s Server) Identity() string {
	models, err := s.C.Models(context.Background())
	if err != nil || len(models) == 0 {
		return "server " + s.URL
	}
	return fmt.Sprintf("server %s %s %d", s.URL, models[0].ID, models[0].Dimensions)
}

// Options control a run.
type Options struct {
	Ks          []int
	Multivector bool
	Dimensions  int
	QueryTask   string // default retrieval.query
	DocTask     string // default retrieval.passage
	// For models that take an instruction instead of a task:
	QueryInstruction string // default DefaultQueryInstruction
	DocInstruction   string // default: the model's
	Batch            int    // inputs per request (default 8)
	Parallel         int    // requests in flight (default 4), so the engine batches across them
	// CacheDir, when set, keeps the corpus's embeddings as they are
	// computed, keyed by the model (its description and the vectors of a
	// fixed probe), the dataset and these options: an interrupted run
	// resumes, a finished corpus is not embedded again.
	CacheDir string
	// Progress hears of embedded items: done of total.
	Progress func(done, total int)
	// SkipBad counts items the model refuses (an undecodable image) as
	// failed instead of stopping.
	SkipBad bool
}

// Report is an evaluation with what it cost.
type Report struct {
	Dataset string
	Result  Result
	// Run holds, per query, the scores of its top max(Ks) documents in
	// trec_eval's order: all that the metrics at those cut-offs read.
	Run          Run
	Failed       []error // rows left out: unreadable or refused
	CorpusReused int     // documents whose embeddings came from the cache
	Unjudged     int     // queries the split has no judgments for, not embedded
}

// EvaluateDataset embeds d with emb (documents with DocTask, queries with
// QueryTask, or their instructions for a model that takes instructions),
// ranks the whole corpus for every query by exact search and scores the
// rankings.
func EvaluateDataset(ctx context.Context, d *Dataset, emb Embedder, o Options) (*Report, error) {
	if o.QueryTask == "" {
		o.QueryTask = "retrieval.query"
	}
	if o.DocTask == "" {
		o.DocTask = "retrieval.passage"
	}
	if o.Batch <= 0 {
		o.Batch = 8
	}
	if o.Parallel <= 0 {
		o.Parallel = 4
	}
	if len(o.Ks) == 0 {
		o.Ks = []int{1, 5, 10}
	}
	if o.QueryInstruction == "" {
		o.QueryInstruction = DefaultQueryInstruction
	}
	qp, dp := Prompt{Task: o.QueryTask}, Prompt{Task: o.DocTask}
	if emb.Instructed() {
		qp, dp = Prompt{Instruction: o.QueryInstruction}, Prompt{Instruction: o.DocInstruction}
	}
	rep := &Report{Dataset: d.Name, Failed: append([]error(nil), d.Bad...)}
	// Only the queries the split judges are embedded: BEIR's queries file
	// holds every split's.
	var judged []int
	for i, q := range d.Queries {
		if d.Qrels[q.ID] != nil {
			judged = append(judged, i)
		}
	}
	rep.Unjudged = len(d.Queries) - len(judged)
	total := len(d.Corpus) + len(judged)
	var mu sync.Mutex
	done := 0
	tick := func(n int) {
		mu.Lock()
		done += n
		if o.Progress != nil {
			o.Progress(done, total)
		}
		mu.Unlock()
	}
	docs := make([]*Vectors, len(d.Corpus))
	var store *corpusStore
	if o.CacheDir != "" {
		id, err := modelIdentity(ctx, emb, dp, o)
		if err != nil {
			return nil, err
		}
		if store, docs, err = openStore(o.CacheDir, cacheKey(id, d, dp, o), len(d.Corpus)); err != nil {
			return nil, err
		}
		defer store.close()
	}
	todo := []int{}
	for i, v := range docs {
		if v == nil {
			todo = append(todo, i)
		}
	}
	rep.CorpusReused = len(docs) - len(todo)
	tick(rep.CorpusReused)
	failed, err := embedAll(ctx, emb, dp, d.Corpus, todo, docs, o, store, tick)
	rep.Failed = append(rep.Failed, failed...)
	if err != nil {
		return nil, err
	}
	queries := make([]*Vectors, len(d.Queries))
	failed, err = embedAll(ctx, emb, qp, d.Queries, judged, queries, o, nil, tick)
	rep.Failed = append(rep.Failed, failed...)
	if err != nil {
		return nil, err
	}
	rep.Run, err = search(d, queries, docs, o)
	if err != nil {
		return nil, err
	}
	rep.Result = Evaluate(d.Qrels, rep.Run, o.Ks)
	return rep, nil
}

// search scores every embedded query against every embedded document
// and keeps each query's top max(Ks) in trec_eval's order.
func search(d *Dataset, queries, docs []*Vectors, o Options) (Run, error) {
	var qv, dv []Vectors
	var qids, dids []string
	for i, v := range queries {
		if v != nil {
			qv, qids = append(qv, *v), append(qids, d.Queries[i].ID)
		}
	}
	for i, v := range docs {
		if v != nil {
			dv, dids = append(dv, *v), append(dids, d.Corpus[i].ID)
		}
	}
	top := slices.Max(o.Ks)
	run := Run{}
	err := scoreRows(qv, dv, o.Multivector, func(q int, row []float64) {
		kept := map[string]float64{}
		for _, i := range topK(row, dids, top) {
			kept[dids[i]] = row[i]
		}
		run[qids[q]] = kept
	})
	return run, err
}

// topK returns the indices of the k best scores in trec_eval's order
// (score descending, then id descending), keeping a heap of k rather
// than sorting the whole row.
func topK(scores []float64, ids []string, k int) []int {
	better := func(a, b int) bool {
		if scores[a] != scores[b] {
			return scores[a] > scores[b]
		}
		return ids[a] > ids[b]
	}
	// h is a heap whose root is the worst index kept.
	h := make([]int, 0, min(k, len(scores)))
	down := func(i int) {
		for {
			w := i
			for _, c := range []int{2*i + 1, 2*i + 2} {
				if c < len(h) && better(h[w], h[c]) {
					w = c
				}
			}
			if w == i {
				return
			}
			h[i], h[w] = h[w], h[i]
			i = w
		}
	}
	for i := range scores {
		switch {
		case len(h) < k:
			h = append(h, i)
			for c := len(h) - 1; c > 0 && better(h[(c-1)/2], h[c]); c = (c - 1) / 2 {
				h[c], h[(c-1)/2] = h[(c-1)/2], h[c]
			}
		case k > 0 && better(i, h[0]):
			h[0] = i
			down(0)
		}
	}
	sort.Slice(h, func(a, b int) bool { return better(h[a], h[b]) })
	return h
}

// embedAll embeds the items at the indices todo (ascending) into out, in batches, Parallel requests at a time, appending each
// finished batch to store when there is one. With SkipBad a batch the
// model refuses is retried item by item and the refused items stay nil
// and are returned as failures.
func embedAll(ctx context.Context, emb Embedder, p Prompt, items []Item, todo []int, out []*Vectors, o Options, store *corpusStore, tick func(int)) ([]error, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var failed []error
	var firstErr error
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = err
			cancel()
		}
	}
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	// Consecutive runs of todo make a batch, so each is one store write.
	for start := 0; start < len(todo) && ctx.Err() == nil; {
		end := start + 1
		for end < len(todo) && end-start < o.Batch && todo[end] == todo[end-1]+1 {
			end++
		}
		first, n := todo[start], end-start
		start = end
		batch := items[first : first+n]
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			got := make([]*Vectors, n)
			vs, err := emb.Embed(ctx, p, batch, o.Multivector, o.Dimensions)
			if err == nil && len(vs) != n {
				err = fmt.Errorf("%d embeddings for %d inputs", len(vs), n)
			}
			switch {
			case err == nil:
				for i := range vs {
					got[i] = &vs[i]
				}
			case o.SkipBad && ctx.Err() == nil:
				// Find the refused items one by one.
				for i := range batch {
					one, e := emb.Embed(ctx, p, batch[i:i+1], o.Multivector, o.Dimensions)
					if e == nil && len(one) != 1 {
						e = fmt.Errorf("%d embeddings for 1 input", len(one))
					}
					if e != nil {
						if ctx.Err() != nil {
							fail(fmt.Errorf("eval: embedding %s: %w", batch[i].ID, e))
							return
						}
						mu.Lock()
						failed = append(failed, fmt.Errorf("eval: %s: %w", batch[i].ID, e))
						mu.Unlock()
						continue
					}
					got[i] = &one[0]
				}
			default:
				fail(fmt.Errorf("eval: embedding %s and the %d items after it: %w", batch[0].ID, n-1, err))
				return
			}
			copy(out[first:first+n], got)
			if store != nil {
				if err := store.add(first, got); err != nil {
					fail(err)
					return
				}
			}
			tick(n)
		})
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = fmt.Errorf("eval: %w", context.Cause(ctx))
	}
	return failed, firstErr
}

// probeImage is a fixed 64×48 picture whose embedding, with a fixed
// text's, identifies a model in cache keys: any change of weights, type,
// kernels or server behind a URL changes them.
func probeImage() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for y := range 48 {
		for x := range 64 {
			img.Set(x, y, color.RGBA{uint8(4 * x), uint8(5 * y), uint8(2*x + 3*y), 255})
		}
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	return b.Bytes()
}

// modelIdentity is the embedder's description and a digest of the vectors
// it gives a probe text and image with the run's options (the text alone
// for a model without images).
func modelIdentity(ctx context.Context, emb Embedder, p Prompt, o Options) (string, error) {
	items := []Item{{ID: "probe", Text: "vembed eval probe: a page about quarterly revenue"}, {ID: "probe-image", Image: probeImage()}}
	vs, err := emb.Embed(ctx, p, items, o.Multivector, o.Dimensions)
	if err != nil {
		if vs, err = emb.Embed(ctx, p, items[:1], o.Multivector, o.Dimensions); err != nil {
			return "", fmt.Errorf("eval: embedding the identity probe: %w", err)
		}
	}
	h := sha256.New()
	io.WriteString(h, emb.Identity())
	for _, v := range vs {
		binary.Write(h, binary.LittleEndian, v.Single)
		for _, r := range v.Multi {
			binary.Write(h, binary.LittleEndian, r)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func cacheKey(identity string, d *Dataset, p Prompt, o Options) string {
	h := sha256.New()
	fmt.Fprintf(h, "corpus/2\x00%s\x00%v\x00%d\x00%q\x00%q\x00%d\x00", identity, o.Multivector, o.Dimensions, p.Task, p.Instruction, len(d.Corpus))
	for _, it := range d.Corpus {
		fmt.Fprintf(h, "%d\x00%s\x00%d\x00%s\x00", len(it.ID), it.ID, len(it.Text), it.Text)
		binary.Write(h, binary.LittleEndian, int64(len(it.Image)))
		h.Write(it.Image)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}
