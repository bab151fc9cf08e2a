package eval

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// vidoreRow is a row of a ViDoRe v1 table: a query (null for a page that
// only fills the corpus) and the page it was asked about.
type vidoreRow struct {
	Query         *string  `parquet:"query,optional"`
	Image         *hfImage `parquet:"image,optional"`
	ImageFilename *string  `parquet:"image_filename,optional"`
}

// hfImage is how Hugging Face datasets store an image column.
type hfImage struct {
	Bytes []byte  `parquet:"bytes,optional"`
	Path  *string `parquet:"path,optional"`
}

func writeParquet[T any](t *testing.T, path string, rows []T) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[T](f)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func strp(s string) *string { return &s }

// TestViDoRe reads a ViDoRe v1 table (a page repeated for two queries, a
// page without a query, a page without a file name, a query asked again
// about another page, a page stored beside the table) and evaluates it.
func TestViDoRe(t *testing.T) {
	dir := t.TempDir()
	rows := []vidoreRow{
		{Query: strp("what is on page one"), Image: &hfImage{Bytes: page(1)}, ImageFilename: strp("p1.png")},
		{Query: strp("and again page one"), Image: &hfImage{Bytes: page(1)}, ImageFilename: strp("p1.png")},
		{Query: nil, Image: &hfImage{Bytes: page(2)}, ImageFilename: strp("p2.png")},
		{Query: strp("the third"), Image: &hfImage{Bytes: page(3), Path: strp("x")}},
		{Query: strp("what is on page one"), Image: &hfImage{Path: strp("p4.png")}, ImageFilename: strp("p4.png")},
	}
	os.WriteFile(filepath.Join(dir, "p4.png"), page(4), 0o644)
	writeParquet(t, filepath.Join(dir, "test-00000-of-00001.parquet"), rows)
	d, err := Load(dir, "test", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Corpus) != 4 || len(d.Queries) != 3 || len(d.Qrels) != 3 {
		t.Fatalf("%d pages, %d queries, %d judged", len(d.Corpus), len(d.Queries), len(d.Qrels))
	}
	// As the ViDoRe benchmark's evaluator: the query text is the id, a
	// query asked twice is one query judged against its last page.
	want := Qrels{"what is on page one": {"p4.png": 1}, "and again page one": {"p1.png": 1}, "the third": {d.Corpus[2].ID: 1}}
	if !reflect.DeepEqual(d.Qrels, want) || !strings.HasPrefix(d.Corpus[2].ID, "sha256:") || !bytes.Equal(d.Corpus[3].Image, page(4)) {
		t.Errorf("qrels %v, corpus ids %s", d.Qrels, d.Corpus[2].ID)
	}
	rep, err := EvaluateDataset(context.Background(), d, Engine{tinyEngine(t)}, Options{Ks: []int{1, 4}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Result.Queries != 3 || rep.Result.Mean["recall@4"] != 1 {
		t.Errorf("4 pages, recall@4 must be 1: %v", rep.Result.Mean)
	}
}

func TestViDoReBadFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.parquet")
	writeParquet(t, good, []vidoreRow{{Query: strp("q"), Image: &hfImage{Bytes: page(1)}, ImageFilename: strp("a")}})
	data, _ := os.ReadFile(good)
	// A footer length past the file: refused before the decoder
	// allocates what it says (it took 752 MiB).
	footer := append([]byte(nil), data...)
	binary.LittleEndian.PutUint32(footer[len(footer)-8:], 0x7fffffff)
	for name, b := range map[string][]byte{
		"truncated": data[:len(data)/2],
		"garbage":   []byte("PAR1 this is not a parquet file PAR1"),
		"empty":     nil,
		"footer":    footer,
	} {
		p := filepath.Join(dir, name+".parquet")
		os.WriteFile(p, b, 0o644)
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		before := m.TotalAlloc
		if _, err := LoadViDoRe(p, false); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v", name, err)
		}
		if runtime.ReadMemStats(&m); m.TotalAlloc-before > 16<<20 {
			t.Errorf("%s: %d MiB allocated to refuse it", name, (m.TotalAlloc-before)>>20)
		}
	}
	type noImage struct {
		Query string `parquet:"query"`
	}
	p := filepath.Join(dir, "noimage.parquet")
	writeParquet(t, p, []noImage{{"q"}})
	if _, err := LoadViDoRe(p, false); err == nil || !strings.Contains(err.Error(), "noimage.parquet: no image.bytes or image or image.path column") {
		t.Errorf("missing column: %v", err)
	}
	p = filepath.Join(dir, "nobytes.parquet")
	writeParquet(t, p, []vidoreRow{{Query: strp("q"), ImageFilename: strp("a")}, {Query: strp("r"), Image: &hfImage{Bytes: page(2)}, ImageFilename: strp("b")}})
	if _, err := LoadViDoRe(p, false); err == nil || !strings.Contains(err.Error(), "nobytes.parquet row 1") {
		t.Errorf("row without image: %v", err)
	}
	d, err := LoadViDoRe(p, true)
	if err != nil || len(d.Bad) != 1 || len(d.Queries) != 1 {
		t.Errorf("skip-bad: %v %+v", err, d)
	}
}

