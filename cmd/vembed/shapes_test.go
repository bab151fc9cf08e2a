package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/qwenlayout"
	"github.com/vembed/vembed/recipe"
	"github.com/vembed/vembed/synth"
)

// otherShape reshapes a tiny preset to sizes that neither the presets nor
// the shared fixtures have (LM 96 wide, 4 layers, 6/3 heads, FFN 200;
// tower 80 wide, 3 blocks, 5 heads; Qwen3-VL: LM 2 layers of 6/2 heads of
// 24, tower 48 wide, 5 blocks, 3 heads, taps 1 and 3), so that nothing
// the converter or the engine does can lean on a known shape.
func otherShape(t *testing.T, preset string) synth.Config {
	t.Helper()
	cfg, err := synth.Preset(preset)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Name = "other-shape"
	switch cfg.Projector {
	case qwenlayout.ProjectorQwen3VL:
		cfg.LM.Hidden, cfg.LM.Layers, cfg.LM.Heads, cfg.LM.KVHeads, cfg.LM.FFN, cfg.LM.HeadDim = 96, 2, 6, 2, 160, 24
		cfg.LM.MRoPE = [4]int32{4, 4, 4, 0}
		cfg.Vision.Width, cfg.Vision.Blocks, cfg.Vision.Heads, cfg.Vision.FFN = 48, 5, 3, 96
		cfg.Vision.DeepStack = []int{1, 3}
	default:
		cfg.LM.Hidden, cfg.LM.Layers, cfg.LM.Heads, cfg.LM.KVHeads, cfg.LM.FFN = 96, 4, 6, 3, 200
		cfg.LM.MRoPE = [4]int32{2, 3, 3, 0}
		cfg.Vision.Width, cfg.Vision.Blocks, cfg.Vision.Heads, cfg.Vision.FFN = 80, 3, 5, 136
		if cfg.Projector == qwenlayout.ProjectorQwen2VL {
			cfg.Vision.FFN = 4 * cfg.Vision.Width // Qwen2-VL's mlp_ratio
		} else {
			cfg.Vision.NWAPattern = 3
		}
	}
	return cfg
}

// checkUnit reports a vector of the wrong width, with a non-finite value
// or not of unit norm (the engine normalizes in float64 and rounds each
// value to float32: |‖v‖² − 1| stays within a few float32 ulps a value).
func checkUnit(t *testing.T, what string, v []float32, width int) {
	t.Helper()
	if len(v) != width {
		t.Errorf("%s: %d values, want %d", what, len(v), width)
		return
	}
	var n float64
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			t.Errorf("%s: non-finite value", what)
			return
		}
		n += float64(x) * float64(x)
	}
	if math.Abs(n-1) > float64(width)*1e-6 {
		t.Errorf("%s: norm² %v", what, n)
	}
}

