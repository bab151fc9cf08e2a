package eval

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vembed/vembed/client"
	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/server"
	"github.com/vembed/vembed/synth"
)

func tinyEngine(t *testing.T) *engine.Engine {
	t.Helper()
	m, err := synth.WriteDemo(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.Config{Model: m.LM, MMProj: m.MMProj, MVProj: m.MVProj})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func page(seed int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 48, 40))
	for y := range 40 {
		for x := range 48 {
			img.Set(x, y, color.RGBA{uint8(x*seed + y), uint8(y * seed), uint8(seed * 40), 255})
		}
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	return b.Bytes()
}

// writeDataset writes a small BEIR-layout dataset: text documents, page
// images inline, as an HF {"bytes"} object and as a file, graded qrels.
func writeDataset(t *testing.T, extra string) string {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "qrels"), 0o755)
	os.MkdirAll(filepath.Join(dir, "pages"), 0o755)
	os.WriteFile(filepath.Join(dir, "pages", "p3.png"), page(3), 0o644)
	corpus := []string{
		`{"_id":"d1","title":"Cats","text":"cats sleep most of the day"}`,
		`{"_id":"d2","text":"the stock market closed higher"}`,
		`{"_id":"d3","image":"pages/p3.png"}`,
		`{"_id":4,"image":"data:image/png;base64,` + base64.StdEncoding.EncodeToString(page(4)) + `"}`,
		`{"_id":"d5","title":"chart","image":{"bytes":"` + base64.StdEncoding.EncodeToString(page(5)) + `","path":"x.png"}}`,
	}
	os.WriteFile(filepath.Join(dir, "corpus.jsonl"), []byte(strings.Join(corpus, "\n")+"\n"+extra), 0o644)
	os.WriteFile(filepath.Join(dir, "queries.jsonl"), []byte(`{"_id":"q1","text":"how long do cats sleep"}
{"_id":"q2","text":"market news"}
{"_id":"q3","text":"the chart page"}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "qrels", "test.tsv"), []byte("query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td3\t1\nq2\td2\t1\nq3\td5\t1\nq3\t4\t1\n"), 0o644)
	return dir
}

type countingEmbedder struct {
	Embedder
	items atomic.Int64
}

func (c *countingEmbedder) Embed(ctx context.Context, task string, items []Item, multi bool, dims int) ([]Vectors, error) {
	c.items.Add(int64(len(items)))
	return c.Embedder.Embed(ctx, task, items, multi, dims)
}

// TestEvalInProcessAndServer: a run through the engine and one through a
// server over HTTP give the same numbers; a second run reuses the stored
// corpus embeddings.
func TestEvalInProcessAndServer(t *testing.T) {
	e := tinyEngine(t)
	d, err := LoadBEIR(writeDataset(t, ""), "test", false)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.New(e, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer srv.Close()
	cache := t.TempDir()
	for _, multi := range []bool{false, true} {
		o := Options{Ks: []int{1, 3, 10}, Multivector: multi, CacheDir: cache, Batch: 2}
		local := &countingEmbedder{Embedder: Engine{e}}
		a, err := EvaluateDataset(context.Background(), d, local, o)
		if err != nil {
			t.Fatal(err)
		}
		b, err := EvaluateDataset(context.Background(), d, Server{C: client.New(srv.URL), URL: srv.URL}, o)
		if err != nil {
			t.Fatal(err)
		}
		if a.Result.Queries != 3 || fmt.Sprint(a.Result.Mean) != fmt.Sprint(b.Result.Mean) {
			t.Errorf("multivector=%v: in-process %v, server %v", multi, a.Result.Mean, b.Result.Mean)
		}
		before := local.items.Load()
		c, err := EvaluateDataset(context.Background(), d, local, o)
		if err != nil {
			t.Fatal(err)
		}
		if !c.CorpusCached || local.items.Load()-before != int64(len(d.Queries)) || fmt.Sprint(c.Result.Mean) != fmt.Sprint(a.Result.Mean) {
			t.Errorf("second run: cached %v, embedded %d items", c.CorpusCached, local.items.Load()-before)
		}
	}
}

// TestBadRows: broken rows are named (file and line) and stop the run, or
// with skipBad are left out and counted; an image the model cannot decode
// is counted as failed.
func TestBadRows(t *testing.T) {
	bad := `{"_id":"d6","text":"fine"}
not json
{"_id":"d7","image":"data:image/png;base64,` + base64.StdEncoding.EncodeToString([]byte("not a png at all")) + `"}
{"title":"no id"}
`
	dir := writeDataset(t, bad)
	if _, err := LoadBEIR(dir, "test", false); err == nil || !strings.Contains(err.Error(), "corpus.jsonl line 7") {
		t.Fatalf("want an error naming line 7, got %v", err)
	}
	d, err := LoadBEIR(dir, "test", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Bad) != 2 || len(d.Corpus) != 7 {
		t.Fatalf("%d bad rows, %d documents", len(d.Bad), len(d.Corpus))
	}
	rep, err := EvaluateDataset(context.Background(), d, Engine{tinyEngine(t)}, Options{SkipBad: true, Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Failed) != 3 || !strings.Contains(rep.Failed[2].Error(), "d7") {
		t.Errorf("failed: %v", rep.Failed)
	}
	if _, err := LoadBEIR(t.TempDir(), "test", false); err == nil {
		t.Error("an empty directory loaded")
	}
}

func FuzzParseRow(f *testing.F) {
	for _, s := range []string{`{"_id":"a","text":"b"}`, `{"_id":1,"image":{"bytes":"AAAA"}}`, `{"_id":"x","image":"../etc/passwd"}`, `{}`, `[]`} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, line []byte) {
		it, err := parseRow(dir, line)
		if err == nil && (it.ID == "" || (it.Text == "" && it.Image == nil)) {
			t.Fatalf("accepted an empty row: %+v", it)
		}
	})
}

func FuzzQrels(f *testing.F) {
	for _, s := range []string{"query-id\tcorpus-id\tscore\nq\td\t1\n", "q 0 d 2\n", "a\tb\n", "\"x\tb\t1\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "q.tsv")
		os.WriteFile(p, data, 0o644)
		var bad []error
		q := Qrels{}
		if err := readQrels(p, q, true, &bad); err != nil {
			t.Fatalf("with skipBad a file's rows never fail: %v", err)
		}
	})
}
