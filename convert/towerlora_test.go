package convert

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/qwenlayout"
	"github.com/vembed/vembed/recipe"
	"github.com/vembed/vembed/safetensors"
	"github.com/vembed/vembed/synth"
)

// writeJinaNewNames writes a tiny jina-v4 checkpoint whose adapter uses
// transformers 4.52+ module names, with LoRA pairs on the tower for every
// task.
func writeJinaNewNames(t *testing.T) string {
	t.Helper()
	cfg, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "hf")
	if err := synth.WriteHF(dir, cfg, synth.HFOptions{Layout: qwenlayout.LayoutJinaV4, AdapterNewNames: true, AdapterVision: true}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// keepAdapter rewrites the checkpoint's adapter with the tensors keep
// accepts (as F32, which holds the BF16 values exactly).
func keepAdapter(t *testing.T, dir string, keep func(name string) bool) {
	t.Helper()
	path := filepath.Join(dir, "adapters", "adapter_model.safetensors")
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var ts []safetensors.Data
	for _, n := range f.Names() {
		if !keep(n) {
			continue
		}
		v, err := f.Float64(n)
		if err != nil {
			t.Fatal(err)
		}
		d := safetensors.Data{Name: n, DType: safetensors.F32, Shape: f.Tensors[n].Shape, Values: make([]float32, len(v))}
		for i, x := range v {
			d.Values[i] = float32(x)
		}
		ts = append(ts, d)
	}
	f.Close()
	if err := safetensors.Write(path, ts, nil); err != nil {
		t.Fatal(err)
	}
}

func visionAdapterKey(t *testing.T, path string) string {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := f.String(recipe.VisionAdapterKey)
	if err != nil && !errors.Is(err, gguf.ErrKeyNotFound) {
		t.Fatal(err)
	}
	return v
}

// TestTaskTowerLoRA: a task adapter with pairs on the tower gets its own
// mmproj, both files naming the task; a task without them uses the one
// mmproj of the base tower; the engine loads each LM with its own mmproj
// and refuses the others'. Under the new module names jina's pattern
// targets the tower's MLPs, so an adapter with tower pairs that misses
// one is refused, while one without any tower pair converts (its tower
// ran as the base's); a tower pair for a matrix the checkpoint lacks is
// refused, never dropped. Every task is checked before a file is written.
func TestTaskTowerLoRA(t *testing.T) {
	ctx := context.Background()
	t.Run("mixed", func(t *testing.T) {
		dir := writeJinaNewNames(t)
		keepAdapter(t, dir, func(n string) bool { return !(strings.Contains(n, ".visual.") && strings.Contains(n, ".code.")) })
		res, err := Convert(ctx, dir, t.TempDir(), Options{Task: "all", Type: "F32", MMProjType: "F32"})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.MMProjs) != 3 || res.MMProj == "" {
			t.Fatalf("mmprojs %v, shared %q", res.MMProjs, res.MMProj)
		}
		for i, task := range res.Tasks {
			own := task != "code"
			if own == (res.MMProjs[i] == res.MMProj) || own && !strings.Contains(filepath.Base(res.MMProjs[i]), "-"+task+"-") {
				t.Errorf("%s: mmproj %s (shared %s)", task, res.MMProjs[i], res.MMProj)
			}
			want := map[bool]string{true: task}[own]
			if got := visionAdapterKey(t, res.LMs[i]); got != want {
				t.Errorf("%s: the LM's %s is %q, want %q", task, recipe.VisionAdapterKey, got, want)
			}
			if got := visionAdapterKey(t, res.MMProjs[i]); got != want {
				t.Errorf("%s: the mmproj's %s is %q, want %q", task, recipe.VisionAdapterKey, got, want)
			}
			e, err := engine.New(engine.Config{Model: res.LMs[i], MMProj: res.MMProjs[i]})
			if err != nil {
				t.Fatalf("%s with its mmproj: %v", task, err)
			}
			e.Close()
			for j, other := range res.MMProjs {
				if other == res.MMProjs[i] {
					continue
				}
				if _, err := engine.New(engine.Config{Model: res.LMs[i], MMProj: other}); err == nil || !strings.Contains(err.Error(), "tower") {
					t.Errorf("%s's LM with %s's mmproj: %v, want a refusal", task, res.Tasks[j], err)
				}
			}
		}
	})
	t.Run("no tower pairs", func(t *testing.T) {
		dir := writeJinaNewNames(t)
		keepAdapter(t, dir, func(n string) bool { return !strings.Contains(n, ".visual.") })
		res, err := Convert(ctx, dir, t.TempDir(), Options{Task: "all", Type: "F32", MMProjType: "F32"})
		if err != nil {
			t.Fatal(err)
		}
		for i, mm := range res.MMProjs {
			if mm != res.MMProj || visionAdapterKey(t, res.LMs[i]) != "" {
				t.Errorf("%s: mmproj %s, shared %s", res.Tasks[i], mm, res.MMProj)
			}
		}
	})
	t.Run("qkv not targeted", func(t *testing.T) {
		// The pattern names no attention matrix of the tower: a task may
		// leave them out.
		dir := writeJinaNewNames(t)
		keepAdapter(t, dir, func(n string) bool {
			return !strings.Contains(n, "visual.blocks.0.attn.qkv.lora_A.retrieval") && !strings.Contains(n, "visual.blocks.0.attn.qkv.lora_B.retrieval")
		})
		if _, err := Convert(ctx, dir, t.TempDir(), Options{Type: "F32"}); err != nil {
			t.Fatal(err)
		}
	})
	for _, c := range []struct {
		name string
		edit func(t *testing.T, dir string)
		want string
	}{
		{"a targeted tower MLP without a pair (the last task's)", func(t *testing.T, dir string) {
			keepAdapter(t, dir, func(n string) bool {
				return !strings.Contains(n, "visual.blocks.2.mlp.gate_proj.lora_") || !strings.Contains(n, ".text-matching.")
			})
		}, "targets model.visual.blocks.2.mlp.gate_proj but the adapter holds no lora_A/lora_B"},
		{"a tower pair for a block the checkpoint lacks", func(t *testing.T, dir string) {
			editHeader(t, filepath.Join(dir, "adapters", "adapter_model.safetensors"), func(h string) string {
				return strings.ReplaceAll(h, "visual.blocks.1.mlp.up_proj.lora_", "visual.blocks.9.mlp.up_proj.lora_")
			})
		}, "visual.blocks.9.mlp.up_proj, which the checkpoint lacks"},
		{"a pair for no matrix at all", func(t *testing.T, dir string) {
			editHeader(t, filepath.Join(dir, "adapters", "adapter_model.safetensors"), func(h string) string {
				return strings.ReplaceAll(h, "visual.blocks.1.mlp.up_proj.lora_", "visual.blocks.1.mlp.xx_proj.lora_")
			})
		}, "visual.blocks.1.mlp.xx_proj, which the checkpoint lacks"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := writeJinaNewNames(t)
			c.edit(t, dir)
			out := t.TempDir()
			_, err := Convert(ctx, dir, out, Options{Task: "all"})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one with %q", err, c.want)
			}
			if left, _ := filepath.Glob(filepath.Join(out, "*")); len(left) > 0 {
				t.Errorf("files left behind: %v", left)
			}
		})
	}
}
