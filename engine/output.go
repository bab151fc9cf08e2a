package engine

import (
	"github.com/vembed/vembed/model/heads"
	"github.com/vembed/vembed/recipe"
)

// Output turns final hidden states into what a request asked for: pooled
// vectors (mean or last token), per-span vectors, multi-vector rows.
// Hidden states arrive chunk by chunk; the pooler keeps float64 running
// sums in token order, which is exactly the arithmetic of pooling all rows
// at once (heads.MeanPool), so a chunked input gets the same bits.

// result is an input's output at full width, before normalization,
// Matryoshka truncation and encoding: what the embedding cache stores.
type result struct {
	Vector []float32   // pooled (nil for multi-vector requests)
	Spans  [][]float32 // pooled per image span, when asked
	Multi  [][]float32 // projected rows, for multi-vector requests
}

func (r *result) bytes() int64 {
	n := len(r.Vector)
	for _, s := range r.Spans {
		n += len(s)
	}
	for _, m := range r.Multi {
		n += len(m)
	}
	return int64(n)*4 + 64
}

// pooler accumulates one input's hidden states.
type pooler struct {
	dim    int
	pool   recipe.Pooling
	n      int // tokens of the sequence
	sum    []float64
	last   []float32
	spans  [][2]int
	sums   [][]float64
	mv     *heads.MultiVector
	rowsOf [][2]int // token ranges whose multi-vector rows are kept (nil: all)
	multi  [][]float32
	keep   []float32 // every hidden row, for tracing
	trace  bool
}

func newPooler(dim, n int, pool recipe.Pooling, spans [][2]int, mv *heads.MultiVector, trace bool) *pooler {
	p := &pooler{dim: dim, n: n, pool: pool, mv: mv, spans: spans, trace: trace}
	if mv == nil {
		p.sum = make([]float64, dim)
		p.sums = make([][]float64, len(spans))
		for i := range p.sums {
			p.sums[i] = make([]float64, dim)
		}
	}
	return p
}

// add takes the hidden rows of tokens [a, a+len(rows)/dim).
func (p *pooler) add(rows []float32, a int) {
	d := p.dim
	m := len(rows) / d
	if p.trace {
		p.keep = append(p.keep, rows...)
	}
	if p.mv != nil {
		if p.rowsOf == nil {
			p.multi = append(p.multi, p.mv.Project(rows, m)...)
			return
		}
		for _, r := range p.rowsOf {
			if lo, hi := max(r[0], a), min(r[1], a+m); lo < hi {
				p.multi = append(p.multi, p.mv.Project(rows[(lo-a)*d:(hi-a)*d], hi-lo)...)
			}
		}
		return
	}
	accumulate(p.sum, rows, d, a, p.pool.Lo, p.pool.Hi)
	for i, s := range p.spans {
		accumulate(p.sums[i], rows, d, a, s[0], s[1])
	}
	if a+m == p.n {
		p.last = append([]float32(nil), rows[(m-1)*d:]...)
	}
}

// accumulate adds to sum the rows of tokens [lo, hi) found among rows,
// which hold tokens [a, a+len(rows)/dim).
func accumulate(sum []float64, rows []float32, dim, a, lo, hi int) {
	m := len(rows) / dim
	for t := max(lo, a); t < min(hi, a+m); t++ {
		for i, v := range rows[(t-a)*dim : (t-a+1)*dim] {
			sum[i] += float64(v)
		}
	}
}

func mean(sum []float64, n int) []float32 {
	out := make([]float32, len(sum))
	for i, s := range sum {
		out[i] = float32(s / float64(n))
	}
	return out
}

// result returns the full-width output once every token was added.
func (p *pooler) result() *result {
	if p.mv != nil {
		return &result{Multi: p.multi}
	}
	r := &result{}
	if p.pool.Kind == recipe.Last {
		r.Vector = p.last
	} else {
		r.Vector = mean(p.sum, p.pool.Hi-p.pool.Lo)
	}
	for i, s := range p.spans {
		r.Spans = append(r.Spans, mean(p.sums[i], s[1]-s[0]))
	}
	return r
}

// finish applies the request's options to a cached or fresh result.
func (o options) finish(r *result, tokens int) (Embedding, error) {
	emb := Embedding{Tokens: tokens}
	if r.Multi != nil {
		emb.Multi = r.Multi
		return emb, nil
	}
	var err error
	if emb.Vector, err = o.finishVector(r.Vector); err != nil {
		return Embedding{}, err
	}
	for _, s := range r.Spans {
		v, err := o.finishVector(s)
		if err != nil {
			return Embedding{}, err
		}
		emb.Spans = append(emb.Spans, v)
	}
	return emb, nil
}

// finishVector normalizes and truncates a pooled vector as the request
// asks, on a copy: cached vectors are shared.
func (o options) finishVector(v []float32) ([]float32, error) {
	v = append([]float32(nil), v...)
	if o.normalized {
		heads.Normalize(v)
	}
	if o.dims == 0 || o.dims >= len(v) {
		return v, nil
	}
	if !o.normalized {
		return v[:o.dims:o.dims], nil
	}
	return heads.Truncate(v, o.dims)
}
