package convert

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/qwenlayout"
	"github.com/vembed/vembed/safetensors"
	"github.com/vembed/vembed/synth"
)

// editHeader rewrites a safetensors file's JSON header with edit, which
// must keep its length.
func editHeader(t *testing.T, path string, edit func(string) string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b)
	h := edit(string(b[8 : 8+n]))
	if len(h) != int(n) {
		t.Fatalf("header edit changed its length")
	}
	copy(b[8:], h)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func editJSON(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBadCheckpoints: damaged or inconsistent checkpoints and adapters
// give errors that say what is wrong, and leave no output file.
func TestBadCheckpoints(t *testing.T) {
	shard := func(dir string) string {
		m, _ := filepath.Glob(filepath.Join(dir, "model-00002-of-*.safetensors"))
		if len(m) != 1 {
			t.Fatalf("the test checkpoint has no second shard: %v", m)
		}
		return m[0]
	}
	adapter := func(dir string) string { return filepath.Join(dir, "adapters", "adapter_model.safetensors") }
	for _, c := range []struct {
		name   string
		task   string
		damage func(t *testing.T, dir string)
		want   string
	}{
		{name: "truncated shard", damage: func(t *testing.T, dir string) {
			st, _ := os.Stat(shard(dir))
			os.Truncate(shard(dir), st.Size()-100)
		}, want: "model-00002-of-0000"},
		{name: "missing shard", damage: func(t *testing.T, dir string) { os.Remove(shard(dir)) }, want: "listed in the index"},
		{name: "header lies about a size", damage: func(t *testing.T, dir string) {
			editHeader(t, shard(dir), func(h string) string { return strings.Replace(h, "64]", "65]", 1) })
		}, want: "bytes for shape"},
		{name: "unknown dtype", damage: func(t *testing.T, dir string) {
			editHeader(t, shard(dir), func(h string) string { return strings.Replace(h, `"BF16"`, `"F8X9"`, 1) })
		}, want: `unknown dtype "F8X9"`},
		{name: "integer dtype", damage: func(t *testing.T, dir string) {
			editHeader(t, shard(dir), func(h string) string { return strings.ReplaceAll(h, `"BF16"`, `"I16" `) })
		}, want: "is I16; weights must be BF16, F16 or F32"},
		{name: "garbage shard", damage: func(t *testing.T, dir string) {
			os.WriteFile(shard(dir), bytes.Repeat([]byte{0xff}, 64), 0o644)
		}, want: "header length"},
		{name: "config does not match the weights", damage: func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "config.json"), func(m map[string]any) { m["intermediate_size"] = 96 })
		}, want: "config.json implies"},
		{name: "no tokenizer", damage: func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "tokenizer.json")) }, want: "tokenizer.json"},
		{name: "adapter rank", damage: func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "adapters", "adapter_config.json"), func(m map[string]any) { m["r"] = 4 })
		}, want: "do not match r = 4"},
		{name: "adapter targets a module it has no pair for", damage: func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "adapters", "adapter_config.json"), func(m map[string]any) { m["target_modules"] = []string{"q_proj", "embed_tokens"} })
		}, want: "targets model.embed_tokens but the adapter holds no lora_A/lora_B"},
		{name: "adapter for a module the checkpoint lacks", damage: func(t *testing.T, dir string) {
			editHeader(t, adapter(dir), func(h string) string {
				return strings.ReplaceAll(h, "layers.1.self_attn.q_proj", "layers.7.self_attn.q_proj")
			})
		}, want: "model.layers.7.self_attn.q_proj, which the checkpoint lacks"},
		{name: "adapter of another width", damage: func(t *testing.T, dir string) {
			// Swap q_proj's pairs with k_proj's: k_proj's B has fewer rows.
			editHeader(t, adapter(dir), func(h string) string {
				h = strings.ReplaceAll(h, "layers.0.self_attn.q_proj.lora_B", "layers.0.self_attn.Q_proj.lora_B")
				h = strings.ReplaceAll(h, "layers.0.self_attn.k_proj.lora_B", "layers.0.self_attn.q_proj.lora_B")
				return strings.ReplaceAll(h, "layers.0.self_attn.Q_proj.lora_B", "layers.0.self_attn.k_proj.lora_B")
			})
		}, want: "the weight is"},
		{name: "unknown task", task: "summarize", damage: func(t *testing.T, dir string) {}, want: `no task "summarize"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, _ := writeCase(t, cases[0], safetensors.BF16)
			c.damage(t, dir)
			out := t.TempDir()
			_, err := Convert(context.Background(), dir, out, Options{Task: c.task})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one with %q", err, c.want)
			}
			t.Log(err)
			if left, _ := filepath.Glob(filepath.Join(out, "*")); len(left) > 0 {
				t.Errorf("files left behind: %v", left)
			}
		})
	}
}

// TestWrongPreset: a layout needs its tower.
func TestWrongPreset(t *testing.T) {
	cfg, _ := synth.Preset("tiny")
	err := synth.WriteHF(t.TempDir(), cfg, synth.HFOptions{Layout: qwenlayout.LayoutGME})
	if err == nil || !strings.Contains(err.Error(), "needs a qwen2vl_merger tower") {
		t.Errorf("gme from a Qwen2.5-VL preset: %v", err)
	}
}
