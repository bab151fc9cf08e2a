package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/internal/fixtures"
	"github.com/vembed/vembed/qwenlayout"
	"github.com/vembed/vembed/recipe"
	"github.com/vembed/vembed/safetensors"
	"github.com/vembed/vembed/server"
	"github.com/vembed/vembed/synth"
)

// q35Release is one synthetic Qwen3.5 retriever checkpoint: its layout,
// ColQwen3.5's head form, the head the mvproj must hold (its tensor and
// first rows), and the convert flags.
type q35Release struct {
	name      string
	layout    string
	headDims  []int
	mrl       bool
	head      string // checkpoint tensor prefix of the head the mvproj holds
	rows      int
	maxPixels int // the mmproj's image budget
	flags     []string
}

var q35Releases = []q35Release{
	{name: "colqwen3.5-dim", layout: qwenlayout.LayoutColQwen35, head: "custom_text_proj", rows: 32, maxPixels: 300 * 1024},
	{name: "colqwen3.5-mrl", layout: qwenlayout.LayoutColQwen35, headDims: []int{16, 32}, mrl: true, head: "custom_text_proj", rows: 16, maxPixels: 300 * 1024, flags: []string{"--head-dim", "16"}},
	{name: "colqwen3.5-heads", layout: qwenlayout.LayoutColQwen35, headDims: []int{16, 24, 48}, head: "custom_text_proj.d24", rows: 24, maxPixels: 300 * 1024, flags: []string{"--head-dim", "24"}},
	{name: "colvec1.1", layout: qwenlayout.LayoutColVec, head: "embedding_proj_layer", rows: 40, maxPixels: 1792 * 1024},
}

// writeQ35Release writes and converts a release's synthetic checkpoint
// (F32 throughout, a 300-token budget for ColQwen3.5's processor); it
// returns the checkpoint and the converted LM, mvproj and mmproj.
func writeQ35Release(t *testing.T, r q35Release) (ck string, files []string) {
	t.Helper()
	cfg, err := synth.Preset("tiny-qwen35")
	if err != nil {
		t.Fatal(err)
	}
	if r.layout == qwenlayout.LayoutColVec {
		cfg.MVProj.OutputDim = r.rows
	} else {
		cfg.Vision.MinPixels, cfg.Vision.MaxPixels = 65536, 300*1024
	}
	ck = filepath.Join(t.TempDir(), r.name)
	if err := synth.WriteHF(ck, cfg, synth.HFOptions{Layout: r.layout, DType: safetensors.F32, HeadDims: r.headDims, MRLPrefix: r.mrl}); err != nil {
		t.Fatal(err)
	}
	return ck, convertMV(t, ck, append([]string{"--type", "F32", "--mmproj-type", "F32"}, r.flags...)...)
}

