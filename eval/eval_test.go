package eval

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
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
{"_id":"q4","text":"a query of another split"}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "qrels", "test.tsv"), []byte("query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td3\t1\nq2\td2\t1\nq3\td5\t1\nq3\t4\t1\n"), 0o644)
	return dir
}

type countingEmbedder struct {
	Embedder
	items atomic.Int64
}

func (c *countingEmbedder) Embed(ctx context.Context, p Prompt, items []Item, multi bool, dims int) ([]Vectors, error) {
	c.items.Add(int64(len(items)))
	return c.Embedder.Embed(ctx, p, items, multi, dims)
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
		if a.Result.Queries != 3 || fmt.Sprint(a.Result.Mean) != fmt.Sprint(b.Result.Mean) || !reflect.DeepEqual(a.Run, b.Run) {
			t.Errorf("multivector=%v: in-process %v %v, server %v %v", multi, a.Result.Mean, a.Run, b.Result.Mean, b.Run)
		}
		if a.CorpusReused != 0 || b.CorpusReused != 0 {
			t.Errorf("multivector=%v: the server run reused the in-process corpus (%d, %d)", multi, a.CorpusReused, b.CorpusReused)
		}
		before := local.items.Load()
		c, err := EvaluateDataset(context.Background(), d, local, o)
		if err != nil {
			t.Fatal(err)
		}
		// The probe (two items) and the three judged queries are all that
		// is embedded; q4 has no judgments in the split.
		if c.CorpusReused != len(d.Corpus) || local.items.Load()-before != 2+3 || c.Unjudged != 1 || !reflect.DeepEqual(c.Run, a.Run) {
			t.Errorf("second run: reused %d, embedded %d items, %d unjudged", c.CorpusReused, local.items.Load()-before, c.Unjudged)
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

// failingEmbedder refuses any batch holding the item fail.
type failingEmbedder struct {
	Embedder
	fail string
}

func (f failingEmbedder) Embed(ctx context.Context, p Prompt, items []Item, multi bool, dims int) ([]Vectors, error) {
	for _, it := range items {
		if it.ID == f.fail {
			return nil, fmt.Errorf("refused %s", it.ID)
		}
	}
	return f.Embedder.Embed(ctx, p, items, multi, dims)
}

// TestResume: a run that stops on an error keeps the documents embedded so
// far; the next run embeds only the rest and gives the numbers of a run
// without a cache. A torn record at the end of the store costs only that
// document.
func TestResume(t *testing.T) {
	e := tinyEngine(t)
	d, err := LoadBEIR(writeDataset(t, ""), "test", false)
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	o := Options{Ks: []int{1, 3}, CacheDir: cache, Batch: 2, Parallel: 1, Multivector: true}
	if _, err := EvaluateDataset(context.Background(), d, failingEmbedder{Engine{e}, "d5"}, o); err == nil || !strings.Contains(err.Error(), "refused d5") {
		t.Fatalf("want the refusal of d5, got %v", err)
	}
	fresh, err := EvaluateDataset(context.Background(), d, Engine{e}, Options{Ks: o.Ks, Batch: 2, Multivector: true})
	if err != nil {
		t.Fatal(err)
	}
	local := &countingEmbedder{Embedder: Engine{e}}
	rep, err := EvaluateDataset(context.Background(), d, local, o)
	if err != nil {
		t.Fatal(err)
	}
	// d1..4 were stored; the probe (2), d5 and the queries (3) embedded.
	if rep.CorpusReused != 4 || local.items.Load() != 6 || !reflect.DeepEqual(rep.Run, fresh.Run) {
		t.Errorf("resumed: reused %d, embedded %d, run %v, want %v", rep.CorpusReused, local.items.Load(), rep.Run, fresh.Run)
	}
	files, _ := filepath.Glob(filepath.Join(cache, "*.vec"))
	if len(files) != 1 {
		t.Fatalf("store files %v", files)
	}
	st, _ := os.Stat(files[0])
	os.Truncate(files[0], st.Size()-3)
	if rep, err = EvaluateDataset(context.Background(), d, Engine{e}, o); err != nil || rep.CorpusReused != 4 || !reflect.DeepEqual(rep.Run, fresh.Run) {
		t.Errorf("after a torn record: %v, reused %d", err, rep.CorpusReused)
	}
	if rep, err = EvaluateDataset(context.Background(), d, Engine{e}, o); err != nil || rep.CorpusReused != 5 {
		t.Errorf("the torn record was not rewritten: %v, reused %d", err, rep.CorpusReused)
	}
}

// FuzzStore: any bytes in a store file give vectors or none, never a
// panic, and opening it leaves a file the next open reads alike.
func FuzzStore(f *testing.F) {
	var seed []byte
	seed = append(seed, storeMagic...)
	seed = binary.LittleEndian.AppendUint32(seed, storeVersion)
	seed = binary.LittleEndian.AppendUint32(seed, 3)
	seed = appendRecord(seed, 1, &Vectors{Single: []float32{1, 2}, Multi: [][]float32{{3, 4, 5}}})
	seed = appendRecord(seed, 2, &Vectors{Single: []float32{6}})
	f.Add(seed)
	f.Add(seed[:len(seed)-2])
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "k.vec"), data, 0o644)
		s, have, err := openStore(dir, "k", 3)
		if err != nil {
			t.Fatal(err)
		}
		s.close()
		_, again, err := openStore(dir, "k", 3)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(have, again) {
			t.Fatalf("read %v, then %v", have, again)
		}
	})
}

