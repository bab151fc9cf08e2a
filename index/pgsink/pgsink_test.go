package pgsink

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	neturl "net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgvector/pgvector-go"

	"github.com/vembed/vembed/eval"
	"github.com/vembed/vembed/index"
	"github.com/vembed/vembed/internal/npmtest"
)

// TestPostgres runs the sink against PostgreSQL with pgvector (PGlite, one
// server for all subtests, each on tables of its own).
func TestPostgres(t *testing.T) {
	url := npmtest.StartPGlite(t)
	t.Run("RoundTripVector", func(t *testing.T) { testRoundTrip(t, url, false) })
	t.Run("RoundTripHalfvec", func(t *testing.T) { testRoundTrip(t, url, true) })
	t.Run("Upsert", func(t *testing.T) { testUpsert(t, url) })
	t.Run("Delete", func(t *testing.T) { testDelete(t, url) })
	t.Run("Mismatch", func(t *testing.T) { testMismatch(t, url) })
	t.Run("BadRows", func(t *testing.T) { testBadRows(t, url) })
	t.Run("Atomic", func(t *testing.T) { testAtomic(t, url) })
	t.Run("TableName", func(t *testing.T) { testTableName(t, url) })
	t.Run("HNSW", func(t *testing.T) { testHNSW(t, url) })
	t.Run("QueriesMatchEval", func(t *testing.T) { testQueriesMatchEval(t, url, false) })
	t.Run("QueriesMatchEvalHalfvec", func(t *testing.T) { testQueriesMatchEval(t, url, true) })
	t.Run("ExecModes", func(t *testing.T) { testExecModes(t, url) })
	t.Run("FailingBatchMessage", func(t *testing.T) { testFailingBatchMessage(t, url) })
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// open opens a sink of one connection (PGlite serves one at a time) and
// closes it at the end of the test.
func open(t *testing.T, url string, opts Options) *Sink {
	t.Helper()
	opts.MaxConns = 1
	s, err := Open(testContext(t), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// smallStatements lowers the statement bounds so that little data crosses
// them.
func smallStatements(t *testing.T, rows, bytes, deletes int) {
	r, b, d := maxStatementRows, maxStatementBytes, maxDeleteIDs
	maxStatementRows, maxStatementBytes, maxDeleteIDs = rows, bytes, deletes
	t.Cleanup(func() { maxStatementRows, maxStatementBytes, maxDeleteIDs = r, b, d })
}

// randomVector draws n values of mixed magnitudes, with the edge cases
// float32 and float16 storage must keep (signed zeros, subnormals, the
// extremes) among them.
func randomVector(rng *rand.Rand, n int, half bool) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(7)-4)))
	}
	edges := []float32{0, float32(math.Copysign(0, -1)), 1e-40, -3.4e38, math.MaxFloat32, math.SmallestNonzeroFloat32}
	if half {
		// float16's subnormals, its largest value, halfway points.
		edges = []float32{0, float32(math.Copysign(0, -1)), 6e-8, -3e-6, 65504, -65519, 1 + 1.0/2048, 1 + 3.0/2048}
	}
	for i := range min(len(edges), n/4) {
		v[rng.IntN(n)] = edges[i]
	}
	return v
}

// roundHalf rounds f to the nearest IEEE binary16 value, ties to even
// (written here from the format, independent of the sink's encoder).
func roundHalf(f float32) float32 {
	a := math.Abs(float64(f))
	if a == 0 {
		return f
	}
	_, exp := math.Frexp(a) // a = frac × 2^exp, frac in [0.5, 1)
	e := max(exp-1, -14)    // the binade, subnormals sharing the lowest
	q := math.Ldexp(1, e-10)
	r := math.RoundToEven(a/q) * q
	if r > 65504 {
		r = math.Inf(1)
	}
	return float32(math.Copysign(r, float64(f)))
}

