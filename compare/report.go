package compare

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/vembed/vembed/internal/atomicfile"
)

// ImageResult is one image's comparison.
type ImageResult struct {
	Name     string
	Grid     [3]int // side A's patch grid
	Stages   []Stage
	Skipped  []string
	Heatmaps []HeatmapFile // in the order of the stages
}

// HeatmapFile is a heatmap PNG written into the report directory.
type HeatmapFile struct {
	Stage string
	File  string
}

// Report is a comparison of two sides over images.
type Report struct {
	A, B   string
	Images []ImageResult
	// Scale is, per stage drawn as heatmaps, the top of the colour scale
	// its maps share: the worst row distance over all images, so that the
	// maps of one stage compare across images.
	Scale map[string]float64
}

// Input is an image to compare.
type Input struct {
	Name string
	Data []byte
}

// heatmapStages are the stages with one row per place in the image.
var heatmapStages = []string{"patches", "vision output", "merger", "image hidden states"}

// Run traces every image on both sides, compares them and, when outDir is
// set, writes there a heatmap PNG per image and per stage laid out on the
// image (patches, vision output, merger, image hidden states), the
// figures as report.json and an index.html linking everything. An image
// the sides preprocess to different grids is compared on the stages
// whose shapes still agree (the embedding), the others listed as skipped.
func Run(ctx context.Context, a, b Source, images []Input, outDir string) (*Report, error) {
	rep := &Report{A: a.Name(), B: b.Name(), Scale: map[string]float64{}}
	traces := make([]*Trace, len(images))
	for i, im := range images {
		ta, err := a.Trace(ctx, i, im.Data)
		if err != nil {
			return nil, fmt.Errorf("compare: %s: %w", im.Name, err)
		}
		tb, err := b.Trace(ctx, i, im.Data)
		if err != nil {
			return nil, fmt.Errorf("compare: %s: %w", im.Name, err)
		}
		res := ImageResult{Name: im.Name, Grid: ta.Grid}
		if ta.Grid != tb.Grid {
			res.Skipped = append(res.Skipped, fmt.Sprintf("the sides preprocess the image to different grids (t, h, w = %v and %v)", ta.Grid, tb.Grid))
		}
		stages, skipped := Stages(ta, tb)
		res.Stages, res.Skipped = stages, append(res.Skipped, skipped...)
		for _, s := range stages {
			if slices.Contains(heatmapStages, s.Name) {
				rep.Scale[s.Name] = max(rep.Scale[s.Name], s.Worst)
			}
		}
		traces[i] = &Trace{Grid: ta.Grid, Merge: ta.Merge} // all the heatmaps need of it
		rep.Images = append(rep.Images, res)
	}
	if outDir == "" {
		return rep, nil
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	for i := range rep.Images {
		res := &rep.Images[i]
		for _, s := range res.Stages {
			if !slices.Contains(heatmapStages, s.Name) {
				continue
			}
			grid, gh, gw := PatchGrid(traces[i], s.Distance)
			if grid == nil {
				res.Skipped = append(res.Skipped, fmt.Sprintf("%s: %d rows do not tile the %dx%d grid", s.Name, s.Rows, res.Grid[1], res.Grid[2]))
				continue
			}
			title := fmt.Sprintf("%s: %s, mean %.3g, worst %.3g", res.Name, s.Name, s.Mean, s.Worst)
			png, err := Heatmap(images[i].Data, grid, gh, gw, title, rep.Scale[s.Name])
			if err != nil {
				return nil, fmt.Errorf("compare: %s: %w", res.Name, err)
			}
			file := fmt.Sprintf("%03d-%s.png", i, strings.ReplaceAll(s.Name, " ", "-"))
			if err := atomicfile.WriteFile(filepath.Join(outDir, file), png); err != nil {
				return nil, fmt.Errorf("compare: %w", err)
			}
			res.Heatmaps = append(res.Heatmaps, HeatmapFile{s.Name, file})
		}
	}
	if err := atomicfile.Write(filepath.Join(outDir, "report.json"), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}); err != nil {
		return nil, fmt.Errorf("compare: report.json: %w", err)
	}
	if err := rep.writeHTML(filepath.Join(outDir, "index.html")); err != nil {
		return nil, err
	}
	return rep, nil
}

// Summary is a stage's divergence across images, by image size (patches).
type Summary struct {
	Stage  string
	Points []SummaryPoint // by patches, ascending
}

// SummaryPoint is one image's figure for a stage.
type SummaryPoint struct {
	Image   string
	Patches int
	Mean    float64
	Worst   float64
}

// Summaries groups the per-image stage figures by stage, sorted by image
// size, to show whether larger images diverge more.
func (r *Report) Summaries() []Summary {
	by := map[string]*Summary{}
	var order []string
	for _, im := range r.Images {
		for _, s := range im.Stages {
			if by[s.Name] == nil {
				by[s.Name] = &Summary{Stage: s.Name}
				order = append(order, s.Name)
			}
			by[s.Name].Points = append(by[s.Name].Points, SummaryPoint{im.Name, im.Grid[0] * im.Grid[1] * im.Grid[2], s.Mean, s.Worst})
		}
	}
	out := make([]Summary, 0, len(order))
	for _, name := range order {
		s := by[name]
		sort.SliceStable(s.Points, func(i, j int) bool { return s.Points[i].Patches < s.Points[j].Patches })
		out = append(out, *s)
	}
	return out
}

