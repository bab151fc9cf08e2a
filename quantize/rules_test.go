package quantize

import (
	"testing"

	"github.com/vembed/vembed/gguf"
)

func TestParseSpec(t *testing.T) {
	for in, want := range map[string]Spec{
		"f16":    {Name: "F16", Base: gguf.TypeF16},
		"Q4_K":   {Name: "Q4_K", Base: gguf.TypeQ4_K},
		"q4_k_m": {Name: "Q4_K_M", Base: gguf.TypeQ4_K, Mix: "K_M"},
		"Q3_K_L": {Name: "Q3_K_L", Base: gguf.TypeQ3_K, Mix: "K_L"},
		"IQ4_XS": {Name: "IQ4_XS", Base: gguf.TypeIQ4_XS},
	} {
		got, err := ParseSpec(in)
		if err != nil || got != want {
			t.Errorf("ParseSpec(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "Q4_K_X", "Q8_K", "F64", "nonsense"} {
		if _, err := ParseSpec(bad); err == nil {
			t.Errorf("ParseSpec(%q): no error", bad)
		}
	}
}

// TestPickMixes checks llama_tensor_get_type's choices for a 36-layer model
// (Qwen2.5-VL-3B's depth): use_more_bits picks layers 0-3, 6, 9, ... and
// 31-35.
func TestPickMixes(t *testing.T) {
	const n = 36
	cases := []struct {
		mix   string
		role  Role
		layer int
		want  gguf.Type
	}{
		{"Q4_K_M", RoleOutput, 0, gguf.TypeQ6_K},
		{"Q4_K_M", RoleAttnV, 0, gguf.TypeQ6_K},
		{"Q4_K_M", RoleAttnV, 4, gguf.TypeQ4_K},
		{"Q4_K_M", RoleAttnV, 6, gguf.TypeQ6_K},
		{"Q4_K_M", RoleFFNDown, 35, gguf.TypeQ6_K},
		{"Q4_K_M", RoleOther, 0, gguf.TypeQ4_K},
		{"Q4_K_S", RoleAttnV, 3, gguf.TypeQ5_K},
		{"Q4_K_S", RoleAttnV, 4, gguf.TypeQ4_K},
		{"Q4_K_S", RoleFFNDown, 3, gguf.TypeQ5_K},
		{"Q4_K_S", RoleFFNDown, 4, gguf.TypeQ4_K},
		{"Q5_K_S", RoleAttnV, 0, gguf.TypeQ5_K},
		{"Q5_K_M", RoleFFNDown, 0, gguf.TypeQ6_K},
		{"Q3_K_M", RoleAttnV, 1, gguf.TypeQ5_K},
		{"Q3_K_M", RoleAttnV, 2, gguf.TypeQ4_K},
		{"Q3_K_M", RoleFFNDown, 1, gguf.TypeQ5_K},
		{"Q3_K_M", RoleFFNDown, 2, gguf.TypeQ4_K},
		{"Q3_K_M", RoleAttnOutput, 9, gguf.TypeQ4_K},
		{"Q3_K_L", RoleAttnOutput, 9, gguf.TypeQ5_K},
		{"Q3_K_S", RoleAttnV, 0, gguf.TypeQ3_K},
		{"Q3_K_S", RoleOutput, 0, gguf.TypeQ6_K},
		{"Q6_K", RoleOutput, 0, gguf.TypeQ6_K},
		{"Q8_0", RoleOutput, 0, gguf.TypeQ8_0},
	}
	for _, c := range cases {
		s, err := ParseSpec(c.mix)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Pick(c.role, 2048, c.layer, n); got != c.want {
			t.Errorf("%s role %d layer %d: %s, want %s", c.mix, c.role, c.layer, got, c.want)
		}
	}
	s, _ := ParseSpec("Q4_K_M")
	if got := s.Pick(RoleOutput, 2048+32, 0, n); got != gguf.TypeQ8_0 {
		t.Errorf("Q4_K_M output with rows of 2080: %s, want Q8_0", got)
	}
}

func TestRoleOf(t *testing.T) {
	for _, c := range []struct {
		name string
		tied bool
		want Role
	}{
		{"output.weight", false, RoleOutput},
		{"token_embd.weight", true, RoleOutput},
		{"token_embd.weight", false, RoleOther},
		{"blk.3.attn_v.weight", false, RoleAttnV},
		{"blk.3.ffn_down.weight", false, RoleFFNDown},
		{"blk.3.attn_output.weight", false, RoleAttnOutput},
		{"blk.3.attn_q.weight", false, RoleOther},
	} {
		if got := RoleOf(c.name, c.tied); got != c.want {
			t.Errorf("RoleOf(%q, %v) = %d, want %d", c.name, c.tied, got, c.want)
		}
	}
}