func TestRoundHalf(t *testing.T) {
	for _, c := range []struct{ in, want float32 }{
		{1, 1}, {1 + 1.0/2048, 1}, {1 + 3.0/2048, 1 + 2.0/1024}, {65504, 65504}, {65519, 65504},
		{65520, float32(math.Inf(1))}, {6e-8, 0x1p-24}, {2.9e-8, 0}, {3e-8, 0x1p-24}, {-0.1, -0.0999755859375},
		{0x1p-14 * (1 + 0x1p-11), 0x1p-14},
	} {
		if got := roundHalf(c.in); got != c.want {
			t.Errorf("roundHalf(%g) = %g, want %g", c.in, got, c.want)
		}
	}
}

func makeRows(rng *rand.Rand, n, dims, multi int, half bool, tag string) []index.Row {
	rows := make([]index.Row, n)
	for i := range rows {
		r := index.Row{
			ID: fmt.Sprintf("%s-%04d", tag, i), Path: fmt.Sprintf("docs/%s/%d.pdf", tag, i), Page: i%7 + 1,
			SHA256: fmt.Sprintf("%064x", i), Model: "synth-" + tag, Width: 100 + i, Height: 200 + i,
			Text: fmt.Sprintf("page %d of %s", i, tag),
		}
		if dims > 0 {
			r.Embedding = randomVector(rng, dims, half)
		}
		for range multi * (1 + rng.IntN(5)) / 3 {
			r.Vectors = append(r.Vectors, randomVector(rng, 8, half))
		}
		if multi > 0 && len(r.Vectors) == 0 {
			r.Vectors = [][]float32{randomVector(rng, 8, half)}
		}
		rows[i] = r
	}
	return rows
}

// readBack returns the table's rows by ID, multi-vector rows included.
func readBack(t *testing.T, s *Sink) map[string]index.Row {
	t.Helper()
	ctx := testContext(t)
	emb := "null::" + s.vecTyp
	if s.opts.Dimensions > 0 {
		emb = "embedding"
	}
	rows, err := s.pool.Query(ctx, "select id, path, page, sha256, model, width, height, text, "+emb+" from "+s.table.Sanitize())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]index.Row{}
	for rows.Next() {
		var r index.Row
		var page, w, h int32
		var v pgvector.Vector
		var hv pgvector.HalfVector
		var dst any = &v
		if s.opts.HalfVec {
			dst = &hv
		}
		if s.opts.Dimensions == 0 {
			dst = new(any)
		}
		if err := rows.Scan(&r.ID, &r.Path, &page, &r.SHA256, &r.Model, &w, &h, &r.Text, dst); err != nil {
			t.Fatal(err)
		}
		r.Page, r.Width, r.Height = int(page), int(w), int(h)
		if s.opts.Dimensions > 0 {
			r.Embedding = v.Slice()
			if s.opts.HalfVec {
				r.Embedding = hv.Slice()
			}
		}
		got[r.ID] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if s.opts.MultiDimensions == 0 {
		return got
	}
	rows, err = s.pool.Query(ctx, "select id, row_index, embedding from "+s.child.Sanitize()+" order by id, row_index")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var k int32
		var v pgvector.Vector
		var hv pgvector.HalfVector
		var dst any = &v
		if s.opts.HalfVec {
			dst = &hv
		}
		if err := rows.Scan(&id, &k, dst); err != nil {
			t.Fatal(err)
		}
		r, ok := got[id]
		if !ok || int(k) != len(r.Vectors) {
			t.Fatalf("child row %s/%d: parent present %v, %d rows before it", id, k, ok, len(r.Vectors))
		}
		if s.opts.HalfVec {
			r.Vectors = append(r.Vectors, hv.Slice())
		} else {
			r.Vectors = append(r.Vectors, v.Slice())
		}
		got[id] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// sameVector compares stored values bit for bit with want, rounded to
// float16 first for halfvec.
func sameVector(got, want []float32, half bool) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d values, want %d", len(got), len(want))
	}
	for i := range want {
		w := want[i]
		if half {
			w = roundHalf(w)
		}
		if math.Float32bits(got[i]) != math.Float32bits(w) {
			return fmt.Errorf("value %d: %g (%#x), want %g (%#x) from %g", i, got[i], math.Float32bits(got[i]), w, math.Float32bits(w), want[i])
		}
	}
	return nil
}

