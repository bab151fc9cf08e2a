package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/vembed/vembed/internal/browsertest"
	"github.com/vembed/vembed/synth"
)

// searchPageCorpus writes a small corpus of every kind the page shows: a
// PDF of text pages with a picture, pictures of several shapes, and a text
// file (a hit with no page image).
func searchPageCorpus(t *testing.T, dir string) {
	t.Helper()
	pic := image.NewRGBA(image.Rect(0, 0, 120, 80))
	for y := range 80 {
		for x := range 120 {
			pic.Set(x, y, color.RGBA{uint8(200 - x), uint8(60 + y*2), uint8(x ^ y), 255})
		}
	}
	lines := func(topic string, n int) []string {
		out := []string{strings.ToUpper(topic[:1]) + topic[1:]}
		for i := range n {
			out = append(out, fmt.Sprintf("%d. Notes on %s, section %d, with figures and remarks.", i+1, topic, i+1))
		}
		return out
	}
	doc := synth.PDF([]synth.PDFPage{
		{WidthPt: 300, HeightPt: 400, Text: lines("quarterly revenue and growth", 14)},
		{WidthPt: 300, HeightPt: 400, Text: lines("the weather in town", 10)},
		{WidthPt: 400, HeightPt: 300, Image: pic, ImageRect: [4]float64{40, 40, 320, 220}},
	}, synth.PDFOptions{})
	writeText(t, filepath.Join(dir, "reports/annual.pdf"), string(doc))
	for i := range 6 {
		writeTestPNG(t, filepath.Join(dir, fmt.Sprintf("photos/%02d.png", i)), 96+i%3*48, 128-i%2*40, i)
	}
	writeText(t, filepath.Join(dir, "notes/bread.txt"), "The price of bread in town went up again this week, and the baker blames the weather.")
}

// searchHit is what the test reads of a /v1/search hit.
type searchHit struct {
	ID          string   `json:"id"`
	Path        string   `json:"path"`
	Page        int      `json:"page"`
	Score       float64  `json:"score"`
	Width       int      `json:"width"`
	RerankScore *float64 `json:"rerank_score"`
	Map         *struct {
		Rows   int       `json:"rows"`
		Cols   int       `json:"cols"`
		Values []float64 `json:"values"`
		Tokens []struct {
			Token string `json:"token"`
		} `json:"tokens"`
	} `json:"map"`
}

// apiSearch asks /v1/search what the page should show.
func apiSearch(t *testing.T, base, key string, body map[string]any) []searchHit {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", base+"/v1/search", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/v1/search: %d %s", resp.StatusCode, rb)
	}
	var res struct{ Hits []searchHit }
	if err := json.Unmarshal(rb, &res); err != nil {
		t.Fatal(err)
	}
	return res.Hits
}

func hitIDs(hits []searchHit) []string {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	return ids
}

