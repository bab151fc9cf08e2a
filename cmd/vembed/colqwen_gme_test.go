package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/internal/fixtures"
)

// cgCase is one case of the colqwen-gme fixtures.
type cgCase struct {
	ID          string  `json:"id"`
	Model       string  `json:"model"`
	Kind        string  `json:"kind"`
	InputText   string  `json:"input_text"`
	Instruction *string `json:"instruction"`
	NTokens     int     `json:"n_tokens"`
	Embedding   []float32
	Multi       fixtures.Raw `json:"multivector"`
	Images      []struct {
		File string `json:"file"`
	} `json:"images"`
	dir string
}

// convertFixtures converts the colqwen-gme checkpoints as a user does:
// ColQwen from its adapter's directory (the base found beside it), GME
// from its own; it returns the files of each, LM first.
func convertFixtures(t *testing.T, dir string) map[string][]string {
	out := map[string][]string{}
	for model, ck := range map[string]string{"colqwen": "colqwen2.5-mini-v0.1", "gme": "gme-Qwen2-VL-mini-Instruct"} {
		var o, e bytes.Buffer
		if code := run([]string{"convert", filepath.Join(dir, ck), "--out", filepath.Join(t.TempDir(), model), "--type", "F32", "--mmproj-type", "F32"}, &o, &e); code != 0 {
			t.Fatalf("convert %s: exit %d: %s", ck, code, e.String())
		}
		out[model] = strings.Fields(o.String())
	}
	return out
}

func readCases(t *testing.T, dir string) []cgCase {
	var idx struct {
		Cases []struct{ ID string } `json:"cases"`
	}
	fixtures.ReadJSON(t, filepath.Join(dir, "index.json"), &idx)
	var cs []cgCase
	for _, c := range idx.Cases {
		var k cgCase
		k.dir = filepath.Join(dir, "cases", c.ID)
		fixtures.ReadJSON(t, filepath.Join(k.dir, "case.json"), &k)
		cs = append(cs, k)
	}
	if len(cs) != 13 {
		t.Fatalf("%d cases, want the fixtures' 13", len(cs))
	}
	return cs
}

// checkCase compares a case's output with its golden: GME's vector at
// cosine >= 0.99999, ColQwen's rows (as many as the golden's) each at
// cosine >= 0.9999.
func checkCase(t *testing.T, how string, c cgCase, vec []float32, rows [][]float32) {
	t.Helper()
	if c.Model == "gme" {
		cs := fixtures.Cosine(vec, c.Embedding)
		if cs < 0.99999 {
			t.Errorf("%s %s: cosine %.7f to the reference", how, c.ID, cs)
		}
		t.Logf("%s %s: cosine 1 - %.1e", how, c.ID, 1-cs)
		return
	}
	want := fixtures.ReadF32(t, c.dir, c.Multi)
	d := c.Multi.Shape[1]
	if len(rows) != c.Multi.Shape[0] {
		t.Fatalf("%s %s: %d rows, want %d", how, c.ID, len(rows), c.Multi.Shape[0])
	}
	worst := 1.0
	for i, r := range rows {
		cs := fixtures.Cosine(r, want[i*d:(i+1)*d])
		if cs < 0.9999 {
			t.Errorf("%s %s: row %d cosine %.6f", how, c.ID, i, cs)
			return
		}
		worst = min(worst, cs)
	}
	t.Logf("%s %s: %d rows, worst cosine 1 - %.1e", how, c.ID, len(rows), 1-worst)
}

// TestColQwenGMEFixtures converts the colqwen-gme checkpoints with vembed
// convert and embeds every case with vembed embed and through
// /v1/embeddings, against the float64 reference.
func TestColQwenGMEFixtures(t *testing.T) {
	dir := fixtures.Dir(t, "colqwen-gme")
	files := convertFixtures(t, dir)
	cases := readCases(t, dir)
	for _, c := range cases {
		args := []string{"embed", "--json", "--model", files[c.Model][0], "--mmproj", files[c.Model][len(files[c.Model])-1]}
		if c.Model == "colqwen" {
			args = append(args, "--mvproj", files[c.Model][1], "--multivector")
		}
		if c.Instruction != nil {
			args = append(args, "--instruction", *c.Instruction)
		}
		switch c.Kind {
		case "text":
			args = append(args, "--text", c.InputText)
		case "image":
			args = append(args, "--image", filepath.Join(c.dir, c.Images[0].File))
		default: // GME fuses the image and its text into one input
			b, _ := json.Marshal([]map[string]string{{"image": filepath.Join(c.dir, c.Images[0].File)}, {"text": c.InputText}})
			args = append(args, "--input", string(b))
		}
		var o, e bytes.Buffer
		if code := run(args, &o, &e); code != 0 {
			t.Fatalf("%s: embed: exit %d: %s", c.ID, code, e.String())
		}
		var out struct {
			Embeddings []json.RawMessage `json:"embeddings"`
		}
		if err := json.Unmarshal(o.Bytes(), &out); err != nil || len(out.Embeddings) != 1 {
			t.Fatalf("%s: embed printed %.300s", c.ID, o.String())
		}
		var vec []float32
		var rows [][]float32
		if c.Model == "gme" {
			json.Unmarshal(out.Embeddings[0], &vec)
		} else {
			json.Unmarshal(out.Embeddings[0], &rows)
		}
		checkCase(t, "embed", c, vec, rows)
	}

	for model, fs := range files {
		srv := serveConverted(t, fs)
		for _, c := range cases {
			if c.Model != model {
				continue
			}
			var item any
			img := func() string {
				b, err := os.ReadFile(filepath.Join(c.dir, c.Images[0].File))
				if err != nil {
					t.Fatal(err)
				}
				return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b)
			}
			switch c.Kind {
			case "text":
				item = c.InputText
			case "image":
				item = map[string]string{"image": img()}
			default:
				item = map[string]any{"content": []map[string]string{{"text": c.InputText}, {"image": img()}}}
			}
			body := map[string]any{"input": []any{item}, "return_multivector": model == "colqwen"}
			if c.Instruction != nil {
				body["instruction"] = *c.Instruction
			}
			status, raw := postRaw(t, srv.URL+"/v1/embeddings", body)
			var r struct {
				Data []struct {
					Embedding  []float32   `json:"embedding"`
					Embeddings [][]float32 `json:"embeddings"`
				} `json:"data"`
			}
			if status != 200 || json.Unmarshal(raw, &r) != nil || len(r.Data) != 1 {
				t.Fatalf("%s: /v1/embeddings: %d %.300s", c.ID, status, raw)
			}
			checkCase(t, "/v1/embeddings", c, r.Data[0].Embedding, r.Data[0].Embeddings)
		}
	}
}