// TestQwen35Convert converts a synthetic checkpoint of each Qwen3.5
// retriever form: the LM is a qwen35 file with the family's recipe,
// bidirectional full attention and no LM head; the mvproj holds the
// chosen head's rows exactly (ColQwen3.5's Matryoshka prefix, or its
// width's own Linear); the mmproj the family's image budget.
func TestQwen35Convert(t *testing.T) {
	for _, r := range q35Releases {
		t.Run(r.name, func(t *testing.T) {
			ck, fs := writeQ35Release(t, r)
			if len(fs) != 3 {
				t.Fatalf("convert wrote %v, want an LM, an mvproj and an mmproj", fs)
			}
			lm, err := gguf.Open(fs[0])
			if err != nil {
				t.Fatal(err)
			}
			arch, _ := lm.String("general.architecture")
			if pre, _ := lm.String("tokenizer.ggml.pre"); pre != "qwen35" {
				t.Errorf("LM pre-tokenizer %q, want qwen35 (the checkpoint's split pattern admits combining marks)", pre)
			}
			name, _ := lm.String(recipe.Key)
			causal, cerr := lm.Bool(qwenlayout.Qwen35CausalKey)
			wantRecipe := map[string]string{qwenlayout.LayoutColQwen35: recipe.ColQwen35Name, qwenlayout.LayoutColVec: recipe.ColVecName}[r.layout]
			if arch != "qwen35" || name != wantRecipe || cerr != nil || causal || lm.Tensor("output.weight") != nil {
				t.Errorf("LM: architecture %q, recipe %q, causal %v (%v), output.weight %v", arch, name, causal, cerr, lm.Tensor("output.weight") != nil)
			}
			lm.Close()
			mm, err := gguf.Open(fs[2])
			if err != nil {
				t.Fatal(err)
			}
			hi, _ := mm.Uint("clip.vision.image_max_pixels")
			mm.Close()
			if int(hi) != r.maxPixels {
				t.Errorf("mmproj budget %d pixels, want %d", hi, r.maxPixels)
			}
			mv, err := gguf.Open(fs[1])
			if err != nil {
				t.Fatal(err)
			}
			w, _ := mv.Tensor("mvproj.weight").Float32s()
			b, _ := mv.Tensor("mvproj.bias").Float32s()
			mv.Close()
			sc, err := safetensors.OpenCheckpoint(ck)
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			_, sf, ok := sc.Tensor(r.head + ".weight")
			if !ok {
				t.Fatalf("the checkpoint has no %s.weight", r.head)
			}
			wantW, _ := sf.Float64Range(r.head+".weight", 0, int64(r.rows*64))
			wantB, _ := sf.Float64Range(r.head+".bias", 0, int64(r.rows))
			if len(w) != r.rows*64 || len(b) != r.rows {
				t.Fatalf("mvproj of %d and %d values, want %d rows of 64", len(w), len(b), r.rows)
			}
			for i := range w {
				if float64(w[i]) != wantW[i] || i < len(b) && float64(b[i]) != wantB[i] {
					t.Fatalf("mvproj value %d differs from %s's", i, r.head)
				}
			}
		})
	}
}

// TestQwen35ConvertRefusals: what a Qwen3.5 checkpoint cannot be
// converted as, each refused with what to do.
func TestQwen35ConvertRefusals(t *testing.T) {
	cfg, err := synth.Preset("tiny-qwen35")
	if err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(t.TempDir(), "ck")
	if err := synth.WriteHF(ck, cfg, synth.HFOptions{Layout: qwenlayout.LayoutColQwen35, HeadDims: []int{16, 32}, MRLPrefix: true}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--head-dim", "24"}, "Matryoshka widths are [16 32]"},
		{[]string{"--layout", qwenlayout.LayoutColQwen3}, "is a Qwen3.5 checkpoint"},
		{[]string{"--layout", qwenlayout.LayoutColVec}, "is a colqwen3.5 checkpoint"},
		{[]string{"--query-template", "no placeholder"}, `"{query}" once`},
		{[]string{"--max-visual-tokens", "99999999"}, "--max-visual-tokens 99999999"},
		{[]string{"--recipe", "colqwen3"}, "has its own recipe"},
	} {
		var o, e bytes.Buffer
		if code := run(append([]string{"convert", ck, "--out", t.TempDir()}, c.args...), &o, &e); code == 0 || !strings.Contains(e.String(), c.want) {
			t.Errorf("convert %v: exit %d, %q; want an error saying %q", c.args, code, e.String(), c.want)
		}
	}
	// A tensor under no known prefix would be left behind.
	rewriteCheckpoint(t, ck, func(d *safetensors.Data) bool {
		if d.Name == "custom_text_proj.bias" {
			d.Name = "extra.custom_text_proj.bias"
		}
		return true
	})
	var o, e bytes.Buffer
	if code := run([]string{"convert", ck, "--out", t.TempDir()}, &o, &e); code == 0 || !strings.Contains(e.String(), "extra.custom_text_proj.bias") {
		t.Errorf("convert of a stray tensor: exit %d, %q", code, e.String())
	}
	// A stock Qwen3.5 base alone is no retriever: the error says to
	// convert its adapter.
	base := filepath.Join(t.TempDir(), "base")
	if err := synth.WriteHF(base, cfg, synth.HFOptions{Layout: qwenlayout.LayoutColQwen35, AdapterDir: filepath.Join(t.TempDir(), "ad")}); err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"convert", base, "--out", t.TempDir()}, &o, &e); code == 0 || !strings.Contains(e.String(), "convert the adapter's directory") {
		t.Errorf("convert of a bare Qwen3.5 base: exit %d, %q", code, e.String())
	}
	// A Qwen3-VL checkpoint is no Qwen3.5 retriever.
	q3, err := synth.Preset("tiny-qwen3vl")
	if err != nil {
		t.Fatal(err)
	}
	q3.LM.Pooling = ""
	ck3 := filepath.Join(t.TempDir(), "q3")
	if err := synth.WriteHF(ck3, q3, synth.HFOptions{Layout: qwenlayout.LayoutColQwen3}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--layout", qwenlayout.LayoutColQwen35}, {"--head-dim", "16"}} {
		if code := run(append([]string{"convert", ck3, "--out", t.TempDir()}, args...), &o, &e); code == 0 {
			t.Errorf("convert of a ColQwen3 checkpoint with %v succeeded", args)
		}
	}
}

