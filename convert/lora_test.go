package convert

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/safetensors"
)

func writeAdapter(t *testing.T, cfg map[string]any, tensors []safetensors.Data) string {
	dir := t.TempDir()
	b, _ := json.Marshal(cfg)
	os.WriteFile(filepath.Join(dir, "adapter_config.json"), b, 0o644)
	if err := safetensors.Write(filepath.Join(dir, "adapter_model.safetensors"), tensors, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestMergeByHand: W + (alpha/r)·B·A on a 3×4 weight, computed by hand.
func TestMergeByHand(t *testing.T) {
	// A is r×cols = 2×4, B is rows×r = 3×2.
	A := []float32{1, 0, 2, 0, 0, 1, 0, -1}
	B := []float32{1, 0, 0, 2, 1, 1}
	dir := writeAdapter(t, map[string]any{"peft_type": "LORA", "r": 2, "lora_alpha": 4, "target_modules": []string{"q_proj", "v_proj"}},
		[]safetensors.Data{
			{Name: "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", DType: safetensors.F32, Shape: []int64{2, 4}, Values: A},
			{Name: "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight", DType: safetensors.F32, Shape: []int64{3, 2}, Values: B},
		})
	a, err := OpenAdapter(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	w := make([]float64, 12)
	const q = "model.layers.0.self_attn.q_proj.weight"
	if !a.touches(q) || a.touches("model.layers.0.mlp.up_proj.weight") {
		t.Fatal("touches: wrong modules")
	}
	// Rows 1 and 2 alone, as a block of a larger conversion, then row 0.
	if err := a.mergeRows(q, w[4:], 1, 4); err != nil {
		t.Fatal(err)
	}
	if err := a.mergeRows(q, w[:4], 0, 4); err != nil {
		t.Fatal(err)
	}
	// s = 2; row 0 = 2·(1·A0) = [2 0 4 0]; row 1 = 2·(2·A1) = [0 4 0 -4];
	// row 2 = 2·(A0 + A1) = [2 2 4 -2].
	want := []float64{2, 0, 4, 0, 0, 4, 0, -4, 2, 2, 4, -2}
	for i := range want {
		if math.Abs(w[i]-want[i]) > 1e-12 {
			t.Fatalf("merged %v, want %v", w, want)
		}
	}
	if err := a.mergeRows(q, make([]float64, 10), 0, 5); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Errorf("mismatched shapes: %v", err)
	}
}

func TestAdapterConfigErrors(t *testing.T) {
	ok := []safetensors.Data{
		{Name: "m.q.lora_A.weight", DType: safetensors.F32, Shape: []int64{2, 2}, Values: make([]float32, 4)},
		{Name: "m.q.lora_B.weight", DType: safetensors.F32, Shape: []int64{2, 2}, Values: make([]float32, 4)},
	}
	for name, c := range map[string]struct {
		cfg     map[string]any
		tensors []safetensors.Data
		want    string
	}{
		"dora":      {map[string]any{"r": 2, "lora_alpha": 2, "use_dora": true}, ok, "DoRA"},
		"prefix":    {map[string]any{"peft_type": "PREFIX_TUNING", "r": 2}, ok, "only LORA"},
		"zero rank": {map[string]any{"r": 0}, ok, "r = 0"},
		"rank":      {map[string]any{"r": 4, "lora_alpha": 4}, ok, "do not match r = 4"},
		"no B":      {map[string]any{"r": 2, "lora_alpha": 2}, ok[:1], "not both"},
	} {
		if _, err := OpenAdapter(writeAdapter(t, c.cfg, c.tensors), ""); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error about %q", name, err, c.want)
		}
	}
	// colpali-engine's pattern keeps the tower out with a lookahead RE2
	// lacks; other Python-only syntax leaves the targets unchecked.
	for pattern, want := range map[string]bool{
		`(.*(model)(?!.*visual).*(down_proj|gate_proj|up_proj|k_proj|q_proj|v_proj|o_proj).*$|.*(custom_text_proj).*$)`: true,
		`(q)\1`: false,
		`(q`:    false,
	} {
		a, err := OpenAdapter(writeAdapter(t, map[string]any{"r": 2, "lora_alpha": 2, "target_modules": pattern}, ok), "")
		if err != nil {
			t.Fatalf("%s: %v", pattern, err)
		}
		if got := a.Config.targetsModule("model.layers.0.self_attn.q_proj"); got != want {
			t.Errorf("%s targets q_proj: %v, want %v", pattern, got, want)
		}
		a.Close()
	}
	for name, want := range map[string][3]string{
		"base_model.model.model.layers.0.mlp.up_proj.lora_A.weight":                     {"model.layers.0.mlp.up_proj", "A", ""},
		"base_model.model.model.layers.0.mlp.up_proj.lora_B.default.weight":             {"model.layers.0.mlp.up_proj", "B", ""},
		"base_model.model.model.language_model.layers.1.mlp.up_proj.lora_A.code.weight": {"model.layers.1.mlp.up_proj", "A", "code"},
		"base_model.model.multi_vector_projector.lora_B.default.text-matching.weight":   {"multi_vector_projector", "B", "text-matching"},
	} {
		m, f, in, ok := parseLoRAName(name)
		if got := [3]string{m, f, in}; !ok || got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	rs := AdapterConfig{R: 16, Alpha: 32, UseRSLoRA: true}
	if s := rs.Scaling(); math.Abs(s-8) > 1e-12 {
		t.Errorf("rslora scaling %v, want 8", s)
	}
}