func FuzzViDoRe(f *testing.F) {
	dir := f.TempDir()
	good := filepath.Join(dir, "seed.parquet")
	fw, _ := os.Create(good)
	w := parquet.NewGenericWriter[vidoreRow](fw)
	w.Write([]vidoreRow{{Query: strp("q"), Image: &hfImage{Bytes: []byte("img")}, ImageFilename: strp("a")}})
	w.Close()
	fw.Close()
	seed, _ := os.ReadFile(good)
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "x.parquet")
		os.WriteFile(p, data, 0o644)
		LoadViDoRe(p, true) // an error or a dataset, never a panic
	})
}

// TestBEIRParquet reads the BEIR layout in Parquet as ViDoRe v2/v3 publish
// it (integer corpus ids, an image struct, shard directories), and
// evaluates it like its JSONL twin.
func TestBEIRParquet(t *testing.T) {
	dir := t.TempDir()
	type corpusRow struct {
		CorpusID int64    `parquet:"corpus-id"`
		Image    *hfImage `parquet:"image,optional"`
		Text     *string  `parquet:"text,optional"`
	}
	type queryRow struct {
		QueryID string `parquet:"query-id"`
		Query   string `parquet:"query"`
	}
	type qrelRow struct {
		QueryID  string `parquet:"query-id"`
		CorpusID int64  `parquet:"corpus-id"`
		Score    int64  `parquet:"score"`
	}
	os.MkdirAll(filepath.Join(dir, "corpus"), 0o755)
	os.MkdirAll(filepath.Join(dir, "qrels"), 0o755)
	writeParquet(t, filepath.Join(dir, "corpus", "test-00000.parquet"), []corpusRow{
		{CorpusID: 1, Image: &hfImage{Bytes: page(1)}}, {CorpusID: 2, Image: &hfImage{Bytes: page(2)}}})
	writeParquet(t, filepath.Join(dir, "corpus", "test-00001.parquet"), []corpusRow{{CorpusID: 3, Text: strp("a text page")}})
	writeParquet(t, filepath.Join(dir, "queries.parquet"), []queryRow{{"q1", "first page"}, {"q2", "the text"}})
	writeParquet(t, filepath.Join(dir, "qrels", "test.parquet"), []qrelRow{{"q1", 1, 1}, {"q2", 3, 2}})
	d, err := Load(dir, "test", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Corpus) != 3 || d.Corpus[0].ID != "1" || d.Corpus[0].Image == nil || d.Corpus[2].Text != "a text page" || d.Qrels["q2"]["3"] != 2 {
		t.Fatalf("read %+v", d.Qrels)
	}
	rep, err := EvaluateDataset(context.Background(), d, Engine{tinyEngine(t)}, Options{Ks: []int{3}})
	if err != nil || rep.Result.Queries != 2 || rep.Result.Mean["recall@3"] != 1 {
		t.Errorf("evaluate: %v %v", err, rep)
	}
	// A qrels table without scores is refused, naming the file.
	type badQrel struct {
		QueryID string `parquet:"query-id"`
	}
	writeParquet(t, filepath.Join(dir, "qrels", "test.parquet"), []badQrel{{"q1"}})
	if _, err := Load(dir, "test", false); err == nil || !strings.Contains(err.Error(), "test.parquet: no corpus-id or corpus_id column") {
		t.Errorf("qrels without corpus ids: %v", err)
	}
	// A row without a score is named.
	type qrelNoScore struct {
		QueryID  string `parquet:"query-id"`
		CorpusID int64  `parquet:"corpus-id"`
		Score    *int64 `parquet:"score,optional"`
	}
	two := int64(2)
	writeParquet(t, filepath.Join(dir, "qrels", "test.parquet"), []qrelNoScore{{"q1", 1, &two}, {"q2", 3, nil}})
	if _, err := Load(dir, "test", false); err == nil || !strings.Contains(err.Error(), "test.parquet row 2") {
		t.Errorf("qrels row without a score: %v", err)
	}
	if d, err := Load(dir, "test", true); err != nil || len(d.Bad) != 1 || len(d.Qrels) != 1 {
		t.Errorf("skip-bad: %v", err)
	}
}

