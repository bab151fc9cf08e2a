package quantize

import (
	"fmt"
	"strings"

	"github.com/vembed/vembed/gguf"
)

// Spec is a file's weight encoding: one ggml type for every matrix (Mix
// empty, as llama-quantize --pure and the converter's --outtype do) or one
// of llama-quantize's "mostly" mixes, which give some matrices a larger type.
type Spec struct {
	Name string    // as given, upper case: "Q4_K_M", "F16", ...
	Base gguf.Type // the type of most matrices
	Mix  string    // "" (pure), "K_S", "K_M" or "K_L"
}

// mixes maps each mix name to its base type and llama_ftype number (llama.h).
var mixes = map[string]struct {
	base     gguf.Type
	fileType uint32
}{
	"Q3_K_S": {gguf.TypeQ3_K, 11}, "Q3_K_M": {gguf.TypeQ3_K, 12}, "Q3_K_L": {gguf.TypeQ3_K, 13},
	"Q4_K_S": {gguf.TypeQ4_K, 14}, "Q4_K_M": {gguf.TypeQ4_K, 15},
	"Q5_K_S": {gguf.TypeQ5_K, 16}, "Q5_K_M": {gguf.TypeQ5_K, 17},
}

// pureFileTypes is the llama_ftype general.file_type records for a file of
// one type. Pure K types record their "M" mix, as llama-quantize does.
var pureFileTypes = map[gguf.Type]uint32{
	gguf.TypeF32: 0, gguf.TypeF16: 1, gguf.TypeQ4_0: 2, gguf.TypeQ4_1: 3,
	gguf.TypeQ8_0: 7, gguf.TypeQ5_0: 8, gguf.TypeQ5_1: 9, gguf.TypeQ2_K: 10,
	gguf.TypeQ3_K: 12, gguf.TypeQ4_K: 15, gguf.TypeQ5_K: 17, gguf.TypeQ6_K: 18,
	gguf.TypeIQ4_NL: 25, gguf.TypeIQ4_XS: 30, gguf.TypeBF16: 32,
}

// MixNames lists the mixes ParseSpec accepts, for help texts.
const MixNames = "Q3_K_S, Q3_K_M, Q3_K_L, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M"

// ParseSpec parses a weight encoding name such as "F16", "Q4_K", "IQ4_XS"
// or "Q4_K_M" (case-insensitive). A plain type name means every matrix in
// that type; for Q8_0 and Q6_K this is exactly what llama-quantize writes
// for the same name, for the other types what it writes with --pure.
func ParseSpec(s string) (Spec, error) {
	u := strings.ToUpper(s)
	if m, ok := mixes[u]; ok {
		return Spec{Name: u, Base: m.base, Mix: u[3:]}, nil
	}
	t, err := gguf.ParseType(u)
	if err != nil {
		return Spec{}, fmt.Errorf("weight type %q: not a ggml type or a known mix (%s)", s, MixNames)
	}
	if _, ok := pureFileTypes[t]; !ok || !gguf.CanQuantize(t) {
		return Spec{}, fmt.Errorf("weight type %q is not a storage type for model weights", s)
	}
	return Spec{Name: u, Base: t}, nil
}

// FileType is the llama_ftype number general.file_type records for the spec.
func (s Spec) FileType() uint32 {
	if s.Mix != "" {
		return mixes[s.Name].fileType
	}
	return pureFileTypes[s.Base]
}

// Quantized reports whether the spec's base type is a block type (not
// F32, F16 or BF16).
func (s Spec) Quantized() bool { return s.Base.BlockSize() > 1 }

// Role tells the type chooser what a matrix is; llama-quantize gives the
// mixes' extra bits by role.
type Role int

// The roles llama-quantize's mixes distinguish.
const (
	RoleOther      Role = iota
	RoleOutput          // output.weight, or token_embd.weight when the LM has no output.weight
	RoleAttnV           // blk.N.attn_v.weight
	RoleFFNDown         // blk.N.ffn_down.weight
	RoleAttnOutput      // blk.N.attn_output.weight
)

