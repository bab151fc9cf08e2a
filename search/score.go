package search

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"path"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/kernels"
)

// MaxTopK bounds Options.TopK.
const MaxTopK = 1000

// MaxFilterBytes bounds Options.Filter: path.Match reads the whole
// pattern for every row it rejects (to report a malformed rest), so a
// filter as long as a request body made one search cost rows x body
// bytes.
const MaxFilterBytes = 1024

// MaxMapValues bounds the similarities a search with Options.Maps
// returns (query vectors x row tokens, summed over the hits: 16 MiB of
// float32), which a long query and a large TopK would otherwise take
// without limit.
const MaxMapValues = 1 << 22

// DefaultCandidates is how many pages the first stage of a multi-vector
// search passes to exact MaxSim at least; more when TopK asks for more
// (4 × TopK) and when the index is large (one page in CandidateShare):
// the sign bits' ranking is noisy, and the exact top 10's places in it
// spread in proportion to the pages that compete with them. On vembed
// bench search's clustered pages (docs/performance.md), recall@10
// against exact MaxSim was 0.89 with 100 candidates and 1.0 with 200 at
// 10,000 pages, and 0.51 with 200, 0.945 with 1,000 and 1.0 with 2,000 at
// 100,000 pages: one page in 50 held it at both sizes.
const DefaultCandidates = 200

// CandidateShare is the share of the searched pages (one in
// CandidateShare) the first stage passes on at least.
const CandidateShare = 50

// Candidates is the first stage's count for a search of rows pages with
// o: o.Candidates when set, else the largest of DefaultCandidates, 4 ×
// o.TopK and rows / CandidateShare.
func Candidates(rows int, o Options) int {
	return cmp.Or(o.Candidates, max(DefaultCandidates, 4*o.TopK, rows/CandidateShare))
}

// Query is a query's vectors: Single for a single-vector index, Multi
// (one vector per token) for a multi-vector one.
type Query struct {
	Single []float32
	Multi  [][]float32
}

// Options configure a search.
type Options struct {
	// TopK is the number of hits (default 10, at most MaxTopK).
	TopK int
	// Filter keeps the rows whose path matches this glob (path.Match;
	// a pattern without a slash also matches the file's base name).
	Filter string
	// Exact scores every row exactly (float32 cosine, or MaxSim),
	// instead of the two stages.
	Exact bool
	// Candidates is the first stage's count (0: for multi-vectors the
	// function Candidates, for single vectors DefaultSingleCandidates or 4
	// × TopK when more).
	Candidates int
	// Maps adds each multi-vector hit's token similarities (Hit.Sims).
	Maps bool
}

// Hit is a ranked row.
type Hit struct {
	Meta
	Score float64
	// Sims (with Options.Maps, multi-vectors) holds, for each query
	// vector, its dot product with each of the row's token vectors:
	// Sims[q][t].
	Sims [][]float32
}

// Result is a search's answer.
type Result struct {
	Hits []Hit
	// Scored is the number of rows ranked (after the filter);
	// Candidates the number the first stage passed on (multi-vectors).
	Scored, Candidates int
	Multi              bool
	Elapsed            time.Duration
}

// ErrBadQuery wraps errors of the query or options (a client's to fix).
var ErrBadQuery = errors.New("bad query")

// Search ranks the index's rows against q.
func (x *Index) Search(q Query, o Options) (*Result, error) {
	start := time.Now()
	s := x.snap.Load()
	if o.TopK == 0 {
		o.TopK = 10
	}
	if o.TopK < 1 || o.TopK > MaxTopK {
		return nil, fmt.Errorf("%w: top_k %d: want 1 to %d", ErrBadQuery, o.TopK, MaxTopK)
	}
	if len(o.Filter) > MaxFilterBytes {
		return nil, fmt.Errorf("%w: a filter of %d bytes: at most %d", ErrBadQuery, len(o.Filter), MaxFilterBytes)
	}
	if o.Filter != "" {
		// The pattern is the client's: not repeated in the error.
		if _, err := path.Match(o.Filter, ""); err != nil {
			return nil, fmt.Errorf("%w: filter: %v", ErrBadQuery, err)
		}
	}
	res := &Result{Multi: s.multi}
	rows := s.candidates(o.Filter)
	res.Scored = len(rows)
	var err error
	if s.multi {
		res.Hits, res.Candidates, err = s.searchMulti(q.Multi, rows, o)
	} else {
		res.Hits, err = s.searchSingle(q.Single, rows, o)
	}
	// Rows that scored no number (no vectors, or corrupt ones) are no
	// hits: a JSON answer could not carry their score.
	res.Hits = slices.DeleteFunc(res.Hits, func(h Hit) bool { return math.IsInf(h.Score, -1) })
	res.Elapsed = time.Since(start)
	return res, err
}

