package synth

import (
	"fmt"

	"github.com/vembed/vembed/quantize"
)

// TypeSpec is a file's weight encoding: one ggml type for every matrix
// (Mix empty, as llama-quantize --pure and the converter's --outtype do) or
// one of llama.cpp's "mostly" mixes. The rules live in package quantize,
// which vembed quantize and the converter share.
type TypeSpec = quantize.Spec

// ParseTypeSpec parses a weight encoding name such as "F16", "Q4_K",
// "IQ4_XS" or "Q4_K_M" (case-insensitive); see quantize.ParseSpec.
func ParseTypeSpec(s string) (TypeSpec, error) {
	spec, err := quantize.ParseSpec(s)
	if err != nil {
		return TypeSpec{}, fmt.Errorf("synth: %w", err)
	}
	return spec, nil
}
