package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/safetensors"
)

func TestSynthCommand(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	code := run([]string{"synth", "--preset", "tiny", "--out", dir, "--type", "f32", "--mvproj", "--seed", "7"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	paths := strings.Fields(out.String())
	if len(paths) != 3 {
		t.Fatalf("printed %q, want three paths", out.String())
	}
	for _, p := range paths {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", p, err)
		}
	}
	for _, bad := range [][]string{
		{"synth"},
		{"synth", "--out", dir, "--preset", "nope"},
		{"synth", "--out", dir, "--type", "Q9"},
		{"synth", "--out", dir, "--std", "-1"},
		{"synth", "--out", dir, "--std", "NaN"},
	} {
		if code := run(bad, &out, &errOut); code == 0 {
			t.Errorf("%v: exit 0", bad)
		}
	}
}

// TestSynthColQwenRelease: synth's flags write a ColQwen checkpoint as the
// releases ship it (the adapter in its own directory, transformers 4.52
// module names, LoRA pairs on the tower), which convert takes from the
// adapter's directory; the flags are refused where they do not apply.
func TestSynthColQwenRelease(t *testing.T) {
	root := t.TempDir()
	base, ad := filepath.Join(root, "colqwen-x-base"), filepath.Join(root, "colqwen-x-v1")
	var o, e bytes.Buffer
	if code := run([]string{"synth", "--format", "hf", "--layout", "colqwen2.5", "--out", base, "--adapter-dir", ad, "--adapter-new-names", "--adapter-vision"}, &o, &e); code != 0 {
		t.Fatalf("synth: exit %d: %s", code, e.String())
	}
	if got := strings.Fields(o.String()); len(got) != 2 || got[0] != base || got[1] != ad {
		t.Errorf("synth printed %q, want the base and the adapter directories", o.String())
	}
	var ac struct {
		Base string `json:"base_model_name_or_path"`
	}
	if b, err := os.ReadFile(filepath.Join(ad, "adapter_config.json")); err != nil || json.Unmarshal(b, &ac) != nil || ac.Base != "synthetic/colqwen-x-base" {
		t.Fatalf("adapter_config.json: %v, base %q", err, ac.Base)
	}
	if _, err := os.Stat(filepath.Join(base, "adapter_config.json")); err == nil {
		t.Error("the base holds an adapter too")
	}
	lora, err := safetensors.Open(filepath.Join(ad, "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	var newLM, tower int
	for _, n := range lora.Names() {
		newLM += b2i(strings.HasPrefix(n, "base_model.model.model.language_model.layers."))
		tower += b2i(strings.HasPrefix(n, "base_model.model.model.visual.blocks."))
	}
	lora.Close()
	if newLM == 0 || tower == 0 {
		t.Errorf("adapter keys: %d decoder pairs in the new names, %d on the tower; want both", newLM, tower)
	}
	o.Reset()
	if code := run([]string{"convert", ad, "--out", filepath.Join(root, "gguf"), "--type", "F32"}, &o, &e); code != 0 {
		t.Fatalf("convert of the adapter directory: exit %d: %s", code, e.String())
	}
	if files := strings.Fields(o.String()); len(files) != 3 {
		t.Errorf("convert printed %v, want LM, mvproj and mmproj", files)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--adapter-dir", ad}, "--format hf"},
		{[]string{"--format", "hf", "--layout", "gme", "--adapter-vision"}, "has no adapter"},
		{[]string{"--format", "hf", "--layout", "jina-v4", "--adapter-dir", ad}, "keeps its adapters inside"},
		{[]string{"--format", "hf", "--layout", "nemotron-colembed-vl", "--adapter-new-names"}, "has no adapter"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		var o, e bytes.Buffer
		if code := run(append([]string{"synth", "--out", out}, bad.args...), &o, &e); code == 0 || !strings.Contains(e.String(), bad.want) {
			t.Errorf("%v: exit %d, %q; want an error with %q", bad.args, code, e.String(), bad.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: wrote %s", bad.args, out)
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
