package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/internal/fixtures"
	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/quantize"
	"github.com/vembed/vembed/synth"
)

func open(t *testing.T, spec string) Source {
	t.Helper()
	s, err := Open(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func readImages(t *testing.T, dir string, names ...string) []Input {
	var ins []Input
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, Input{Name: n, Data: b})
	}
	return ins
}

// drawn returns a w×h PNG of gradients and a disc, the same for the same
// size.
func drawn(t *testing.T, w, h int) Input {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.RGBA{uint8(255 * x / w), uint8(255 * y / h), uint8(x * y % 256), 255}
			if (x-w/2)*(x-w/2)+(y-h/2)*(y-h/2) < h*h/9 {
				c = color.RGBA{240, 240, 40, 255}
			}
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return Input{Name: fmt.Sprintf("drawn_%dx%d.png", w, h), Data: b.Bytes()}
}

func demoSpec(t *testing.T) string {
	m, err := synth.WriteDemo(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return m.LM + "," + m.MMProj
}

// TestSelfCompareIsZero: a model compared with itself diverges nowhere, on
// any row of any stage, and the report, its figures and its heatmaps are
// written.
func TestSelfCompareIsZero(t *testing.T) {
	spec := demoSpec(t)
	out := t.TempDir()
	rep, err := Run(context.Background(), open(t, spec), open(t, spec), []Input{drawn(t, 112, 84), drawn(t, 60, 50)}, out)
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range rep.Images {
		if len(im.Stages) != 6 || len(im.Skipped) != 0 {
			t.Errorf("%s: %d stages (%v skipped)", im.Name, len(im.Stages), im.Skipped)
		}
		for _, s := range im.Stages {
			if s.Mean != 0 || s.Worst != 0 || s.Cosine != 1 {
				t.Errorf("%s %s: distance %v / %v comparing a model with itself", im.Name, s.Name, s.Mean, s.Worst)
			}
			for i, d := range s.Distance {
				if d != 0 {
					t.Errorf("%s %s row %d: %v", im.Name, s.Name, i, d)
				}
			}
		}
		if len(im.Heatmaps) != 4 {
			t.Errorf("%s: heatmaps %v", im.Name, im.Heatmaps)
		}
		for _, f := range im.Heatmaps {
			b, err := os.ReadFile(filepath.Join(out, f.File))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := png.Decode(bytes.NewReader(b)); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
	}
	html, err := os.ReadFile(filepath.Join(out, "index.html"))
	if err != nil || !strings.Contains(string(html), "drawn_112x84.png") || !strings.Contains(string(html), "000-merger.png") || !strings.Contains(string(html), "<svg") {
		t.Errorf("index.html: %v", err)
	}
	var back Report
	if b, err := os.ReadFile(filepath.Join(out, "report.json")); err != nil || json.Unmarshal(b, &back) != nil || len(back.Images) != 2 {
		t.Errorf("report.json: %v", err)
	}
}

// TestKernelTiers compares a model on the reference kernels (float64
// sums) with itself on the generic tier (float32): the tier switch takes
// effect for each side's calls (small non-zero distances from the vision
// output on) and is undone after them.
func TestKernelTiers(t *testing.T) {
	spec := demoSpec(t)
	before := kernels.Active()
	rep, err := Run(context.Background(), open(t, spec+"@reference"), open(t, spec+"@generic"), []Input{drawn(t, 112, 84)}, "")
	if err != nil {
		t.Fatal(err)
	}
	if kernels.Active() != before {
		t.Errorf("active tier %s after the comparison, was %s", kernels.Active(), before)
	}
	for _, s := range rep.Images[0].Stages {
		switch {
		case s.Name == "patches" && s.Worst != 0:
			t.Errorf("patches differ (%v): preprocessing runs no kernels", s.Worst)
		case s.Name != "patches" && (s.Worst == 0 || s.Worst > 1e-4):
			t.Errorf("%s: worst distance %v, want float32 rounding between tiers", s.Name, s.Worst)
		}
	}
	if _, err := Open(spec + "@nonsense"); err == nil || !strings.Contains(err.Error(), "nonsense") {
		t.Errorf("an unknown tier: %v", err)
	}
}

// TestF32VersusQ4K compares the fixture model with its Q4_K language model
// (vision unchanged): the vision stages agree exactly, the hidden states
// diverge, and every stage's figures equal cosines computed here from the
// two sides' traces.
func TestF32VersusQ4K(t *testing.T) {
	dir := fixtures.Dir(t, "model")
	lm, mm := filepath.Join(dir, "qwen25vl-tiny-sv-lm-F32.gguf"), filepath.Join(dir, "mmproj-qwen25vl-tiny-sv-F32.gguf")
	q4 := filepath.Join(t.TempDir(), "lm-Q4_K.gguf")
	spec, err := quantize.ParseSpec("Q4_K")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := quantize.File(context.Background(), lm, q4, quantize.Options{Spec: spec}); err != nil {
		t.Fatal(err)
	}
	a, b := open(t, lm+","+mm), open(t, q4+","+mm)
	img := readImages(t, filepath.Join(dir, "images"), "b_200x130.png")
	out := t.TempDir()
	rep, err := Run(context.Background(), a, b, img, out)
	if err != nil {
		t.Fatal(err)
	}
	ta, _ := a.Trace(context.Background(), 0, img[0].Data)
	tb, _ := b.Trace(context.Background(), 0, img[0].Data)
	byName := map[string]Stage{}
	for _, s := range rep.Images[0].Stages {
		byName[s.Name] = s
	}
	for _, name := range []string{"patches", "vision output", "merger"} {
		if s := byName[name]; s.Worst != 0 {
			t.Errorf("%s differs (%v) though the vision files are the same", name, s.Worst)
		}
	}
	check := func(name string, x, y Rows) {
		s := byName[name]
		var mean, worst, ab, aa, bb float64
		for i := range x.N() {
			xr, yr := x.Row(i), y.Row(i)
			var d, n1, n2 float64
			for k := range xr {
				d += float64(xr[k]) * float64(yr[k])
				n1 += float64(xr[k]) * float64(xr[k])
				n2 += float64(yr[k]) * float64(yr[k])
			}
			dist := 1 - d/math.Sqrt(n1*n2)
			mean += dist / float64(x.N())
			worst = math.Max(worst, dist)
			ab, aa, bb = ab+d, aa+n1, bb+n2
		}
		if math.Abs(s.Mean-mean) > 1e-12 || math.Abs(s.Worst-worst) > 1e-12 || math.Abs(s.Cosine-ab/math.Sqrt(aa*bb)) > 1e-12 {
			t.Errorf("%s: report %v/%v/%v, computed %v/%v/%v", name, s.Mean, s.Worst, s.Cosine, mean, worst, ab/math.Sqrt(aa*bb))
		}
		if s.Worst == 0 {
			t.Errorf("%s: no divergence between F32 and Q4_K", name)
		}
	}
	check("hidden states", ta.Hidden, tb.Hidden)
	check("image hidden states", ta.imageHidden(), tb.imageHidden())
	e := byName["embedding"]
	if c := Cosine(ta.Embedding, tb.Embedding); math.Abs(e.Cosine-c) > 1e-12 || c >= 1 || c < 0.9 {
		t.Errorf("embedding cosine %v, computed %v", e.Cosine, c)
	}
	// The image-token heatmap is not uniform: its cells differ.
	grid, gh, gw := PatchGrid(ta, byName["image hidden states"].Distance)
	lo, hi := math.Inf(1), 0.0
	for _, v := range grid {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if gh*gw != len(grid) || hi <= lo {
		t.Errorf("image hidden-state map %dx%d, values %v..%v", gh, gw, lo, hi)
	}
	f, _ := os.Open(filepath.Join(out, rep.Images[0].Heatmap("image hidden states")))
	defer f.Close()
	if im, _, err := image.Decode(f); err != nil || im.Bounds().Dx() < gw*8 {
		t.Errorf("heatmap: %v", err)
	}
}

// TestDumpSide: a dump directory (the documented format) is a side, equal
// to the model that wrote it.
func TestDumpSide(t *testing.T) {
	m, err := synth.WriteDemo(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	spec := m.LM + "," + m.MMProj
	src := open(t, spec)
	img := readImages(t, fixtures.Dir(t, "model/images"), "c_60x50.png")
	tr, err := src.Trace(context.Background(), 0, img[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	dump := t.TempDir()
	writeDump(t, dump, tr)
	rep, err := Run(context.Background(), src, open(t, dump), img, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Images[0].Stages {
		if s.Worst != 0 {
			t.Errorf("%s: %v against its own dump", s.Name, s.Worst)
		}
	}
	if _, err := Open(filepath.Join(dump, "nope")); err == nil {
		t.Error("a missing side opened")
	}
	os.WriteFile(filepath.Join(dump, "index.json"), []byte(`{"tensors":[{"name":"x","file":"../x","dtype":"float32","shape":[1]}]}`), 0o644)
	if _, err := Open(dump); err == nil {
		t.Error("a dump naming a file outside it opened")
	}
}

// writeDump writes a trace in the dump format as input 0.
func writeDump(t *testing.T, dir string, tr *Trace) {
	var entries []string
	put := func(name string, data []float32, shape ...int) {
		var b bytes.Buffer
		for _, v := range data {
			u := math.Float32bits(v)
			b.Write([]byte{byte(u), byte(u >> 8), byte(u >> 16), byte(u >> 24)})
		}
		file := name + ".f32"
		os.WriteFile(filepath.Join(dir, file), b.Bytes(), 0o644)
		sh := make([]string, len(shape))
		for i, s := range shape {
			sh[i] = itoa(s)
		}
		entries = append(entries, `{"name":"`+name+`","file":"`+file+`","dtype":"float32","shape":[`+strings.Join(sh, ",")+`]}`)
	}
	put("input0.image0.grid", []float32{float32(tr.Grid[0]), float32(tr.Grid[1]), float32(tr.Grid[2])}, 3)
	put("input0.image0.patches", tr.Patches.Data, tr.Patches.N(), tr.Patches.Cols)
	put("input0.image0.vit_out", tr.VitOut.Data, tr.VitOut.N(), tr.VitOut.Cols)
	put("input0.image0.merger_out", tr.Merger.Data, tr.Merger.N(), tr.Merger.Cols)
	put("input0.hidden_states", tr.Hidden.Data, tr.Hidden.N(), tr.Hidden.Cols)
	put("input0.image0.span", []float32{float32(tr.Span[0]), float32(tr.Span[1])}, 2)
	put("input0.embedding", tr.Embedding, len(tr.Embedding))
	os.WriteFile(filepath.Join(dir, "index.json"), []byte(`{"tensors":[`+strings.Join(entries, ",")+`]}`), 0o644)
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func FuzzOpenDump(f *testing.F) {
	f.Add([]byte(`{"tensors":[{"name":"input0.image0.grid","file":"g.f32","dtype":"float32","shape":[3]}]}`), []byte{0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64})
	f.Add([]byte(`{"tensors":[{"name":"x","file":"g.f32","dtype":"float32","shape":[1000000000,1000]}]}`), []byte{1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, index, data []byte) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "index.json"), index, 0o644)
		os.WriteFile(filepath.Join(dir, "g.f32"), data, 0o644)
		if s, err := Open(dir); err == nil {
			s.Trace(context.Background(), 0, nil) // an error or a trace, never a panic
		}
	})
}