func checkRows(t *testing.T, s *Sink, want []index.Row) {
	t.Helper()
	got := readBack(t, s)
	if len(got) != len(want) {
		t.Fatalf("%d rows in %s, want %d", len(got), s.table.Sanitize(), len(want))
	}
	for _, w := range want {
		g, ok := got[w.ID]
		if !ok {
			t.Fatalf("row %s missing", w.ID)
		}
		if g.Path != w.Path || g.Page != w.Page || g.SHA256 != w.SHA256 || g.Model != w.Model || g.Width != w.Width || g.Height != w.Height || g.Text != w.Text {
			t.Fatalf("row %s: %+v, want %+v", w.ID, g, w)
		}
		if err := sameVector(g.Embedding, w.Embedding, s.opts.HalfVec); err != nil {
			t.Fatalf("row %s: embedding: %v", w.ID, err)
		}
		if len(g.Vectors) != len(w.Vectors) {
			t.Fatalf("row %s: %d multi-vector rows, want %d", w.ID, len(g.Vectors), len(w.Vectors))
		}
		for k := range w.Vectors {
			if err := sameVector(g.Vectors[k], w.Vectors[k], s.opts.HalfVec); err != nil {
				t.Fatalf("row %s: multi-vector row %d: %v", w.ID, k, err)
			}
		}
	}
}

// testRoundTrip stores single and multi-vectors across several statements
// and reads back every value: the same bits for vector, float16's rounding
// of each for halfvec.
func testRoundTrip(t *testing.T, url string, half bool) {
	smallStatements(t, 7, 4096, 3)
	table := "rt_vector"
	if half {
		table = "rt_halfvec"
	}
	s := open(t, url, Options{Table: table, Dimensions: 67, MultiDimensions: 8, HalfVec: half})
	rng := rand.New(rand.NewPCG(1, 2))
	rows := makeRows(rng, 40, 67, 12, half, table)
	if err := s.Upsert(testContext(t), rows); err != nil {
		t.Fatal(err)
	}
	checkRows(t, s, rows)
}

// testUpsert sends rows twice (the second time changed, with fewer or more
// multi-vector rows, and one ID twice in a call): one row per ID, holding
// the last values, its child rows replaced.
func testUpsert(t *testing.T, url string) {
	smallStatements(t, 5, 2048, 3)
	s := open(t, url, Options{Table: "upsert", Dimensions: 16, MultiDimensions: 8})
	rng := rand.New(rand.NewPCG(3, 4))
	ctx := testContext(t)
	rows := makeRows(rng, 23, 16, 9, false, "u")
	if err := s.Upsert(ctx, rows); err != nil {
		t.Fatal(err)
	}
	again := makeRows(rng, 23, 16, 9, false, "u")
	for i := range again {
		again[i].Text += " (changed)"
		again[i].Page += 100
	}
	// The same rows again plus a stale copy of row 3 before its new one.
	stale := rows[3]
	if err := s.Upsert(ctx, append([]index.Row{stale}, again...)); err != nil {
		t.Fatal(err)
	}
	checkRows(t, s, again)
	// And the same call once more changes nothing.
	if err := s.Upsert(ctx, again); err != nil {
		t.Fatal(err)
	}
	checkRows(t, s, again)
}

