package eval

import (
	"context"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/vembed/vembed/client"
	"github.com/vembed/vembed/engine"
)

// Vectors are one item's embedding: a single vector or a multi-vector.
type Vectors struct {
	Single []float32
	Multi  [][]float32
}

// Embedder embeds items with a task; the engine in-process and a server
// over HTTP both serve.
type Embedder interface {
	Embed(ctx context.Context, task string, items []Item, multi bool, dims int) ([]Vectors, error)
	// Identity names the model, so stored corpus embeddings are reused
	// only for the same one.
	Identity() string
}

// Engine embeds through an in-process engine (its batching and caches
// apply).
type Engine struct{ E *engine.Engine }

// Embed implements Embedder.
func (e Engine) Embed(ctx context.Context, task string, items []Item, multi bool, dims int) ([]Vectors, error) {
	req := engine.Request{Task: task, Multivector: multi, Dimensions: dims}
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
func (s Server) Embed(ctx context.Context, task string, items []Item, multi bool, dims int) ([]Vectors, error) {
	req := client.EmbedRequest{Task: task, Multivector: multi, Dimensions: dims}
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
	Batch       int    // inputs per request (default 16)
	Parallel    int    // requests in flight (default 2)
	// CacheDir, when set, keeps a finished corpus's embeddings, keyed by
	// the model, the dataset and these options, for the next run.
	CacheDir string
	// Progress hears of embedded items: done of total.
	Progress func(done, total int)
	// SkipBad counts items the model refuses (an undecodable image) as
	// failed instead of stopping.
	SkipBad bool
}

// Report is an evaluation with what it cost.
type Report struct {
	Dataset      string
	Result       Result
	Failed       []error // rows left out: unreadable or refused
	CorpusCached bool
}

// EvaluateDataset embeds d with emb (documents with DocTask, queries with
// QueryTask), ranks the whole corpus for every query by exact search and
// scores the rankings.
func EvaluateDataset(ctx context.Context, d *Dataset, emb Embedder, o Options) (*Report, error) {
	if o.QueryTask == "" {
		o.QueryTask = "retrieval.query"
	}
	if o.DocTask == "" {
		o.DocTask = "retrieval.passage"
	}
	if o.Batch <= 0 {
		o.Batch = 16
	}
	if o.Parallel <= 0 {
		o.Parallel = 2
	}
	if len(o.Ks) == 0 {
		o.Ks = []int{1, 5, 10}
	}
	rep := &Report{Dataset: d.Name, Failed: append([]error(nil), d.Bad...)}
	total := len(d.Corpus) + len(d.Queries)
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
	key := cacheKey(emb.Identity(), d, o)
	docs, ok := loadCorpus(o.CacheDir, key, len(d.Corpus))
	rep.CorpusCached = ok
	if ok {
		tick(len(d.Corpus))
	} else {
		var failed []error
		var err error
		docs, failed, err = embedAll(ctx, emb, o.DocTask, d.Corpus, o, tick)
		if err != nil {
			return nil, err
		}
		rep.Failed = append(rep.Failed, failed...)
		if len(failed) == 0 {
			if err := storeCorpus(o.CacheDir, key, docs); err != nil {
				return nil, err
			}
		}
	}
	queries, failed, err := embedAll(ctx, emb, o.QueryTask, d.Queries, o, tick)
	if err != nil {
		return nil, err
	}
	rep.Failed = append(rep.Failed, failed...)
	run := Run{}
	for qi, q := range d.Queries {
		if queries[qi] == nil {
			continue
		}
		scores := map[string]float64{}
		for di, doc := range d.Corpus {
			if docs[di] == nil {
				continue
			}
			if o.Multivector {
				scores[doc.ID] = MaxSim(queries[qi].Multi, docs[di].Multi)
			} else {
				scores[doc.ID] = Cosine(queries[qi].Single, docs[di].Single)
			}
		}
		run[q.ID] = scores
	}
	rep.Result = Evaluate(d.Qrels, run, o.Ks)
	return rep, nil
}

// embedAll embeds items in batches, Parallel requests at a time. With
// SkipBad a batch the model refuses is retried item by item and the
// refused items are left nil.
func embedAll(ctx context.Context, emb Embedder, task string, items []Item, o Options, tick func(int)) ([]*Vectors, []error, error) {
	out := make([]*Vectors, len(items))
	var failed []error
	var mu sync.Mutex
	var firstErr error
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	for start := 0; start < len(items); start += o.Batch {
		batch := items[start:min(start+o.Batch, len(items))]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			vs, err := emb.Embed(ctx, task, batch, o.Multivector, o.Dimensions)
			if err != nil && o.SkipBad && ctx.Err() == nil {
				// Find the refused items one by one.
				vs, err = make([]Vectors, len(batch)), nil
				for i := range batch {
					one, e := emb.Embed(ctx, task, batch[i:i+1], o.Multivector, o.Dimensions)
					mu.Lock()
					if e != nil {
						failed = append(failed, fmt.Errorf("eval: %s: %w", batch[i].ID, e))
					} else {
						v := one[0]
						out[start+i] = &v
					}
					mu.Unlock()
				}
				tick(len(batch))
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("eval: embedding %s and the %d items after it: %w", batch[0].ID, len(batch)-1, err)
				}
				return
			}
			for i := range vs {
				v := vs[i]
				out[start+i] = &v
			}
			tick(len(batch))
		})
	}
	wg.Wait()
	return out, failed, firstErr
}

func cacheKey(identity string, d *Dataset, o Options) string {
	h := sha256.New()
	fmt.Fprintf(h, "corpus/1\x00%s\x00%s\x00%v\x00%d\x00%s\x00", identity, d.Name, o.Multivector, o.Dimensions, o.DocTask)
	for _, it := range d.Corpus {
		fmt.Fprintf(h, "%s\x00%s\x00%d\x00", it.ID, it.Text, len(it.Image))
		h.Write(it.Image)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func loadCorpus(dir, key string, n int) ([]*Vectors, bool) {
	if dir == "" {
		return nil, false
	}
	f, err := os.Open(filepath.Join(dir, key+".gob"))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	var vs []*Vectors
	if err := gob.NewDecoder(f).Decode(&vs); err != nil || len(vs) != n {
		return nil, false
	}
	return vs, true
}

func storeCorpus(dir, key string, vs []*Vectors) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("eval: cache: %w", err)
	}
	tmp, err := os.CreateTemp(dir, key+".tmp*")
	if err != nil {
		return fmt.Errorf("eval: cache: %w", err)
	}
	if err := gob.NewEncoder(tmp).Encode(vs); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("eval: cache: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, key+".gob"))
}
