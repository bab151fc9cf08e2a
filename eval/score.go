package eval

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/model/heads"
)

const (
	// queryBlockRows bounds the query vectors scored at once, so the
	// product buffer stays small (those rows × a document's vectors).
	queryBlockRows = 1024
	// docBlockRows bounds the single vectors of documents one product
	// takes, for the same reason.
	docBlockRows = 16384
)

// Score is exact search: the score of every query against every document,
// scores[q][d]. Single vectors score by cosine; with multi, the
// late-interaction MaxSim: for each query vector its largest dot product
// with a document vector, summed (ColBERT's and colpali-engine's score).
// Products run through kernels.MatMul in float32, as the reference
// evaluators compute them on accelerators; a document without vectors
// scores −Inf. Vectors of different widths are an error.
func Score(queries, docs []Vectors, multi bool) ([][]float64, error) {
	scores := make([][]float64, len(queries))
	err := scoreRows(queries, docs, multi, func(q int, row []float64) {
		scores[q] = append([]float64(nil), row...)
	})
	return scores, err
}

// scoreRows computes Score a block of queries at a time and hands each
// query's row of scores to emit, so that a large corpus never needs the
// whole matrix in memory.
func scoreRows(queries, docs []Vectors, multi bool, emit func(q int, row []float64)) error {
	dim := -1
	for _, q := range queries {
		if multi && len(q.Multi) > 0 {
			dim = len(q.Multi[0])
			break
		}
		if !multi && len(q.Single) > 0 {
			dim = len(q.Single)
			break
		}
	}
	mats, err := packDocs(docs, dim, multi)
	if err != nil {
		return err
	}
	rows := make([][]float64, 0, queryBlockRows)
	var x []float32
	var dst []float32
	for start := 0; start < len(queries); {
		// A block of whole queries, their vectors side by side.
		x, rows = x[:0], rows[:0]
		var ends []int
		end := start
		for end < len(queries) {
			q := queries[end]
			n := 1
			if multi {
				n = len(q.Multi)
			}
			if end > start && len(x)/max(dim, 1)+n > queryBlockRows {
				break
			}
			if err := appendQuery(&x, q, dim, multi); err != nil {
				return err
			}
			ends = append(ends, len(x)/max(dim, 1))
			end++
		}
		for range end - start {
			rows = append(rows, make([]float64, len(docs)))
		}
		m := len(x) / max(dim, 1)
		for _, mat := range mats {
			if mat.w == nil {
				for i := range rows {
					for d := mat.first; d < mat.first+mat.docs; d++ {
						rows[i][d] = math.Inf(-1)
					}
				}
				continue
			}
			if m == 0 {
				continue // queries without vectors: MaxSim sums nothing
			}
			if cap(dst) < m*mat.w.Rows {
				dst = make([]float32, m*mat.w.Rows)
			}
			dst = dst[:m*mat.w.Rows]
			kernels.MatMul(dst, x, m, mat.w, nil)
			if !multi {
				for i := range rows {
					for d := range mat.docs {
						v := float64(dst[i*mat.w.Rows+d])
						if mat.empty[d] {
							v = math.Inf(-1)
						}
						rows[i][mat.first+d] = v
					}
				}
				continue
			}
			row := 0
			for i, end := range ends {
				var total float64
				for ; row < end; row++ {
					best := float32(math.Inf(-1))
					for _, v := range dst[row*mat.w.Rows : (row+1)*mat.w.Rows] {
						best = max(best, v)
					}
					total += float64(best)
				}
				rows[i][mat.first] = total
			}
		}
		for i := range rows {
			emit(start+i, rows[i])
		}
		start = end
	}
	return nil
}

// appendQuery adds a query's vectors (its single vector, normalized, or
// its multi-vector rows) to x.
func appendQuery(x *[]float32, q Vectors, dim int, multi bool) error {
	if !multi {
		if len(q.Single) != dim {
			return fmt.Errorf("eval: a query vector of %d values, the others %d", len(q.Single), dim)
		}
		*x = append(*x, normalized(q.Single)...)
		return nil
	}
	for _, r := range q.Multi {
		if len(r) != dim {
			return fmt.Errorf("eval: query vectors of %d and %d values", dim, len(r))
		}
		*x = append(*x, r...)
	}
	return nil
}

// docMatrix is documents first..first+docs packed for kernels.MatMul: for
// single vectors a block of documents, one row each (empty marks those
// without a vector); for multi-vectors one document, a row per vector. w
// is nil when they hold no vector.
type docMatrix struct {
	first, docs int
	w           *kernels.Matrix
	empty       []bool
}

// packDocs lays the documents' vectors out as F32 matrices, once for all
// query blocks.
func packDocs(docs []Vectors, dim int, multi bool) ([]docMatrix, error) {
	var mats []docMatrix
	if multi {
		for d, doc := range docs {
			w, err := packRows(doc.Multi, dim, false)
			if err != nil {
				return nil, fmt.Errorf("eval: document %d: %w", d, err)
			}
			mats = append(mats, docMatrix{first: d, docs: 1, w: w})
		}
		return mats, nil
	}
	for first := 0; first < len(docs); first += docBlockRows {
		block := docs[first:min(first+docBlockRows, len(docs))]
		rows := make([][]float32, len(block))
		empty := make([]bool, len(block))
		for i, doc := range block {
			rows[i], empty[i] = doc.Single, len(doc.Single) == 0
		}
		w, err := packRows(rows, dim, true)
		if err != nil {
			return nil, err
		}
		mats = append(mats, docMatrix{first: first, docs: len(block), w: w, empty: empty})
	}
	return mats, nil
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

// normalized returns a copy of v scaled to unit length (heads.Normalize).
func normalized(v []float32) []float32 {
	out := slices.Clone(v)
	heads.Normalize(out)
	return out
}