// testDelete removes rows (and absent IDs) across several statements; their
// multi-vector rows go with them.
func testDelete(t *testing.T, url string) {
	smallStatements(t, 1000, 8<<20, 4)
	s := open(t, url, Options{Table: "del", Dimensions: 4, MultiDimensions: 8})
	rng := rand.New(rand.NewPCG(5, 6))
	ctx := testContext(t)
	rows := makeRows(rng, 20, 4, 6, false, "d")
	if err := s.Upsert(ctx, rows); err != nil {
		t.Fatal(err)
	}
	var gone []string
	var kept []index.Row
	for i, r := range rows {
		if i%3 == 0 {
			gone = append(gone, r.ID)
		} else {
			kept = append(kept, r)
		}
	}
	if err := s.Delete(ctx, append(gone, "absent", "bad\x00id")); err != nil {
		t.Fatal(err)
	}
	checkRows(t, s, kept)
	var orphans int
	if err := s.pool.QueryRow(ctx, "select count(*) from "+s.child.Sanitize()+" where id = any($1)", gone).Scan(&orphans); err != nil || orphans != 0 {
		t.Fatalf("%d multi-vector rows of deleted items left (%v)", orphans, err)
	}
	if err := s.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

// testMismatch opens existing tables with other widths or types: a clear
// error, nothing changed.
func testMismatch(t *testing.T, url string) {
	ctx := testContext(t)
	s := open(t, url, Options{Table: "mm", Dimensions: 8, MultiDimensions: 4})
	s.Close()
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{Table: "mm", Dimensions: 9}, "holds vector(8) embeddings and this run writes vector(9)"},
		{Options{Table: "mm", Dimensions: 8, HalfVec: true}, "holds vector(8) embeddings and this run writes halfvec(8)"},
		{Options{Table: "mm", Dimensions: 8, MultiDimensions: 5}, "holds vector(4) embeddings and this run writes vector(5)"},
		{Options{Table: "mm", Dimensions: 8, MultiDimensions: 4, HalfVec: true}, "halfvec(8)"},
	} {
		c.opts.MaxConns = 1
		s, err := Open(ctx, url, c.opts)
		if err == nil {
			s.Close()
			t.Fatalf("%+v: opened", c.opts)
		}
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `"mm`) {
			t.Fatalf("%+v: %v, want %q naming the table", c.opts, err, c.want)
		}
	}
	// A multi-vector-only run may share the table (its vectors column is
	// left empty); a single-vector run may not use a table without one.
	s = open(t, url, Options{Table: "mm", MultiDimensions: 4})
	s.Close()
	s = open(t, url, Options{Table: "mo", MultiDimensions: 4})
	s.Close()
	if s, err := Open(ctx, url, Options{Table: "mo", Dimensions: 4, MaxConns: 1}); err == nil || !strings.Contains(err.Error(), "without an embedding column") {
		if err == nil {
			s.Close()
		}
		t.Fatalf("single vectors into a multi-vector-only table: %v", err)
	}
}

