package synth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
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
	id, title string
	lines     []string
	png       []byte
}

// WriteDataset writes a small retrieval dataset with rendered page images
// into dir, in both layouts `vembed eval` reads: BEIR (corpus.jsonl with
// the pages as base64 PNGs beside their title, queries.jsonl,
// qrels/test.tsv; a query's own page has grade 2, the page on the next
// topic grade 1) and a ViDoRe v1 table (vidore/test.parquet: query, image
// {bytes, path}, image_filename; one row per page, queries on their page).
// Pages show a title and lines of figures drawn in a bitmap font.
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
		var err error
		if p.png, err = renderPage(p.title, p.lines, rng); err != nil {
			return err
		}
	}
	queries := rng.Perm(o.Docs)[:o.Queries]
	if err := os.MkdirAll(filepath.Join(dir, "qrels"), 0o755); err != nil {
		return fmt.Errorf("synth: dataset: %w", err)
	}
	var corpus, qs bytes.Buffer
	for _, p := range pages {
		line, _ := json.Marshal(map[string]any{"_id": p.id, "title": p.title, "image": "data:image/png;base64," + base64.StdEncoding.EncodeToString(p.png)})
		corpus.Write(append(line, '\n'))
	}
	qrels := "query-id\tcorpus-id\tscore\n"
	question := make(map[int]string)
	for qi, pi := range queries {
		q := fmt.Sprintf("what does the %s page say about %s", topics[pi%len(topics)], strings.Fields(pages[pi].lines[0])[0])
		question[pi] = q
		id := fmt.Sprintf("q%03d", qi)
		line, _ := json.Marshal(map[string]any{"_id": id, "text": q})
		qs.Write(append(line, '\n'))
		qrels += fmt.Sprintf("%s\t%s\t2\n", id, pages[pi].id)
		if next := (pi + 1) % o.Docs; next != pi {
			qrels += fmt.Sprintf("%s\t%s\t1\n", id, pages[next].id)
		}
	}
	for name, data := range map[string][]byte{"corpus.jsonl": corpus.Bytes(), "queries.jsonl": qs.Bytes(), filepath.Join("qrels", "test.tsv"): []byte(qrels)} {
		if err := atomicfile.WriteFile(filepath.Join(dir, name), data); err != nil {
			return err
		}
	}
	return writeViDoRe(filepath.Join(dir, "vidore", "test.parquet"), pages, question)
}

// vidoreRow is a row of ViDoRe v1's table layout.
type vidoreRow struct {
	Query         *string      `parquet:"query,optional"`
	Image         *vidoreImage `parquet:"image,optional"`
	ImageFilename string       `parquet:"image_filename"`
}

type vidoreImage struct {
	Bytes []byte `parquet:"bytes"`
	Path  string `parquet:"path"`
}

func writeViDoRe(path string, pages []datasetPage, question map[int]string) error {
	rows := make([]vidoreRow, len(pages))
	for i, p := range pages {
		rows[i] = vidoreRow{Image: &vidoreImage{Bytes: p.png, Path: p.id + ".png"}, ImageFilename: p.id + ".png"}
		if q, ok := question[i]; ok {
			rows[i].Query = &q
		}
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[vidoreRow](&buf)
	if _, err := w.Write(rows); err != nil {
		return fmt.Errorf("synth: dataset: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("synth: dataset: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("synth: dataset: %w", err)
	}
	return atomicfile.WriteFile(path, buf.Bytes())
}

// renderPage draws a page: a coloured title band and lines of text.
func renderPage(title string, lines []string, rng *rand.Rand) ([]byte, error) {
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
	if err := png.Encode(&b, img); err != nil {
		return nil, fmt.Errorf("synth: dataset: %w", err)
	}
	return b.Bytes(), nil
}