// TestColQwenGMEBadInput: each way a user can get a release wrong is an
// error that names the fix, and leaves nothing in the output directory.
func TestColQwenGMEBadInput(t *testing.T) {
	dir := fixtures.Dir(t, "colqwen-gme")
	base, adapter := filepath.Join(dir, "colqwen2.5-mini-base"), filepath.Join(dir, "colqwen2.5-mini-v0.1")
	copyDir := func(src string) string {
		dst := filepath.Join(t.TempDir(), filepath.Base(src))
		os.MkdirAll(dst, 0o755)
		ents, _ := os.ReadDir(src)
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644)
		}
		return dst
	}
	lonely := copyDir(adapter) // no base beside it
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	other := filepath.Join(t.TempDir(), "other-base")
	var o, e bytes.Buffer
	if code := run([]string{"synth", "--format", "hf", "--layout", "colqwen2.5", "--preset", "tiny", "--out", other}, &o, &e); code != 0 {
		t.Fatalf("synth: %s", e.String())
	}
	budget := func(body string) string {
		d := copyDir(adapter)
		os.WriteFile(filepath.Join(d, "preprocessor_config.json"), []byte(body), 0o644)
		return d
	}
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"base without adapter", []string{base}, []string{"without its LoRA adapter", "--adapter", "--no-adapter"}},
		{"base not found", []string{lonely}, []string{"vidore/colqwen2.5-mini-base", "is not found", "vembed pull", "--base"}},
		{"adapter of another base", []string{adapter, "--base", other}, []string{"does not fit the base", "--base"}},
		{"min above max", []string{budget(`{"min_pixels": 500000, "max_pixels": 250880}`), "--base", base}, []string{"exceeds max_pixels", "fix the file"}},
		{"absurd max", []string{budget(`{"min_pixels": 3136, "max_pixels": 1e13}`), "--base", base}, []string{"max_pixels", "fix the file"}},
		{"negative min", []string{budget(`{"min_pixels": -1, "max_pixels": 250880}`), "--base", base}, []string{"min_pixels", "fix the file"}},
		{"adapter on GME", []string{filepath.Join(dir, "gme-Qwen2-VL-mini-Instruct"), "--adapter", adapter}, []string{"takes no separate adapter"}},
	} {
		convertRefused(t, c.name, c.args, c.want)
	}

	// --no-adapter converts the base, and says so in the file.
	out := t.TempDir()
	o.Reset()
	if code := run([]string{"convert", base, "--out", out, "--no-adapter"}, &o, &e); code != 0 {
		t.Fatalf("--no-adapter: exit %d: %s", code, e.String())
	}
	o.Reset()
	run([]string{"inspect", filepath.Join(out, "colqwen2.5-mini-base-F16.gguf")}, &o, &e)
	if !strings.Contains(o.String(), "vembed.warning") {
		t.Errorf("a base converted alone carries no warning:\n%.1500s", o.String())
	}

	// An instruction for a model that takes tasks, and a task for one that
	// takes an instruction.
	files := convertFixtures(t, dir)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", files["colqwen"][0], "--instruction", "Find the chart."}, "takes a task, not an instruction"},
		{[]string{"--model", files["gme"][0], "--task", "retrieval.query"}, "give an instruction instead"},
	} {
		var o, e bytes.Buffer
		if code := run(append(append([]string{"embed"}, c.args...), "--text", "x"), &o, &e); code == 0 || !strings.Contains(e.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", c.args, code, e.String(), c.want)
		}
	}
}

// convertRefused runs vembed convert with args into a fresh output
// directory and checks that it fails with an error saying every string of
// want and leaves nothing in the directory; name names the case.
func convertRefused(t *testing.T, name string, args, want []string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	var o, e bytes.Buffer
	code := run(append([]string{"convert", "--out", out}, args...), &o, &e)
	for _, w := range want {
		if code == 0 || !strings.Contains(e.String(), w) {
			t.Errorf("%s: exit %d, stderr %q; want an error with %q", name, code, e.String(), w)
		}
	}
	if left, _ := os.ReadDir(out); len(left) != 0 {
		t.Errorf("%s: %d files left in the output directory", name, len(left))
	}
}