// testBadRows sends rows the table cannot take: each is a clear error
// naming the row, and nothing of the call is written.
func testBadRows(t *testing.T, url string) {
	ctx := testContext(t)
	s := open(t, url, Options{Table: "bad", Dimensions: 4, MultiDimensions: 2})
	h := open(t, url, Options{Table: "badh", Dimensions: 4, HalfVec: true})
	good := index.Row{ID: "ok", Path: "a", Embedding: []float32{1, 2, 3, 4}, Vectors: [][]float32{{1, 2}}}
	nan := float32(math.NaN())
	for _, c := range []struct {
		sink *Sink
		row  index.Row
		want string
	}{
		{s, index.Row{ID: "w", Embedding: []float32{1, 2, 3}, Vectors: [][]float32{{1, 2}}}, "row \"w\": a vector of 3 values, the table's are 4"},
		{s, index.Row{ID: "m", Embedding: []float32{1, 2, 3, 4}, Vectors: [][]float32{{1, 2}, {1}}}, "row \"m\": multi-vector row 1 has 1 values"},
		{s, index.Row{ID: "e", Embedding: []float32{1, 2, 3, 4}}, "row \"e\" has no multi-vector rows"},
		{s, index.Row{ID: "n", Embedding: []float32{1, nan, 3, 4}, Vectors: [][]float32{{1, 2}}}, "row \"n\": value 1 is NaN"},
		{s, index.Row{ID: "i", Embedding: []float32{1, 2, 3, 4}, Vectors: [][]float32{{float32(math.Inf(-1)), 2}}}, "row \"i\": multi-vector row 0 value 0 is -Inf"},
		{s, index.Row{ID: "", Embedding: []float32{1, 2, 3, 4}, Vectors: [][]float32{{1, 2}}}, "ID \"\""},
		{s, index.Row{ID: strings.Repeat("long", 1000)}, "row \"" + strings.Repeat("long", 20) + "... (3920 bytes more)\": a vector of 0 values"},
		{s, index.Row{ID: "p", Page: math.MaxInt32 + 1, Embedding: []float32{1, 2, 3, 4}, Vectors: [][]float32{{1, 2}}}, "out of range"},
		{h, index.Row{ID: "h", Embedding: []float32{1, 65520, 3, 4}}, "row \"h\": value 1 is 65520, which halfvec cannot hold"},
	} {
		g := good
		if c.sink == h {
			g.Vectors = nil
		}
		err := c.sink.Upsert(ctx, []index.Row{g, c.row})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%+v: %v, want %q", c.row, err, c.want)
		}
		if n := len(readBack(t, c.sink)); n != 0 {
			t.Fatalf("%+v: %d rows written", c.row, n)
		}
	}
	// Text PostgreSQL cannot hold is stored cleaned.
	odd := good
	odd.Text, odd.Path = "a\x00b\xffc", "dir/\xfe.pdf"
	if err := s.Upsert(ctx, []index.Row{odd}); err != nil {
		t.Fatal(err)
	}
	if r := readBack(t, s)["ok"]; r.Text != "ab\uFFFDc" || r.Path != "dir/\uFFFD.pdf" {
		t.Fatalf("stored text %q, path %q", r.Text, r.Path)
	}
	for _, o := range []Options{
		{Dimensions: 0},
		{Dimensions: -1, MultiDimensions: 4},
		{MultiDimensions: 4, HNSW: true},
		{Dimensions: 2048, HNSW: true},
		{Dimensions: 4096, HNSW: true, HalfVec: true},
		{Table: "x.", Dimensions: 4},
		{Table: strings.Repeat("t", 49), Dimensions: 4},
	} {
		if s, err := Open(ctx, url, o); err == nil {
			s.Close()
			t.Errorf("%+v: opened", o)
		}
	}
}

// testAtomic makes the database refuse a statement after others of the
// same Upsert were sent: nothing of the call stays, the rows from before
// are intact, and the sink goes on working.
func testAtomic(t *testing.T, url string) {
	smallStatements(t, 3, 8<<20, 10)
	ctx := testContext(t)
	s := open(t, url, Options{Table: "atomic", Dimensions: 4, MultiDimensions: 8})
	rng := rand.New(rand.NewPCG(11, 12))
	before := makeRows(rng, 5, 4, 3, false, "before")
	if err := s.Upsert(ctx, before); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `alter table atomic add constraint short_text check (length(text) < 40)`); err != nil {
		t.Fatal(err)
	}
	rows := makeRows(rng, 10, 4, 3, false, "after")
	rows[7].Text = strings.Repeat("x", 50) // in the third statement
	if err := s.Upsert(ctx, append(rows, before[0])); err == nil || !strings.Contains(err.Error(), "short_text") {
		t.Fatalf("%v, want the check constraint's error", err)
	}
	checkRows(t, s, before)
	if err := s.Upsert(ctx, rows[:7]); err != nil {
		t.Fatal(err)
	}
	checkRows(t, s, append(before, rows[:7]...))
}

