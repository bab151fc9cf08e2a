package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vembed/vembed/synth"
)

// searchPost sends a POST /v1/search body and decodes the answer.
func searchPost(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url+"/v1/search", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("search answer (%d) is not JSON: %q", resp.StatusCode, b)
	}
	return resp.StatusCode, out
}

func hitList(t *testing.T, out map[string]any) []map[string]any {
	t.Helper()
	hs, ok := out["hits"].([]any)
	if !ok {
		t.Fatalf("no hits in %v", out)
	}
	var hits []map[string]any
	for _, h := range hs {
		hits = append(hits, h.(map[string]any))
	}
	return hits
}

// TestServeIndex indexes images and texts with the demo model (multi-
// vector), serves the index and checks /v1/search (text, image and
// interleaved queries, maps, the filter, bad input), /v1/index and
// /v1/pages/{id}, and that vembed search ranks as the server does.
func TestServeIndex(t *testing.T) {
	dir := t.TempDir()
	corpus, out := filepath.Join(dir, "corpus"), filepath.Join(dir, "idx")
	for i := range 6 {
		writeTestPNG(t, filepath.Join(corpus, fmt.Sprintf("img/%02d.png", i)), 56+8*i, 40+4*i, i)
	}
	writeText(t, filepath.Join(corpus, "notes/a.txt"), "the weather in town and the price of bread")
	writeText(t, filepath.Join(corpus, "notes/b.md"), "# Notes\n\nA short note about trains.\n")
	runIndexCmd(t, corpus, "--out", out, "--multivector")

	url := startServer(t, serveOptions{index: out})
	code, res := searchPost(t, url, `{"query": "bread prices", "top_k": 5}`)
	if code != 200 || res["object"] != "search" || res["multivector"] != true {
		t.Fatalf("search: %d %v", code, res)
	}
	hits := hitList(t, res)
	if len(hits) != 5 {
		t.Fatalf("%d hits", len(hits))
	}
	for i := 1; i < len(hits); i++ {
		if hits[i]["score"].(float64) > hits[i-1]["score"].(float64) {
			t.Fatalf("hits out of order: %v", hits)
		}
	}
	// The CLI ranks the same query the same way.
	var so, se bytes.Buffer
	if c := run([]string{"search", "--index", out, "--top-k", "5", "--json", "bread", "prices"}, &so, &se); c != 0 {
		t.Fatalf("vembed search: %s", se.String())
	}
	var cli struct{ Hits []struct{ ID string } }
	if err := json.Unmarshal(so.Bytes(), &cli); err != nil {
		t.Fatal(err)
	}
	for i := range hits {
		if cli.Hits[i].ID != hits[i]["id"] {
			t.Fatalf("vembed search hit %d is %s, the server's %s", i, cli.Hits[i].ID, hits[i]["id"])
		}
	}

	// An image query with maps: a map of the page's grid per image hit.
	img, _ := os.ReadFile(filepath.Join(corpus, "img/03.png"))
	uri := "data:image/png;base64," + base64.StdEncoding.EncodeToString(img)
	code, res = searchPost(t, url, fmt.Sprintf(`{"query": {"image": %q}, "top_k": 3, "maps": true, "map_tokens": true, "filter": "*.png"}`, uri))
	if code != 200 {
		t.Fatalf("image search: %d %v", code, res)
	}
	hits = hitList(t, res)
	if len(hits) != 3 {
		t.Fatalf("%d image hits", len(hits))
	}
	for _, h := range hits {
		if !strings.HasSuffix(h["path"].(string), ".png") {
			t.Fatalf("the filter let %s through", h["path"])
		}
		m, ok := h["map"].(map[string]any)
		if !ok {
			t.Fatalf("hit without a map: %v", h)
		}
		r, c := int(m["rows"].(float64)), int(m["cols"].(float64))
		if r < 1 || c < 1 || len(m["values"].([]any)) != r*c {
			t.Fatalf("map %dx%d with %d values", r, c, len(m["values"].([]any)))
		}
		if len(m["tokens"].([]any)) == 0 {
			t.Fatal("map_tokens gave no token maps")
		}
	}
	code, res = searchPost(t, url, fmt.Sprintf(`{"query": {"content": [{"text": "a picture"}, {"image": %q}]}}`, uri))
	if code != 200 || len(hitList(t, res)) != 8 {
		t.Fatalf("interleaved search: %d %v", code, res)
	}

	for _, bad := range []string{`{"query": "x", "top_k": 100000}`, `{"query": "x", "top_k": 0}`, `{"query": ""}`, `{}`,
		`{"query": ["a", "b"]}`, `{"query": "x", "filter": "["}`, `{"query": "x", "rerank": true}`, `{"query": "x", "bogus": 1}`} {
		if code, res := searchPost(t, url, bad); code != 400 {
			t.Errorf("%s: %d %v", bad, code, res)
		}
	}

	resp, err := http.Get(url + "/v1/index")
	if err != nil {
		t.Fatal(err)
	}
	var info map[string]any
	json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	if info["items"] != 8.0 || info["multivector"] != true || info["dims"].(float64) < 1 {
		t.Fatalf("index info %v", info)
	}

	id := hits[0]["id"].(string)
	resp, err = http.Get(url + "/v1/pages/" + id + "?width=20")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("page: %d %s", resp.StatusCode, b)
	}
	if im, err := png.Decode(bytes.NewReader(b)); err != nil || im.Bounds().Dx() != 20 {
		t.Fatalf("thumbnail: %v", err)
	}
	for path, want := range map[string]int{"/v1/pages/nope": 404, "/v1/pages/..%2f..%2fetc%2fpasswd": 404, "/v1/pages/" + id + "?width=0": 400} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	// A source changed since it was indexed: the page route says so, the
	// hit stays.
	src := hits[0]["path"].(string) // the corpus was given as an absolute path
	writeTestPNG(t, src, 30, 30, 99)
	resp, err = http.Get(url + "/v1/pages/" + id)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("a changed source: %d", resp.StatusCode)
	}
	os.Remove(src)
	resp, err = http.Get(url + "/v1/pages/" + id)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusGone {
		t.Errorf("a source gone: %d", resp.StatusCode)
	}
}

