package compare

import (
	"context"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/vembed/vembed/internal/atomicfile"
)

// ImageResult is one image's comparison.
type ImageResult struct {
	Name     string
	Grid     [3]int
	Stages   []Stage
	Skipped  []string
	Heatmaps map[string]string // stage name -> PNG file in the report
}

// Report is a comparison of two sides over images.
type Report struct {
	A, B   string
	Images []ImageResult
}

// Input is an image to compare.
type Input struct {
	Name string
	Data []byte
}

// Run traces every image on both sides, compares them and, when outDir is
// set, writes one heatmap PNG per image and per-patch stage and an
// index.html linking everything.
func Run(ctx context.Context, a, b Source, images []Input, outDir string) (*Report, error) {
	rep := &Report{A: a.Name(), B: b.Name()}
	if outDir != "" {
		if err := os.MkdirAll(outDir, 0o755); err != nil {
			return nil, fmt.Errorf("compare: %w", err)
		}
	}
	for i, im := range images {
		ta, err := a.Trace(ctx, i, im.Data)
		if err != nil {
			return nil, fmt.Errorf("compare: %s: %w", im.Name, err)
		}
		tb, err := b.Trace(ctx, i, im.Data)
		if err != nil {
			return nil, fmt.Errorf("compare: %s: %w", im.Name, err)
		}
		if ta.Grid != tb.Grid {
			return nil, fmt.Errorf("compare: %s: the sides preprocess it to different grids (%v, %v)", im.Name, ta.Grid, tb.Grid)
		}
		res := ImageResult{Name: im.Name, Grid: ta.Grid, Heatmaps: map[string]string{}}
		res.Stages, res.Skipped = Stages(ta, tb)
		if outDir != "" {
			for _, s := range res.Stages {
				if s.Name == "hidden states" || s.Name == "embedding" || s.Name == "patches" {
					continue // not one row per place in the image
				}
				grid, gh, gw := PatchGrid(ta, s.Distance)
				if grid == nil {
					continue
				}
				title := fmt.Sprintf("%s: %s, mean %.3g, worst %.3g", im.Name, s.Name, s.Mean, s.Worst)
				png, err := Heatmap(im.Data, grid, gh, gw, title)
				if err != nil {
					return nil, err
				}
				file := fmt.Sprintf("%03d-%s.png", i, strings.ReplaceAll(s.Name, " ", "-"))
				if err := atomicfile.WriteFile(filepath.Join(outDir, file), png); err != nil {
					return nil, fmt.Errorf("compare: %w", err)
				}
				res.Heatmaps[s.Name] = file
			}
		}
		rep.Images = append(rep.Images, res)
	}
	if outDir != "" {
		if err := rep.writeHTML(filepath.Join(outDir, "index.html")); err != nil {
			return nil, err
		}
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

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"g": func(v float64) string { return fmt.Sprintf("%.4g", v) },
}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>vembed compare</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;padding:3px 8px;text-align:right}th{background:#eee}td:first-child,th:first-child{text-align:left}img{max-width:100%;margin:4px 0}</style>
</head><body>
<h1>Divergence of {{.B}} from {{.A}}</h1>
<p>Cosine distance (1 − cos) between the two sides' rows, per stage. The heatmaps colour each patch (or merged block) of the image by its distance, on a scale from 0 to the map's largest value.</p>
<h2>Summary by image size</h2>
{{range .Summaries}}<h3>{{.Stage}}</h3>
<table><tr><th>image</th><th>patches</th><th>mean</th><th>worst</th></tr>
{{range .Points}}<tr><td>{{.Image}}</td><td>{{.Patches}}</td><td>{{g .Mean}}</td><td>{{g .Worst}}</td></tr>
{{end}}</table>
{{end}}
{{range .Images}}<h2 id="{{.Name}}">{{.Name}} ({{index .Grid 1}}×{{index .Grid 2}} patches)</h2>
<table><tr><th>stage</th><th>rows</th><th>mean distance</th><th>worst row</th><th>cosine (whole stage)</th></tr>
{{range .Stages}}<tr><td>{{.Name}}</td><td>{{.Rows}}</td><td>{{g .Mean}}</td><td>{{g .Worst}}</td><td>{{printf "%.8f" .Cosine}}</td></tr>
{{end}}</table>
{{range .Skipped}}<p>Not compared: {{.}}</p>{{end}}
{{range $stage, $file := .Heatmaps}}<p><a href="{{$file}}"><img src="{{$file}}" alt="{{$stage}}"></a></p>{{end}}
{{end}}
</body></html>
`))

func (r *Report) writeHTML(path string) error {
	if err := atomicfile.Write(path, func(w io.Writer) error { return page.Execute(w, r) }); err != nil {
		return fmt.Errorf("compare: report: %w", err)
	}
	return nil
}
