package qwen35

import (
	"strings"
	"testing"

	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/model/internal/modeltest"
)

// TestLoadRefusals: a qwen35 file whose metadata cannot describe the
// tensors, or a pair that does not match, is refused with the value that
// is wrong named, and a sequence past the context length with the bound.
func TestLoadRefusals(t *testing.T) {
	lm, mm := modeltest.SynthPair(t, "colvec1.1-4b", "F32", "F32", tinyColVec(false))
	for _, c := range []struct {
		meta map[string]any
		want string
	}{
		{map[string]any{"qwen35.rope.dimension_count": uint32(40)}, "rope.dimension_count 40"},
		{map[string]any{"qwen35.rope.dimension_sections": []int32{2, 2, 1, 0}}, "sums to 5"},
		{map[string]any{"qwen35.ssm.group_count": uint32(3)}, "not a multiple of 3 key heads"},
		{map[string]any{"qwen35.ssm.inner_size": uint32(65)}, "inner 65"},
		{map[string]any{"qwen35.ssm.state_size": nil}, "ssm.state_size"},
		{map[string]any{"qwen35.full_attention_interval": uint32(0)}, "full_attention_interval 0"},
		{map[string]any{"qwen35.ssm.conv_kernel": uint32(1 << 30)}, "out of range"},
		{map[string]any{"qwen35.attention.causal": "no"}, "qwen35.attention.causal"},
		{map[string]any{"qwen35.ssm.state_size": uint32(32)}, "attn_qkv.weight"},
		{map[string]any{"general.architecture": "qwen3vl"}, "not a Qwen3.5"},
	} {
		bad := modeltest.RewriteGGUF(t, lm, c.meta, nil)
		m, err := Load(bad, mm)
		if err == nil {
			m.Close()
			t.Errorf("%v: loaded", c.meta)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %q does not say %q", c.meta, err, c.want)
		}
	}
	m, err := Load(lm, mm)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := m.Info().ContextLength
	if _, err := m.NewState(model.Sequence{IDs: make([]int32, ctx+1)}); err == nil || !strings.Contains(err.Error(), "exceed the context length") {
		t.Errorf("%d tokens: %v", ctx+1, err)
	}
	pad := m.LM.ImagePad
	im := model.ImageEmbedding{Rows: make([]float32, 64), Deep: [][]float32{make([]float32, 64)}, First: 1, GridT: 1, GridH: 2, GridW: 2}
	if _, err := m.NewState(model.Sequence{IDs: []int32{1, pad, 2}, Images: []model.ImageEmbedding{im}}); err == nil || !strings.Contains(err.Error(), "DeepStack") {
		t.Errorf("an image with DeepStack rows: %v", err)
	}
}
