package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/imageproc"
	"github.com/vembed/vembed/internal/fixtures"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/model/heads"
	"github.com/vembed/vembed/model/qwen3vl"
	"github.com/vembed/vembed/qwenlayout"
	"github.com/vembed/vembed/recipe"
	"github.com/vembed/vembed/safetensors"
	"github.com/vembed/vembed/server"
	"github.com/vembed/vembed/synth"
)

// mvCase is one case of the qwen3vl-mv fixtures.
type mvCase struct {
	ID        string       `json:"id"`
	Model     string       `json:"model"`
	Kind      string       `json:"kind"`
	InputText string       `json:"input_text"`
	IDs       []int32      `json:"token_ids"`
	Multi     fixtures.Raw `json:"multivector"`
	MinPixels int          `json:"min_pixels"`
	MaxPixels int          `json:"max_pixels"`
	Images    []struct {
		File      string       `json:"file"`
		ResizedHW [2]int       `json:"resized_hw"`
		GridTHW   [3]int       `json:"grid_thw"`
		Head      fixtures.Raw `json:"patches_head"`
		SHA       string       `json:"resized_rgb_sha256"`
	} `json:"images"`
	// Alternatives are nemotron's rows in the wrong modes (causal,
	// final_norm, causal_final_norm).
	Alternatives map[string]fixtures.Raw `json:"alternatives"`
	dir          string
}

// mvCheckpoints are the fixtures' checkpoint folders by model.
var mvCheckpoints = map[string]string{
	"tomoro":   "tomoro-colqwen3-embed-mini",
	"ops":      "Ops-Colqwen3-mini",
	"nemotron": "nemotron-colembed-vl-mini-v2",
}

