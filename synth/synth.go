package synth

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/qwenlayout"
)

// WritePair writes the LM and mmproj GGUFs of cfg into dir (created if
// missing) and returns their paths. Tensors are generated and written one
// chunk at a time, so memory use does not grow with the model.
func WritePair(dir string, cfg Config) (lmPath, mmprojPath string, err error) {
	if err := cfg.Validate(); err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("synth: %w", err)
	}
	lmPath = filepath.Join(dir, cfg.LMFileName())
	mmprojPath = filepath.Join(dir, cfg.MMProjFileName())
	if err := WriteLM(lmPath, cfg); err != nil {
		return "", "", err
	}
	if err := WriteMMProj(mmprojPath, cfg); err != nil {
		return "", "", err
	}
	return lmPath, mmprojPath, nil
}

// WriteLM writes the language-model GGUF of cfg to path.
func WriteLM(path string, cfg Config) error {
	return writeSpec(path, cfg, cfg.Seed, func() (*qwenlayout.Layout, error) {
		tok, err := cfg.tokenizerKVs()
		if err != nil {
			return nil, err
		}
		return cfg.LMLayout(tok)
	})
}

// WriteMMProj writes the vision (mmproj) GGUF of cfg to path.
func WriteMMProj(path string, cfg Config) error {
	return writeSpec(path, cfg, cfg.Seed+1, cfg.MMProjLayout)
}

// WriteMVProj writes the multi-vector projector side-car of cfg to path.
func WriteMVProj(path string, cfg Config) error {
	return writeSpec(path, cfg, cfg.Seed+2, cfg.MVProjLayout)
}

func writeSpec(path string, cfg Config, seed uint64, plan func() (*qwenlayout.Layout, error)) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	l, err := plan()
	if err != nil {
		return err
	}
	f := &fileSpec{Layout: l, seed: seed, std: cfg.Std}
	return f.write(path, cfg.Workers, cfg.Progress)
}

// tokenizerKVs returns the tokenizer metadata for the LM: the small
// vocabulary, or the tokenizer.* keys of c.VocabFrom copied with their types.
func (c *Config) tokenizerKVs() ([]qwenlayout.KV, error) {
	if c.VocabFrom == "" {
		v, err := c.smallVocab()
		if err != nil {
			return nil, err
		}
		return qwenlayout.VocabKVs(v, ChatTemplate), nil
	}
	src, err := gguf.Open(c.VocabFrom)
	if err != nil {
		return nil, fmt.Errorf("synth: vocabulary source: %w", err)
	}
	defer src.Close()
	var out []qwenlayout.KV
	ntok := -1
	for _, p := range src.KVs {
		if !strings.HasPrefix(p.Key, "tokenizer.") {
			continue
		}
		if p.Key == "tokenizer.ggml.tokens" {
			ntok = p.Value.Len()
		}
		out = append(out, qwenlayout.KV{Key: p.Key, Value: p.Value.Interface()})
	}
	switch {
	case ntok < 0:
		return nil, fmt.Errorf("synth: vocabulary source %s has no tokenizer.ggml.tokens", c.VocabFrom)
	case ntok != c.LM.Vocab:
		return nil, fmt.Errorf("synth: vocabulary source %s has %d tokens, the LM is configured for %d", c.VocabFrom, ntok, c.LM.Vocab)
	}
	return out, nil
}