// RoleOf returns the role of an LM tensor by its llama.cpp name; tied tells
// whether the file has no output.weight, so that token_embd is the output
// matrix too (llama-quantize then quantizes it as the output).
func RoleOf(name string, tied bool) Role {
	switch {
	case name == "output.weight", tied && name == "token_embd.weight":
		return RoleOutput
	case strings.Contains(name, "attn_v.weight"):
		return RoleAttnV
	case strings.Contains(name, "ffn_down"):
		return RoleFFNDown
	case strings.Contains(name, "attn_output.weight"):
		return RoleAttnOutput
	}
	return RoleOther
}

// UseMoreBits is llama-quantize's choice of the layers that get a larger
// type in the "M" mixes: the first and last eighth and every third between.
func UseMoreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}

// Pick chooses the stored type of a weight matrix with row length nx,
// following llama-quantize's llama_tensor_get_type for the mixes (layer =
// the block index, nLayers = the block count; the roles of a model without
// experts or grouped-query sharing below 4, and Qwen2-VL's grouping is 8)
// and then Fallback.
func (s Spec) Pick(r Role, nx int64, layer, nLayers int) gguf.Type {
	t := s.Base
	if s.Mix != "" {
		t = s.mixType(r, nx, layer, nLayers)
	}
	return Fallback(t, nx)
}

func (s Spec) mixType(r Role, nx int64, layer, n int) gguf.Type {
	t := s.Base
	switch r {
	case RoleOutput:
		if nx%int64(t.BlockSize()) != 0 {
			return gguf.TypeQ8_0
		}
		return gguf.TypeQ6_K
	case RoleAttnV:
		switch {
		case s.Name == "Q3_K_M" && layer < 2, s.Name == "Q3_K_L":
			return gguf.TypeQ5_K
		case s.Name == "Q3_K_M":
			return gguf.TypeQ4_K
		case (s.Name == "Q4_K_M" || s.Name == "Q5_K_M") && UseMoreBits(layer, n):
			return gguf.TypeQ6_K
		case s.Name == "Q4_K_S" && layer < 4:
			return gguf.TypeQ5_K
		}
	case RoleFFNDown:
		switch {
		case s.Name == "Q3_K_M" && layer < n/16, s.Name == "Q3_K_L":
			return gguf.TypeQ5_K
		case s.Name == "Q3_K_M":
			return gguf.TypeQ4_K
		case (s.Name == "Q4_K_M" || s.Name == "Q5_K_M") && UseMoreBits(layer, n):
			return gguf.TypeQ6_K
		case s.Name == "Q4_K_S" && layer < n/8:
			return gguf.TypeQ5_K
		}
	case RoleAttnOutput:
		switch s.Name {
		case "Q3_K_M":
			return gguf.TypeQ4_K
		case "Q3_K_L":
			return gguf.TypeQ5_K
		}
	}
	return t
}

// Fallback is llama-quantize's answer to a row length nx that is not a
// whole number of t's blocks: Q2_K/Q3_K/IQ4_XS → IQ4_NL, Q4_K → Q5_0,
// Q5_K → Q5_1, Q6_K → Q8_0, then F16 when even that does not divide the
// row. (llama.cpp refuses other indivisible types; its converter writes them
// as F16, and so do we.)
func Fallback(t gguf.Type, nx int64) gguf.Type {
	if nx%int64(t.BlockSize()) == 0 {
		return t
	}
	switch t {
	case gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeIQ4_XS:
		t = gguf.TypeIQ4_NL
	case gguf.TypeQ4_K:
		t = gguf.TypeQ5_0
	case gguf.TypeQ5_K:
		t = gguf.TypeQ5_1
	case gguf.TypeQ6_K:
		t = gguf.TypeQ8_0
	}
	if nx%int64(t.BlockSize()) != 0 {
		t = gguf.TypeF16
	}
	return t
}