// q35RefFrom reads a converted release's reference: the checkpoint's
// config.json and its decoder's weights, under whichever prefix the
// release uses.
func q35RefFrom(t *testing.T, ck string) (*q35Ref, *safetensors.Checkpoint) {
	t.Helper()
	sc, err := safetensors.OpenCheckpoint(ck)
	if err != nil {
		t.Fatal(err)
	}
	prefix := ""
	for _, n := range sc.Names() {
		if p, ok := strings.CutSuffix(n, "embed_tokens.weight"); ok {
			prefix = p
		}
	}
	read := func(name string) []float64 {
		_, f, ok := sc.Tensor(name)
		if !ok {
			t.Fatalf("the checkpoint has no %s", name)
		}
		v, err := f.Float64(name)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	return &q35Ref{c: readQ35Config(t, filepath.Join(ck, "config.json")), w: func(name string) []float64 { return read(prefix + name) }}, sc
}

// headRows applies a retriever's head (the first rows of tensor head, with
// its bias) to hidden states and L2-normalizes each row, the norm clamped
// at 1e-12 as the model clamps it.
func headRows(t *testing.T, sc *safetensors.Checkpoint, head string, rows int, hidden [][]float64) [][]float64 {
	t.Helper()
	H := len(hidden[0])
	_, f, _ := sc.Tensor(head + ".weight")
	w, err := f.Float64Range(head+".weight", 0, int64(rows*H))
	if err != nil {
		t.Fatal(err)
	}
	_, f, _ = sc.Tensor(head + ".bias")
	b, err := f.Float64Range(head+".bias", 0, int64(rows))
	if err != nil {
		t.Fatal(err)
	}
	return applyHead(w, b, hidden)
}

// applyHead is y = W·h + b, L2-normalized (the norm clamped at 1e-12), for
// every hidden state.
func applyHead(w, b []float64, hidden [][]float64) [][]float64 {
	out := make([][]float64, len(hidden))
	for i, h := range hidden {
		y := linear(w, h, len(b))
		var ss float64
		for j := range y {
			y[j] += b[j]
			ss += y[j] * y[j]
		}
		n := max(math.Sqrt(ss), 1e-12)
		for j := range y {
			y[j] /= n
		}
		out[i] = y
	}
	return out
}

// embedQ35 runs vembed embed --multivector on one input of a converted
// release and returns its rows and token ids.
func embedQ35(t *testing.T, fs []string, input ...string) ([][]float32, []int) {
	t.Helper()
	dump := t.TempDir()
	a := append([]string{"embed", "--json", "--multivector", "--dump", dump, "--model", fs[0], "--mvproj", fs[1], "--mmproj", fs[2]}, input...)
	var o, e bytes.Buffer
	if code := run(a, &o, &e); code != 0 {
		t.Fatalf("embed %v: exit %d: %s", input, code, e.String())
	}
	var out struct {
		Embeddings [][][]float32 `json:"embeddings"`
	}
	if err := json.Unmarshal(o.Bytes(), &out); err != nil || len(out.Embeddings) != 1 {
		t.Fatalf("embed printed %.300s", o.String())
	}
	var ids []int
	for _, v := range readDump(t, dump, "input0.token_ids") {
		ids = append(ids, int(v))
	}
	return out.Embeddings[0], ids
}

// TestQwen35RetrieverRows converts a synthetic checkpoint of each Qwen3.5
// retriever form and embeds a query with vembed embed --multivector: every
// row, one per prompt token, is within cosine 0.9999 of the float64
// reference's (the decoder run bidirectionally from the checkpoint's
// weights, then the chosen head, Matryoshka prefix or width's own Linear,
// and the L2). vembed serve's /v1/embeddings gives the same rows for the
// query and one unit row per token for a page; with --multivector-rows
// image a page keeps exactly its image tokens' rows.
func TestQwen35RetrieverRows(t *testing.T) {
	img := filepath.Join(t.TempDir(), "page.png")
	pngBytes := writePNG(t, img, 300, 260, 5)
	const query = "Which table lists the quarterly revenue?"
	for _, r := range q35Releases {
		t.Run(r.name, func(t *testing.T) {
			ck, fs := writeQ35Release(t, r)
			ref, sc := q35RefFrom(t, ck)
			defer sc.Close()
			rows, ids := embedQ35(t, fs, "--text", query)
			if len(rows) != len(ids) || len(ids) < 11 {
				t.Fatalf("%d rows for %d tokens", len(rows), len(ids))
			}
			want := headRows(t, sc, r.head, r.rows, ref.forward(ids, false))
			for i := range rows {
				if len(rows[i]) != r.rows {
					t.Fatalf("row %d has %d values, want %d", i, len(rows[i]), r.rows)
				}
			}
			worst := worstCosine(rows, want)
			t.Logf("%s: %d query rows, worst cosine to the float64 reference 1 - %.2g", r.name, len(rows), 1-worst)
			if !(worst >= 0.9999) {
				t.Errorf("worst row cosine %.6f to the reference, want >= 0.9999", worst)
			}
			// The reference run causally is another model: the check tells.
			if wc := worstCosine(rows, headRows(t, sc, r.head, r.rows, ref.forward(ids, true))); wc >= 0.9999 {
				t.Errorf("the rows also match the causal reference (worst cosine %.6f): the check cannot tell the modes apart", wc)
			}

			srv := serveConverted(t, fs)
			var resp struct {
				Data []struct {
					Embeddings [][]float32 `json:"embeddings"`
				} `json:"data"`
			}
			page := map[string]string{"image": "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)}
			postJSON(t, srv.URL+"/v1/embeddings", map[string]any{"input": []any{query, page}, "return_multivector": true}, &resp)
			if len(resp.Data) != 2 || len(resp.Data[0].Embeddings) != len(rows) {
				t.Fatalf("/v1/embeddings: %d inputs, query rows %d", len(resp.Data), len(resp.Data[0].Embeddings))
			}
			for i, row := range resp.Data[0].Embeddings {
				if c := fixtures.Cosine(row, rows[i]); !(c >= 1-1e-6) {
					t.Fatalf("/v1/embeddings query row %d: cosine %v to vembed embed's", i, c)
				}
			}
			pageRows, pageIDs := embedQ35(t, fs, "--image", img)
			served := resp.Data[1].Embeddings
			if len(served) != len(pageRows) || len(pageRows) != len(pageIDs) {
				t.Fatalf("a page: %d served rows, %d embedded, %d tokens", len(served), len(pageRows), len(pageIDs))
			}
			for i, row := range served {
				if len(row) != r.rows || !(fixtures.Cosine(row, pageRows[i]) >= 1-1e-6) {
					t.Fatalf("/v1/embeddings page row %d differs from vembed embed's", i)
				}
			}
		})
	}
}

// serveConverted serves the files vembed convert wrote (the LM, the
// mvproj when there are three, the mmproj last) as vembed serve does,
// until the test ends.
func serveConverted(t *testing.T, fs []string) *httptest.Server {
	t.Helper()
	cfg := engine.Config{Model: fs[0], MMProj: fs[len(fs)-1]}
	if len(fs) == 3 {
		cfg.MVProj = fs[1]
	}
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return serveEngine(t, eng)
}

// serveEngine serves e as vembed serve does, until the test ends.
func serveEngine(t *testing.T, e *engine.Engine) *httptest.Server {
	srv := httptest.NewServer(server.New(e, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	t.Cleanup(srv.Close)
	return srv
}

// worstCosine is the least cosine of a row of got to the same row of
// want, in float64.
func worstCosine(got [][]float32, want [][]float64) float64 {
	worst := 1.0
	for i, row := range got {
		var ab, aa, bb float64
		for j, v := range row {
			a, b := float64(v), want[i][j]
			ab, aa, bb = ab+a*b, aa+a*a, bb+b*b
		}
		worst = min(worst, ab/math.Sqrt(aa*bb))
	}
	return worst
}

// TestQwen35ImageRows: converted with --multivector-rows image, a page's
// output is exactly its image tokens' rows of the every-row output, and
// a query keeps all its rows.
func TestQwen35ImageRows(t *testing.T) {
	img := filepath.Join(t.TempDir(), "page.png")
	writePNG(t, img, 200, 150, 2)
	r := q35Releases[len(q35Releases)-1] // ColVec1.1
	_, all := writeQ35Release(t, r)
	r.flags = append(r.flags, "--multivector-rows", "image")
	_, masked := writeQ35Release(t, r)
	allRows, ids := embedQ35(t, all, "--image", img)
	imgRows, _ := embedQ35(t, masked, "--image", img)
	f, err := gguf.Open(all[0])
	if err != nil {
		t.Fatal(err)
	}
	tokens, _ := f.Strings("tokenizer.ggml.tokens")
	f.Close()
	var want [][]float32
	for i, id := range ids {
		if tokens[id] == "<|image_pad|>" {
			want = append(want, allRows[i])
		}
	}
	if len(want) == 0 || len(imgRows) != len(want) {
		t.Fatalf("%d rows kept, the page has %d image tokens of %d", len(imgRows), len(want), len(ids))
	}
	for i := range want {
		if c := fixtures.Cosine(imgRows[i], want[i]); !(c >= 1-1e-6) {
			t.Fatalf("kept row %d: cosine %v to the image token's row", i, c)
		}
	}
	q1, _ := embedQ35(t, all, "--text", "total")
	q2, _ := embedQ35(t, masked, "--text", "total")
	if len(q1) != len(q2) {
		t.Errorf("a query keeps %d rows of %d", len(q2), len(q1))
	}
	// A page's patch grid (similarity maps) starts at its first image
	// row: after the prompt's text rows, or first when only image rows
	// are kept.
	firstPad := slices.IndexFunc(ids, func(id int) bool { return tokens[id] == "<|image_pad|>" })
	for _, c := range []struct {
		files []string
		first int
	}{{all, firstPad}, {masked, 0}} {
		eng, err := engine.New(engine.Config{Model: c.files[0], MVProj: c.files[1], MMProj: c.files[2]})
		if err != nil {
			t.Fatal(err)
		}
		first, rows, cols, err := eng.ImageGrid(engine.Request{}, 200, 150)
		eng.Close()
		if err != nil || first != c.first || rows*cols != len(want) {
			t.Errorf("image grid: first row %d, %dx%d (%v); want first %d, %d cells", first, rows, cols, err, c.first, len(want))
		}
	}
}

// TestQwen35Bounds: a converted Qwen3.5 retriever refuses, with HTTP 400
// naming the bound, a query beyond the one-pass limit of its
// bidirectional decoder and an image budget beyond the one its mmproj
// states (ColVec1.1's 1792 tokens).
func TestQwen35Bounds(t *testing.T) {
	_, fs := writeQ35Release(t, q35Releases[len(q35Releases)-1])
	srv := serveConverted(t, fs)
	png := writePNG(t, filepath.Join(t.TempDir(), "p.png"), 64, 64, 1)
	page := map[string]any{"image": "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)}
	for _, c := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"input": []any{strings.Repeat("word ", 9000)}, "return_multivector": true}, "8192"},
		{map[string]any{"input": []any{page}, "return_multivector": true, "max_pixels": 1 << 24}, "65536..1835008"},
	} {
		if status, raw := postRaw(t, srv.URL+"/v1/embeddings", c.body); status != 400 || !strings.Contains(string(raw), c.want) {
			t.Errorf("%d %.300s; want 400 naming %s", status, raw, c.want)
		}
	}
}

// TestQwen35AdapterRelease converts ColQwen3.5 released as a PEFT adapter
// over a stock Qwen3.5 base (LoRA pairs on the decoder's projections,
// DeltaNet ones included; the head saved whole as
// base_model.model.custom_text_proj): convert of the adapter's directory
// finds the base and takes the image budget of the adapter's processor
// files, and a query's rows are within cosine 0.9999 of the
// float64 reference on W + (α/r)·B·A, which the unmerged base fails.
func TestQwen35AdapterRelease(t *testing.T) {
	cfg, err := synth.Preset("tiny-qwen35")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	base, ad := filepath.Join(root, "base"), filepath.Join(root, "adapter")
	if err := synth.WriteHF(base, cfg, synth.HFOptions{Layout: qwenlayout.LayoutColQwen35, DType: safetensors.F32, AdapterDir: ad}); err != nil {
		t.Fatal(err)
	}
	// The processor's budget comes from the adapter's files, as
	// colpali-engine loads the processor from the adapter.
	if err := os.WriteFile(filepath.Join(ad, "processor_config.json"), []byte(`{"max_num_visual_tokens": 200}`), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := convertMV(t, ad, "--type", "F32", "--mmproj-type", "F32")
	if len(fs) != 3 {
		t.Fatalf("convert wrote %v", fs)
	}
	mm, err := gguf.Open(fs[2])
	if err != nil {
		t.Fatal(err)
	}
	hi, _ := mm.Uint("clip.vision.image_max_pixels")
	mm.Close()
	if hi != 200*1024 {
		t.Errorf("mmproj budget %d pixels, want the adapter processor's 200 tokens (204800)", hi)
	}
	ref, sc := q35RefFrom(t, base)
	defer sc.Close()
	af, err := safetensors.Open(filepath.Join(ad, "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer af.Close()
	var ac struct {
		R     int     `json:"r"`
		Alpha float64 `json:"lora_alpha"`
	}
	b, _ := os.ReadFile(filepath.Join(ad, "adapter_config.json"))
	if err := json.Unmarshal(b, &ac); err != nil || ac.R <= 0 {
		t.Fatalf("adapter_config.json: %v", err)
	}
	plain, merged := ref.w, 0
	ref.w = func(name string) []float64 {
		w := plain(name)
		module, ok := strings.CutSuffix(name, ".weight")
		pa, pb := "base_model.model.language_model."+module+".lora_A.weight", "base_model.model.language_model."+module+".lora_B.weight"
		if _, has := af.Tensors[pa]; !ok || !has {
			return w
		}
		a, _ := af.Float64(pa)
		bb, _ := af.Float64(pb)
		in := len(a) / ac.R
		out := len(bb) / ac.R
		w = append([]float64(nil), w...)
		for o := range out {
			for k := range ac.R {
				f := ac.Alpha / float64(ac.R) * bb[o*ac.R+k]
				for i := range in {
					w[o*in+i] += f * a[k*in+i]
				}
			}
		}
		merged++
		return w
	}
	rows, ids := embedQ35(t, fs, "--text", "Which table lists the quarterly revenue?")
	// The head the adapter saved whole, with its bias.
	hw, _ := af.Float64("base_model.model.custom_text_proj.weight")
	hb, _ := af.Float64("base_model.model.custom_text_proj.bias")
	head := func(hidden [][]float64) [][]float64 { return applyHead(hw, hb, hidden) }
	worst := worstCosine(rows, head(ref.forward(ids, false)))
	t.Logf("adapter release: %d rows, %d merged matrix reads, worst cosine 1 - %.2g", len(rows), merged, 1-worst)
	if merged == 0 || !(worst >= 0.9999) {
		t.Errorf("worst row cosine %.6f to the merged reference (%d merged reads), want >= 0.9999", worst, merged)
	}
	ref.w = plain
	if w := worstCosine(rows, head(ref.forward(ids, false))); w >= 0.9999 {
		t.Errorf("the rows also match the unmerged base (worst cosine %.6f): the adapter changed nothing", w)
	}
}
