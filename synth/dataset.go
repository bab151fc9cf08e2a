package synth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/parquet-go/parquet-go"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"github.com/vembed/vembed/internal/atomicfile"
)

// DatasetOptions size a synthetic retrieval dataset.
type DatasetOptions struct {
	Docs    int    // pages in the corpus (default 12)
	Queries int    // queries, each about one page (default 8, at most Docs)
	Seed    uint64 // the same seed writes the same files
}

var topics = []string{
	"quarterly revenue", "river flood levels", "vaccine schedule", "railway timetable", "solar panel output",
	"coffee export prices", "bridge load tests", "library opening hours", "wind turbine faults", "school lunch menu",
	"hospital bed capacity", "wheat harvest yield", "airport delays", "museum visitor counts", "battery recycling rates",
	"ocean temperature", "bicycle lane usage", "cloud storage costs", "earthquake drills", "city noise levels",
}

var lineWords = []string{"total", "increase", "region", "week", "average", "north", "south", "target", "report",
	"figure", "table", "summary", "change", "estimate", "forecast", "record", "level", "share", "index", "rate"}

// datasetPage is one rendered page of the synthetic corpus.
type datasetPage struct {
	id, title, file string
	lines           []string
	image           []byte // PNG or JPEG, as file names
}

// WriteDataset writes a small retrieval dataset of rendered page images
// and questions about them into dir, in every layout `vembed eval` reads,
// all deterministic from o.Seed:
//
//   - BEIR in JSONL: corpus.jsonl ({"_id", "image"} with the page as a
//     path under images/; every third page a JPEG, the others PNG),
//     queries.jsonl ({"_id", "text"}) and qrels/test.tsv, where a query's
//     own page has grade 2 and the page on the next topic grade 1;
//   - the same in Parquet, as ViDoRe v2/v3 publish it: parquet/
//     corpus.parquet (corpus-id, image {bytes, path}), queries.parquet
//     (query-id, query) and qrels/test.parquet (query-id, corpus-id,
//     score);
//   - a ViDoRe v1 table, vidore/test.parquet: one row per page with query
//     (null on pages nobody asks about), image {bytes, path} and
//     image_filename.
//
// Pages show a coloured title band and lines of words and figures drawn
// in a bitmap font; a question names its page's topic and first word.
func WriteDataset(dir string, o DatasetOptions) error {
	if o.Docs <= 0 {
		o.Docs = 12
	}
	if o.Queries <= 0 {
		o.Queries = min(8, o.Docs)
	}
	if o.Queries > o.Docs || o.Docs > 10000 {
		return fmt.Errorf("synth: dataset: %d queries over %d pages (at most one query per page, 10000 pages)", o.Queries, o.Docs)
	}
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x5eed))
	pages := make([]datasetPage, o.Docs)
	for i := range pages {
		p := &pages[i]
		p.id = fmt.Sprintf("page%04d", i)
		p.title = fmt.Sprintf("%s %d", topics[i%len(topics)], 2020+i/len(topics))
		for range 6 + rng.IntN(6) {
			var w []string
			for range 3 + rng.IntN(3) {
				w = append(w, lineWords[rng.IntN(len(lineWords))])
			}
			p.lines = append(p.lines, fmt.Sprintf("%s %d.%d", strings.Join(w, " "), rng.IntN(1000), rng.IntN(10)))
		}
		p.file = p.id + ".png"
		if i%3 == 2 {
			p.file = p.id + ".jpg"
		}
		var err error
		if p.image, err = renderPage(p.title, p.lines, rng, strings.HasSuffix(p.file, ".jpg")); err != nil {
			return err
		}
	}
	asked := rng.Perm(o.Docs)[:o.Queries]
	type query struct{ id, text string }
	var queries []query
	var qrels []datasetQrel
	question := map[int]string{}
	for qi, pi := range asked {
		q := query{fmt.Sprintf("q%03d", qi), fmt.Sprintf("what does the %s page say about %s", topics[pi%len(topics)], strings.Fields(pages[pi].lines[0])[0])}
		queries = append(queries, q)
		question[pi] = q.text
		qrels = append(qrels, datasetQrel{q.id, pages[pi].id, 2})
		if next := (pi + 1) % o.Docs; next != pi {
			qrels = append(qrels, datasetQrel{q.id, pages[next].id, 1})
		}
	}

	files := map[string][]byte{}
	var corpus, qs bytes.Buffer
	for _, p := range pages {
		files[filepath.Join("images", p.file)] = p.image
		line, _ := json.Marshal(map[string]any{"_id": p.id, "image": "images/" + p.file})
		corpus.Write(append(line, '\n'))
	}
	tsv := "query-id\tcorpus-id\tscore\n"
	for _, q := range queries {
		line, _ := json.Marshal(map[string]any{"_id": q.id, "text": q.text})
		qs.Write(append(line, '\n'))
	}
	for _, r := range qrels {
		tsv += fmt.Sprintf("%s\t%s\t%d\n", r.QueryID, r.CorpusID, r.Score)
	}
	files["corpus.jsonl"], files["queries.jsonl"], files[filepath.Join("qrels", "test.tsv")] = corpus.Bytes(), qs.Bytes(), []byte(tsv)

	var corpusRows []datasetDoc
	var queryRows []datasetQuery
	vidore := make([]vidoreRow, len(pages))
	for i, p := range pages {
		corpusRows = append(corpusRows, datasetDoc{p.id, &vidoreImage{Bytes: p.image, Path: p.file}})
		vidore[i] = vidoreRow{Image: &vidoreImage{Bytes: p.image, Path: p.file}, ImageFilename: p.file}
		if q, ok := question[i]; ok {
			vidore[i].Query = &q
		}
	}
	for _, q := range queries {
		queryRows = append(queryRows, datasetQuery{q.id, q.text})
	}
	var err error
	put := func(name string, encode func() ([]byte, error)) {
		if err == nil {
			files[name], err = encode()
		}
	}
	put(filepath.Join("parquet", "corpus.parquet"), func() ([]byte, error) { return parquetBytes(corpusRows) })
	put(filepath.Join("parquet", "queries.parquet"), func() ([]byte, error) { return parquetBytes(queryRows) })
	put(filepath.Join("parquet", "qrels", "test.parquet"), func() ([]byte, error) { return parquetBytes(qrels) })
	put(filepath.Join("vidore", "test.parquet"), func() ([]byte, error) { return parquetBytes(vidore) })
	if err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("synth: dataset: %w", err)
		}
		if err := atomicfile.WriteFile(path, files[name]); err != nil {
			return fmt.Errorf("synth: dataset: %w", err)
		}
	}
	return nil
}