// pageIDs waits for the page to finish a search and returns its cards'
// ids in order.
func pageIDs(t *testing.T, b *browsertest.Browser) []string {
	t.Helper()
	state, err := chromedp.Run(b.Ctx, chromedp.Poll[string](
		`["done", "error", "key"].includes(document.body.dataset.state) && document.body.dataset.state`,
		chromedp.WithPollingTimeout(90*time.Second)))
	if err != nil {
		t.Fatalf("waiting for the results: %v\n%s", err, strings.Join(b.Messages(), "\n"))
	}
	if state != "done" {
		msg, _ := chromedp.Run(b.Ctx, chromedp.Evaluate[string](`document.getElementById("errortext").textContent`))
		t.Fatalf("the page ended in state %q: %s", state, msg)
	}
	ids, err := chromedp.Run(b.Ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#results > li")].map((li) => li.dataset.id)`))
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// waitThumbnails waits until every card with a page image shows it.
func waitThumbnails(t *testing.T, b *browsertest.Browser) {
	t.Helper()
	err := chromedp.Do(b.Ctx, chromedp.Poll[chromedp.Void](
		`[...document.querySelectorAll("#results .thumb")].every((th) => th.querySelector("img.loaded") || th.querySelector(".placeholder"))`,
		chromedp.WithPollingTimeout(60*time.Second)))
	if err != nil {
		t.Fatalf("thumbnails: %v", err)
	}
	failed, err := chromedp.Run(b.Ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("#results .placeholder")].map((p) => p.textContent).filter((s) => s.startsWith("Page image unavailable"))`))
	if err != nil {
		t.Fatal(err)
	}
	if len(failed) > 0 {
		t.Fatalf("page images failed: %q", failed)
	}
}

// screenshot keeps the whole page as dir/name, or only the window when
// name starts with "window-" (a modal dialog covers the window only).
func screenshot(t *testing.T, b *browsertest.Browser, dir, name string) {
	t.Helper()
	shot := chromedp.FullScreenshot(100)
	if strings.HasPrefix(name, "window-") {
		shot = chromedp.CaptureScreenshot()
	}
	// Let the thumbnails' fade-in end first.
	if err := chromedp.Do(b.Ctx, chromedp.Sleep(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(b.Ctx, shot)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", p)
}

func sameIDs(t *testing.T, what string, page, api []string) {
	t.Helper()
	if len(api) == 0 {
		t.Fatalf("%s: /v1/search found nothing, so the comparison would prove nothing", what)
	}
	if !slices.Equal(page, api) {
		t.Fatalf("%s: the page shows\n%q\n/v1/search answers\n%q", what, page, api)
	}
}

// TestSearchPage runs vembed index over a small corpus with the demo
// model, then vembed serve --index, and uses the page at / in Chromium: a
// typed query's cards are /v1/search's top hits in order, with their page
// images; the query is in the URL, and loading that URL runs it again; a
// filter that matches nothing says so; items a second vembed index run
// adds make the page offer to search again; a picture chosen with the file
// picker is sent as an image query, and its own page comes first; a
// reranked search shows the reranker's order and both scores; so do text
// beside a picture and a dropped picture; the keyboard opens and closes
// a card; nothing overflows a phone's width; a refused search shows the
// server's message.
func TestSearchPage(t *testing.T) {
	b := browsertest.Start(t)
	art := browsertest.Artifacts(t)
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache")) // PDFium's compilation cache
	corpus, idx := filepath.Join(dir, "corpus"), filepath.Join(dir, "idx")
	searchPageCorpus(t, corpus)
	runIndexCmd(t, corpus, "--out", idx, "--dpi", "72")
	rr, rrMM := writeTestReranker(t, filepath.Join(dir, "reranker"))
	base := startServer(t, serveOptions{index: idx, reranker: rr, rerankMMProj: rrMM})

	const q = "weather in town"
	want := hitIDs(apiSearch(t, base, "", map[string]any{"query": q, "top_k": 10}))
	err := chromedp.Do(b.Ctx,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS("#q")),
		chromedp.SendKeys(chromedp.CSS("#q"), q+"\r"),
	)
	if err != nil {
		t.Fatal(err)
	}
	sameIDs(t, "typed query", pageIDs(t, b), want)
	waitThumbnails(t, b)
	loc, err := chromedp.Run(b.Ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if u, err := url.Parse(loc); err != nil || u.Path != "/" || u.Query().Get("q") != q {
		t.Fatalf("the URL after the search is %s", loc)
	}
	maps, err := chromedp.Run(b.Ctx, chromedp.Evaluate[int](`document.querySelectorAll("canvas.map").length`))
	if err != nil || maps != 0 {
		t.Fatalf("%d map overlays on a single-vector index (%v)", maps, err)
	}
	// This server has a reranker: the page offers it (GET /v1/index's
	// "reranker"); TestSearchPageMaps's server has none and hides it.
	if hidden, err := chromedp.Run(b.Ctx, chromedp.Evaluate[bool](`document.getElementById("rerankopt").hidden`)); err != nil || hidden {
		t.Fatalf("the rerank option is hidden (%v) on a server with a reranker", err)
	}
	screenshot(t, b, art, "single-vector.png")

	// The server follows the folder: a second vembed index run adds two
	// items, and the page says its results are out of date and runs the
	// search again on request.
	writeText(t, filepath.Join(corpus, "notes/market.txt"), "The weather in town was fine for the market this week.")
	writeTestPNG(t, filepath.Join(corpus, "photos/new.png"), 120, 90, 42)
	runIndexCmd(t, corpus, "--out", idx, "--dpi", "72")
	err = chromedp.Do(b.Ctx, chromedp.Poll[chromedp.Void](`!document.getElementById("stale").hidden`, chromedp.WithPollingTimeout(90*time.Second)))
	if err != nil {
		t.Fatalf("the page did not notice the new items: %v", err)
	}
	var ix struct{ Items int }
	if resp, err := http.Get(base + "/v1/index"); err != nil {
		t.Fatal(err)
	} else {
		err := json.NewDecoder(resp.Body).Decode(&ix)
		resp.Body.Close()
		if err != nil || ix.Items != 12 {
			t.Fatalf("/v1/index after the second run: %d items (%v), want 12", ix.Items, err)
		}
	}
	want = hitIDs(apiSearch(t, base, "", map[string]any{"query": q, "top_k": 10}))
	expectSearch(t, b)
	if err := chromedp.Do(b.Ctx, chromedp.Click(chromedp.CSS("#again"))); err != nil {
		t.Fatal(err)
	}
	sameIDs(t, "search again after the index changed", pageIDs(t, b), want)
	info, err := chromedp.Run(b.Ctx, chromedp.Evaluate[string](`document.getElementById("stale").hidden && document.getElementById("indexinfo").textContent`))
	if err != nil || !strings.Contains(info, "12 items") {
		t.Fatalf("after the second search the index line says %q (%v)", info, err)
	}

	// A link with the query in it runs the query on load.
	const q2 = "quarterly revenue"
	want = hitIDs(apiSearch(t, base, "", map[string]any{"query": q2, "top_k": 5}))
	if err := chromedp.Do(b.Ctx, chromedp.Navigate(base+"/?"+url.Values{"q": {q2}, "k": {"5"}}.Encode())); err != nil {
		t.Fatal(err)
	}
	sameIDs(t, "query from the URL", pageIDs(t, b), want)

	// A filter that matches no path: the empty state, not an error.
	if err := chromedp.Do(b.Ctx, chromedp.Navigate(base+"/?"+url.Values{"q": {q}, "filter": {"nowhere/*.pdf"}}.Encode())); err != nil {
		t.Fatal(err)
	}
	if ids := pageIDs(t, b); len(ids) != 0 {
		t.Fatalf("filter matching nothing: cards %q", ids)
	}
	empty, err := chromedp.Run(b.Ctx, chromedp.Evaluate[string](`document.getElementById("empty").hidden ? "" : document.getElementById("empty").textContent`))
	if err != nil || !strings.Contains(empty, "No page matched") {
		t.Fatalf("empty state %q (%v)", empty, err)
	}

	// Reranked: the reranker's order and both scores.
	reranked := apiSearch(t, base, "", map[string]any{"query": q, "top_k": 6, "rerank": true})
	if err := chromedp.Do(b.Ctx, chromedp.Navigate(base+"/?"+url.Values{"q": {q}, "k": {"6"}, "rerank": {"1"}}.Encode())); err != nil {
		t.Fatal(err)
	}
	sameIDs(t, "reranked query", pageIDs(t, b), hitIDs(reranked))
	subs, err := chromedp.Run(b.Ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#results .sub")].map((s) => s.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range reranked {
		if h.RerankScore == nil {
			t.Fatalf("/v1/search with rerank: hit %d has no rerank_score", i)
		}
		if want := fmt.Sprintf("rerank %.3f", *h.RerankScore); !strings.Contains(subs[i], want) || !strings.Contains(subs[i], fmt.Sprintf("retrieval %.3f", h.Score)) {
			t.Fatalf("card %d says %q, want %q and the retrieval score %.3f", i+1, subs[i], want, h.Score)
		}
	}
	waitThumbnails(t, b)
	screenshot(t, b, art, "reranked.png")

	// An image query through the file picker.
	photo := filepath.Join(corpus, "photos/03.png")
	raw, err := os.ReadFile(photo)
	if err != nil {
		t.Fatal(err)
	}
	hits := apiSearch(t, base, "", map[string]any{"query": map[string]any{"image": "data:image/png;base64," + base64.StdEncoding.EncodeToString(raw)}, "top_k": 10})
	if len(hits) == 0 || !strings.HasSuffix(hits[0].Path, "photos/03.png") {
		t.Fatalf("/v1/search for a picture of the corpus: %+v", hits)
	}
	err = chromedp.Do(b.Ctx,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS("#q")),
		chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{photo}),
	)
	if err != nil {
		t.Fatal(err)
	}
	sameIDs(t, "image query", pageIDs(t, b), hitIDs(hits))
	waitThumbnails(t, b)
	screenshot(t, b, art, "image-query.png")

	// Text typed beside a picture: one interleaved query.
	const words = "a picture of"
	dataURL := func(raw []byte) string { return "data:image/png;base64," + base64.StdEncoding.EncodeToString(raw) }
	both := apiSearch(t, base, "", map[string]any{"query": map[string]any{"content": []any{map[string]any{"text": words}, map[string]any{"image": dataURL(raw)}}}, "top_k": 10})
	if slices.Equal(hitIDs(both), hitIDs(hits)) {
		t.Fatal("text beside the picture ranks as the picture alone: the page's query could not be told apart")
	}
	expectSearch(t, b)
	err = chromedp.Do(b.Ctx,
		chromedp.SendKeys(chromedp.CSS("#q"), words),
		chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{photo}),
	)
	if err != nil {
		t.Fatal(err)
	}
	sameIDs(t, "text and picture", pageIDs(t, b), hitIDs(both))

	// A picture dropped on the page.
	other, err := os.ReadFile(filepath.Join(corpus, "photos/05.png"))
	if err != nil {
		t.Fatal(err)
	}
	dropped := apiSearch(t, base, "", map[string]any{"query": map[string]any{"image": dataURL(other)}, "top_k": 10})
	if err := chromedp.Do(b.Ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#q"))); err != nil {
		t.Fatal(err)
	}
	expectSearch(t, b)
	drop := fmt.Sprintf(`(() => {
		const bytes = Uint8Array.from(atob(%q), (c) => c.charCodeAt(0));
		const dt = new DataTransfer();
		dt.items.add(new File([bytes], "05.png", {type: "image/png"}));
		document.getElementById("results").dispatchEvent(new DragEvent("drop", {dataTransfer: dt, bubbles: true, cancelable: true}));
	})()`, base64.StdEncoding.EncodeToString(other))
	if err := chromedp.Do(b.Ctx, chromedp.Evaluate[chromedp.Void](drop)); err != nil {
		t.Fatal(err)
	}
	sameIDs(t, "dropped picture", pageIDs(t, b), hitIDs(dropped))

	// The keyboard: "/" goes to the query box; Enter on a card opens it
	// large, Escape closes it and gives the card its focus back.
	focused := func() string {
		t.Helper()
		s, err := chromedp.Run(b.Ctx, chromedp.Evaluate[string](`(document.activeElement.closest("li") || {dataset: {}}).dataset.rank || document.activeElement.id`))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// The key as a keyboard sends it, with no separate character event
	// (chromedp.KeyEvent sends one, which a page cannot cancel).
	slash := chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
			if _, err := cdp.Call(ctx, tg, input.DispatchKeyEvent, input.DispatchKeyEventParams{
				Type: typ, Key: "/", Code: "Slash", WindowsVirtualKeyCode: 191, NativeVirtualKeyCode: 191,
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err := chromedp.Do(b.Ctx, chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`), slash); err != nil {
		t.Fatal(err)
	}
	if f := focused(); f != "q" {
		t.Fatalf("after /, the focus is on %q", f)
	}
	title := func() string {
		t.Helper()
		s, err := chromedp.Run(b.Ctx, chromedp.TextContent(chromedp.CSS("#vtitle")))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	err = chromedp.Do(b.Ctx,
		chromedp.Focus(chromedp.CSS("#results > li:nth-child(2) > button")),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS("#viewer")),
	)
	if err != nil {
		t.Fatalf("opening a card with the keyboard: %v", err)
	}
	// ← and → step through the results in the large view.
	for _, step := range []struct {
		key  string
		card int
	}{{"", 1}, {kb.ArrowRight, 2}, {kb.ArrowLeft, 1}} {
		if step.key != "" {
			if err := chromedp.Do(b.Ctx, chromedp.KeyEvent(step.key)); err != nil {
				t.Fatal(err)
			}
		}
		if got, h := title(), dropped[step.card]; !strings.HasPrefix(got, h.Path) {
			t.Fatalf("the large view shows %q, want result %d (%s)", got, step.card+1, h.Path)
		}
	}
	if err := chromedp.Do(b.Ctx, chromedp.KeyEvent(kb.Escape), chromedp.WaitNotVisible(chromedp.CSS("#viewer"))); err != nil {
		t.Fatalf("closing the large view with Escape: %v", err)
	}
	if f := focused(); f != "2" {
		t.Fatalf("after the large view closed, the focus is on %q, not card 2", f)
	}

	// A phone's width: one or two columns, nothing wider than the screen.
	err = chromedp.Do(b.Ctx, chromedp.EmulateViewport(390, 844), chromedp.Sleep(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	wide, err := chromedp.Run(b.Ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth - document.documentElement.clientWidth`))
	if err != nil || wide > 0 {
		t.Fatalf("at 390 px the page is %d px too wide (%v)", wide, err)
	}
	screenshot(t, b, art, "window-phone.png")
	if err := chromedp.Do(b.Ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}

	// A search the server refuses (a malformed glob): its message, shown.
	expectSearch(t, b)
	if err := chromedp.Do(b.Ctx, chromedp.Navigate(base+"/?"+url.Values{"q": {q}, "filter": {"reports/["}}.Encode())); err != nil {
		t.Fatal(err)
	}
	msg, err := chromedp.Run(b.Ctx, chromedp.Poll[string](`document.body.dataset.state === "error" && document.getElementById("errortext").textContent`,
		chromedp.WithPollingTimeout(60*time.Second)))
	if err != nil || !strings.HasPrefix(msg, "The search failed: ") || !strings.Contains(msg, "filter") {
		t.Fatalf("a refused search shows %q (%v)", msg, err)
	}
	if errs := b.Errors(); len(errs) > 0 {
		t.Fatalf("the page logged errors:\n%s", strings.Join(errs, "\n"))
	}
}

// expectSearch clears the page's state before an action that starts a
// search without leaving the page, so that pageIDs waits for that search
// and not the one before.
func expectSearch(t *testing.T, b *browsertest.Browser) {
	t.Helper()
	if err := chromedp.Do(b.Ctx, chromedp.Evaluate[chromedp.Void](`document.body.dataset.state = ""`)); err != nil {
		t.Fatal(err)
	}
}

// TestSearchPageMaps serves a multi-vector index behind an API key: the
// page asks for the key, then draws each hit's similarity map over its
// thumbnail (a canvas of the map's grid with visible pixels), and per
// query token when asked.
func TestSearchPageMaps(t *testing.T) {
	b := browsertest.Start(t)
	art := browsertest.Artifacts(t)
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	corpus, idx := filepath.Join(dir, "corpus"), filepath.Join(dir, "idx")
	searchPageCorpus(t, corpus)
	runIndexCmd(t, corpus, "--out", idx, "--dpi", "72", "--multivector")
	const key = "page-test-key"
	base := startServer(t, serveOptions{index: idx, keys: keyList{key}})

	const q = "quarterly revenue and growth"
	hits := apiSearch(t, base, key, map[string]any{"query": q, "top_k": 10, "maps": true})
	if firstMap(hits) < 0 {
		t.Fatalf("/v1/search with maps on a multi-vector index sent none: %+v", hits)
	}
	err := chromedp.Do(b.Ctx,
		chromedp.Navigate(base+"/?"+url.Values{"q": {q}}.Encode()),
		chromedp.WaitVisible(chromedp.CSS("#key")),
		chromedp.SendKeys(chromedp.CSS("#key"), key+"\r"),
	)
	if err != nil {
		t.Fatalf("the page did not ask for the key: %v", err)
	}
	sameIDs(t, "query after the key", pageIDs(t, b), hitIDs(hits))
	waitThumbnails(t, b)
	if hidden, err := chromedp.Run(b.Ctx, chromedp.Evaluate[bool](`document.getElementById("rerankopt").hidden`)); err != nil || !hidden {
		t.Fatalf("the rerank option is offered (%v) by a server without a reranker", err)
	}

	type overlay struct {
		ID      string
		W, H    int
		Visible int // pixels with alpha > 0
	}
	// Counts each overlay's visible pixels; run after each drawing.
	const readOverlays = `[...document.querySelectorAll("#results > li")].flatMap((li) => {
		const c = li.querySelector("canvas.map");
		if (!c) return [];
		const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
		let n = 0;
		for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
		return [{ID: li.dataset.id, W: c.width, H: c.height, Visible: n}];
	})`
	check := func(what string) {
		t.Helper()
		ovs, err := chromedp.Run(b.Ctx, chromedp.Evaluate[[]overlay](readOverlays))
		if err != nil {
			t.Fatal(err)
		}
		withMap := 0
		for _, h := range hits {
			if h.Map != nil {
				withMap++
			}
		}
		if len(ovs) != withMap {
			t.Fatalf("%s: %d overlays for %d hits with maps", what, len(ovs), withMap)
		}
		for i, o := range ovs {
			h := hits[slices.IndexFunc(hits, func(h searchHit) bool { return h.ID == o.ID })]
			if o.W != h.Map.Cols || o.H != h.Map.Rows {
				t.Fatalf("%s: overlay %d is %dx%d, the map %d cols x %d rows", what, i, o.W, o.H, h.Map.Cols, h.Map.Rows)
			}
			if o.Visible == 0 {
				t.Fatalf("%s: overlay %d (%s) drew nothing", what, i, h.Path)
			}
		}
	}
	check("maps")
	screenshot(t, b, art, "maps.png")

	// Per-token maps: the option asks for them, the selector lists the
	// query's tokens, and choosing one redraws.
	hits = apiSearch(t, base, key, map[string]any{"query": q, "top_k": 10, "maps": true, "map_tokens": true})
	var tokens []string
	for _, tk := range hits[max(firstMap(hits), 0)].Map.Tokens {
		tokens = append(tokens, tk.Token)
	}
	if len(tokens) == 0 {
		t.Fatal("/v1/search with map_tokens sent no tokens")
	}
	err = chromedp.Do(b.Ctx,
		chromedp.Click(chromedp.CSS("#opts summary")),
		chromedp.Click(chromedp.CSS("#tokens")),
	)
	if err != nil {
		t.Fatal(err)
	}
	sameIDs(t, "per-token query", pageIDs(t, b), hitIDs(hits))
	got, err := chromedp.Run(b.Ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#token option")].slice(1).map((o) => JSON.parse(o.textContent.replace(/^#\d+ /, "")))`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, tokens) {
		t.Fatalf("token selector %q, /v1/search tokens %q", got, tokens)
	}
	if err := chromedp.Do(b.Ctx, chromedp.SetValue(chromedp.CSS("#token"), "0"), chromedp.Evaluate[chromedp.Void](`document.getElementById("token").dispatchEvent(new Event("change"))`)); err != nil {
		t.Fatal(err)
	}
	check("token 1")
	if u, err := chromedp.Run(b.Ctx, chromedp.Location()); err != nil || !strings.Contains(u, "tokens=1") {
		t.Fatalf("URL %s lacks the per-token option (%v)", u, err)
	}

	// The large view of the first hit with a map, and its map.
	first := fmt.Sprintf("#results > li:nth-child(%d) > button", firstMap(hits)+1)
	if err := chromedp.Do(b.Ctx, chromedp.Click(chromedp.CSS(first)), chromedp.WaitVisible(chromedp.CSS("#viewer canvas.map[data-drawn='1']"))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, b, art, "window-maps-large.png")
	if errs := b.Errors(); len(errs) > 0 {
		t.Fatalf("the page logged errors:\n%s", strings.Join(errs, "\n"))
	}
}

// firstMap is the index of the first hit with a similarity map, -1 for
// none (a text passage has none).
func firstMap(hits []searchHit) int {
	return slices.IndexFunc(hits, func(h searchHit) bool { return h.Map != nil })
}

// writeTestReranker writes the tiny synthetic Qwen3-VL reranker and its
// vision tower into dir.
func writeTestReranker(t *testing.T, dir string) (lm, mmproj string) {
	t.Helper()
	cfg, err := synth.Preset("tiny-qwen3vl")
	if err != nil {
		t.Fatal(err)
	}
	cfg.LM.Pooling, cfg.Name = "rank", cfg.Name+"-reranker"
	lm, mmproj, err = synth.WritePair(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return lm, mmproj
}
