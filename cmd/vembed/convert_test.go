package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vembed/vembed/hub/hubtest"
	"github.com/vembed/vembed/qwenlayout"
	"github.com/vembed/vembed/synth"
)

// TestConvertCommand runs synth --format hf and convert as a user does.
func TestConvertCommand(t *testing.T) {
	dir := t.TempDir()
	hf, out := filepath.Join(dir, "hf"), filepath.Join(dir, "gguf")
	var o, e bytes.Buffer
	if code := run([]string{"synth", "--format", "hf", "--layout", "jina-v4", "--out", hf}, &o, &e); code != 0 {
		t.Fatalf("synth: exit %d: %s", code, e.String())
	}
	o.Reset()
	if code := run([]string{"convert", hf, "--out", out, "--task", "all", "--type", "Q8_0"}, &o, &e); code != 0 {
		t.Fatalf("convert: exit %d: %s", code, e.String())
	}
	files := strings.Fields(o.String())
	if len(files) != 7 { // three LMs, three mvprojs, one mmproj
		t.Fatalf("convert printed %v", files)
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"convert", hf}, "--out DIR is required"},
		{[]string{"convert", "--out", out}, "give one HF_DIR"},
		{[]string{"convert", hf, "--out", out, "--type", "Q9"}, "Q9"},
		{[]string{"convert", hf, "--out", out, "--layout", "bert"}, "unknown layout"},
		{[]string{"synth", "--format", "hf", "--layout", "gme", "--preset", "tiny", "--out", out}, "needs a qwen2vl_merger tower"},
		{[]string{"synth", "--format", "onnx", "--out", out}, "--format"},
	} {
		var o, e bytes.Buffer
		if code := run(bad.args, &o, &e); code == 0 || !strings.Contains(e.String(), bad.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error with %q", bad.args, code, e.String(), bad.want)
		}
	}
}

// TestConvertQwen3VL: a Qwen3-VL-Embedding checkpoint converts to a pair
// that embeds an image, a Qwen3-VL-Reranker one to a pair that reranks, as
// a user runs them.
func TestConvertQwen3VL(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "page.png")
	writePNG(t, img, 64, 64, 1)
	for _, layout := range []string{qwenlayout.LayoutQwen3VL, qwenlayout.LayoutQwen3VLReranker} {
		hf, out := filepath.Join(dir, layout), filepath.Join(dir, layout+"-gguf")
		var o, e bytes.Buffer
		if code := run([]string{"synth", "--format", "hf", "--layout", layout, "--out", hf}, &o, &e); code != 0 {
			t.Fatalf("synth: exit %d: %s", code, e.String())
		}
		o.Reset()
		if code := run([]string{"convert", hf, "--out", out, "--type", "Q8_0"}, &o, &e); code != 0 {
			t.Fatalf("convert: exit %d: %s", code, e.String())
		}
		files := strings.Fields(o.String())
		if len(files) != 2 || !strings.Contains(e.String(), "(layout "+layout+")") {
			t.Fatalf("%s: convert printed %v, %s", layout, files, e.String())
		}
		o.Reset()
		args := []string{"embed", "--model", files[0], "--mmproj", files[1], "--image", img, "--json"}
		if layout == qwenlayout.LayoutQwen3VLReranker {
			args = []string{"rerank", "--model", files[0], "--mmproj", files[1], "--query", `"which page?"`, "--document", `"text"`, "--document", `{"image":"` + img + `"}`, "--json"}
		}
		if code := run(args, &o, &e); code != 0 {
			t.Fatalf("%s: exit %d: %s", args[0], code, e.String())
		}
		var res struct {
			Embeddings [][]float64 `json:"embeddings"`
			Scores     []float64   `json:"scores"`
		}
		if err := json.Unmarshal(o.Bytes(), &res); err != nil || len(res.Embeddings)+len(res.Scores) != map[string]int{qwenlayout.LayoutQwen3VL: 1, qwenlayout.LayoutQwen3VLReranker: 2}[layout] {
			t.Errorf("%s: %s (%v)", args[0], o.String(), err)
		}
	}
}

