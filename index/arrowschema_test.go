package index

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"testing"

	"github.com/vembed/vembed/internal/fixtures"
	"github.com/vembed/vembed/internal/npmtest"
)

// TestVectorWidths: a column is fixed-size only where every row's vectors
// share a width (an empty embedding, as in a multi-vector dataset, keeps
// it a list).
func TestVectorWidths(t *testing.T) {
	v := func(n int) []float32 { return make([]float32, n) }
	for _, c := range []struct {
		rows    []Row
		emb, mv int
	}{
		{nil, 0, 0},
		{[]Row{{Embedding: v(8)}, {Embedding: v(8)}}, 8, 0},
		{[]Row{{Embedding: v(8)}, {Embedding: v(4)}}, 0, 0},
		{[]Row{{Embedding: v(8)}, {}}, 0, 0},
		{[]Row{{}, {Embedding: v(8)}}, 0, 0},
		{[]Row{{Vectors: [][]float32{v(4), v(4)}}, {}, {Vectors: [][]float32{v(4)}}}, 0, 4},
		{[]Row{{Vectors: [][]float32{v(4), v(3)}}}, 0, 0},
		{[]Row{{Vectors: [][]float32{v(4)}}, {Vectors: [][]float32{v(0)}}}, 0, 0},
	} {
		if emb, mv := vectorWidths(c.rows); emb != c.emb || mv != c.mv {
			t.Errorf("%d rows: widths %d, %d; want %d, %d", len(c.rows), emb, mv, c.emb, c.mv)
		}
	}
}

// TestArrowReaders: arrow-rs (the Parquet reader of parquet-wasm; pyarrow
// applies ARROW:schema the same way) reads the parts' vectors as
// fixed-size lists, LanceDB loads them as they are and finds by cosine,
// and by MaxSim over the multi-vector column, the rows a float64 scan
// finds; DuckDB and ReadPart still read the same files.
func TestArrowReaders(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 31))
	vec := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	row := func(i int) Row {
		return Row{ID: fmt.Sprintf("id%02d", i), Path: "p", Page: i + 1, SHA256: "s", Model: "m", Width: 2, Height: 3, Text: "t"}
	}

	t.Run("single", func(t *testing.T) {
		dir := t.TempDir()
		var rows []Row
		for i := range 40 {
			r := row(i)
			r.Embedding = vec(8)
			rows = append(rows, r)
		}
		writeTestParts(t, dir, rows, 25)
		q := rows[7].Embedding
		res := npmtest.Lance(t, dir, "embedding", q, 5)
		if got := res.Schema["embedding"]; got != "FixedSizeList[8]<Float32>" {
			t.Fatalf("embedding read as %s (schema %v)", got, res.Schema)
		}
		if res.Rows != len(rows) {
			t.Fatalf("LanceDB loaded %d rows of %d", res.Rows, len(rows))
		}
		checkHits(t, res.Hits, rows, func(r Row) float64 { return 1 - fixtures.Cosine(q, r.Embedding) })
		// DuckDB ignores the Arrow schema and reads lists.
		dd := npmtest.DuckDB(t, fmt.Sprintf("select count(*)::int as n, min(len(embedding))::int as d from read_parquet('%s')", filepath.Join(dir, "*.parquet")))
		if fmt.Sprint(dd[0]["n"]) != "40" || fmt.Sprint(dd[0]["d"]) != "8" {
			t.Fatalf("DuckDB: %v", dd)
		}
	})

	t.Run("multivector", func(t *testing.T) {
		dir := t.TempDir()
		var rows []Row
		for i := range 30 {
			r := row(i)
			for range 2 + i%5 {
				r.Vectors = append(r.Vectors, vec(4))
			}
			rows = append(rows, r)
		}
		writeTestParts(t, dir, rows, 30)
		q := rows[3].Vectors[:2]
		res := npmtest.Lance(t, dir, "multivector", q, 5)
		if got := res.Schema["multivector"]; got != "List<FixedSizeList[4]<Float32>>" {
			t.Fatalf("multivector read as %s (schema %v)", got, res.Schema)
		}
		if got := res.Schema["embedding"]; got != "List<Float32>" {
			t.Fatalf("the empty embedding column read as %s", got)
		}
		// LanceDB's multi-vector distance is 1 - MaxSim (the sum over the
		// query's vectors of the cosine similarity of the nearest row
		// vector).
		checkHits(t, res.Hits, rows, func(r Row) float64 {
			maxSim := 0.0
			for _, qv := range q {
				best := math.Inf(-1)
				for _, v := range r.Vectors {
					best = max(best, fixtures.Cosine(qv, v))
				}
				maxSim += best
			}
			return 1 - maxSim
		})
	})
}

// writeTestParts writes rows as parts of at most per rows, and checks
// that ReadPart gives them back.
func writeTestParts(t *testing.T, dir string, rows []Row, per int) {
	t.Helper()
	for i := 0; i < len(rows); i += per {
		part := rows[i:min(i+per, len(rows))]
		path := filepath.Join(dir, fmt.Sprintf("part%d.parquet", i/per))
		if err := writePart(path, part); err != nil {
			t.Fatal(err)
		}
		back, err := ReadPart(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(back) != len(part) || back[0].ID != part[0].ID {
			t.Fatalf("ReadPart: %d rows, want %d", len(back), len(part))
		}
	}
}

// checkHits compares LanceDB's nearest rows with a float64 scan by
// distance: the same ids in the same order (where distances are not
// within float32 rounding of each other) and the same distances.
func checkHits(t *testing.T, hits []npmtest.LanceHit, rows []Row, distance func(Row) float64) {
	t.Helper()
	type scored struct {
		id string
		d  float64
	}
	var want []scored
	for _, r := range rows {
		want = append(want, scored{r.ID, distance(r)})
	}
	sort.Slice(want, func(i, j int) bool { return want[i].d < want[j].d })
	if len(hits) != 5 {
		t.Fatalf("%d hits, want 5", len(hits))
	}
	// float32 sums of a few products: relative error ~1e-6 per term.
	const tol = 1e-4
	for i, h := range hits {
		if h.ID != want[i].id && math.Abs(want[i].d-distance(rowByID(rows, h.ID))) > tol {
			t.Errorf("hit %d: %s (distance %.6f), want %s (%.6f)", i, h.ID, h.Distance, want[i].id, want[i].d)
		}
		if math.Abs(h.Distance-want[i].d) > tol {
			t.Errorf("hit %d (%s): distance %.6f, want %.6f", i, h.ID, h.Distance, want[i].d)
		}
	}
}

func rowByID(rows []Row, id string) Row {
	for _, r := range rows {
		if r.ID == id {
			return r
		}
	}
	return Row{}
}