// TestSynthDataset evaluates the synthetic dataset in its three layouts
// through the engine and through a server on a loopback port: the server
// gives the in-process scores bit for bit, and the BEIR layout in JSONL
// and in Parquet give one run.
func TestSynthDataset(t *testing.T) {
	dir := t.TempDir()
	if err := synth.WriteDataset(dir, synth.DatasetOptions{Docs: 6, Queries: 4, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	e := tinyEngine(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: server.New(e, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	url := "http://" + ln.Addr().String()
	for _, multi := range []bool{false, true} {
		o := Options{Ks: []int{1, 3, 6}, Multivector: multi}
		var runs []*Report
		for _, path := range []string{dir, filepath.Join(dir, "parquet"), filepath.Join(dir, "vidore", "test.parquet")} {
			d, err := Load(path, "test", false)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Corpus) != 6 || len(d.Queries) != 4 || d.Corpus[2].Image == nil {
				t.Fatalf("%s: %d pages, %d queries", path, len(d.Corpus), len(d.Queries))
			}
			local, err := EvaluateDataset(context.Background(), d, Engine{e}, o)
			if err != nil {
				t.Fatal(err)
			}
			remote, err := EvaluateDataset(context.Background(), d, Server{C: client.New(url), URL: url}, o)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(local.Run, remote.Run) || !reflect.DeepEqual(local.Result, remote.Result) {
				t.Errorf("%s multivector=%v: in-process %v, server %v", path, multi, local.Result.Mean, remote.Result.Mean)
			}
			if local.Result.Queries != 4 || local.Result.Mean["recall@6"] != 1 || len(local.Failed) != 0 {
				t.Errorf("%s: %d queries, recall@6 %v over the whole corpus, failed %v", path, local.Result.Queries, local.Result.Mean["recall@6"], local.Failed)
			}
			runs = append(runs, local)
		}
		if !reflect.DeepEqual(runs[0].Run, runs[1].Run) || !reflect.DeepEqual(runs[0].Result, runs[1].Result) {
			t.Errorf("multivector=%v: JSONL %v, Parquet %v", multi, runs[0].Result.Mean, runs[1].Result.Mean)
		}
	}
}

// TestInstructedModel evaluates with a model that takes an instruction and
// no task (a tiny Qwen3-VL-Embedding): no task is sent, the query
// instruction reaches the queries, and a server gives the same run.
func TestInstructedModel(t *testing.T) {
	cfg, err := synth.Preset("tiny-qwen3vl")
	if err != nil {
		t.Fatal(err)
	}
	lm, mm, err := synth.WritePair(t.TempDir(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.Config{Model: lm, MMProj: mm})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	dir := t.TempDir()
	if err := synth.WriteDataset(dir, synth.DatasetOptions{Docs: 4, Queries: 3, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	d, err := Load(dir, "test", false)
	if err != nil {
		t.Fatal(err)
	}
	if !(Engine{e}).Instructed() {
		t.Fatal("a Qwen3-VL-Embedding model is not reported as instructed")
	}
	a, err := EvaluateDataset(context.Background(), d, Engine{e}, Options{Ks: []int{4}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := EvaluateDataset(context.Background(), d, Engine{e}, Options{Ks: []int{4}, QueryInstruction: "Find the page."})
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(a.Run, b.Run) {
		t.Error("the query instruction changed no score")
	}
	srv := httptest.NewServer(server.New(e, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer srv.Close()
	c, err := EvaluateDataset(context.Background(), d, Server{C: client.New(srv.URL), URL: srv.URL}, Options{Ks: []int{4}})
	if err != nil || !reflect.DeepEqual(a.Run, c.Run) {
		t.Errorf("server: %v, run %v, want %v", err, c.Run, a.Run)
	}
}
