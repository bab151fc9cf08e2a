package quantize

import (
	"fmt"
	"strings"
)

// Group is a family of vision-encoder (mmproj) tensors that is kept in its
// input precision or quantized as a whole.
type Group string

// The vision tensor groups, by llama.cpp's mmproj tensor names.
const (
	GroupPatch    Group = "patch"    // v.patch_embd.*: the patch embedding
	GroupPosition Group = "position" // v.position_embd.*: learned positions (not in Qwen2.5-VL)
	GroupAttnQKV  Group = "attn_qkv" // v.blk.N.attn_{q,k,v}.weight
	GroupAttnOut  Group = "attn_out" // v.blk.N.attn_out.weight
	GroupFFNUp    Group = "ffn_up"   // v.blk.N.ffn_{up,gate}.weight
	GroupFFNDown  Group = "ffn_down" // v.blk.N.ffn_down.weight
	GroupMerger   Group = "merger"   // mm.*: the patch merger's MLP
	GroupOther    Group = "other"
)

// Groups lists every group in a stable order.
var Groups = []Group{GroupPatch, GroupPosition, GroupAttnQKV, GroupAttnOut, GroupFFNUp, GroupFFNDown, GroupMerger, GroupOther}

// VisionGroup returns the group of an mmproj tensor name.
func VisionGroup(name string) Group {
	switch {
	case strings.HasPrefix(name, "v.patch_embd"):
		return GroupPatch
	case strings.HasPrefix(name, "v.position_embd"):
		return GroupPosition
	case strings.HasPrefix(name, "mm."):
		return GroupMerger
	case !strings.HasPrefix(name, "v.blk."):
		return GroupOther
	case strings.Contains(name, ".attn_q."), strings.Contains(name, ".attn_k."), strings.Contains(name, ".attn_v."):
		return GroupAttnQKV
	case strings.Contains(name, ".attn_out."):
		return GroupAttnOut
	case strings.Contains(name, ".ffn_up."), strings.Contains(name, ".ffn_gate."):
		return GroupFFNUp
	case strings.Contains(name, ".ffn_down."):
		return GroupFFNDown
	}
	return GroupOther
}

// ParseGroups parses a comma-separated list of group names; "none" is the
// empty list.
func ParseGroups(s string) ([]Group, error) {
	out := []Group{}
	if s == "none" || s == "" {
		return out, nil
	}
	for _, f := range strings.Split(s, ",") {
		g := Group(strings.TrimSpace(f))
		if !keeps(Groups, g) {
			return nil, fmt.Errorf("quantize: unknown vision tensor group %q (groups: %s)", g, groupList())
		}
		out = append(out, g)
	}
	return out, nil
}

func groupList() string {
	s := make([]string, len(Groups))
	for i, g := range Groups {
		s[i] = string(g)
	}
	return strings.Join(s, ", ")
}

// DefaultKeep are the vision groups that stay in their input precision by
// default, chosen by measurement on the jina-v4-shaped synthetic pair
// (docs/model-files.md): quantizing one group alone to Q4_K cost, in image-embedding
// cosine to the F16 encoder per MiB saved, 3.4e-4 for attn_out and 2.7e-4
// for the merger against 1.2e-4 for attn_qkv and 0.5e-4 for ffn_up, so the
// first two are kept (about 10% of the encoder's bytes). The patch
// embedding's rows of 14 values fit no block type anyway; ffn_down's rows
// of 3420 fit none either and fall back to F16. Norms and biases are
// vectors and always stay F32.
var DefaultKeep = []Group{GroupPatch, GroupPosition, GroupAttnOut, GroupMerger}

// DefaultVisionType is vembed quantize's type for an mmproj when none is
// given: the cheapest one whose image embeddings stay within a cosine of
// 0.999 of the F16 encoder's on the jina-v4-shaped synthetic pair, with
// DefaultKeep (docs/model-files.md).
const DefaultVisionType = "Q8_0"
