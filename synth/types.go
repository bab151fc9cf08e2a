package synth

import (
	"fmt"
	"strings"

	"github.com/vembed/vembed/gguf"
)

// TypeSpec is a file's weight encoding: one ggml type for every matrix
// (Mix empty, as llama-quantize --pure and the converter's --outtype do) or
// one of llama.cpp's "mostly" mixes.
type TypeSpec struct {
	Name string    // as given, upper case: "Q4_K_M", "F16", ...
	Base gguf.Type // the type of most matrices
	Mix  string    // "" (pure), "K_M" or "K_S"
}

// ParseTypeSpec parses a weight encoding name such as "F16", "Q4_K",
// "IQ4_XS" or "Q4_K_M" (case-insensitive).
func ParseTypeSpec(s string) (TypeSpec, error) {
	u := strings.ToUpper(s)
	switch u {
	case "Q4_K_M", "Q4_K_S", "Q5_K_M", "Q5_K_S":
		base := gguf.TypeQ4_K
		if u[1] == '5' {
			base = gguf.TypeQ5_K
		}
		return TypeSpec{Name: u, Base: base, Mix: u[3:]}, nil
	}
	t, err := gguf.ParseType(u)
	if err != nil {
		return TypeSpec{}, fmt.Errorf("synth: weight type %q: not a ggml type or a known mix (Q4_K_M, Q4_K_S, Q5_K_M, Q5_K_S)", s)
	}
	if !gguf.CanQuantize(t) || t == gguf.TypeQ8_K {
		return TypeSpec{}, fmt.Errorf("synth: weight type %q is not a storage type for model weights", s)
	}
	return TypeSpec{Name: u, Base: t}, nil
}

// FileType is the llama_ftype number general.file_type records for the spec
// (llama.h). Pure K types record their "M" mix, as llama-quantize does.
func (s TypeSpec) FileType() uint32 {
	if s.Mix != "" {
		return map[string]uint32{"Q4_K_M": 15, "Q4_K_S": 14, "Q5_K_M": 17, "Q5_K_S": 16}[s.Name]
	}
	return map[gguf.Type]uint32{
		gguf.TypeF32: 0, gguf.TypeF16: 1, gguf.TypeQ4_0: 2, gguf.TypeQ4_1: 3,
		gguf.TypeQ8_0: 7, gguf.TypeQ5_0: 8, gguf.TypeQ5_1: 9, gguf.TypeQ2_K: 10,
		gguf.TypeQ3_K: 12, gguf.TypeQ4_K: 15, gguf.TypeQ5_K: 17, gguf.TypeQ6_K: 18,
		gguf.TypeIQ4_NL: 25, gguf.TypeIQ4_XS: 30, gguf.TypeBF16: 32,
	}[s.Base]
}

// useMoreBits is llama-quantize's choice of the layers that get a larger
// type in the "M" mixes: the first and last eighth and every third between.
func useMoreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}

// role tells the type chooser what a matrix is.
type role int

const (
	roleOther  role = iota
	roleOutput      // output.weight, or token_embd.weight when tied
	roleAttnV
	roleFFNDown
)

// pick chooses the stored type of a 2-D weight with row length nx, following
// llama-quantize's llama_tensor_get_type for the mixes (layer = the block
// index, nLayers = block count) and its fallback when a row is not a whole
// number of blocks: Q2_K/Q3_K/IQ4_XS → IQ4_NL, Q4_K → Q5_0, Q5_K → Q5_1,
// Q6_K → Q8_0, then F16 when even that does not divide the row. (llama.cpp
// refuses other indivisible types; the converter writes them as F16, and so
// do we.)
func (s TypeSpec) pick(r role, nx int64, layer, nLayers int) gguf.Type {
	t := s.Base
	if s.Mix != "" {
		switch r {
		case roleOutput:
			if nx%int64(t.BlockSize()) != 0 {
				t = gguf.TypeQ8_0
			} else {
				t = gguf.TypeQ6_K
			}
		case roleAttnV:
			if s.Mix == "K_M" && useMoreBits(layer, nLayers) {
				t = gguf.TypeQ6_K
			} else if s.Name == "Q4_K_S" && layer < 4 {
				t = gguf.TypeQ5_K
			}
		case roleFFNDown:
			if s.Mix == "K_M" && useMoreBits(layer, nLayers) {
				t = gguf.TypeQ6_K
			} else if s.Name == "Q4_K_S" && layer < nLayers/8 {
				t = gguf.TypeQ5_K
			}
		}
	}
	return fallback(t, nx)
}

func fallback(t gguf.Type, nx int64) gguf.Type {
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