// candidates lists the rows a search ranks: every row the snapshot shows,
// or those whose path matches the filter.
func (s *snapshot) candidates(filter string) []rowRef {
	var out []rowRef
	for _, p := range s.parts {
		hid := s.hidden[p]
		for i := range p.meta {
			if hid != nil && hid[i] {
				continue
			}
			if filter != "" && !matchPath(filter, p.meta[i].Path) {
				continue
			}
			out = append(out, rowRef{p, i})
		}
	}
	return out
}

// matchPath matches a glob against a path, and against its base name when
// the pattern has no slash.
func matchPath(glob, p string) bool {
	if ok, _ := path.Match(glob, p); ok {
		return true
	}
	if !slices.Contains([]byte(glob), '/') {
		ok, _ := path.Match(glob, path.Base(p))
		return ok
	}
	return false
}

// scored is a row and its score.
type scored struct {
	r     rowRef
	score float64
}

// better is the ranking order: score descending, ties by id descending
// (as eval ranks, after trec_eval).
func better(a, b scored) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.r.p.meta[a.r.i].ID > b.r.p.meta[b.r.i].ID
}

// topK keeps the k best of what it is offered: a min-heap on the order.
type topK struct {
	k int
	h []scored
}

func (t *topK) Len() int           { return len(t.h) }
func (t *topK) Less(i, j int) bool { return better(t.h[j], t.h[i]) }
func (t *topK) Swap(i, j int)      { t.h[i], t.h[j] = t.h[j], t.h[i] }
func (t *topK) Push(x any)         { t.h = append(t.h, x.(scored)) }
func (t *topK) Pop() any           { x := t.h[len(t.h)-1]; t.h = t.h[:len(t.h)-1]; return x }

func (t *topK) offer(s scored) {
	if math.IsNaN(s.score) || math.IsInf(s.score, 1) {
		// Vectors of a corrupt part (NaN or infinite values): ranked as
		// a row without vectors, never above a number.
		s.score = math.Inf(-1)
	}
	if len(t.h) < t.k {
		heap.Push(t, s)
		return
	}
	if better(s, t.h[0]) {
		t.h[0] = s
		heap.Fix(t, 0)
	}
}

// sorted returns the kept rows best first.
func (t *topK) sorted() []scored {
	out := slices.Clone(t.h)
	slices.SortFunc(out, func(a, b scored) int {
		if better(a, b) {
			return -1
		}
		if better(b, a) {
			return 1
		}
		return 0
	})
	return out
}

// parallel splits n rows into one contiguous range per core and runs fn
// on each, returning their topKs.
func parallel(n, k int, fn func(lo, hi int, t *topK)) []*topK {
	w := max(1, min(runtime.GOMAXPROCS(0), n/64))
	ts := make([]*topK, w)
	var wg sync.WaitGroup
	for i := range w {
		ts[i] = &topK{k: k}
		lo, hi := i*n/w, (i+1)*n/w
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, hi, ts[i])
		}()
	}
	wg.Wait()
	return ts
}

func merge(ts []*topK, k int) []scored {
	all := &topK{k: k}
	for _, t := range ts {
		for _, s := range t.h {
			all.offer(s)
		}
	}
	return all.sorted()
}

func (s *snapshot) hits(best []scored) []Hit {
	out := make([]Hit, len(best))
	for i, b := range best {
		out[i] = Hit{Meta: b.r.p.meta[b.r.i], Score: b.score}
	}
	return out
}

// DefaultSingleCandidates is how many rows the first stage of a
// single-vector search (Q8_0 copies) passes to exact float32 scoring at
// least (more when TopK asks for more: 4 × TopK).
const DefaultSingleCandidates = 100