// testTableName uses a table name made to break out of quoting: the tables
// get that exact name and nothing else happens.
func testTableName(t *testing.T, url string) {
	ctx := testContext(t)
	name := `x"; drop table victim; --`
	probe := open(t, url, Options{Table: "victim", Dimensions: 2})
	probe.Close()
	s := open(t, url, Options{Table: name, Dimensions: 2, MultiDimensions: 2, HNSW: true})
	row := index.Row{ID: "a", Embedding: []float32{1, 0}, Vectors: [][]float32{{0, 1}}}
	if err := s.Upsert(ctx, []index.Row{row}); err != nil {
		t.Fatal(err)
	}
	var tables []string
	rows, err := s.pool.Query(ctx, "select tablename from pg_tables where tablename in ($1, $2, 'victim') order by tablename", name, name+VectorsSuffix)
	if err != nil {
		t.Fatal(err)
	}
	if tables, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	if want := []string{"victim", name, name + VectorsSuffix}; !slices.Equal(tables, want) {
		t.Fatalf("tables %q, want %q", tables, want)
	}
	checkRows(t, s, []index.Row{row})

	// Schema-qualified.
	if _, err := s.pool.Exec(ctx, "create schema if not exists other"); err != nil {
		t.Fatal(err)
	}
	q := open(t, url, Options{Table: "other.items", Dimensions: 2})
	if err := q.Upsert(ctx, []index.Row{{ID: "b", Embedding: []float32{0, 1}}}); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := q.pool.QueryRow(ctx, "select count(*) from other.items").Scan(&n); err != nil || n != 1 {
		t.Fatalf("other.items: %d rows, %v", n, err)
	}
}

// testHNSW asks for the index: it exists, and the cosine query of
// queries.sql is planned on it.
func testHNSW(t *testing.T, url string) {
	ctx := testContext(t)
	s := open(t, url, Options{Table: "hnsw", Dimensions: 16, HalfVec: true, HNSW: true})
	rng := rand.New(rand.NewPCG(7, 8))
	if err := s.Upsert(ctx, makeRows(rng, 50, 16, 0, true, "h")); err != nil {
		t.Fatal(err)
	}
	var def string
	if err := s.pool.QueryRow(ctx, "select indexdef from pg_indexes where tablename = 'hnsw' and indexname = 'hnsw_embedding_hnsw'").Scan(&def); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(def, "USING hnsw (embedding halfvec_cosine_ops)") {
		t.Fatalf("index %s", def)
	}
	cosine := halfvecSQL(strings.ReplaceAll(readQueries(t)["cosine"], "vembed_items", "hnsw"))
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// PGlite's connections share one session: the setting is undone.
	if _, err := conn.Exec(ctx, "set enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, "reset enable_seqscan")
	rows, err := conn.Query(ctx, "explain "+strings.TrimSuffix(strings.TrimSpace(cosine), ";"), pgvector.NewHalfVector(randomVector(rng, 16, true)))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(plan, "\n"), "Index Scan using hnsw_embedding_hnsw") {
		t.Fatalf("the cosine query does not use the index:\n%s", strings.Join(plan, "\n"))
	}
	// Opening again finds the index there.
	open(t, url, Options{Table: "hnsw", Dimensions: 16, HalfVec: true, HNSW: true}).Close()
}

// readQueries parses queries.sql into its named queries (the text after a
// "-- name: X" line up to the next one).
func readQueries(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile("queries.sql")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	parts := strings.Split(string(data), "-- name: ")
	for _, p := range parts[1:] {
		name, body, _ := strings.Cut(p, "\n")
		out[strings.TrimSpace(name)] = strings.TrimSpace(body) + "\n"
	}
	if out["cosine"] == "" || out["maxsim"] == "" {
		t.Fatalf("queries.sql lacks the cosine or maxsim query: %q", out)
	}
	return out
}