// TestOtherShapesConvert: a checkpoint of each family at a shape of its
// own, written by synth's Hugging Face writer (ColQwen2.5's adapter in its
// own directory, as released), converts with vembed convert and embeds a
// text and an image through the engine: the LM names the family's recipe,
// the vectors are as wide as the new hidden size (ColQwen's rows 128, one
// per token), finite and of unit norm. GME's model bounds and one-image
// limit hold at this shape too, on the CLI and over HTTP.
func TestOtherShapesConvert(t *testing.T) {
	root := t.TempDir()
	img := filepath.Join(root, "page.png")
	imgBytes := writePNG(t, img, 64, 96, 1)
	for _, c := range []struct {
		layout, preset, recipe string
		multi                  bool // rows per token (ColQwen, jina's multi-vector)
		single                 bool // a pooled vector
	}{
		{qwenlayout.LayoutGME, "tiny-qwen2vl", "gme", false, true},
		{qwenlayout.LayoutColQwen25, "tiny", "colqwen2", true, false},
		{qwenlayout.LayoutJinaV4, "tiny", "jina-embeddings-v4", true, true},
		{qwenlayout.LayoutQwen3VL, "tiny-qwen3vl", "qwen3-vl-embedding", false, true},
	} {
		t.Run(c.layout, func(t *testing.T) {
			cfg := otherShape(t, c.preset)
			if c.layout == qwenlayout.LayoutQwen3VL {
				cfg.LM.Pooling = "last"
			}
			ck := filepath.Join(root, c.layout+"-other-base")
			o := synth.HFOptions{Layout: c.layout}
			if c.layout == qwenlayout.LayoutColQwen25 {
				o.AdapterDir = filepath.Join(root, c.layout+"-other-v1")
			}
			if err := synth.WriteHF(ck, cfg, o); err != nil {
				t.Fatal(err)
			}
			from := ck
			if o.AdapterDir != "" {
				from = o.AdapterDir // the base is found beside it
			}
			var out, errOut bytes.Buffer
			if code := run([]string{"convert", from, "--out", filepath.Join(root, c.layout+"-gguf"), "--type", "F32", "--mmproj-type", "F32"}, &out, &errOut); code != 0 {
				t.Fatalf("convert: exit %d: %s", code, errOut.String())
			}
			var lm, mmproj, mvproj string
			for _, f := range strings.Fields(out.String()) {
				switch base := filepath.Base(f); {
				case strings.HasPrefix(base, "mmproj"):
					mmproj = f
				case strings.HasPrefix(base, "mvproj"):
					mvproj = f
				case lm == "":
					lm = f
				}
			}
			if lm == "" || mmproj == "" || c.multi != (mvproj != "") {
				t.Fatalf("convert printed %q", out.String())
			}
			f, err := gguf.Open(lm)
			if err != nil {
				t.Fatal(err)
			}
			name, err := f.String(recipe.Key)
			f.Close()
			if name != c.recipe {
				t.Errorf("%s = %q (%v), want %q", recipe.Key, name, err, c.recipe)
			}

			e, err := engine.New(engine.Config{Model: lm, MMProj: mmproj, MVProj: mvproj})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			info := e.Info()
			if info.Recipe != c.recipe || info.Hidden != cfg.LM.Hidden {
				t.Errorf("engine: recipe %q, hidden %d; want %q, %d", info.Recipe, info.Hidden, c.recipe, cfg.LM.Hidden)
			}
			inputs := []engine.Input{engine.TextInput("which page shows a chart?"), engine.ImageInput(imgBytes)}
			ctx := context.Background()
			if c.single {
				r, err := e.Embed(ctx, engine.Request{Inputs: inputs})
				if err != nil {
					t.Fatal(err)
				}
				for i, em := range r.Embeddings {
					checkUnit(t, fmt.Sprintf("input %d", i), em.Vector, cfg.LM.Hidden)
				}
			}
			if c.multi {
				r, err := e.Embed(ctx, engine.Request{Inputs: inputs, Multivector: true})
				if err != nil {
					t.Fatal(err)
				}
				for i, em := range r.Embeddings {
					if len(em.Multi) != em.Tokens || em.Tokens == 0 {
						t.Errorf("input %d: %d rows for %d tokens", i, len(em.Multi), em.Tokens)
					}
					for k, row := range em.Multi {
						checkUnit(t, fmt.Sprintf("input %d row %d", i, k), row, cfg.MVProj.OutputDim)
					}
				}
			}
			if c.layout == qwenlayout.LayoutGME {
				checkGMEBounds(t, e, lm, mmproj, img, imgBytes)
			}
		})
	}
}

// checkGMEBounds: a converted GME takes an instruction, keeps its
// processor's 200,704..1,003,520 pixels as the model's bounds (a request's
// min_pixels below them refused on the CLI and over HTTP) and refuses two
// images in one input with a 400 naming the limit.
func checkGMEBounds(t *testing.T, e *engine.Engine, lm, mmproj, img string, imgBytes []byte) {
	t.Helper()
	if lo, hi := e.Info().MinPixels, e.Info().MaxPixels; lo != 256*28*28 || hi != 1280*28*28 {
		t.Errorf("GME's bounds %d..%d, want 200704..1003520", lo, hi)
	}
	var o, errOut bytes.Buffer
	if code := run([]string{"embed", "--model", lm, "--mmproj", mmproj, "--instruction", "Find the page.", "--text", "a chart"}, &o, &errOut); code != 0 {
		t.Errorf("embed with an instruction: exit %d: %s", code, errOut.String())
	}
	errOut.Reset()
	if code := run([]string{"embed", "--model", lm, "--mmproj", mmproj, "--image", img, "--min-pixels", "3136"}, &o, &errOut); code == 0 || !strings.Contains(errOut.String(), "200704..1003520") {
		t.Errorf("embed --min-pixels 3136: exit %d, %q; want an error naming 200704..1003520", code, errOut.String())
	}
	srv := serveEngine(t, e)
	b64 := "data:image/png;base64," + base64.StdEncoding.EncodeToString(imgBytes)
	for _, tc := range []struct{ body, want string }{
		{`{"input":[{"image":"` + b64 + `"}],"min_pixels":3136}`, "200704..1003520"},
		{`{"input":[{"content":[{"image":"` + b64 + `"},{"text":"and"},{"image":"` + b64 + `"}]}]}`, "at most 1 image per input"},
	} {
		resp, err := http.Post(srv.URL+"/v1/embeddings", "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(msg), tc.want) {
			t.Errorf("%.60s…: %d %s; want 400 naming %q", tc.body, resp.StatusCode, msg, tc.want)
		}
	}
	resp, err := http.Post(srv.URL+"/v1/embeddings", "application/json", strings.NewReader(`{"input":[{"content":[{"text":"a caption"},{"image":"`+b64+`"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("one image and a text: %d %s", resp.StatusCode, msg)
	}
}