// searchSingle ranks by cosine: the query normalized, times each part's
// normalized rows through kernels.MatMul in float32 (eval.Score's
// arithmetic); rows without a vector rank last (−Inf). Unless exact, the
// parts' Q8_0 copies are scanned first and only the best candidates are
// scored in float32.
func (s *snapshot) searchSingle(q []float32, rows []rowRef, o Options) ([]Hit, error) {
	if len(q) != s.dims && len(rows) > 0 {
		return nil, fmt.Errorf("%w: a query vector of %d values, the index's %d", ErrBadQuery, len(q), s.dims)
	}
	qn := normalized(q)
	c := cmp.Or(o.Candidates, max(DefaultSingleCandidates, 4*o.TopK))
	quantized := !o.Exact && c < len(rows)
	for _, p := range uniqueParts(rows) {
		quantized = quantized && (p.q8 != nil || p.single == nil)
	}
	if !quantized {
		return s.hits(scoreParts(qn, rows, o.TopK, func(p *part) *kernels.Matrix { return p.single })), nil
	}
	cands := scoreParts(qn, rows, c, func(p *part) *kernels.Matrix { return p.q8 })
	// The candidates' float32 rows side by side: one product.
	rb := 4 * s.dims
	raw := make([]byte, 0, len(cands)*rb)
	for _, cd := range cands {
		if p := cd.r.p; p.single != nil {
			raw = append(raw, p.single.Data[cd.r.i*rb:(cd.r.i+1)*rb]...)
		} else {
			raw = append(raw, make([]byte, rb)...)
		}
	}
	dst := make([]float32, len(cands))
	if len(cands) > 0 {
		w, err := kernels.NewMatrix(gguf.TypeF32, len(cands), s.dims, raw)
		if err != nil {
			return nil, err
		}
		kernels.MatMul(dst, qn, 1, w, nil)
	}
	t := &topK{k: o.TopK}
	for j, cd := range cands {
		v := math.Inf(-1)
		if p := cd.r.p; p.single != nil && !p.empty[cd.r.i] {
			v = float64(dst[j])
		}
		t.offer(scored{cd.r, v})
	}
	return s.hits(t.sorted()), nil
}