// halfvecSQL is a query for halfvec columns, as queries.sql says to write it.
func halfvecSQL(q string) string { return strings.ReplaceAll(q, "::vector", "::halfvec") }

// testQueriesMatchEval stores a synthetic corpus of random single and
// multi-vectors and runs the queries of queries.sql as written: their top
// ten are those of package eval's exact scoring (vembed eval's), in order,
// with the same scores. For halfvec, eval scores the float16-rounded
// vectors the table holds.
func testQueriesMatchEval(t *testing.T, url string, half bool) {
	ctx := testContext(t)
	queries := readQueries(t)
	if half {
		for k, q := range queries {
			queries[k] = halfvecSQL(q)
		}
	}
	const dims, multiDims, docs = 48, 16, 300
	s := open(t, url, Options{Dimensions: dims, MultiDimensions: multiDims, HalfVec: half})
	t.Cleanup(func() {
		if _, err := s.pool.Exec(context.Background(), "drop table vembed_items_vectors, vembed_items"); err != nil {
			t.Error(err)
		}
	})
	rng := rand.New(rand.NewPCG(9, 10))
	vec := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	rows := make([]index.Row, docs)
	dv := make([]eval.Vectors, docs)
	ids := make([]string, docs)
	stored := func(v []float32) []float32 {
		if !half {
			return v
		}
		r := make([]float32, len(v))
		for i, x := range v {
			r[i] = roundHalf(x)
		}
		return r
	}
	for i := range rows {
		ids[i] = fmt.Sprintf("doc-%03d", i)
		rows[i] = index.Row{ID: ids[i], Path: ids[i] + ".pdf", Page: 1, Embedding: vec(dims)}
		dv[i].Single = stored(rows[i].Embedding)
		for range 3 + rng.IntN(30) {
			v := vec(multiDims)
			rows[i].Vectors = append(rows[i].Vectors, v)
			dv[i].Multi = append(dv[i].Multi, stored(v))
		}
	}
	if err := s.Upsert(ctx, rows); err != nil {
		t.Fatal(err)
	}
	for qi := range 5 {
		single := vec(dims)
		var multi [][]float32
		for range 4 + rng.IntN(12) {
			multi = append(multi, vec(multiDims))
		}
		qv := eval.Vectors{Single: stored(single)}
		for _, v := range multi {
			qv.Multi = append(qv.Multi, stored(v))
		}
		var one any = pgvector.NewVector(single)
		if half {
			one = pgvector.NewHalfVector(single)
		}
		for _, c := range []struct {
			name  string
			multi bool
			arg   any
		}{
			{"cosine", false, one},
			{"maxsim", true, s.vectors(len(multi), func(i int) []float32 { return multi[i] })},
		} {
			scores, err := eval.Score([]eval.Vectors{qv}, dv, c.multi)
			if err != nil {
				t.Fatal(err)
			}
			byID := map[string]float64{}
			for d, sc := range scores[0] {
				byID[ids[d]] = sc
			}
			want := eval.Ranked(byID)[:10]
			rows, err := s.pool.Query(ctx, queries[c.name], c.arg)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			type hit struct {
				id, path string
				page     int32
				score    float64
			}
			hits, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (hit, error) {
				var h hit
				err := r.Scan(&h.id, &h.path, &h.page, &h.score)
				return h, err
			})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			got := make([]string, len(hits))
			for i, h := range hits {
				got[i] = h.id
				// Both sum float32 products; pgvector in its own order.
				if d := math.Abs(h.score - byID[h.id]); d > 1e-5*max(1, math.Abs(byID[h.id])) {
					t.Errorf("query %d %s: %s scores %.7g in SQL, %.7g in eval", qi, c.name, h.id, h.score, byID[h.id])
				}
				if h.path != h.id+".pdf" || h.page != 1 {
					t.Errorf("query %d %s: %s comes with path %q page %d", qi, c.name, h.id, h.path, h.page)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("query %d %s: SQL's top 10 %v, eval's %v", qi, c.name, got, want)
			}
		}
	}
}

