package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
