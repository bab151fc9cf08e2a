package eval

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/kernels"
)

// queryBlockRows bounds the query rows scored against a document at once,
// so the product buffer stays small (rows × the document's vectors).
const queryBlockRows = 1024

// Score is exact search: the score of every query against every document,
// scores[q][d]. Single vectors score by cosine; with multi, the
// late-interaction MaxSim: for each query vector its largest dot product
// with a document vector, summed (ColBERT's and colpali-engine's score).
// Products run through kernels.MatMul in float32, as the reference
// evaluators compute them on accelerators; a document without vectors
// scores −Inf. Vectors of different widths are an error.
func Score(queries, docs []Vectors, multi bool) ([][]float64, error) {
	scores := make([][]float64, len(queries))
	for q := range scores {
		scores[q] = make([]float64, len(docs))
	}
	if multi {
		return scores, maxSim(scores, queries, docs)
	}
	return scores, cosine(scores, queries, docs)
}

// cosine fills scores with the cosines of single vectors.
func cosine(scores [][]float64, queries, docs []Vectors) error {
	dim := -1
	for _, q := range queries {
		if len(q.Single) > 0 {
			dim = len(q.Single)
			break
		}
	}
	drows := make([][]float32, len(docs))
	for i, d := range docs {
		drows[i] = d.Single
	}
	w, err := packRows(drows, dim, true)
	if err != nil || w == nil {
		return err
	}
	for start := 0; start < len(queries); start += queryBlockRows {
		block := queries[start:min(start+queryBlockRows, len(queries))]
		x := make([]float32, 0, len(block)*dim)
		for _, q := range block {
			if len(q.Single) != dim {
				return fmt.Errorf("eval: a query vector of %d values, the others %d", len(q.Single), dim)
			}
			x = append(x, normalized(q.Single)...)
		}
		dst := make([]float32, len(block)*w.Rows)
		kernels.MatMul(dst, x, len(block), w, nil)
		for i := range block {
			for d := range docs {
				scores[start+i][d] = float64(dst[i*w.Rows+d])
				if len(docs[d].Single) == 0 {
					scores[start+i][d] = math.Inf(-1)
				}
			}
		}
	}
	return nil
}

// maxSim fills scores with MaxSim of multi-vectors.
func maxSim(scores [][]float64, queries, docs []Vectors) error {
	dim := -1
	for _, q := range queries {
		for _, r := range q.Multi {
			if dim < 0 {
				dim = len(r)
			}
			if len(r) != dim {
				return fmt.Errorf("eval: query vectors of %d and %d values", dim, len(r))
			}
		}
	}
	if dim <= 0 {
		return nil
	}
	// Queries in blocks of whole queries, their rows side by side.
	type block struct {
		first, n int // queries
		rows     []float32
		ends     []int // each query's end row in rows
	}
	var blocks []block
	for q := 0; q < len(queries); {
		b := block{first: q}
		for q < len(queries) && (b.n == 0 || len(b.rows)/dim+len(queries[q].Multi) <= queryBlockRows) {
			for _, r := range queries[q].Multi {
				b.rows = append(b.rows, r...)
			}
			b.ends = append(b.ends, len(b.rows)/dim)
			b.n++
			q++
		}
		blocks = append(blocks, b)
	}
	var dst []float32
	for d, doc := range docs {
		w, err := packRows(doc.Multi, dim, false)
		if err != nil {
			return fmt.Errorf("eval: document %d: %w", d, err)
		}
		for _, b := range blocks {
			m := len(b.rows) / dim
			if w == nil || m == 0 {
				for i := range b.n {
					scores[b.first+i][d] = math.Inf(-1)
				}
				continue
			}
			if cap(dst) < m*w.Rows {
				dst = make([]float32, m*w.Rows)
			}
			dst = dst[:m*w.Rows]
			kernels.MatMul(dst, b.rows, m, w, nil)
			row := 0
			for i, end := range b.ends {
				var total float64
				for ; row < end; row++ {
					best := float32(math.Inf(-1))
					for _, v := range dst[row*w.Rows : (row+1)*w.Rows] {
						best = max(best, v)
					}
					total += float64(best)
				}
				scores[b.first+i][d] = total
			}
		}
	}
	return nil
}

// packRows lays rows of width dim out as an F32 matrix for kernels.MatMul
// (nil when there are none), L2-normalizing them when asked. Empty rows
// (documents without vectors) are kept as zeros.
func packRows(rows [][]float32, dim int, normalize bool) (*kernels.Matrix, error) {
	if len(rows) == 0 || dim <= 0 {
		return nil, nil
	}
	raw := make([]byte, 4*dim*len(rows))
	for i, r := range rows {
		if len(r) == 0 {
			continue
		}
		if len(r) != dim {
			return nil, fmt.Errorf("eval: vectors of %d and %d values", dim, len(r))
		}
		if normalize {
			r = normalized(r)
		}
		for k, v := range r {
			binary.LittleEndian.PutUint32(raw[4*(i*dim+k):], math.Float32bits(v))
		}
	}
	return kernels.NewMatrix(gguf.TypeF32, len(rows), dim, raw)
}

// normalized returns v scaled to unit length (v itself when it is zero).
func normalized(v []float32) []float32 {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss == 0 {
		return v
	}
	inv := 1 / math.Sqrt(ss)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}