// scoreParts scores the rows with each part's matrix (one product a part,
// the parts shared among the cores) and keeps the k best.
func scoreParts(qn []float32, rows []rowRef, k int, mat func(*part) *kernels.Matrix) []scored {
	byPart := map[*part][]float32{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for _, p := range uniqueParts(rows) {
		w := mat(p)
		if w == nil {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			dst := make([]float32, w.Rows)
			kernels.MatMul(dst, qn, 1, w, nil)
			mu.Lock()
			byPart[p] = dst
			mu.Unlock()
		}()
	}
	wg.Wait()
	t := &topK{k: k}
	for _, r := range rows {
		v := math.Inf(-1)
		if d := byPart[r.p]; d != nil && !r.p.empty[r.i] {
			v = float64(d[r.i])
		}
		t.offer(scored{r, v})
	}
	return t.sorted()
}

func uniqueParts(rows []rowRef) []*part {
	var out []*part
	for i, r := range rows {
		if i == 0 || rows[i-1].p != r.p {
			out = append(out, r.p)
		}
	}
	return out
}

// normalized returns v scaled to unit length, in float64 as eval does.
func normalized(v []float32) []float32 {
	var ss float64
	for _, x := range v {
		// A product is converted before it is added to (float64(a*b) + c): that
		// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
		// every build computes the same bits (kernels.TestNoFusedMultiplyAdd).
		ss += float64(float64(x) * float64(x))
	}
	out := make([]float32, len(v))
	if ss == 0 {
		copy(out, v)
		return out
	}
	inv := 1 / math.Sqrt(ss)
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}

// searchMulti ranks by MaxSim: with o.Exact every row exactly, else the
// rows' sign codes first (Hamming MaxSim), then the best candidates
// exactly.
func (s *snapshot) searchMulti(q [][]float32, rows []rowRef, o Options) ([]Hit, int, error) {
	for _, v := range q {
		if len(v) != s.dims {
			return nil, 0, fmt.Errorf("%w: query token vectors of %d values, the index's %d", ErrBadQuery, len(v), s.dims)
		}
	}
	flat := make([]float32, 0, len(q)*s.dims)
	for _, v := range q {
		flat = append(flat, v...)
	}
	cands := rows
	if !o.Exact {
		c := Candidates(len(rows), o)
		if c < len(rows) {
			cands = hammingStage(q, rows, s.dims, c)
		}
	}
	ts := parallel(len(cands), o.TopK, func(lo, hi int, t *topK) {
		var dst []float32
		var buf tokenBuf
		for _, r := range cands[lo:hi] {
			var v float64
			var err error
			v, dst, err = maxSim(flat, len(q), r, dst, &buf)
			if err != nil {
				continue // the part is left out; Refresh reports it
			}
			t.offer(scored{r, v})
		}
	})
	best := merge(ts, o.TopK)
	hits := s.hits(best)
	if o.Maps {
		n := 0
		for _, b := range best {
			n += len(q) * int(b.r.p.off[b.r.i+1]-b.r.p.off[b.r.i])
		}
		if n > MaxMapValues {
			return nil, 0, fmt.Errorf("%w: maps of %d hits would hold %d similarities (query vectors x page tokens), at most %d: ask for fewer hits or a shorter query", ErrBadQuery, len(best), n, MaxMapValues)
		}
		for i, b := range best {
			hits[i].Sims = tokenSims(flat, len(q), b.r)
		}
	}
	return hits, len(cands), nil
}

// maxSim is the exact MaxSim of m query vectors (flat) with row r: for
// each query vector its largest dot product with a token of the row,
// summed in float64, as eval.Score sums. A row without tokens scores
// −Inf. buf is scratch for a mapped row (part.tokens); an error is a
// sidecar that could not be read.
func maxSim(flat []float32, m int, r rowRef, dst []float32, buf *tokenBuf) (float64, []float32, error) {
	w, err := r.p.tokens(r.i, buf)
	if err != nil {
		return 0, dst, err
	}
	if w.Rows == 0 {
		return math.Inf(-1), dst, nil
	}
	if m == 0 {
		return 0, dst, nil
	}
	if cap(dst) < m*w.Rows {
		dst = make([]float32, m*w.Rows)
	}
	dst = dst[:m*w.Rows]
	kernels.MatMul(dst, flat, m, w, nil)
	var total float64
	for i := range m {
		best := float32(math.Inf(-1))
		for _, v := range dst[i*w.Rows : (i+1)*w.Rows] {
			best = max(best, v)
		}
		total += float64(best)
	}
	return total, dst, nil
}

// tokenSims returns the dot product of every query vector with every
// token of row r; nil when its sidecar could not be read.
func tokenSims(flat []float32, m int, r rowRef) [][]float32 {
	w, err := r.p.tokens(r.i, &tokenBuf{})
	if err != nil {
		return nil
	}
	dst := make([]float32, m*w.Rows)
	if w.Rows > 0 && m > 0 {
		kernels.MatMul(dst, flat, m, w, nil)
	}
	for i, v := range dst {
		// A corrupt token's infinities (its row's MaxSim a number by its
		// other tokens) as the largest float32s: a map is sent as JSON.
		if math.IsInf(float64(v), 0) {
			dst[i] = float32(math.Copysign(math.MaxFloat32, float64(v)))
		}
	}
	out := make([][]float32, m)
	for i := range out {
		out[i] = dst[i*w.Rows : (i+1)*w.Rows]
	}
	return out
}

// hammingStage keeps the c rows of the best Hamming MaxSim: query and
// row tokens as sign bits, a pair's similarity the number of agreeing
// bits minus the disagreeing ones (the dot product of the ±1 vectors),
// each query token's best over the row's tokens, summed.
func hammingStage(q [][]float32, rows []rowRef, dims, c int) []rowRef {
	words := (dims + 63) / 64
	qc := make([]uint64, len(q)*words)
	for i, v := range q {
		signCode(qc[i*words:(i+1)*words], v)
	}
	ts := parallel(len(rows), c, func(lo, hi int, t *topK) {
		best := make([]int, len(q))
		lanes := make([]uint64, len(q)*blockTokens)
		for _, r := range rows[lo:hi] {
			p := r.p
			a, b := int(p.off[r.i]), int(p.off[r.i+1])
			if a == b {
				t.offer(scored{r, math.Inf(-1)})
				continue
			}
			var sum int
			if p.blocks != nil {
				sum = hammingSum(qc, p.blocks[2*blockTokens*p.blockOff[r.i]:2*blockTokens*p.blockOff[r.i+1]], lanes)
			} else {
				sum = hammingN(qc, p.codes[a*words:b*words], words, best)
			}
			t.offer(scored{r, float64(len(q)*dims - 2*sum)})
		}
	})
	best := merge(ts, c)
	out := make([]rowRef, len(best))
	for i, b := range best {
		out[i] = b.r
	}
	return out
}

// hammingN returns the sum over query codes (words each) of the
// smallest Hamming distance to a row token, for widths other than 128
// (which take the blocks of hamming.go). minDist is scratch of one int a
// query token.
func hammingN(qc, codes []uint64, words int, minDist []int) int {
	for i := range minDist {
		minDist[i] = math.MaxInt
	}
	for t := 0; t+words <= len(codes); t += words {
		d := codes[t : t+words]
		for i := range minDist {
			h := 0
			for w, x := range d {
				h += bits.OnesCount64(qc[i*words+w] ^ x)
			}
			if h < minDist[i] {
				minDist[i] = h
			}
		}
	}
	sum := 0
	for _, h := range minDist {
		sum += h
	}
	return sum
}

// Row returns the row of an id, if the index holds it.
func (x *Index) Row(id string) (Meta, bool) {
	s := x.snap.Load()
	r, ok := s.byID[id]
	if !ok {
		return Meta{}, false
	}
	return r.p.meta[r.i], true
}