// TestDocsShowQueries checks that the indexing guide quotes every query of
// queries.sql as it is, so the SQL the tests run is the SQL users read.
func TestDocsShowQueries(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "indexing.md"))
	if err != nil {
		t.Fatal(err)
	}
	for name, q := range readQueries(t) {
		if !strings.Contains(string(doc), "```sql\n"+q+"```") {
			t.Errorf("docs/indexing.md does not show the %s query of index/pgsink/queries.sql as it is:\n%s", name, q)
		}
	}
}

// withExecMode returns url with default_query_exec_mode set to mode, or
// removed when mode is empty.
func withExecMode(t *testing.T, url, mode string) string {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("default_query_exec_mode")
	if mode != "" {
		q.Set("default_query_exec_mode", mode)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// testExecModes runs two sinks one after the other on one table in every
// statement mode pgx takes (as successive runs do, on PGlite's one
// session, where statements named by a connection outlive it): each
// stores and replaces rows exactly, and cache_statement, asked by name, is
// refused at Open with the modes that work named.
func testExecModes(t *testing.T, url string) {
	smallStatements(t, 5, 4096, 3)
	for i, mode := range []string{"", "cache_describe", "describe_exec", "exec", "simple_protocol"} {
		half := i%2 == 1
		name := mode
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			u := withExecMode(t, url, mode)
			opts := Options{Table: "mode_" + name, Dimensions: 9, MultiDimensions: 8, HalfVec: half}
			rng := rand.New(rand.NewPCG(uint64(i), 11))
			first := makeRows(rng, 12, 9, 6, half, "m")
			s := open(t, u, opts)
			if err := s.Upsert(testContext(t), first); err != nil {
				t.Fatal(err)
			}
			s.Close()
			// A second run: new connections in the same session.
			s = open(t, u, opts)
			second := makeRows(rng, 12, 9, 6, half, "m")
			if err := s.Upsert(testContext(t), second); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(testContext(t), []string{second[0].ID}); err != nil {
				t.Fatal(err)
			}
			checkRows(t, s, second[1:])
		})
	}
	_, err := Open(testContext(t), withExecMode(t, url, "cache_statement"), Options{Table: "mode_cs", Dimensions: 4, MaxConns: 1})
	if err == nil || !strings.Contains(err.Error(), "cache_statement") || !strings.Contains(err.Error(), "simple_protocol") {
		t.Fatalf("cache_statement by name: %v, want a refusal naming the modes that work", err)
	}
}

// testFailingBatchMessage makes the server refuse a batch with a message
// quoting a whole vector (a trigger, as a check or a constraint could): the
// sink's error names the operation, the table, the row count and the first
// id in a few hundred bytes, and keeps the server's error for errors.As.
func testFailingBatchMessage(t *testing.T, url string) {
	ctx := testContext(t)
	s := open(t, url, Options{Table: "failing", Dimensions: 1000})
	for _, q := range []string{
		`create function failing_refuse() returns trigger language plpgsql as $$
		begin raise exception 'refused %', new.embedding::text using detail = new.embedding::text; end $$`,
		`create trigger failing_refuse before insert on failing for each row execute function failing_refuse()`,
	} {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	rows := makeRows(rand.New(rand.NewPCG(8, 9)), 30, 1000, 0, false, "f")
	err := s.Upsert(ctx, rows)
	if err == nil {
		t.Fatal("the refused batch was accepted")
	}
	msg := err.Error()
	t.Logf("%d bytes: %s", len(msg), msg)
	for _, want := range []string{"upsert 30 rows", `"failing"`, rows[0].ID, "P0001"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q", want)
		}
	}
	if len(msg) > 400 {
		t.Errorf("message of %d bytes, want at most 400", len(msg))
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || len(pe.Message) < 1000 {
		t.Errorf("the server's error is not kept whole: %v", pe)
	}
}