// Chart draws the summary of a stage as an inline SVG: its mean and worst
// row distance against the image size in patches, one point per image.
func (s Summary) Chart() template.HTML {
	const w, h, left, bottom, pad = 360, 200, 64, 30, 12
	xmin, xmax, ymax := math.MaxInt, 0, 0.0
	for _, p := range s.Points {
		xmin, xmax = min(xmin, p.Patches), max(xmax, p.Patches)
		if !math.IsNaN(p.Worst) && !math.IsInf(p.Worst, 0) {
			ymax = max(ymax, p.Worst)
		}
	}
	if ymax == 0 {
		ymax = 1
	}
	// The x axis spans the image sizes given (one size: the middle).
	px := func(v int) float64 {
		if xmax <= xmin {
			return left + (w-left-pad)/2
		}
		// A product is converted before it is added to (float64(a*b) + c): that
		// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
		// every build computes the same bits (kernels.TestNoFusedMultiplyAdd).
		return left + 10 + float64(float64(v-xmin)/float64(xmax-xmin)*(w-left-pad-20))
	}
	py := func(v float64) float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			v = ymax
		}
		return h - bottom - float64(v/ymax*(h-bottom-pad))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="%s against image size">`, w, h, template.HTMLEscapeString(s.Stage))
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#444"/><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#444"/>`, left, h-bottom, w-pad, h-bottom, left, pad, left, h-bottom)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" text-anchor="end">%.3g</text><text x="%d" y="%d" font-size="11" text-anchor="end">0</text>`, left-4, pad+4, ymax, left-4, h-bottom)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" text-anchor="end">%d patches</text>`, w-pad, h-bottom+14, xmax)
	if xmin < xmax {
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11">%d</text>`, left, h-bottom+14, xmin)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" transform="rotate(-90 12 %d)">1 − cos</text>`, 12, (h-bottom)/2+20, (h-bottom)/2+20)
	var line []string
	for _, p := range s.Points {
		line = append(line, fmt.Sprintf("%.1f,%.1f", px(p.Patches), py(p.Mean)))
	}
	fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="#1f5fa8"/>`, strings.Join(line, " "))
	for _, p := range s.Points {
		name := template.HTMLEscapeString(p.Image)
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="#1f5fa8"><title>%s: mean %.4g</title></circle>`, px(p.Patches), py(p.Mean), name, p.Mean)
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="none" stroke="#c0392b"><title>%s: worst %.4g</title></circle>`, px(p.Patches), py(p.Worst), name, p.Worst)
	}
	fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="4" fill="#1f5fa8"/><text x="%d" y="%d" font-size="11">mean</text>`, left+10, h-8, left+18, h-4)
	fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="4" fill="none" stroke="#c0392b"/><text x="%d" y="%d" font-size="11">worst row</text>`, left+70, h-8, left+78, h-4)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"g": func(v float64) string { return fmt.Sprintf("%.4g", v) },
}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>vembed compare</title>
<style>body{font-family:sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;padding:3px 8px;text-align:right}th{background:#eee}td:first-child,th:first-child{text-align:left}img{max-width:100%;margin:4px 0}.charts{display:flex;flex-wrap:wrap;gap:1em}.charts div{border:1px solid #ddd;padding:4px}.maps{display:flex;flex-wrap:wrap;gap:8px;align-items:flex-start}.maps img{max-width:560px}</style>
</head><body>
<h1>Divergence of B from A</h1>
<p>A: <code>{{.A}}</code><br>B: <code>{{.B}}</code></p>
<p>Cosine distance (1 − cos) between the two sides' rows, stage by stage along the image path: the preprocessed patches, the vision tower's output, the merger's rows (the image's tokens for the language model), the language model's final hidden states at the image's tokens and at every token, and the pooled embedding. The heatmaps colour each patch (or merged 2×2 block) of the image by its distance; the maps of one stage share one scale across images. All figures: <a href="report.json">report.json</a>.</p>
<p>Images: {{range .Images}}<a href="#{{.Name}}">{{.Name}}</a> ({{index .Grid 1}}×{{index .Grid 2}}) {{end}}</p>
<h2>Summary by image size</h2>
<div class="charts">{{range .Summaries}}<div><b>{{.Stage}}</b><br>{{.Chart}}</div>{{end}}</div>
{{range .Summaries}}<h3>{{.Stage}}</h3>
<table><tr><th>image</th><th>patches</th><th>mean</th><th>worst</th></tr>
{{range .Points}}<tr><td><a href="#{{.Image}}">{{.Image}}</a></td><td>{{.Patches}}</td><td>{{g .Mean}}</td><td>{{g .Worst}}</td></tr>
{{end}}</table>
{{end}}
{{range .Images}}<h2 id="{{.Name}}">{{.Name}} ({{index .Grid 1}}×{{index .Grid 2}} patches)</h2>
<table><tr><th>stage</th><th>rows</th><th>mean distance</th><th>worst row</th><th>cosine (whole stage)</th></tr>
{{range .Stages}}<tr><td>{{.Name}}</td><td>{{.Rows}}</td><td>{{g .Mean}}</td><td>{{g .Worst}}</td><td>{{printf "%.8f" .Cosine}}</td></tr>
{{end}}</table>
{{range .Skipped}}<p>Not compared: {{.}}</p>{{end}}
<div class="maps">{{range .Heatmaps}}<a href="{{.File}}"><img src="{{.File}}" alt="{{.Stage}}"></a>{{end}}</div>
{{end}}
</body></html>
`))

func (r *Report) writeHTML(path string) error {
	if err := atomicfile.Write(path, func(w io.Writer) error { return page.Execute(w, r) }); err != nil {
		return fmt.Errorf("compare: report: %w", err)
	}
	return nil
}

// Heatmap returns the file of a stage's heatmap ("" when none was drawn).
func (r ImageResult) Heatmap(stage string) string {
	for _, h := range r.Heatmaps {
		if h.Stage == stage {
			return h.File
		}
	}
	return ""
}