// TestServeIndexLive: while vembed serve --index serves, a vembed index
// run into the same folder adds pages and removes others; 1000 searches
// from 8 concurrent clients during the run see no error and no id twice,
// the new pages answer within seconds of the run's end, and the removed
// ones leave.
func TestServeIndexLive(t *testing.T) {
	dir := t.TempDir()
	corpus, out := filepath.Join(dir, "corpus"), filepath.Join(dir, "idx")
	for i := range 12 {
		writeTestPNG(t, filepath.Join(corpus, fmt.Sprintf("old/%02d.png", i)), 48, 40, i)
	}
	runIndexCmd(t, corpus, "--out", out, "--multivector", "--part-rows", "4")
	url := startServer(t, serveOptions{index: out})

	// The second run: 250 new images (of another size than the old ones,
	// so no content repeats), the first 6 old ones deleted.
	for i := range 250 {
		writeTestPNG(t, filepath.Join(corpus, fmt.Sprintf("new/%03d.png", i)), 56, 40, i)
	}
	for i := range 6 {
		os.Remove(filepath.Join(corpus, fmt.Sprintf("old/%02d.png", i)))
	}
	// The clients search while the run goes. Should the run end before
	// they have sent 1000 searches (a fast machine), another run follows
	// with 20 more new images, so that 1000 searches meet a run.
	const clients, searches = 8, 1000
	var next, during atomic.Int64
	runDone := make(chan error, 1)
	var running atomic.Bool
	running.Store(true)
	go func() {
		defer running.Store(false)
		for round := 1; ; round++ {
			var o, e bytes.Buffer
			if code := run([]string{"index", corpus, "--out", out, "--multivector", "--part-rows", "4"}, &o, &e); code != 0 {
				runDone <- fmt.Errorf("index: exit %d: %s", code, e.String())
				return
			}
			if next.Load() >= searches {
				runDone <- nil
				return
			}
			for i := range 20 {
				if err := writePNGFile(filepath.Join(corpus, fmt.Sprintf("more/%02d-%02d.png", round, i)), 56+8*round, 40, i); err != nil {
					runDone <- err
					return
				}
			}
		}
	}()
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := next.Add(1)
				if n > searches && !running.Load() {
					return
				}
				if running.Load() {
					during.Add(1)
				}
				body := fmt.Sprintf(`{"query": "query %d from client %d", "top_k": 100}`, n, c)
				resp, err := http.Post(url+"/v1/search", "application/json", strings.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				var res struct {
					Hits []struct{ ID string }
				}
				err = json.NewDecoder(resp.Body).Decode(&res)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 {
					errs <- fmt.Errorf("search %d: status %d, %v", n, resp.StatusCode, err)
					return
				}
				seen := map[string]bool{}
				for _, h := range res.Hits {
					if seen[h.ID] {
						errs <- fmt.Errorf("search %d: id %s twice", n, h.ID)
						return
					}
					seen[h.ID] = true
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d searches sent while the run was going, %d in all", during.Load(), next.Load()-clients)
	if during.Load() < searches {
		t.Errorf("only %d searches during the run", during.Load())
	}
	// Within seconds of the run's end the server holds the dataset's
	// items: the 256 live ones and those of any later round, without the
	// deleted ones.
	want := datasetByID(t, out)
	if len(want) < 256 {
		t.Fatalf("the dataset holds %d items, want 256 or more", len(want))
	}
	for _, r := range want {
		if strings.Contains(r.Path, "old/0") && r.Path < filepath.Join(corpus, "old/06.png") {
			t.Fatalf("a deleted image is still indexed: %s", r.Path)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, res := searchPost(t, url, `{"query": "anything", "top_k": 1000}`)
		got := map[string]bool{}
		for _, h := range hitList(t, res) {
			got[h["id"].(string)] = true
		}
		same := code == 200 && len(got) == len(want)
		for id := range want {
			same = same && got[id]
		}
		if same {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the run the server holds %d items, the dataset %d", len(got), len(want))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestServeIndexPDF: a PDF's page is rendered again from the document at
// the index's DPI for /v1/pages/{id} (the size the row records), its text
// layer is the hit's snippet, and the relative path the run recorded is
// read from the run's folder (the manifest's root), wherever the server
// runs.
func TestServeIndexPDF(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache")) // PDFium's compilation cache
	doc := synth.PDF([]synth.PDFPage{
		{WidthPt: 200, HeightPt: 120, Text: []string{"Quarterly report", "Revenue grew."}},
		{WidthPt: 150, HeightPt: 100, Text: []string{"Appendix"}},
	}, synth.PDFOptions{})
	writeText(t, filepath.Join(dir, "corpus", "doc.pdf"), string(doc))
	t.Chdir(dir)
	runIndexCmd(t, "corpus", "--out", "idx", "--dpi", "72", "--multivector")
	t.Chdir(t.TempDir()) // the server runs elsewhere
	url := startServer(t, serveOptions{index: filepath.Join(dir, "idx")})
	code, res := searchPost(t, url, `{"query": "revenue", "top_k": 2, "maps": true}`)
	if code != 200 {
		t.Fatalf("search: %d %v", code, res)
	}
	for _, h := range hitList(t, res) {
		if h["path"] != "corpus/doc.pdf" {
			t.Fatalf("path %v", h["path"])
		}
		if h["map"] == nil {
			t.Errorf("page %v has no map", h["page"])
		}
		resp, err := http.Get(url + "/v1/pages/" + h["id"].(string))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("page %v: %d %s", h["page"], resp.StatusCode, b)
		}
		im, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if im.Bounds().Dx() != int(h["width"].(float64)) || im.Bounds().Dy() != int(h["height"].(float64)) {
			t.Errorf("page %v rendered %v, indexed %vx%v", h["page"], im.Bounds(), h["width"], h["height"])
		}
		if h["page"] == 1.0 && !strings.Contains(h["snippet"].(string), "Revenue grew.") {
			t.Errorf("page 1 snippet %q", h["snippet"])
		}
	}
}

// TestSearchRefusesAnotherModel: vembed search and serve --index refuse a
// model whose identity is not the index's, naming both.
func TestSearchRefusesAnotherModel(t *testing.T) {
	dir := t.TempDir()
	corpus, out := filepath.Join(dir, "corpus"), filepath.Join(dir, "idx")
	writeText(t, filepath.Join(corpus, "a.txt"), "a short passage")
	runIndexCmd(t, corpus, "--out", out)
	cfg, err := synth.Preset("tiny-qwen3vl")
	if err != nil {
		t.Fatal(err)
	}
	lm, mmproj, err := synth.WritePair(filepath.Join(dir, "other"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var so, se bytes.Buffer
	code := run([]string{"search", "--index", out, "--model", lm, "--mmproj", mmproj, "a", "query"}, &so, &se)
	if code == 0 || !strings.Contains(se.String(), "vembed-demo-tiny-random-weights") || !strings.Contains(se.String(), lm) {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	err = serve(t.Context(), serveOptions{index: out, addr: "127.0.0.1:0", models: modelFlags{model: lm, mmproj: mmproj}}, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "identity") {
		t.Fatalf("serve --index with another model: %v", err)
	}
	// Not an index at all.
	if code := run([]string{"search", "--index", corpus, "x"}, &so, &se); code == 0 {
		t.Fatal("a folder that is not an index was searched")
	}
}
