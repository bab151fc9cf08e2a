package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/parquet-go/parquet-go"

	"github.com/vembed/vembed/index"
	"github.com/vembed/vembed/internal/npmtest"
	"github.com/vembed/vembed/pdf"
	"github.com/vembed/vembed/synth"
)

// writeTestPNG writes a w x h picture whose pixels depend on seed.
func writeTestPNG(t *testing.T, path string, w, h, seed int) {
	t.Helper()
	if err := writePNGFile(path, w, h, seed); err != nil {
		t.Fatal(err)
	}
}

// writePNGFile is writeTestPNG for goroutines other than the test's.
func writePNGFile(path string, w, h, seed int) error {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x*7 + seed*31), uint8(y*5 + seed*17), uint8((x + y + seed) * 3), 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

func writeText(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// testCorpus writes images (n of them), a long text file, a markdown file
// and bad inputs under dir.
func testCorpus(t *testing.T, dir string, n int) {
	t.Helper()
	for i := range n {
		writeTestPNG(t, filepath.Join(dir, fmt.Sprintf("img/%02d.png", i)), 40+i%5*8, 36+i%3*12, i)
	}
	var long strings.Builder
	for p := range 12 {
		fmt.Fprintf(&long, "Paragraph %d. It talks about the weather in town %d and the price of bread. ", p, p)
		long.WriteString("Another sentence follows it here.\n\n")
	}
	writeText(t, filepath.Join(dir, "notes/long.txt"), long.String())
	writeText(t, filepath.Join(dir, "notes/readme.md"), "# Title\n\nA short markdown note.\n")
	writeText(t, filepath.Join(dir, "bad/binary.txt"), "\x00\x01\x02binary\xff\xfe")
	writeText(t, filepath.Join(dir, "bad/broken.png"), "\x89PNG\r\n\x1a\nnot really")
	writeText(t, filepath.Join(dir, "bad/empty.md"), "   \n\n")
}

func runIndexCmd(t *testing.T, args ...string) (string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(append([]string{"index"}, args...), &out, &errb); code != 0 {
		t.Fatalf("vembed index %v: exit %d\n%s\n%s", args, code, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

// datasetByID reads an index directory's rows, failing on a repeated id.
func datasetByID(t *testing.T, dir string) map[string]index.Row {
	t.Helper()
	rows, err := index.ReadDataset(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]index.Row{}
	for _, r := range rows {
		if _, dup := m[r.ID]; dup {
			t.Fatalf("%s: id %s twice", dir, r.ID)
		}
		m[r.ID] = r
	}
	return m
}

func sameIndexRows(t *testing.T, what string, got, want map[string]index.Row) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
	}
	for id, w := range want {
		g, ok := got[id]
		if !ok {
			t.Fatalf("%s: no row %s (%s page %d)", what, id, w.Path, w.Page)
		}
		if g.Path != w.Path || g.Page != w.Page || g.Text != w.Text || g.SHA256 != w.SHA256 || g.Width != w.Width || g.Height != w.Height || g.Model != w.Model {
			t.Fatalf("%s: row %s differs:\n%+v\n%+v", what, id, g, w)
		}
		if !equalBits(g.Embedding, w.Embedding) {
			t.Fatalf("%s: row %s: vectors differ", what, id)
		}
	}
}

func equalBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestIndexCorpus indexes a folder of images, text and bad files with the
// demo model: one row per item, bad inputs reported and the rest indexed,
// an image's vector equal bit for bit to "vembed embed --image" of the
// same file, text chunks within the limit, and a second run embeds
// nothing.
func TestIndexCorpus(t *testing.T) {
	dir := t.TempDir()
	corpus, out := filepath.Join(dir, "corpus"), filepath.Join(dir, "idx")
	testCorpus(t, corpus, 5)
	stdout, _ := runIndexCmd(t, corpus, "--out", out, "--chunk-tokens", "40", "--json-progress", filepath.Join(dir, "progress.jsonl"))
	for _, bad := range []string{"binary.txt: binary content", "broken.png: unreadable image", "empty.md: no text"} {
		if !strings.Contains(stdout, bad) {
			t.Errorf("summary does not report %q:\n%s", bad, stdout)
		}
	}
	rows := datasetByID(t, out)
	var images, chunks int
	for _, r := range rows {
		switch {
		case strings.HasSuffix(r.Path, ".png"):
			images++
			if r.Width == 0 || r.Height == 0 || len(r.Embedding) == 0 || r.Page != 1 {
				t.Errorf("image row %+v", r)
			}
		case strings.HasSuffix(r.Path, "long.txt"):
			chunks++
		}
		if r.ID != index.ItemID(r.SHA256, r.Page) {
			t.Errorf("row id %s is not its content hash and page", r.ID)
		}
	}
	if images != 5 || chunks < 3 {
		t.Fatalf("%d image rows, %d chunks of long.txt", images, chunks)
	}
	// The image's vector is embed --image's, bit for bit.
	img := filepath.Join(corpus, "img/03.png")
	var eo, ee bytes.Buffer
	if code := run([]string{"embed", "--image", img, "--json"}, &eo, &ee); code != 0 {
		t.Fatalf("embed: %s", ee.String())
	}
	var emb struct{ Embeddings [][]float32 }
	if err := json.Unmarshal(eo.Bytes(), &emb); err != nil {
		t.Fatal(err)
	}
	var imgID string
	for _, r := range rows {
		if r.Path == img {
			imgID = r.ID
			if !equalBits(r.Embedding, emb.Embeddings[0]) {
				t.Fatalf("indexed vector of %s differs from vembed embed --image", img)
			}
		}
	}
	if imgID == "" {
		t.Fatalf("no row for %s", img)
	}
	// Progress lines carry the rates.
	b, err := os.ReadFile(filepath.Join(dir, "progress.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var last index.Progress
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	if !last.Final || last.Done != len(rows) || last.Pages != 5 || last.Tokens == 0 || last.Bad != 3 {
		t.Fatalf("last progress line %+v (rows %d)", last, len(rows))
	}
	// Run again: nothing to embed, the same rows.
	stdout2, _ := runIndexCmd(t, corpus, "--out", out, "--chunk-tokens", "40")
	if !strings.Contains(stdout2, "indexed 0 items") || !strings.Contains(stdout2, fmt.Sprintf("%d unchanged", len(rows))) {
		t.Fatalf("second run:\n%s", stdout2)
	}
	sameIndexRows(t, "second run", datasetByID(t, out), rows)
	// DuckDB reads the dataset as it is.
	q := fmt.Sprintf("select count(*)::int as n, count(distinct id)::int as ids, max(len(embedding))::int as dim from read_parquet('%s')", filepath.Join(out, "parts", "*.parquet"))
	res := npmtest.DuckDB(t, q)
	if len(res) != 1 || fmt.Sprint(res[0]["n"]) != fmt.Sprint(len(rows)) || fmt.Sprint(res[0]["ids"]) != fmt.Sprint(len(rows)) {
		t.Fatalf("DuckDB: %v, want %d rows", res, len(rows))
	}
	// LanceDB loads it as it is (the vectors as fixed-size lists) and finds
	// the image by its own vector.
	lr := npmtest.Lance(t, filepath.Join(out, "parts"), "embedding", emb.Embeddings[0], 1)
	if want := fmt.Sprintf("FixedSizeList[%d]<Float32>", len(emb.Embeddings[0])); lr.Schema["embedding"] != want || lr.Rows != len(rows) {
		t.Fatalf("LanceDB: embedding %s and %d rows, want %s and %d", lr.Schema["embedding"], lr.Rows, want, len(rows))
	}
	if len(lr.Hits) != 1 || lr.Hits[0].ID != imgID || math.Abs(lr.Hits[0].Distance) > 1e-5 {
		t.Fatalf("LanceDB's nearest row to %s's vector: %+v, want %s at distance 0", img, lr.Hits, imgID)
	}
}

// TestIndexIncremental adds, changes and deletes files between runs: each
// run embeds only what is new, removes what is gone, and ends with the
// rows of a fresh run over the same files.
func TestIndexIncremental(t *testing.T) {
	dir := t.TempDir()
	corpus, out := filepath.Join(dir, "corpus"), filepath.Join(dir, "idx")
	testCorpus(t, corpus, 4)
	runIndexCmd(t, corpus, "--out", out, "--part-rows", "3")
	os.Remove(filepath.Join(corpus, "img/01.png"))                   // delete
	writeTestPNG(t, filepath.Join(corpus, "img/02.png"), 48, 48, 99) // change
	writeTestPNG(t, filepath.Join(corpus, "img/new.png"), 30, 30, 7) // add
	stdout, _ := runIndexCmd(t, corpus, "--out", out, "--part-rows", "3")
	if !strings.Contains(stdout, "indexed 2 items") || !strings.Contains(stdout, "2 removed") {
		t.Fatalf("incremental run:\n%s", stdout)
	}
	fresh := filepath.Join(dir, "fresh")
	runIndexCmd(t, corpus, "--out", fresh, "--part-rows", "3")
	sameIndexRows(t, "incremental vs fresh", datasetByID(t, out), datasetByID(t, fresh))
	// Another model option re-embeds everything and leaves only the new rows.
	runIndexCmd(t, corpus, "--out", out, "--dimensions", "32")
	for id, r := range datasetByID(t, out) {
		if len(r.Embedding) != 32 {
			t.Fatalf("row %s has %d dimensions after --dimensions 32", id, len(r.Embedding))
		}
	}
}

// TestIndexShards: --shard 0/2 and --shard 1/2 write disjoint rows whose
// union is one unsharded run's, in one directory.
func TestIndexShards(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "corpus")
	testCorpus(t, corpus, 8)
	one, two := filepath.Join(dir, "one"), filepath.Join(dir, "two")
	runIndexCmd(t, corpus, "--out", one)
	runIndexCmd(t, corpus, "--out", two, "--shard", "0/2")
	t.Setenv("JOB_COMPLETION_INDEX", "1")
	runIndexCmd(t, corpus, "--out", two, "--shards", "2")
	parts, _ := filepath.Glob(filepath.Join(two, "parts", "*.parquet"))
	var s0, s1 int
	for _, p := range parts {
		switch {
		case strings.HasPrefix(filepath.Base(p), "s0of2-"):
			s0++
		case strings.HasPrefix(filepath.Base(p), "s1of2-"):
			s1++
		}
	}
	if s0 == 0 || s1 == 0 {
		t.Fatalf("parts of shard 0: %d, of shard 1: %d", s0, s1)
	}
	sameIndexRows(t, "two shards vs one run", datasetByID(t, two), datasetByID(t, one))
}

// TestIndexKilled kills the indexer (SIGKILL, the test binary re-executed
// as vembed) at random moments five times, then runs it to the end: one
// row per item and every vector bit-identical to an uninterrupted run.
// The corpus has images, text chunks and the pages of a PDF.
func TestIndexKilled(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache")) // PDFium's compilation cache, shared by the runs
	corpus := filepath.Join(dir, "corpus")
	testCorpus(t, corpus, 30)
	var pages []synth.PDFPage
	for i := range 8 {
		pages = append(pages, synth.PDFPage{WidthPt: 120, HeightPt: 90, Text: []string{fmt.Sprintf("page %d of the report", i+1)}})
	}
	writeText(t, filepath.Join(corpus, "report.pdf"), string(synth.PDF(pages, synth.PDFOptions{})))
	whole, killed := filepath.Join(dir, "whole"), filepath.Join(dir, "killed")
	args := []string{corpus, "--part-rows", "2", "--inflight", "2", "--dpi", "72"}
	runIndexCmd(t, append(args, "--out", whole)...)
	want := datasetByID(t, whole)

	// Each run is killed once it reports a few more items embedded, a
	// random number of milliseconds later (so kills land while embedding,
	// writing a part, committing it).
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	killedRuns := 0
	for k := range 5 {
		progress := filepath.Join(dir, fmt.Sprintf("progress%d.jsonl", k))
		cmd := exec.Command(os.Args[0], "-test.run=^TestEmbedChild$", "--")
		cmd.Args = append(cmd.Args, append([]string{"index"}, append(args, "--out", killed, "--json-progress", progress, "--progress-every", "5ms")...)...)
		// SIGKILL skips the demo model's clean-up: its folder goes where
		// the test's clean-up removes it.
		cmd.Env = append(os.Environ(), embedChildEnv+"=1", "TMPDIR="+t.TempDir())
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		target := 1 + rng.IntN(6)
		extra := time.Duration(rng.IntN(20)) * time.Millisecond
		ended := false
		for !ended {
			select {
			case err := <-done:
				t.Logf("run %d ended before its kill (%v)", k, err)
				ended = true
				continue
			case <-time.After(2 * time.Millisecond):
			}
			if embeddedSoFar(progress) >= target {
				time.Sleep(extra)
				cmd.Process.Kill() // SIGKILL
				<-done
				killedRuns++
				t.Logf("run %d killed after %d items embedded + %v", k, target, extra)
				ended = true
			}
		}
		// Whatever the moment, the dataset's files are whole and hold each
		// id once.
		datasetByID(t, killed)
	}
	if killedRuns < 3 {
		t.Fatalf("only %d of 5 runs were killed before their end", killedRuns)
	}
	final, _ := runIndexCmd(t, append(args, "--out", killed)...)
	var embedded, unchanged int
	fmt.Sscanf(final[strings.Index(final, "indexed "):], "indexed %d items", &embedded)
	if _, rest, ok := strings.Cut(final, "items in "); ok {
		fmt.Sscanf(rest[strings.Index(rest, "; ")+2:], "%d unchanged", &unchanged)
	}
	t.Logf("the last run embedded %d items, found %d finished", embedded, unchanged)
	if unchanged == 0 || embedded+unchanged != len(want) {
		t.Fatalf("the killed runs kept %d items, the last run embedded %d, want %d in all:\n%s", unchanged, embedded, len(want), final)
	}
	sameIndexRows(t, "killed five times vs uninterrupted", datasetByID(t, killed), want)
	left, _ := filepath.Glob(filepath.Join(killed, ".pending", "*"))
	if len(left) != 0 {
		t.Fatalf("files left in .pending: %v", left)
	}
}

// TestIndexRecords indexes JSONL records: their ids, texts and images, a
// bad line reported.
func TestIndexRecords(t *testing.T) {
	dir := t.TempDir()
	writeTestPNG(t, filepath.Join(dir, "p.png"), 32, 32, 3)
	writeText(t, filepath.Join(dir, "recs.jsonl"), `{"id": "a", "text": "first record"}
{"id": 2, "text": "with an image", "image": "p.png"}
{"id": "c", "image_path": "p.png"}
not json
{"id": "d"}
{"id": "a", "text": "the same id again"}
`)
	out := filepath.Join(dir, "idx")
	stdout, _ := runIndexCmd(t, "--from-jsonl", filepath.Join(dir, "recs.jsonl"), "--out", out)
	if !strings.Contains(stdout, "recs.jsonl#4") || !strings.Contains(stdout, "recs.jsonl#5: no text and no image") || !strings.Contains(stdout, `recs.jsonl#6: id "a" is repeated`) {
		t.Fatalf("bad records not reported:\n%s", stdout)
	}
	rows := datasetByID(t, out)
	ids := make([]string, 0, len(rows))
	for id := range rows {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	if strings.Join(ids, ",") != "2,a,c" || rows["2"].Width != 32 || rows["a"].Text != "first record" {
		t.Fatalf("records: %v %+v", ids, rows["2"])
	}

	// A folder of Parquet shards, Hugging Face's image struct included.
	type hfImage struct {
		Bytes []byte `parquet:"bytes,optional"`
		Path  string `parquet:"path,optional"`
	}
	type rec struct {
		ID    string   `parquet:"id"`
		Text  string   `parquet:"text,optional"`
		Image *hfImage `parquet:"image,optional"`
	}
	img, err := os.ReadFile(filepath.Join(dir, "p.png"))
	if err != nil {
		t.Fatal(err)
	}
	shards := filepath.Join(dir, "table")
	os.MkdirAll(shards, 0o755)
	for i, part := range [][]rec{{{ID: "x", Text: "from a shard"}}, {{ID: "y", Image: &hfImage{Bytes: img}}, {ID: "z", Text: "pic", Image: &hfImage{Path: "../p.png"}}}} {
		if err := parquet.WriteFile(filepath.Join(shards, fmt.Sprintf("train-%05d-of-00002.parquet", i)), part); err != nil {
			t.Fatal(err)
		}
	}
	out2 := filepath.Join(dir, "idx2")
	runIndexCmd(t, "--from-parquet", shards, "--out", out2)
	rows = datasetByID(t, out2)
	if len(rows) != 3 || rows["x"].Text != "from a shard" || rows["y"].Width != 32 || rows["z"].Width != 32 || rows["z"].Text != "pic" {
		t.Fatalf("Parquet records: %+v", rows)
	}
}

// embeddedSoFar reads the items_embedded of a progress file's last whole
// line (0 when none yet).
func embeddedSoFar(path string) int {
	b, _ := os.ReadFile(path)
	lines := strings.Split(string(b), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var p index.Progress
		if json.Unmarshal([]byte(lines[i]), &p) == nil {
			return p.Done
		}
	}
	return 0
}

// TestIndexPDF indexes PDFs: an image-only page rendered at its image's
// native size (--dpi 72 on a page as large in points as the image in
// pixels) embeds as the original image does (cosine >= 0.999); a page's
// vector equals "vembed embed --image" of the same rendered page, bit for
// bit; the text layer is kept; encrypted (without --password), truncated
// and zero-page documents are reported and the rest indexed; with
// --password the encrypted one is indexed.
func TestIndexPDF(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache")) // PDFium's compilation cache
	corpus, out := filepath.Join(dir, "corpus"), filepath.Join(dir, "idx")
	src := image.NewRGBA(image.Rect(0, 0, 96, 64))
	for y := range 64 {
		for x := range 96 {
			src.Set(x, y, color.RGBA{uint8(x * 2), uint8(y * 3), uint8(x ^ y), 255})
		}
	}
	orig := filepath.Join(dir, "orig.png")
	var pb bytes.Buffer
	png.Encode(&pb, src)
	os.WriteFile(orig, pb.Bytes(), 0o644)
	doc := synth.PDF([]synth.PDFPage{
		{WidthPt: 96, HeightPt: 64, Image: src},
		{WidthPt: 200, HeightPt: 120, Text: []string{"Quarterly report", "Revenue grew."}},
	}, synth.PDFOptions{})
	writeText(t, filepath.Join(corpus, "doc.pdf"), string(doc))
	writeText(t, filepath.Join(corpus, "secret.pdf"), string(synth.PDF([]synth.PDFPage{{WidthPt: 100, HeightPt: 100, Text: []string{"hidden"}}}, synth.PDFOptions{UserPassword: "pw"})))
	writeText(t, filepath.Join(corpus, "cut.pdf"), string(synth.PDFTruncated()))
	writeText(t, filepath.Join(corpus, "empty.pdf"), string(synth.PDFZeroPages()))
	stdout, _ := runIndexCmd(t, corpus, "--out", out, "--dpi", "72")
	for _, want := range []string{"secret.pdf: ", "--password", "cut.pdf: ", "empty.pdf: "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	rows := datasetByID(t, out)
	var p1, p2 index.Row
	for _, r := range rows {
		if strings.HasSuffix(r.Path, "doc.pdf") && r.Page == 1 {
			p1 = r
		}
		if strings.HasSuffix(r.Path, "doc.pdf") && r.Page == 2 {
			p2 = r
		}
	}
	if len(rows) != 2 || p1.Width != 96 || p1.Height != 64 || p2.Width != 200 || p2.Height != 120 {
		t.Fatalf("rows: %d; page 1 %dx%d, page 2 %dx%d", len(rows), p1.Width, p1.Height, p2.Width, p2.Height)
	}
	if !strings.Contains(p2.Text, "Quarterly report") {
		t.Errorf("page 2's text layer %q", p2.Text)
	}
	embedOne := func(path string) []float32 {
		var eo, ee bytes.Buffer
		if code := run([]string{"embed", "--image", path, "--json"}, &eo, &ee); code != 0 {
			t.Fatalf("embed: %s", ee.String())
		}
		var e struct{ Embeddings [][]float32 }
		if err := json.Unmarshal(eo.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		return e.Embeddings[0]
	}
	c := cosine(p1.Embedding, embedOne(orig))
	t.Logf("image-only page at its native size vs the original image: cosine %.9f", c)
	if c < 0.999 {
		t.Errorf("image-only page vs its image: cosine %.6f", c)
	}
	// The same rendered page, written as PNG, through embed --image.
	r, err := pdf.NewRenderer(pdf.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	d, err := r.Open(context.Background(), doc, "")
	if err != nil {
		t.Fatal(err)
	}
	page, err := d.Render(context.Background(), 1, 72)
	d.Close()
	if err != nil {
		t.Fatal(err)
	}
	pb.Reset()
	png.Encode(&pb, page.Image)
	rendered := filepath.Join(dir, "page2.png")
	os.WriteFile(rendered, pb.Bytes(), 0o644)
	if !equalBits(p2.Embedding, embedOne(rendered)) {
		t.Fatalf("page 2's indexed vector differs from vembed embed --image of the rendered page")
	}
	// With the password the encrypted document is indexed too; nothing
	// else is embedded again (the unchanged PDF is not even reopened).
	stdout, _ = runIndexCmd(t, corpus, "--out", out, "--dpi", "72", "--password", "pw")
	if !strings.Contains(stdout, "indexed 1 items") || !strings.Contains(stdout, "2 unchanged") {
		t.Fatalf("with --password:\n%s", stdout)
	}
}

func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}

// pgTableRows reads an items' table: each row's columns and vector.
func pgTableRows(t *testing.T, url, table string) map[string]index.Row {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	res, err := conn.Query(ctx, "select id, path, page, sha256, model, width, height, text, embedding::text from "+pgx.Identifier{table}.Sanitize())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]index.Row{}
	for res.Next() {
		var r index.Row
		var page, w, h int32
		var vec string
		if err := res.Scan(&r.ID, &r.Path, &page, &r.SHA256, &r.Model, &w, &h, &r.Text, &vec); err != nil {
			t.Fatal(err)
		}
		r.Page, r.Width, r.Height = int(page), int(w), int(h)
		if err := json.Unmarshal([]byte(vec), &r.Embedding); err != nil {
			t.Fatal(err)
		}
		got[r.ID] = r
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestIndexPostgres sends the rows to PostgreSQL with pgvector (PGlite):
// the table holds the dataset's rows with the same vectors; a deleted file
// leaves both; a resumed run holds each row once.
func TestIndexPostgres(t *testing.T) {
	url := npmtest.StartPGlite(t) + "&pool_max_conns=1" // PGlite serves one connection at a time
	dir := t.TempDir()
	corpus, out := filepath.Join(dir, "corpus"), filepath.Join(dir, "idx")
	testCorpus(t, corpus, 4)
	runIndexCmd(t, corpus, "--out", out, "--sink", url, "--part-rows", "2")
	check := func(what string) {
		t.Helper()
		sameIndexRows(t, what, pgTableRows(t, url, "vembed_items"), datasetByID(t, out))
	}
	check("first run")
	os.Remove(filepath.Join(corpus, "img/00.png"))
	runIndexCmd(t, corpus, "--out", out, "--sink", url)
	check("after a deletion")

	// Multi-vector rows go to the child table, one row per token.
	mvOut := filepath.Join(dir, "mv")
	runIndexCmd(t, corpus, "--out", mvOut, "--multivector", "--sink", url, "--pg-table", "mv_items")
	want := 0
	for _, r := range datasetByID(t, mvOut) {
		want += len(r.Vectors)
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var got int
	if err := conn.QueryRow(context.Background(), "select count(*) from mv_items_vectors").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != want || want == 0 {
		t.Fatalf("mv_items_vectors holds %d rows, the dataset %d", got, want)
	}
}

// TestIndexPostgresRuns runs "vembed index" as separate processes, one
// after the other, against one PGlite server, whose one session keeps
// what each connection left in it (as a transaction pooler's server
// does): two runs over a corpus, a third after it changed, each leaving
// the table equal to one fresh run's dataset; then a run in each of
// pgx's statement modes, and cache_statement named in the URL refused.
func TestIndexPostgresRuns(t *testing.T) {
	base := npmtest.StartPGlite(t)
	u, err := neturl.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	withMode := func(mode string) string {
		q := u.Query()
		q.Del("default_query_exec_mode")
		q.Set("pool_max_conns", "1") // PGlite serves one connection at a time
		if mode != "" {
			q.Set("default_query_exec_mode", mode)
		}
		v := *u
		v.RawQuery = q.Encode()
		return v.String()
	}
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	corpus, out := filepath.Join(dir, "corpus"), filepath.Join(dir, "idx")
	testCorpus(t, corpus, 4)
	child := func(args ...string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestEmbedChild$", "--")
		cmd.Args = append(cmd.Args, append([]string{"index"}, args...)...)
		cmd.Env = append(os.Environ(), embedChildEnv+"=1", "TMPDIR="+t.TempDir())
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	runChild := func(args ...string) {
		t.Helper()
		if b, err := child(args...); err != nil {
			t.Fatalf("vembed index %v: %v\n%s", args, err, b)
		}
	}
	// fresh is what one run over the corpus as it is now writes.
	fresh := func(name string) map[string]index.Row {
		t.Helper()
		o := filepath.Join(dir, name)
		runIndexCmd(t, corpus, "--out", o)
		return datasetByID(t, o)
	}
	// The test reads with unnamed statements too.
	url, read := withMode(""), withMode("cache_describe")
	one := fresh("one")
	for k := range 2 {
		runChild(corpus, "--out", out, "--sink", url, "--part-rows", "2")
		what := fmt.Sprintf("run %d over an unchanged corpus", k+1)
		sameIndexRows(t, what, pgTableRows(t, read, "vembed_items"), one)
		sameIndexRows(t, what+" (dataset)", datasetByID(t, out), one)
	}
	os.Remove(filepath.Join(corpus, "img/01.png"))
	writeText(t, filepath.Join(corpus, "notes/readme.md"), "# Title\n\nThe note, rewritten.\n")
	writeTestPNG(t, filepath.Join(corpus, "img/new.png"), 50, 44, 99)
	changed := fresh("changed")
	runChild(corpus, "--out", out, "--sink", url, "--part-rows", "2")
	sameIndexRows(t, "run 3 over a changed corpus", pgTableRows(t, read, "vembed_items"), changed)

	for _, mode := range []string{"cache_describe", "describe_exec", "exec", "simple_protocol"} {
		table := "items_" + mode
		runChild(corpus, "--out", filepath.Join(dir, mode), "--sink", withMode(mode), "--pg-table", table, "--part-rows", "2")
		sameIndexRows(t, mode, pgTableRows(t, read, table), changed)
	}
	b, err := child(corpus, "--out", filepath.Join(dir, "cs"), "--sink", withMode("cache_statement"))
	if err == nil || !strings.Contains(b, "cache_statement") || !strings.Contains(b, "simple_protocol") {
		t.Fatalf("default_query_exec_mode=cache_statement: %v\n%s\nwant a refusal naming the modes that work", err, b)
	}
}

// TestReadmeIndex runs the README's two indexing commands as written: the
// index line (with this binary, the output folder moved to a temporary
// one) and the DuckDB query on what it wrote.
func TestReadmeIndex(t *testing.T) {
	root, blocks := readmeSection(t, "### Index a folder")
	if len(blocks) == 0 || len(blocks[0]) != 2 {
		t.Fatalf("the README's index block: %q", blocks)
	}
	const build = "go build -o vembed ./cmd/vembed && ./vembed index "
	line := stripComment(blocks[0][0])
	if !strings.HasPrefix(line, build) {
		t.Fatalf("the README's index line %q does not start with %q", line, build)
	}
	args := strings.Fields(strings.TrimPrefix(line, build))
	out := filepath.Join(t.TempDir(), "idx")
	for i, a := range args {
		if a == "--out" && i+1 < len(args) && args[i+1] == "idx" {
			args[i+1] = out
		}
	}
	t.Chdir(root)
	stdout, _ := runIndexCmd(t, args...)
	if !strings.Contains(stdout, "indexed ") {
		t.Fatalf("index: %s", stdout)
	}
	query, ok := strings.CutPrefix(blocks[0][1], `duckdb -c "`)
	if q, ok2 := strings.CutSuffix(query, `"`); ok && ok2 {
		query = q
	} else {
		t.Fatalf("the README's DuckDB line %q", blocks[0][1])
	}
	query = strings.ReplaceAll(query, "'idx/", "'"+out+"/")
	rows := npmtest.DuckDB(t, query)
	if len(rows) == 0 || fmt.Sprint(rows[0]["dims"]) != "64" {
		t.Fatalf("DuckDB on the README's dataset: %v", rows)
	}
}

// TestIndexHostilePDFs indexes synth's hostile PDFs beside a good image:
// the run ends, the image is indexed, and every hostile document is
// either indexed (its pages rendered within the pixel bound) or reported
// with a reason; 100000 pages are refused, not rendered.
func TestIndexHostilePDFs(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	corpus, out := filepath.Join(dir, "corpus"), filepath.Join(dir, "idx")
	writeTestPNG(t, filepath.Join(corpus, "good.png"), 40, 40, 1)
	for _, h := range synth.HostilePDFs() {
		if h.Name == "many-pages" {
			continue // 2000 real pages: the 100000-page one below stands for it
		}
		writeText(t, filepath.Join(corpus, h.Name+".pdf"), string(h.Data))
	}
	writeText(t, filepath.Join(corpus, "pages-100000.pdf"), string(synth.PDFManyPages(100000)))
	stdout, _ := runIndexCmd(t, corpus, "--out", out, "--dpi", "20")
	t.Logf("%s", stdout)
	rows := datasetByID(t, out)
	indexed := map[string]bool{}
	for _, r := range rows {
		indexed[filepath.Base(r.Path)] = true
	}
	if !indexed["good.png"] {
		t.Fatal("the good image was not indexed")
	}
	ents, _ := os.ReadDir(corpus)
	for _, e := range ents {
		n := e.Name()
		if !indexed[n] && !strings.Contains(stdout, n+": ") && !strings.Contains(stdout, n+" page ") {
			t.Errorf("%s is neither indexed nor reported", n)
		}
	}
	if !strings.Contains(stdout, "pages-100000.pdf: ") || !strings.Contains(stdout, "too many pages") {
		t.Errorf("the 100000-page document is not refused for its pages")
	}
}

// TestIndexMultivector: with --multivector the rows hold one vector per
// token in the multivector column, equal to "vembed embed --multivector"
// of the same image, and no single vector; the manifest says so.
func TestIndexMultivector(t *testing.T) {
	dir := t.TempDir()
	corpus, out := filepath.Join(dir, "corpus"), filepath.Join(dir, "idx")
	writeTestPNG(t, filepath.Join(corpus, "a.png"), 56, 40, 4)
	writeText(t, filepath.Join(corpus, "b.txt"), "a short passage")
	runIndexCmd(t, corpus, "--out", out, "--multivector")
	rows := datasetByID(t, out)
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	var eo, ee bytes.Buffer
	if code := run([]string{"embed", "--image", filepath.Join(corpus, "a.png"), "--multivector", "--json"}, &eo, &ee); code != 0 {
		t.Fatalf("embed: %s", ee.String())
	}
	var e struct{ Embeddings [][][]float32 }
	if err := json.Unmarshal(eo.Bytes(), &e); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if len(r.Embedding) != 0 || len(r.Vectors) == 0 {
			t.Fatalf("row %s: %d single values, %d rows", r.Path, len(r.Embedding), len(r.Vectors))
		}
		if strings.HasSuffix(r.Path, "a.png") {
			if len(r.Vectors) != len(e.Embeddings[0]) {
				t.Fatalf("%d rows indexed, embed gives %d", len(r.Vectors), len(e.Embeddings[0]))
			}
			for i := range r.Vectors {
				if !equalBits(r.Vectors[i], e.Embeddings[0][i]) {
					t.Fatalf("multi-vector row %d differs from vembed embed --multivector", i)
				}
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "manifest-0of1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m index.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.Vectors != "multivector" || m.Items != 2 || len(m.Parts) == 0 || m.Dimensions == 0 || m.Sidecar != "float32" {
		t.Fatalf("manifest %+v", m)
	}
	// --sidecar float16 on the same folder: the sidecars are rewritten
	// in float16, the rows unchanged.
	runIndexCmd(t, corpus, "--out", out, "--multivector", "--sidecar", "float16")
	cars, _ := filepath.Glob(filepath.Join(out, index.SidecarDir, "*.mv"))
	if len(cars) != len(m.Parts) {
		t.Fatalf("%d sidecars for %d parts", len(cars), len(m.Parts))
	}
	for _, c := range cars {
		b, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		if sc, err := index.ParseSidecar(b); err != nil || sc.Type != index.SidecarFloat16 {
			t.Fatalf("%s after --sidecar float16: %v", c, err)
		}
	}
	sameIndexRows(t, "after --sidecar float16", datasetByID(t, out), rows)
	res := npmtest.DuckDB(t, fmt.Sprintf("select count(*)::int as n, min(len(multivector))::int as rows, min(len(multivector[1]))::int as dim from read_parquet('%s/parts/*.parquet')", out))
	if len(res) != 1 || fmt.Sprint(res[0]["n"]) != "2" || fmt.Sprint(res[0]["dim"]) != fmt.Sprint(m.Dimensions) {
		t.Fatalf("DuckDB: %v", res)
	}
}

// TestIndexEncoderReplica: with --encoder-url the images go to a vembed
// serve --role encoder replica of the same model, and the rows are those
// of a run that encodes them itself, bit for bit.
func TestIndexEncoderReplica(t *testing.T) {
	dir := t.TempDir()
	m := writeTestModel(t, filepath.Join(dir, "model"))
	enc := startServer(t, serveOptions{models: m, role: "encoder"})
	corpus := filepath.Join(dir, "corpus")
	for i := range 4 {
		writeTestPNG(t, filepath.Join(corpus, fmt.Sprintf("%d.png", i)), 48, 40, i)
	}
	model := []string{"--model", m.model, "--mmproj", m.mmproj}
	local, remote := filepath.Join(dir, "local"), filepath.Join(dir, "remote")
	runIndexCmd(t, append([]string{corpus, "--out", local}, model...)...)
	runIndexCmd(t, append([]string{corpus, "--out", remote, "--encoder-url", enc}, model...)...)
	sameIndexRows(t, "through the encoder replica vs local", datasetByID(t, remote), datasetByID(t, local))
	if v := metricValue(t, enc, "vembed_engine_images_total"); v != "4" {
		t.Errorf("the encoder replica encoded %q images, want 4", v)
	}
}

// TestIndexInvalidUTF8: a file name and a table's text that are not UTF-8
// are written as valid UTF-8, so that DuckDB reads the dataset.
func TestIndexInvalidUTF8(t *testing.T) {
	dir := t.TempDir()
	corpus, out := filepath.Join(dir, "corpus"), filepath.Join(dir, "idx")
	writeTestPNG(t, filepath.Join(corpus, "bad\xff\xfename.png"), 32, 32, 1)
	type rec struct {
		ID   string `parquet:"id"`
		Text string `parquet:"text"`
	}
	table := filepath.Join(dir, "t.parquet")
	if err := parquet.WriteFile(table, []rec{{ID: "r1", Text: "caf\xe9 au lait"}}); err != nil {
		t.Fatal(err)
	}
	stdout, _ := runIndexCmd(t, corpus, "--from-parquet", table, "--out", out)
	res := npmtest.DuckDB(t, fmt.Sprintf("select count(*)::int as n, max(length(path))::int as l from read_parquet('%s/parts/*.parquet')", out))
	if len(res) != 1 || fmt.Sprint(res[0]["n"]) != "2" {
		t.Fatalf("DuckDB: %v\n%s", res, stdout)
	}
}

// TestIndexRefusals: command lines that cannot work are refused before
// anything is written or removed; a path that is gone fails the run
// instead of emptying the index.
func TestIndexRefusals(t *testing.T) {
	dir := t.TempDir()
	m := writeTestModel(t, filepath.Join(dir, "model"))
	corpus, out := filepath.Join(dir, "corpus"), filepath.Join(dir, "idx")
	testCorpus(t, corpus, 2)
	runIndexCmd(t, corpus, "--out", out)
	before := datasetByID(t, out)
	t.Setenv("JOB_COMPLETION_INDEX", "")
	os.Unsetenv("JOB_COMPLETION_INDEX")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{corpus}, "--out DIR is required"},
		{[]string{"--out", out}, "nothing to index"},
		{[]string{corpus, "--out", out, "--shard", "2/2"}, "want I/N"},
		{[]string{corpus, "--out", out, "--shards", "2"}, "JOB_COMPLETION_INDEX"},
		{[]string{corpus, "--out", out, "--shard", "0/2", "--shards", "2"}, "not both"},
		{[]string{corpus, "--out", out, "--dpi", "-3"}, "--dpi"},
		{[]string{corpus, "--out", out, "--multivector", "--sidecar", "bfloat16"}, "want float32 or float16"},
		{[]string{corpus, "--out", out, "--model", m.model, "--mmproj", m.mmproj, "--multivector"}, "no multi-vector projector"},
		{[]string{filepath.Join(dir, "gone"), "--out", out}, "no such file"},
		{[]string{corpus, "--out", out, "--shard", "0/3"}, "1-way split"},
	} {
		var o, e bytes.Buffer
		if code := run(append([]string{"index"}, c.args...), &o, &e); code == 0 || !strings.Contains(o.String()+e.String(), c.want) {
			t.Errorf("vembed index %v: exit %d, want an error with %q:\n%s%s", c.args, code, c.want, o.String(), e.String())
		}
	}
	sameIndexRows(t, "after the refused runs", datasetByID(t, out), before)
}

// TestIndexProgressByPages draws the progress bar (as on a terminal) over
// one 400-page PDF: it moves through the document page by page instead of
// sitting at 0% until the file ends, its item count rising, and the
// --json-progress lines carry the same byte counts, rising with the pages.
func TestIndexProgressByPages(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	corpus, out := filepath.Join(dir, "corpus"), filepath.Join(dir, "idx")
	var pages []synth.PDFPage
	for i := range 400 {
		pages = append(pages, synth.PDFPage{WidthPt: 72, HeightPt: 72, Text: []string{fmt.Sprintf("page %d", i+1)}})
	}
	doc := synth.PDF(pages, synth.PDFOptions{})
	writeText(t, filepath.Join(corpus, "book.pdf"), string(doc))
	was, throttle := indexBarVisible, barThrottle
	indexBarVisible, barThrottle = func(io.Writer) bool { return true }, 0
	t.Cleanup(func() { indexBarVisible, barThrottle = was, throttle })
	progress := filepath.Join(dir, "progress.jsonl")
	_, stderr := runIndexCmd(t, corpus, "--out", out, "--dpi", "36", "--inflight", "2", "--progress-every", "5ms", "--json-progress", progress)

	// Each redraw starts with a carriage return; the bar prints its
	// percentage.
	percents := map[int]bool{}
	for _, m := range regexp.MustCompile(`(\d+)% \|`).FindAllStringSubmatch(stderr, -1) {
		n, _ := strconv.Atoi(m[1])
		percents[n] = true
	}
	inside := 0
	for p := range percents {
		if p > 0 && p < 100 {
			inside++
		}
	}
	if inside < 5 || !percents[100] {
		t.Errorf("the bar showed %v%%: want several steps between 0 and 100", slices.Sorted(maps.Keys(percents)))
	}
	items := map[string]bool{}
	for _, m := range regexp.MustCompile(`\r(\d+) items, `).FindAllStringSubmatch(stderr, -1) {
		items[m[1]] = true
	}
	if len(items) < 5 || !items["400"] {
		t.Errorf("the bar's item counts: %v", slices.Sorted(maps.Keys(items)))
	}

	b, err := os.ReadFile(progress)
	if err != nil {
		t.Fatal(err)
	}
	var last int64 = -1
	steps := map[int64]bool{}
	var p index.Progress
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		p = index.Progress{}
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatal(err)
		}
		if p.BytesWalked < last || p.BytesWalked > p.BytesTotal {
			t.Fatalf("bytes_walked %d after %d, of %d", p.BytesWalked, last, p.BytesTotal)
		}
		last = p.BytesWalked
		if p.BytesWalked > 0 && p.BytesWalked < p.BytesTotal {
			steps[p.BytesWalked] = true
		}
	}
	if p.BytesTotal != int64(len(doc)) || p.BytesWalked != p.BytesTotal || !p.Final || p.Done != 400 {
		t.Errorf("final progress %+v, want %d bytes of %d walked and 400 pages", p, len(doc), len(doc))
	}
	if len(steps) < 15 {
		t.Errorf("bytes_walked took %d values inside the document, want one per few pages", len(steps))
	}
}

// TestIndexMarkupAsText: documents quoting the models' markup are data: a
// text file, a PDF whose text layer holds <|vision_start|>, and a record's
// text are indexed (read as plain text), where a request holding the same
// text is refused (TestServe's "vision token" case).
func TestIndexMarkupAsText(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	corpus, out := filepath.Join(dir, "corpus"), filepath.Join(dir, "idx")
	markup := "an image is written <|vision_start|><|image_pad|><|vision_end|> in the prompt, after <|im_start|>user"
	writeText(t, filepath.Join(corpus, "models.md"), "# Prompts\n\n"+markup+"\n")
	writeText(t, filepath.Join(corpus, "models.pdf"), string(synth.PDF([]synth.PDFPage{{WidthPt: 400, HeightPt: 100, Text: []string{"see <|vision_start|> here"}}}, synth.PDFOptions{})))
	writeText(t, filepath.Join(dir, "recs.jsonl"), `{"id": "r1", "text": "a record quoting <|vision_start|> and <|endoftext|>"}`+"\n")
	stdout, _ := runIndexCmd(t, corpus, "--from-jsonl", filepath.Join(dir, "recs.jsonl"), "--out", out, "--dpi", "72")
	if !strings.Contains(stdout, " 0 not indexed") || strings.Contains(stdout, "not indexed:") {
		t.Fatalf("refused:\n%s", stdout)
	}
	rows := datasetByID(t, out)
	var md, pdfText, rec bool
	for _, r := range rows {
		switch {
		case strings.HasSuffix(r.Path, "models.md") && strings.Contains(r.Text, "<|vision_start|><|image_pad|><|vision_end|>"):
			md = true
		case strings.HasSuffix(r.Path, "models.pdf") && strings.Contains(r.Text, "<|vision_start|>"):
			pdfText = true
		case r.ID == "r1" && len(r.Embedding) > 0:
			rec = true
		}
	}
	if !md || !pdfText || !rec {
		t.Fatalf("rows of the text file %v, the PDF with its text %v, the record %v: %d rows", md, pdfText, rec, len(rows))
	}
}