// copyCheckpoint copies a fixture checkpoint into a temporary directory,
// dereferencing the tokenizer.json links the fixtures keep (stored as a
// file holding the relative path when the copy did not preserve links).
func copyCheckpoint(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "tokenizer.json" && len(b) < 256 && bytes.HasPrefix(b, []byte("../")) {
			if b, err = os.ReadFile(filepath.Join(src, strings.TrimSpace(string(b)))); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// convertMV converts a checkpoint with vembed convert and returns the
// files it printed (LM first, mmproj last, the mvproj between).
func convertMV(t *testing.T, ck string, extra ...string) []string {
	t.Helper()
	var o, e bytes.Buffer
	args := append([]string{"convert", ck, "--out", filepath.Join(t.TempDir(), "out")}, extra...)
	if code := run(args, &o, &e); code != 0 {
		t.Fatalf("convert %s: exit %d: %s", ck, code, e.String())
	}
	return strings.Fields(o.String())
}

func readMVCases(t *testing.T, dir string) []mvCase {
	var idx struct {
		Cases []struct{ ID string } `json:"cases"`
	}
	fixtures.ReadJSON(t, filepath.Join(dir, "index.json"), &idx)
	var cs []mvCase
	for _, c := range idx.Cases {
		k := mvCase{dir: filepath.Join(dir, "cases", c.ID)}
		fixtures.ReadJSON(t, filepath.Join(k.dir, "case.json"), &k)
		cs = append(cs, k)
	}
	if len(cs) != 13 {
		t.Fatalf("%d cases, want the fixtures' 13", len(cs))
	}
	return cs
}

// checkRows compares multi-vector rows with a case's golden (or another
// array of the same shape): the same row count and width, every row of
// unit length and at cosine >= 0.9999. It returns a description of the
// first failure, "" when they agree.
func checkRows(t *testing.T, c mvCase, want fixtures.Raw, rows [][]float32) (worst float64, fail string) {
	t.Helper()
	ref := fixtures.ReadF32(t, c.dir, want)
	n, d := want.Shape[0], want.Shape[1]
	if len(rows) != n {
		return 0, "row count " + itoa(len(rows)) + ", want " + itoa(n)
	}
	worst = 1
	for i, r := range rows {
		if len(r) != d {
			return 0, "row width " + itoa(len(r)) + ", want " + itoa(d)
		}
		var sq float64
		for _, x := range r {
			sq += float64(x) * float64(x)
		}
		if math.Abs(math.Sqrt(sq)-1) > 1e-5 {
			return 0, "row " + itoa(i) + " is not of unit length"
		}
		cs := fixtures.Cosine(r, ref[i*d:(i+1)*d])
		if cs < 0.9999 {
			return cs, "row " + itoa(i) + " cosine below 0.9999"
		}
		worst = min(worst, cs)
	}
	return worst, ""
}

func itoa(n int) string { return strconv.Itoa(n) }

// readDump reads a tensor written by vembed embed --dump.
func readDump(t *testing.T, dir, name string) []float32 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name+".f32"))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// TestQwen3MultiVectorFixtures converts the three qwen3vl-mv checkpoints
// (ColQwen3 under vlm.model., Ops-ColQwen3 bare with its sliced head,
// nemotron bidirectional without the final norm) with vembed convert and
// runs every case through vembed embed --multivector and /v1/embeddings:
// token ids exact, resized images exact (size and pixels' SHA-256),
// patches within 1e-5, and every multi-vector row of unit length at
// cosine >= 0.9999 to the float64 reference.
func TestQwen3MultiVectorFixtures(t *testing.T) {
	dir := fixtures.Dir(t, "qwen3vl-mv")
	files := map[string][]string{}
	for m, ck := range mvCheckpoints {
		files[m] = convertMV(t, copyCheckpoint(t, filepath.Join(dir, ck)), "--type", "F32", "--mmproj-type", "F32")
		if want := map[bool]int{true: 3, false: 2}[m != "nemotron"]; len(files[m]) != want {
			t.Fatalf("%s: convert wrote %v", m, files[m])
		}
	}
	cases := readMVCases(t, dir)
	args := func(m string) []string {
		fs := files[m]
		a := []string{"--model", fs[0], "--mmproj", fs[len(fs)-1]}
		if len(fs) == 3 {
			a = append(a, "--mvproj", fs[1])
		}
		return a
	}
	for _, c := range cases {
		dump := t.TempDir()
		a := append([]string{"embed", "--json", "--multivector", "--dump", dump}, args(c.Model)...)
		if c.Kind == "query" {
			a = append(a, "--text", c.InputText)
		} else {
			a = append(a, "--image", filepath.Join(c.dir, c.Images[0].File))
		}
		var o, e bytes.Buffer
		if code := run(a, &o, &e); code != 0 {
			t.Fatalf("%s: embed: exit %d: %s", c.ID, code, e.String())
		}
		var out struct {
			Embeddings [][][]float32 `json:"embeddings"`
		}
		if err := json.Unmarshal(o.Bytes(), &out); err != nil || len(out.Embeddings) != 1 {
			t.Fatalf("%s: embed printed %.300s", c.ID, o.String())
		}
		ids := readDump(t, dump, "input0.token_ids")
		got := make([]int32, len(ids))
		for i, v := range ids {
			got[i] = int32(v)
		}
		if !slices.Equal(got, c.IDs) {
			t.Errorf("%s: token ids %v\nwant %v", c.ID, got, c.IDs)
		}
		if c.Kind == "image" {
			im := c.Images[0]
			grid := readDump(t, dump, "input0.image0.grid")
			if int(grid[1]) != im.GridTHW[1] || int(grid[2]) != im.GridTHW[2] {
				t.Errorf("%s: grid %v, want %v", c.ID, grid, im.GridTHW)
			}
			patches := readDump(t, dump, "input0.image0.patches")
			head := fixtures.ReadF32(t, c.dir, im.Head)
			for i, v := range head {
				if math.Abs(float64(patches[i]-v)) > 1e-5 {
					t.Fatalf("%s: patch value %d is %v, want %v", c.ID, i, patches[i], v)
				}
			}
		}
		worst, fail := checkRows(t, c, c.Multi, out.Embeddings[0])
		if fail != "" {
			t.Fatalf("vembed embed %s: %s", c.ID, fail)
		}
		t.Logf("vembed embed %s: %d rows, worst cosine 1 - %.1e", c.ID, len(out.Embeddings[0]), 1-worst)
	}

	// Resized pixels, exactly, with each converted model's own budget.
	for _, c := range cases {
		if c.Kind != "image" {
			continue
		}
		fs := files[c.Model]
		m, err := qwen3vl.Load(fs[0], fs[len(fs)-1])
		if err != nil {
			t.Fatal(err)
		}
		f, err := gguf.Open(fs[0])
		if err != nil {
			t.Fatal(err)
		}
		r, err := recipe.Select(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		cfg := r.Image(m.Info())
		m.Close()
		if cfg.MinPixels != c.MinPixels || cfg.MaxPixels != c.MaxPixels {
			t.Errorf("%s: budget %d..%d, want %d..%d", c.ID, cfg.MinPixels, cfg.MaxPixels, c.MinPixels, c.MaxPixels)
		}
		im := c.Images[0]
		data, err := os.ReadFile(filepath.Join(c.dir, im.File))
		if err != nil {
			t.Fatal(err)
		}
		img, err := imageproc.Decode(data, imageproc.DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, h, err := cfg.TargetSize(img.Width, img.Height)
		if err != nil || h != im.ResizedHW[0] || w != im.ResizedHW[1] {
			t.Fatalf("%s: resized to %dx%d (%v), want %v", c.ID, h, w, err, im.ResizedHW)
		}
		rgb := img.Pix
		if w != img.Width || h != img.Height {
			rgb = imageproc.ResizeBicubic(img, w, h).Pix
		}
		if sum := sha256.Sum256(rgb); hex.EncodeToString(sum[:]) != im.SHA {
			t.Errorf("%s: resized pixels differ from the reference's", c.ID)
		}
	}

	// The same through the server.
	for m, fs := range files {
		srv := serveConverted(t, fs)
		for _, c := range cases {
			if c.Model != m {
				continue
			}
			var item any = c.InputText
			if c.Kind == "image" {
				b, err := os.ReadFile(filepath.Join(c.dir, c.Images[0].File))
				if err != nil {
					t.Fatal(err)
				}
				item = map[string]string{"image": "data:image/png;base64," + base64.StdEncoding.EncodeToString(b)}
			}
			status, raw := postRaw(t, srv.URL+"/v1/embeddings", map[string]any{"input": []any{item}, "return_multivector": true})
			var r struct {
				Data []struct {
					Embeddings [][]float32 `json:"embeddings"`
				} `json:"data"`
			}
			if status != 200 || json.Unmarshal(raw, &r) != nil || len(r.Data) != 1 {
				t.Fatalf("%s: /v1/embeddings: %d %.300s", c.ID, status, raw)
			}
			if _, fail := checkRows(t, c, c.Multi, r.Data[0].Embeddings); fail != "" {
				t.Errorf("/v1/embeddings %s: %s", c.ID, fail)
			}
		}
	}
}

// rewriteKeys copies a GGUF with some metadata keys set (added when
// absent).
func rewriteKeys(t *testing.T, src, dst string, set map[string]any) {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := gguf.NewWriter()
	done := map[string]bool{}
	for _, p := range f.KVs {
		v := p.Value.Interface()
		if s, ok := set[p.Key]; ok {
			v, done[p.Key] = s, true
		}
		w.Add(p.Key, v)
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if !done[k] {
			w.Add(k, set[k])
		}
	}
	for _, tn := range f.Tensors {
		if err := w.AddTensor(tn.Name, tn.Type, tn.Dims, tn.Data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteFile(dst); err != nil {
		t.Fatal(err)
	}
}

// TestNemotronModesToldApart runs the converted nemotron checkpoint with
// its decoder mode switched (causal, final norm applied, both) on every
// nemotron case: the fixture comparison of TestQwen3MultiVectorFixtures
// fails for each wrong mode, and each mode matches the reference's rows
// for that mode, so the comparison tells the modes apart and the switches
// are what they say. The engine refuses such a file for the nemotron
// recipe.
func TestNemotronModesToldApart(t *testing.T) {
	dir := fixtures.Dir(t, "qwen3vl-mv")
	fs := convertMV(t, copyCheckpoint(t, filepath.Join(dir, mvCheckpoints["nemotron"])), "--type", "F32", "--mmproj-type", "F32")
	lm, mm := fs[0], fs[len(fs)-1]
	var cases []mvCase
	for _, c := range readMVCases(t, dir) {
		if c.Model == "nemotron" {
			cases = append(cases, c)
		}
	}
	f, err := gguf.Open(lm)
	if err != nil {
		t.Fatal(err)
	}
	r, err := recipe.Select(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []struct {
		alt            string // "" for the model's own mode
		causal, normed bool
	}{{"", false, false}, {"causal", true, false}, {"final_norm", false, true}, {"causal_final_norm", true, true}} {
		path := filepath.Join(t.TempDir(), "lm.gguf")
		rewriteKeys(t, lm, path, map[string]any{"vembed.attention.causal": mode.causal, "vembed.output_norm": mode.normed})
		if mode.alt != "" {
			if _, err := engine.New(engine.Config{Model: path, MMProj: mm}); err == nil || !strings.Contains(err.Error(), "bidirectional") {
				t.Errorf("%s: the engine took a nemotron file run %s: %v", mode.alt, mode.alt, err)
			}
		}
		m, err := qwen3vl.Load(path, mm)
		if err != nil {
			t.Fatal(err)
		}
		cfg := r.Image(m.Info())
		for _, c := range cases {
			seq := model.Sequence{IDs: c.IDs}
			if c.Kind == "image" {
				data, err := os.ReadFile(filepath.Join(c.dir, c.Images[0].File))
				if err != nil {
					t.Fatal(err)
				}
				p, err := imageproc.Preprocess(data, cfg, imageproc.DecodeOptions{})
				if err != nil {
					t.Fatal(err)
				}
				pass, err := m.NewVisionPass([]model.ImageInput{{Patches: p.Data, GridT: p.GridT, GridH: p.GridH, GridW: p.GridW}}, false)
				if err != nil {
					t.Fatal(err)
				}
				if err := pass.Step(pass.Stages()); err != nil {
					t.Fatal(err)
				}
				enc := pass.Result()[0]
				seq.Images = []model.ImageEmbedding{{Rows: enc.Rows, Deep: enc.Deep, First: slices.Index(c.IDs, 151655), GridT: p.GridT, GridH: p.GridH, GridW: p.GridW}}
			}
			hidden, err := m.Forward(seq)
			if err != nil {
				t.Fatal(err)
			}
			rows := heads.HiddenRows(m.Info().Hidden).Project(hidden, len(c.IDs))
			_, fail := checkRows(t, c, c.Multi, rows)
			switch {
			case mode.alt == "" && fail != "":
				t.Errorf("%s, bidirectional without the norm: %s", c.ID, fail)
			case mode.alt != "" && fail == "":
				t.Errorf("%s run %s passes the comparison with the reference", c.ID, mode.alt)
			case mode.alt != "":
				if _, fail := checkRows(t, c, c.Alternatives[mode.alt], rows); fail != "" {
					t.Errorf("%s run %s: against the reference's %s rows: %s", c.ID, mode.alt, mode.alt, fail)
				}
			}
		}
		m.Close()
	}
}

// rewriteCheckpoint rewrites the safetensors of a checkpoint copy as one
// model.safetensors after edit (which may rename, reshape or drop a
// tensor by returning keep false), removing the shards and their index.
func rewriteCheckpoint(t *testing.T, dir string, edit func(d *safetensors.Data) (keep bool)) {
	t.Helper()
	ck, err := safetensors.OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []safetensors.Data
	for _, n := range ck.Names() {
		tn, f, _ := ck.Tensor(n)
		vals, err := f.Float64(n)
		if err != nil {
			t.Fatal(err)
		}
		d := safetensors.Data{Name: n, DType: safetensors.F32, Shape: slices.Clone(tn.Shape), Values: make([]float32, len(vals))}
		for i, v := range vals {
			d.Values[i] = float32(v)
		}
		if edit(&d) {
			out = append(out, d)
		}
	}
	ck.Close()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "model") {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	if err := safetensors.Write(filepath.Join(dir, "model.safetensors"), out, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
}

// TestQwen3MultiVectorBadInput: a head that does not fit the LM's width,
// tensors under a prefix the layout does not have, Ops' dims beyond its
// head, a retriever forced into another layout: each an error that says
// so, with nothing left in the output directory. A nemotron input over the
// engine's one-pass limit is a 400 that names the limit.
func TestQwen3MultiVectorBadInput(t *testing.T) {
	dir := fixtures.Dir(t, "qwen3vl-mv")
	tomoro := func(edit func(d *safetensors.Data) bool) string {
		ck := copyCheckpoint(t, filepath.Join(dir, mvCheckpoints["tomoro"]))
		rewriteCheckpoint(t, ck, edit)
		return ck
	}
	ops := copyCheckpoint(t, filepath.Join(dir, mvCheckpoints["ops"]))
	cfgPath := filepath.Join(ops, "config.json")
	b, _ := os.ReadFile(cfgPath)
	os.WriteFile(cfgPath, bytes.Replace(b, []byte(`"dims": 12`), []byte(`"dims": 20`), 1), 0o644)
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"head narrower than the LM", []string{tomoro(func(d *safetensors.Data) bool {
			if d.Name == "embedding_proj_layer.weight" {
				d.Shape, d.Values = []int64{16, 12}, d.Values[:16*12]
			}
			return true
		})}, []string{"embedding_proj_layer.weight", "does not fit the LM's width 16"}},
		{"head without its bias", []string{tomoro(func(d *safetensors.Data) bool { return d.Name != "embedding_proj_layer.bias" })}, []string{"embedding_proj_layer.bias is missing"}},
		{"unknown prefix", []string{tomoro(func(d *safetensors.Data) bool {
			d.Name = strings.Replace(d.Name, "vlm.model.visual.", "vlm.vision_tower.", 1)
			return true
		})}, []string{"under a prefix the colqwen3 layout does not have", "vlm.vision_tower."}},
		{"dims beyond the head", []string{ops}, []string{"dims 20 is beyond the head's 16 rows"}},
		{"a retriever forced into another layout", []string{copyCheckpoint(t, filepath.Join(dir, mvCheckpoints["nemotron"])), "--layout", "qwen3-vl"}, []string{"is a nemotron-colembed-vl checkpoint", "would convert it as another model"}},
	} {
		convertRefused(t, c.name, c.args, c.want)
	}

	fs := convertMV(t, copyCheckpoint(t, filepath.Join(dir, mvCheckpoints["nemotron"])))
	eng, err := engine.New(engine.Config{Model: fs[0], MMProj: fs[1], MaxBatchTokens: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	srv := serveEngine(t, eng)
	status, raw := postRaw(t, srv.URL+"/v1/embeddings", map[string]any{"input": []string{strings.Repeat("a long query ", 30)}, "return_multivector": true})
	if status != 400 || !strings.Contains(string(raw), "one pass, of at most 64 tokens") {
		t.Errorf("a nemotron input over the one-pass limit: %d %s", status, raw)
	}
}

// TestQwen3MultiVectorOtherShapes writes checkpoints of each retriever
// layout in shapes unlike the fixtures' (widths, layers, heads, a
// key_length that is not hidden/heads, DeepStack taps, position table,
// head widths; ColQwen3 with an untied vlm.lm_head; Ops with dims below
// its square head; sharded), converts them with vembed convert and embeds
// a query and a page with vembed embed --multivector: the shapes come from
// the files alone. The mvproj holds the head's first rows exactly, and
// nemotron's LM the decoder-mode keys.
func TestQwen3MultiVectorOtherShapes(t *testing.T) {
	img := filepath.Join(t.TempDir(), "page.png")
	writePNG(t, img, 200, 120, 4)
	for _, c := range []struct {
		layout string
		rows   int // row width of the multi-vector output
		untied bool
	}{
		{qwenlayout.LayoutColQwen3, 20, true},
		{qwenlayout.LayoutOpsColQwen3, 10, false},
		{qwenlayout.LayoutNemotronColEmbed, 48, false},
	} {
		t.Run(c.layout, func(t *testing.T) {
			cfg, err := synth.Preset("tiny-qwen3vl")
			if err != nil {
				t.Fatal(err)
			}
			cfg.LM.Hidden, cfg.LM.Layers, cfg.LM.Heads, cfg.LM.KVHeads, cfg.LM.FFN = 48, 4, 6, 3, 80
			cfg.LM.HeadDim = 24
			cfg.LM.MRoPE = [4]int32{4, 4, 4, 0}
			cfg.LM.Untied = c.untied
			cfg.LM.Pooling = ""
			cfg.Vision.Width, cfg.Vision.Blocks, cfg.Vision.Heads, cfg.Vision.FFN = 48, 5, 3, 96
			cfg.Vision.DeepStack = []int{1, 4}
			cfg.Vision.PositionSide = 20
			cfg.Vision.MinPixels, cfg.Vision.MaxPixels = 4096, 200704
			cfg.MVProj.OutputDim = c.rows
			ck := filepath.Join(t.TempDir(), "ck")
			if err := synth.WriteHF(ck, cfg, synth.HFOptions{Layout: c.layout, ShardBytes: 1 << 20}); err != nil {
				t.Fatal(err)
			}
			fs := convertMV(t, ck, "--type", "F32")
			f, err := gguf.Open(fs[0])
			if err != nil {
				t.Fatal(err)
			}
			name, _ := f.String(recipe.Key)
			causal, cerr := f.Bool(model.KeyCausal)
			if f.Tensor("output.weight") != nil {
				t.Error("the LM keeps an output head the retriever never uses")
			}
			f.Close()
			if name != c.layout || (c.layout == qwenlayout.LayoutNemotronColEmbed) != (cerr == nil && !causal) {
				t.Errorf("LM recipe %q, causal %v (%v)", name, causal, cerr)
			}
			if len(fs) == 3 { // the head's first rows, exactly
				mv, err := gguf.Open(fs[1])
				if err != nil {
					t.Fatal(err)
				}
				w, _ := mv.Tensor("mvproj.weight").Float32s()
				mv.Close()
				sc, err := safetensors.OpenCheckpoint(ck)
				if err != nil {
					t.Fatal(err)
				}
				head := map[string]string{qwenlayout.LayoutColQwen3: "embedding_proj_layer.weight", qwenlayout.LayoutOpsColQwen3: "custom_text_proj.weight"}[c.layout]
				tn, sf, _ := sc.Tensor(head)
				want, _ := sf.Float64Range(head, 0, int64(c.rows*48))
				sc.Close()
				if len(w) != c.rows*48 || tn.Shape[1] != 48 {
					t.Fatalf("mvproj.weight has %d values, head %v", len(w), tn.Shape)
				}
				for i := range w {
					if float64(w[i]) != want[i] {
						t.Fatalf("mvproj.weight value %d is %v, the head's %v", i, w[i], want[i])
					}
				}
			}
			a := []string{"embed", "--json", "--multivector", "--model", fs[0], "--mmproj", fs[len(fs)-1], "--text", "where is the total?", "--image", img}
			if len(fs) == 3 {
				a = append(a, "--mvproj", fs[1])
			}
			var o, e bytes.Buffer
			if code := run(a, &o, &e); code != 0 {
				t.Fatalf("embed: exit %d: %s", code, e.String())
			}
			var out struct {
				Embeddings [][][]float32 `json:"embeddings"`
				Tokens     []int         `json:"tokens"`
			}
			if err := json.Unmarshal(o.Bytes(), &out); err != nil || len(out.Embeddings) != 2 {
				t.Fatalf("embed printed %.300s", o.String())
			}
			for i, rows := range out.Embeddings {
				if len(rows) < 5 {
					t.Fatalf("input %d: %d rows", i, len(rows))
				}
				for _, r := range rows {
					var sq float64
					for _, x := range r {
						sq += float64(x) * float64(x)
					}
					if len(r) != c.rows || math.Abs(sq-1) > 1e-5 {
						t.Fatalf("input %d: a row of %d values, squared norm %v", i, len(r), sq)
					}
				}
			}
		})
	}
}

// postJSON posts body to url and decodes the answer into out, failing
// unless the status is 200.
func postJSON(t *testing.T, url string, body, out any) {
	t.Helper()
	status, raw := postRaw(t, url, body)
	if status != 200 || json.Unmarshal(raw, out) != nil {
		t.Fatalf("%s: %d %.300s", url, status, raw)
	}
}

// postRaw posts body as JSON to url and returns the status and the answer.
func postRaw(t *testing.T, url string, body any) (int, []byte) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, raw
}

// TestQwen3MultiVectorScoring serves the converted ColQwen3 and nemotron
// fixtures and checks what builds on their rows: /v1/rerank and /v1/score
// with "multivector" rank by the MaxSim of the rows /v1/embeddings gives
// (query task for the query, passage task for the documents), pool_factor
// pools a page's rows, and vembed eval --multivector runs on a dataset of
// rendered pages.
func TestQwen3MultiVectorScoring(t *testing.T) {
	dir := fixtures.Dir(t, "qwen3vl-mv")
	b, err := os.ReadFile(filepath.Join(dir, "images", "doc_384x256.png"))
	if err != nil {
		t.Fatal(err)
	}
	page := map[string]string{"image": "data:image/png;base64," + base64.StdEncoding.EncodeToString(b)}
	ds := filepath.Join(t.TempDir(), "ds")
	var o, e bytes.Buffer
	if code := run([]string{"synth", "--dataset", ds, "--docs", "4", "--queries", "3"}, &o, &e); code != 0 {
		t.Fatalf("synth --dataset: %s", e.String())
	}
	for _, m := range []string{"tomoro", "nemotron"} {
		fs := convertMV(t, copyCheckpoint(t, filepath.Join(dir, mvCheckpoints[m])))
		srv := serveConverted(t, fs)
		type rows struct {
			Data []struct {
				Embeddings [][]float32 `json:"embeddings"`
			} `json:"data"`
		}
		query, docs := "Which table lists quarterly revenue?", []any{page, "revenue by quarter", "a poem about the sea"}
		var q, d rows
		postJSON(t, srv.URL+"/v1/embeddings", map[string]any{"input": []any{query}, "task": "retrieval.query", "return_multivector": true}, &q)
		postJSON(t, srv.URL+"/v1/embeddings", map[string]any{"input": docs, "task": "retrieval.passage", "return_multivector": true}, &d)
		want := make([]float64, len(docs))
		for i := range docs {
			want[i] = server.MaxSim(q.Data[0].Embeddings, d.Data[i].Embeddings)
		}
		var rr struct {
			Results []struct {
				Index int     `json:"index"`
				Score float64 `json:"relevance_score"`
			} `json:"results"`
		}
		postJSON(t, srv.URL+"/v1/rerank", map[string]any{"query": query, "documents": docs, "multivector": true}, &rr)
		if len(rr.Results) != len(docs) {
			t.Fatalf("%s: rerank gave %d results", m, len(rr.Results))
		}
		for k, r := range rr.Results {
			if math.Abs(r.Score-want[r.Index]) > 1e-6*math.Abs(want[r.Index]) || k > 0 && r.Score > rr.Results[k-1].Score {
				t.Errorf("%s: rerank result %d: document %d scored %v, MaxSim of the rows %v", m, k, r.Index, r.Score, want[r.Index])
			}
		}
		var sc struct {
			Data []struct {
				Index int     `json:"index"`
				Score float64 `json:"score"`
			} `json:"data"`
		}
		postJSON(t, srv.URL+"/v1/score", map[string]any{"text_1": query, "text_2": docs[1:], "multivector": true}, &sc)
		for _, s := range sc.Data {
			if w := want[s.Index+1]; math.Abs(s.Score-w) > 1e-6*math.Abs(w) {
				t.Errorf("%s: score of document %d is %v, MaxSim of the rows %v", m, s.Index+1, s.Score, w)
			}
		}
		var pooled rows
		postJSON(t, srv.URL+"/v1/embeddings", map[string]any{"input": []any{page}, "return_multivector": true, "pool_factor": 2}, &pooled)
		n, full := len(pooled.Data[0].Embeddings), len(d.Data[0].Embeddings)
		if n != max(full/2, 1) {
			t.Errorf("%s: pool_factor 2 kept %d of %d rows", m, n, full)
		}

		a := []string{"eval", "--dataset", ds, "--multivector", "--json", "--cache-dir", "", "--model", fs[0], "--mmproj", fs[len(fs)-1]}
		if len(fs) == 3 {
			a = append(a, "--mvproj", fs[1])
		}
		o.Reset()
		e.Reset()
		if code := run(a, &o, &e); code != 0 || !strings.Contains(o.String(), "ndcg") {
			t.Errorf("%s: eval --multivector: exit %d: %.300s %.300s", m, code, o.String(), e.String())
		}
	}
}

// TestQwen3MultiVectorOtherNames converts the fixtures' ColQwen3 saved
// with the names its loader also accepts (model.* backbone, the head as
// custom_text_proj) and Ops-ColQwen3 with the optional "model." before
// every name: both give the reference's rows.
func TestQwen3MultiVectorOtherNames(t *testing.T) {
	dir := fixtures.Dir(t, "qwen3vl-mv")
	cases := readMVCases(t, dir)
	for m, rename := range map[string]func(string) string{
		"tomoro": func(n string) string {
			n = strings.Replace(n, "vlm.model.", "model.", 1)
			return strings.Replace(n, "embedding_proj_layer.", "custom_text_proj.", 1)
		},
		"ops": func(n string) string { return "model." + n },
	} {
		ck := copyCheckpoint(t, filepath.Join(dir, mvCheckpoints[m]))
		rewriteCheckpoint(t, ck, func(d *safetensors.Data) bool { d.Name = rename(d.Name); return true })
		fs := convertMV(t, ck, "--type", "F32", "--mmproj-type", "F32")
		if len(fs) != 3 {
			t.Fatalf("%s: convert wrote %v", m, fs)
		}
		for _, c := range cases {
			if c.Model != m || c.Kind != "query" {
				continue
			}
			var o, e bytes.Buffer
			if code := run([]string{"embed", "--json", "--multivector", "--model", fs[0], "--mmproj", fs[2], "--mvproj", fs[1], "--text", c.InputText}, &o, &e); code != 0 {
				t.Fatalf("%s: embed: %s", c.ID, e.String())
			}
			var out struct {
				Embeddings [][][]float32 `json:"embeddings"`
			}
			if err := json.Unmarshal(o.Bytes(), &out); err != nil || len(out.Embeddings) != 1 {
				t.Fatalf("%s: embed printed %.300s", c.ID, o.String())
			}
			if _, fail := checkRows(t, c, c.Multi, out.Embeddings[0]); fail != "" {
				t.Errorf("%s with other names: %s", c.ID, fail)
			}
		}
	}
}
