package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vembed/vembed/internal/fixtures"
)

// TestPreprocessFixture runs the command on a fixture image with the tiny
// mmproj (which carries the CLIP mean/std) and compares its files with the
// reference's resized pixels and patches.
func TestPreprocessFixture(t *testing.T) {
	images := fixtures.Dir(t, "images")
	model := fixtures.Dir(t, "model")
	var idx struct {
		Images []struct {
			Name, File string
			MaxPixels  int `json:"max_pixels"`
			Expected   struct {
				GridTHW    []int                 `json:"grid_thw"`
				ResizedRGB struct{ File string } `json:"resized_rgb"`
				Patches    struct{ File string } `json:"patches"`
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(images, "images.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	for _, name := range []string{"png_max_pixels_640x480", "jpeg_baseline_200x150"} {
		for _, im := range idx.Images {
			if im.Name != name {
				continue
			}
			out, resized := filepath.Join(tmp, name+".f32"), filepath.Join(tmp, name+".rgb")
			var stdout, stderr bytes.Buffer
			args := []string{"preprocess", "--mmproj", filepath.Join(model, "mmproj-qwen25vl-tiny-sv-F32.gguf"),
				filepath.Join(images, im.File), "--out", out, "--resized", resized,
				"--max-pixels", strconv.Itoa(im.MaxPixels)}
			if code := run(args, &stdout, &stderr); code != 0 {
				t.Fatalf("%s: exit %d: %s", name, code, stderr.String())
			}
			g := im.Expected.GridTHW
			if want := strconv.Itoa(g[0]) + " " + strconv.Itoa(g[1]) + " " + strconv.Itoa(g[2]); strings.TrimSpace(stdout.String()) != want {
				t.Errorf("%s: printed %q, want %q", name, stdout.String(), want)
			}
			sameFile(t, resized, filepath.Join(images, im.Expected.ResizedRGB.File))
			sameFile(t, out, filepath.Join(images, im.Expected.Patches.File))
		}
	}
}

// sameFile requires identical bytes: the pipeline reproduces the reference's
// pixels exactly and its float32 normalization operation for operation.
func sameFile(t *testing.T, got, want string) {
	t.Helper()
	a, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("%s differs from %s", filepath.Base(got), filepath.Base(want))
	}
}

func TestPreprocessUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"preprocess", "image.png"}, &stdout, &stderr); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
}
