package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/bench"
)

// TestBenchModelOutput runs the end-to-end benchmark on the tiny synthetic
// model with tiny inputs and checks that the table and the JSON line carry
// every figure, with the token and patch counts the settings imply.
func TestBenchModelOutput(t *testing.T) {
	out := runOK(t, "bench", "--types", "F32", "--m", "2", "--k", "32", "--n", "32",
		"--time", "1ms", "--rounds", "1", "--tiers", "generic", "--attn-tokens", "0",
		"--model", "--texts", "3", "--text-tokens", "20", "--images", "56,112", "--repeat", "2")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var rep bench.Report
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil {
		t.Fatalf("last line is not the JSON report: %v\n%s", err, out)
	}
	got := map[string]bench.ModelFigure{}
	for _, f := range rep.Model {
		if f.Model != "tiny-synthetic" {
			t.Errorf("figure %q is labelled %q, want tiny-synthetic", f.Name, f.Model)
		}
		got[f.Name] = f
	}
	// 112×112 px is 8×8 patches of 14 px, merged 2×2 into 16 tokens; 56×56
	// is 4×4 patches and 4 tokens (both inside the tiny model's budget).
	exact := map[string]float64{
		"image_56_patches": 16, "image_56_tokens": 4,
		"image_112_patches": 64, "image_112_tokens": 16,
	}
	positive := []string{"load", "text_3x20_tokens_per_s", "text_3x20_batch",
		"image_56_total", "image_56_prompt_tokens", "text_3x20_batch_cpu", "image_112_total_cpu", "image_112_preprocess", "image_112_vision", "image_112_lm", "image_112_total",
		"peak_rss", "files", "peak_rss_over_files"}
	for name, want := range exact {
		if f, ok := got[name]; !ok || f.Value != want {
			t.Errorf("%s = %+v, want %v", name, f, want)
		}
	}
	for _, name := range positive {
		if f, ok := got[name]; !ok || !(f.Value > 0) {
			t.Errorf("%s = %+v, want a positive figure", name, f)
		}
	}
	// Throughput counts all 3×20 prompt tokens of the batch.
	tps, batch := got["text_3x20_tokens_per_s"].Value, got["text_3x20_batch"].Value
	if r := tps * batch / 60; r < 0.99 || r > 1.01 {
		t.Errorf("tokens/s × batch seconds = %.1f tokens, want 60", tps*batch)
	}
	// The stages happen one after another inside the total.
	if s := got["image_112_preprocess"].Value + got["image_112_vision"].Value + got["image_112_lm"].Value; s > got["image_112_total"].Value*1.01 {
		t.Errorf("stages sum to %gs, more than the total %gs", s, got["image_112_total"].Value)
	}
	for _, want := range []string{"text_3x20_tokens_per_s", "image_112_vision", "peak_rss_over_files", "tiny-synthetic"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestBenchModelBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--lm", filepath.Join(t.TempDir(), "x.gguf")},
		{"--texts", "-1"},
		{"--repeat", "0"},
		{"--images", "0"},
		{"--images", "20000"},
		{"--image-format", "gif"},
	} {
		a := append([]string{"bench", "--types", "F32", "--m", "1", "--k", "32", "--n", "32", "--time", "1ms",
			"--rounds", "1", "--tiers", "generic", "--attn-tokens", "0", "--model"}, args...)
		var out, errOut strings.Builder
		if code := run(a, &out, &errOut); code == 0 {
			t.Errorf("%v: exit 0, want an error", args)
		}
	}
}

// TestBenchModelTextOnly checks that an empty --images measures no image.
func TestBenchModelTextOnly(t *testing.T) {
	out := runOK(t, "bench", "--types", "F32", "--m", "1", "--k", "32", "--n", "32", "--time", "1ms",
		"--rounds", "1", "--tiers", "generic", "--attn-tokens", "0", "--model", "--texts", "1", "--text-tokens", "9", "--images", "")
	if !strings.Contains(out, "text_1x9_tokens_per_s") || strings.Contains(out, "image_") {
		t.Errorf("want text figures and no image figure:\n%s", out)
	}
}