// Rows of the Parquet layouts.
type (
	datasetDoc struct {
		CorpusID string       `parquet:"corpus-id"`
		Image    *vidoreImage `parquet:"image,optional"`
	}
	datasetQuery struct {
		QueryID string `parquet:"query-id"`
		Query   string `parquet:"query"`
	}
	datasetQrel struct {
		QueryID  string `parquet:"query-id"`
		CorpusID string `parquet:"corpus-id"`
		Score    int64  `parquet:"score"`
	}
	// vidoreRow is a row of ViDoRe v1's table layout.
	vidoreRow struct {
		Query         *string      `parquet:"query,optional"`
		Image         *vidoreImage `parquet:"image,optional"`
		ImageFilename string       `parquet:"image_filename"`
	}
	// vidoreImage is a Hugging Face datasets image.
	vidoreImage struct {
		Bytes []byte `parquet:"bytes"`
		Path  string `parquet:"path"`
	}
)

// parquetBytes encodes rows as a Parquet file.
func parquetBytes[T any](rows []T) ([]byte, error) {
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[T](&buf)
	if _, err := w.Write(rows); err != nil {
		return nil, fmt.Errorf("synth: dataset: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("synth: dataset: %w", err)
	}
	return buf.Bytes(), nil
}

// renderPage draws a page, a coloured title band and lines of text, as a
// PNG or a JPEG.
func renderPage(title string, lines []string, rng *rand.Rand, jpg bool) ([]byte, error) {
	const w, h = 400, 260
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	band := color.RGBA{uint8(60 + rng.IntN(150)), uint8(60 + rng.IntN(150)), uint8(60 + rng.IntN(150)), 255}
	draw.Draw(img, image.Rect(0, 0, w, 28), image.NewUniform(band), image.Point{}, draw.Src)
	d := font.Drawer{Dst: img, Src: image.White, Face: basicfont.Face7x13, Dot: fixed.P(8, 19)}
	d.DrawString(title)
	d.Src = image.Black
	for i, l := range lines {
		d.Dot = fixed.P(8, 48+18*i)
		d.DrawString(l)
	}
	var b bytes.Buffer
	encode := func() error { return png.Encode(&b, img) }
	if jpg {
		encode = func() error { return jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}) }
	}
	if err := encode(); err != nil {
		return nil, fmt.Errorf("synth: dataset: %w", err)
	}
	return b.Bytes(), nil
}
