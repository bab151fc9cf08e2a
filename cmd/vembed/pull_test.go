package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/hub/hubtest"
	"github.com/vembed/vembed/synth"
)

// hubEnv points the hub client at a fresh cache and at endpoint.
func hubEnv(t *testing.T, endpoint string) string {
	home := t.TempDir()
	t.Setenv("HF_HOME", home)
	t.Setenv("HF_ENDPOINT", endpoint)
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "xdg"))
	return home
}

func TestPullAndModelRef(t *testing.T) {
	dir := t.TempDir()
	cfg, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	lm, mm, err := synth.WritePair(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, p := range []string{lm, mm} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(p)] = b
	}
	files["README.md"] = []byte("# tiny\n")
	srv := hubtest.New("org/tiny-GGUF", files)
	defer srv.Close()
	home := hubEnv(t, srv.URL)

	var out, errOut bytes.Buffer
	if code := run([]string{"pull", "org/tiny-GGUF/" + filepath.Base(lm)}, &out, &errOut); code != 0 {
		t.Fatalf("pull: exit %d: %s", code, errOut.String())
	}
	got := strings.TrimSpace(out.String())
	want := filepath.Join(home, "hub", "models--org--tiny-GGUF", "snapshots", srv.Commit, filepath.Base(lm))
	if got != want {
		t.Errorf("pull printed %q, want %q", got, want)
	}
	// The whole repository, filtered.
	out.Reset()
	if code := run([]string{"pull", "org/tiny-GGUF", "--include", "*.md"}, &out, &errOut); code != 0 {
		t.Fatalf("pull repo: exit %d: %s", code, errOut.String())
	}
	snap := strings.TrimSpace(out.String())
	if _, err := os.Stat(filepath.Join(snap, "README.md")); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(snap, filepath.Base(mm))); !os.IsNotExist(err) {
		t.Errorf("--include *.md pulled the mmproj too")
	}

	// embed with an hf:// LM pulls the repository's mmproj beside it.
	out.Reset()
	errOut.Reset()
	img := filepath.Join(dir, "img.png")
	png, err := synth.Photo(56, 1, "png")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img, png, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"embed", "--model", "hf://org/tiny-GGUF/" + filepath.Base(lm), "--image", img}, &out, &errOut); code != 0 {
		t.Fatalf("embed hf://: exit %d: %s", code, errOut.String())
	}
	if len(strings.Fields(out.String())) != cfg.LM.Hidden {
		t.Errorf("embed printed %d values, want %d", len(strings.Fields(out.String())), cfg.LM.Hidden)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"pull", "org/tiny-GGUF/missing.gguf"}, "file not found"},
		{[]string{"pull", "org/nope/x.gguf"}, "repository not found"},
		{[]string{"pull", "org"}, "org/name"},
		{[]string{"embed", "--model", "hf://org/tiny-GGUF", "--text", "a"}, "name one"},
		{[]string{"embed", "--model", lm, "--mmproj", "hf://org/tiny-GGUF", "--text", "a"}, "name a GGUF file"},
	} {
		errOut.Reset()
		if code := run(bad.args, &out, &errOut); code == 0 || !strings.Contains(errOut.String(), bad.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error with %q", bad.args, code, errOut.String(), bad.want)
		}
	}
}

// TestCheckpointRef pulls a checkpoint repository for --model; without a
// converter the error says so.
func TestCheckpointRef(t *testing.T) {
	if convertCheckpoint != nil {
		t.Skip("a converter is built in; the conversion path is tested with it")
	}
	srv := hubtest.New("org/ckpt", map[string][]byte{
		"config.json":       []byte(`{"model_type": "qwen2_5_vl"}`),
		"model.safetensors": []byte("weights"),
	})
	defer srv.Close()
	hubEnv(t, srv.URL)
	var out, errOut bytes.Buffer
	if code := run([]string{"embed", "--model", "hf://org/ckpt", "--text", "a"}, &out, &errOut); code == 0 || !strings.Contains(errOut.String(), "checkpoint conversion not available") {
		t.Errorf("exit %d, stderr %q", code, errOut.String())
	}
}
