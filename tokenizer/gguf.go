package tokenizer

import (
	"fmt"

	"github.com/vembed/vembed/gguf"
)

// FromGGUF builds the Tokenizer stored in a GGUF file's tokenizer.ggml.*
// keys. The Tokenizer keeps no reference to f.
func FromGGUF(f *gguf.File, opts Options) (*Tokenizer, error) {
	v, err := vocabFromGGUF(f)
	if err != nil {
		return nil, err
	}
	return New(v, opts)
}

func vocabFromGGUF(f *gguf.File) (Vocab, error) {
	d, err := f.TokenizerData()
	if err != nil {
		return Vocab{}, fmt.Errorf("tokenizer: %w", err)
	}
	return Vocab{
		Model:      d.Model,
		Pre:        d.Pre,
		Tokens:     d.Tokens,
		TokenTypes: d.TokenTypes,
		Merges:     d.Merges,
		BOS:        d.BOS,
		EOS:        d.EOS,
		PAD:        d.PAD,
		AddBOS:     d.AddBOS,
	}, nil
}
