package synth

import (
	"fmt"
	"os"
	"path/filepath"
)

// LMFileName and MMProjFileName are the names WritePair gives its files,
// following llama.cpp's "<name>-<encoding>.gguf" / "mmproj-<name>-<encoding>.gguf".
func (c *Config) LMFileName() string { return c.Name + "-" + upper(c.LMType) + ".gguf" }

// MMProjFileName is the vision file's name; see LMFileName.
func (c *Config) MMProjFileName() string {
	return "mmproj-" + c.Name + "-" + upper(c.MMProjType) + ".gguf"
}

// MVProjFileName is the multi-vector side-car's name.
func (c *Config) MVProjFileName() string {
	return "mvproj-" + c.Name + "-" + upper(c.MVProj.Type) + ".gguf"
}

func upper(s string) string {
	if t, err := ParseTypeSpec(s); err == nil {
		return t.Name
	}
	return s
}

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
	return writeSpec(path, cfg, func() (*fileSpec, error) {
		tok, err := cfg.tokenizerKVs()
		if err != nil {
			return nil, err
		}
		return cfg.lmSpec(tok)
	})
}

// WriteMMProj writes the vision (mmproj) GGUF of cfg to path.
func WriteMMProj(path string, cfg Config) error {
	return writeSpec(path, cfg, cfg.mmprojSpec)
}

// WriteMVProj writes the multi-vector projector side-car of cfg to path.
func WriteMVProj(path string, cfg Config) error {
	return writeSpec(path, cfg, cfg.mvprojSpec)
}

func writeSpec(path string, cfg Config, plan func() (*fileSpec, error)) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	f, err := plan()
	if err != nil {
		return err
	}
	return f.write(path, cfg.Workers, cfg.Progress)
}