// FuzzBEIRParquet feeds any bytes as the corpus table of a BEIR Parquet
// dataset: an error naming the file or a dataset, never a panic.
func FuzzBEIRParquet(f *testing.F) {
	type corpusRow struct {
		CorpusID string   `parquet:"corpus-id"`
		Image    *hfImage `parquet:"image,optional"`
	}
	type queryRow struct {
		QueryID string `parquet:"query-id"`
		Query   string `parquet:"query"`
	}
	type qrelRow struct {
		QueryID  string `parquet:"query-id"`
		CorpusID string `parquet:"corpus-id"`
		Score    int64  `parquet:"score"`
	}
	t := &testing.T{}
	base := f.TempDir()
	seedPath := filepath.Join(base, "seed.parquet")
	writeParquet(t, seedPath, []corpusRow{{"a", &hfImage{Bytes: []byte("img")}}, {"b", &hfImage{Path: strp("x.png")}}})
	writeParquet(t, filepath.Join(base, "queries.parquet"), []queryRow{{"q", "text"}})
	os.MkdirAll(filepath.Join(base, "qrels"), 0o755)
	writeParquet(t, filepath.Join(base, "qrels", "test.parquet"), []qrelRow{{"q", "a", 1}})
	seed, _ := os.ReadFile(seedPath)
	f.Add(seed)
	queries, _ := os.ReadFile(filepath.Join(base, "queries.parquet"))
	qrels, _ := os.ReadFile(filepath.Join(base, "qrels", "test.parquet"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "qrels"), 0o755)
		os.WriteFile(filepath.Join(dir, "corpus.parquet"), data, 0o644)
		os.WriteFile(filepath.Join(dir, "queries.parquet"), queries, 0o644)
		os.WriteFile(filepath.Join(dir, "qrels", "test.parquet"), qrels, 0o644)
		if d, err := LoadBEIRParquet(dir, "test", true); err == nil && len(d.Corpus) == 0 {
			t.Fatal("a dataset without documents loaded")
		}
	})
}

// TestViDoRePlainImages reads a ViDoRe-style table whose image column is
// plain bytes rather than Hugging Face's struct, with integer columns
// beside it.
func TestViDoRePlainImages(t *testing.T) {
	type row struct {
		Query *string `parquet:"query,optional"`
		Image []byte  `parquet:"image"`
		Page  int64   `parquet:"page"`
	}
	p := filepath.Join(t.TempDir(), "plain.parquet")
	writeParquet(t, p, []row{{strp("first"), page(1), 1}, {nil, page(2), 2}, {strp("third"), page(3), 3}})
	d, err := LoadViDoRe(p, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Corpus) != 3 || len(d.Queries) != 2 || !bytes.Equal(d.Corpus[1].Image, page(2)) || d.Qrels["third"][d.Corpus[2].ID] != 1 {
		t.Errorf("read %d pages, %d queries, qrels %v", len(d.Corpus), len(d.Queries), d.Qrels)
	}
}

// TestViDoReV3Layout reads ViDoRe v3's layout: underscored ids, extra
// columns (markdown, language), shard directories holding two splits of
// which only the asked one is read, qrels with float scores.
func TestViDoReV3Layout(t *testing.T) {
	type corpusRow struct {
		CorpusID int64    `parquet:"corpus_id"`
		Image    *hfImage `parquet:"image,optional"`
		Markdown string   `parquet:"markdown"`
	}
	type queryRow struct {
		QueryID  int64  `parquet:"query_id"`
		Query    string `parquet:"query"`
		Language string `parquet:"language"`
	}
	type qrelRow struct {
		QueryID  int64   `parquet:"query_id"`
		CorpusID int64   `parquet:"corpus_id"`
		Score    float64 `parquet:"score"`
	}
	dir := t.TempDir()
	for _, sub := range []string{"corpus", "queries", "qrels"} {
		os.MkdirAll(filepath.Join(dir, sub), 0o755)
	}
	writeParquet(t, filepath.Join(dir, "corpus", "test-00000-of-00001.parquet"), []corpusRow{{0, &hfImage{Bytes: page(1)}, "# one"}, {1, &hfImage{Bytes: page(2)}, "# two"}})
	writeParquet(t, filepath.Join(dir, "corpus", "train-00000-of-00001.parquet"), []corpusRow{{7, &hfImage{Bytes: page(3)}, "# other split"}})
	writeParquet(t, filepath.Join(dir, "queries", "test-00000-of-00001.parquet"), []queryRow{{0, "first page", "english"}, {1, "deuxième page", "french"}})
	writeParquet(t, filepath.Join(dir, "qrels", "test-00000-of-00001.parquet"), []qrelRow{{0, 0, 1}, {1, 1, 2}})
	d, err := Load(dir, "test", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Corpus) != 2 || d.Corpus[1].ID != "1" || d.Corpus[1].Text != "" || len(d.Queries) != 2 || d.Qrels["1"]["1"] != 2 {
		t.Errorf("corpus %d (%q, %q), queries %d, qrels %v", len(d.Corpus), d.Corpus[1].ID, d.Corpus[1].Text, len(d.Queries), d.Qrels)
	}
}