// TestCheckpointRepoConverted: --model hf://org/repo naming a checkpoint
// repository pulls it, converts it once into the cache and serves it; a
// second run reuses the conversion. The Qwen3.5 retrievers come with their
// head (the mvproj) and serve multi-vector rows.
func TestCheckpointRepoConverted(t *testing.T) {
	for _, layout := range []string{qwenlayout.LayoutJinaV4, qwenlayout.LayoutGME, qwenlayout.LayoutColQwen35, qwenlayout.LayoutColVec} {
		t.Run(layout, func(t *testing.T) {
			preset := map[string]string{qwenlayout.LayoutJinaV4: "tiny", qwenlayout.LayoutGME: "tiny-qwen2vl",
				qwenlayout.LayoutColQwen35: "tiny-qwen35", qwenlayout.LayoutColVec: "tiny-qwen35"}[layout]
			cfg, err := synth.Preset(preset)
			if err != nil {
				t.Fatal(err)
			}
			ck := t.TempDir()
			if err := synth.WriteHF(ck, cfg, synth.HFOptions{Layout: layout}); err != nil {
				t.Fatal(err)
			}
			files := map[string][]byte{}
			filepath.WalkDir(ck, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					rel, _ := filepath.Rel(ck, p)
					files[filepath.ToSlash(rel)], _ = os.ReadFile(p)
				}
				return err
			})
			if layout == qwenlayout.LayoutGME {
				// Without a name in config.json, the repository's tells GME.
				var c map[string]any
				json.Unmarshal(files["config.json"], &c)
				delete(c, "_name_or_path")
				files["config.json"], _ = json.Marshal(c)
			}
			repo := "org/" + layout + "-tiny"
			srv := hubtest.New(repo, files)
			defer srv.Close()
			home := hubEnv(t, srv.URL)
			embed := func() (string, string) {
				var o, e bytes.Buffer
				args := []string{"embed", "--model", "hf://" + repo, "--text", "a short query"}
				if layout != qwenlayout.LayoutGME {
					args = append(args, "--multivector", "--json")
				}
				if code := run(args, &o, &e); code != 0 {
					t.Fatalf("embed: exit %d: %s", code, e.String())
				}
				return o.String(), e.String()
			}
			first, log1 := embed()
			second, log2 := embed()
			if !strings.Contains(log1, "converting the checkpoint") || strings.Contains(log2, "converting the checkpoint") {
				t.Errorf("want one conversion; logs:\n%s\n---\n%s", log1, log2)
			}
			if first == "" || first != second {
				t.Errorf("the cached conversion embeds differently:\n%s\n%s", first, second)
			}
			if layout == qwenlayout.LayoutColQwen35 || layout == qwenlayout.LayoutColVec {
				var out struct {
					Embeddings [][][]float32 `json:"embeddings"`
				}
				if err := json.Unmarshal([]byte(first), &out); err != nil || len(out.Embeddings) != 1 || len(out.Embeddings[0]) < 2 || len(out.Embeddings[0][0]) != cfg.MVProj.OutputDim {
					t.Errorf("want one row per token of the head's %d values; got %.300s", cfg.MVProj.OutputDim, first)
				}
			}
			converted, _ := filepath.Glob(filepath.Join(home, "xdg", "vembed", "converted", "models--org--"+layout+"-tiny", "*", "*.gguf"))
			if len(converted) < 2 || layout == qwenlayout.LayoutGME && !strings.Contains(converted[0], "gme-tiny-F16.gguf") {
				t.Errorf("converted files: %v", converted)
			}
			if layout == qwenlayout.LayoutGME {
				var o, e bytes.Buffer
				run([]string{"inspect", converted[0]}, &o, &e)
				if !regexp.MustCompile(`vembed\.recipe\s.*gme`).MatchString(o.String()) {
					t.Errorf("the GME repository converted without its recipe:\n%.2000s", o.String())
				}
			}
		})
	}
}
