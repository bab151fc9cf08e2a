package synth

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vembed/vembed/qwenlayout"
	"github.com/vembed/vembed/safetensors"
)

// TestWriteHF checks the files of each layout: the index lists every
// tensor of the shards, the tensors are those the GGUF layouts come from
// (with the layout's prefixes and its multi-vector head), the adapters hold
// one A/B pair per task and targeted module with r = 32, and the same
// configuration gives the same bytes.
func TestWriteHF(t *testing.T) {
	for _, c := range []struct {
		layout, preset, lm string
		pairs              int // A/B pairs per task: 7 projections per layer, plus the head
		tasks              []string
		pooling            string
	}{
		{qwenlayout.LayoutJinaV4, "tiny", "model.layers.", 2*7 + 1, qwenlayout.JinaTasks, ""},
		{qwenlayout.LayoutColQwen25, "tiny", "language_model.layers.", 2*7 + 1, nil, ""},
		{qwenlayout.LayoutColQwen2, "tiny-qwen2vl", "model.layers.", 2*7 + 1, nil, ""},
		{qwenlayout.LayoutGME, "tiny-qwen2vl", "model.layers.", 0, nil, ""},
		{qwenlayout.LayoutQwen3VL, "tiny-qwen3vl", "model.language_model.layers.", 0, nil, ""},
		{qwenlayout.LayoutQwen3VLReranker, "tiny-qwen3vl", "model.language_model.layers.", 0, nil, "rank"},
	} {
		t.Run(c.layout, func(t *testing.T) {
			cfg, err := Preset(c.preset)
			if err != nil {
				t.Fatal(err)
			}
			if c.pooling != "" {
				cfg.LM.Pooling = c.pooling
			}
			dir := t.TempDir()
			o := HFOptions{Layout: c.layout, ShardBytes: 64 << 10}
			if err := WriteHF(dir, cfg, o); err != nil {
				t.Fatal(err)
			}
			ck, err := safetensors.OpenCheckpoint(dir) // checks the index against the shards
			if err != nil {
				t.Fatal(err)
			}
			defer ck.Close()
			names := ck.Names()
			shards, _ := filepath.Glob(filepath.Join(dir, "model-*-of-*.safetensors"))
			lm, _ := cfg.LMLayout([]qwenlayout.KV{})
			mm, _ := cfg.MMProjLayout()
			want := 0
			for _, l := range []*qwenlayout.Layout{lm, mm} {
				hts, err := qwenlayout.HFTensors(l, qwenlayout.HFNaming{Projector: cfg.Projector, DeepStack: cfg.Vision.DeepStack, Tied: !cfg.LM.Untied}, cfg.LM.Vocab)
				if err != nil {
					t.Fatal(err)
				}
				want += len(hts)
			}
			head := map[string]string{qwenlayout.LayoutJinaV4: "multi_vector_projector", qwenlayout.LayoutColQwen25: "custom_text_proj", qwenlayout.LayoutColQwen2: "custom_text_proj"}[c.layout]
			if head != "" {
				want += 2
				if !slices.Contains(names, head+".weight") {
					t.Errorf("no %s.weight", head)
				}
			}
			switch {
			case len(shards) < 2:
				t.Errorf("%d shards", len(shards))
			case len(names) != want:
				t.Errorf("%d tensors, want %d", len(names), want)
			case !slices.Contains(names, c.lm+"0.self_attn.q_proj.weight"):
				t.Errorf("decoder tensors not under %s: %v", c.lm, names[:5])
			}
			for _, n := range names {
				if info, _, _ := ck.Tensor(n); info.DType != safetensors.BF16 {
					t.Fatalf("%s is %s, want BF16", n, info.DType)
				}
			}
			if c.pairs == 0 {
				if _, err := os.Stat(filepath.Join(dir, "adapter_config.json")); err == nil {
					t.Error("an adapter for a layout without one")
				}
				return
			}
			adir := dir
			if c.layout == qwenlayout.LayoutJinaV4 {
				adir = filepath.Join(dir, "adapters")
			}
			var ac struct {
				R     int     `json:"r"`
				Alpha float64 `json:"lora_alpha"`
			}
			b, _ := os.ReadFile(filepath.Join(adir, "adapter_config.json"))
			if err := json.Unmarshal(b, &ac); err != nil || ac.R != 32 || ac.Alpha != 32 {
				t.Errorf("adapter_config.json: %+v %v", ac, err)
			}
			af, err := safetensors.Open(filepath.Join(adir, "adapter_model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			defer af.Close()
			tasks := c.tasks
			if tasks == nil {
				tasks = []string{""}
			}
			for _, task := range tasks {
				infix := ""
				if task != "" {
					infix = "." + task
				}
				n := 0
				for name := range af.Tensors {
					if strings.HasPrefix(name, "base_model.model.") && strings.HasSuffix(name, ".lora_A"+infix+".weight") {
						n++
					}
				}
				if n != c.pairs {
					t.Errorf("task %q: %d lora_A tensors, want %d", task, n, c.pairs)
				}
			}

			again := t.TempDir()
			if err := WriteHF(again, cfg, o); err != nil {
				t.Fatal(err)
			}
			for _, s := range shards {
				a, _ := os.ReadFile(s)
				b, _ := os.ReadFile(filepath.Join(again, filepath.Base(s)))
				if string(a) != string(b) {
					t.Errorf("%s differs between two runs", filepath.Base(s))
				}
			}
		})
	}
	if _, ok := qwenlayout.HFSourceOf("v.patch_embd.weight.2", qwenlayout.HFNaming{Projector: qwenlayout.ProjectorQwen25VL}); ok {
		t.Error("a third temporal slice has a source")
	}
	if _, ok := qwenlayout.HFSourceOf("blk.0.attn_k_norm.weight", qwenlayout.HFNaming{Projector: qwenlayout.ProjectorQwen25VL}); ok {
		t.Error("a Qwen3 tensor has a Qwen2-VL source")
	}
	q3 := qwenlayout.HFNaming{Projector: qwenlayout.ProjectorQwen3VL, DeepStack: []int{5, 11, 17}, Tied: true, Yes: 9, No: 7}
	for gg, want := range map[string]string{
		"v.deepstack.11.fc2.bias":  "visual.deepstack_merger_list.1.linear_fc2.bias",
		"v.blk.3.attn_qkv.weight":  "visual.blocks.3.attn.qkv.weight",
		"mm.0.weight":              "visual.merger.linear_fc1.weight",
		"v.post_ln.bias":           "visual.merger.norm.bias",
		"cls.output.weight":        "model.embed_tokens.weight",
		"blk.2.attn_q_norm.weight": "model.layers.2.self_attn.q_norm.weight",
		"v.position_embd.weight":   "visual.pos_embed.weight",
	} {
		if src, ok := qwenlayout.HFSourceOf(gg, q3); !ok || src.Name != want {
			t.Errorf("Qwen3-VL %s: source %q, want %q", gg, src.Name, want)
		}
	}
	if src, _ := qwenlayout.HFSourceOf("cls.output.weight", q3); !slices.Equal(src.Rows, []int{9, 7}) {
		t.Errorf("cls.output rows %v, want yes then no", src.Rows)
	}
	if _, ok := qwenlayout.HFSourceOf("v.deepstack.4.fc1.weight", q3); ok {
		t.Error("a DeepStack merger at a block that is no tap has a source")
	}
}
