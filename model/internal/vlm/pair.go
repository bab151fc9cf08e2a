package vlm

import (
	"errors"
	"fmt"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/model"
)

// LM is the part of model.Model a family's decoder serves.
type LM interface {
	NewState(seq model.Sequence) (model.State, error)
	ForwardChunks(chunks []model.Chunk) ([][]float32, error)
}

// Tower is the part of model.Model a family's vision tower serves.
type Tower interface {
	NewVisionPass(imgs []model.ImageInput, trace bool) (model.VisionPass, error)
}

// Pair is a loaded llama.cpp GGUF pair: the language model file with the
// decoder bound from it and, when an mmproj was given, that file with the
// vision tower bound from it. A family's Model embeds it, which gives it
// model.Model but for the description: the family fills Meta after
// OpenPair, once it has checked that the two files match.
type Pair[D LM, V Tower] struct {
	name           string // the family, first word of every error
	lmFile, mmFile *gguf.File
	LM             D
	Vision         V // the zero value when no mmproj is loaded
	Meta           model.Info
}

// OpenPair opens lmPath and binds its decoder with loadLM and, when
// mmprojPath is not empty, opens it and binds its tower with loadTower.
// Errors start with the family's name and, past opening, name the file.
func OpenPair[D LM, V Tower](name, lmPath, mmprojPath string, loadLM func(*gguf.File) (D, error), loadTower func(*gguf.File) (V, error)) (Pair[D, V], error) {
	p := Pair[D, V]{name: name}
	var err error
	if p.lmFile, err = gguf.Open(lmPath); err != nil {
		return p, fmt.Errorf("%s: %w", name, err)
	}
	if p.LM, err = loadLM(p.lmFile); err != nil {
		p.Close()
		return p, fmt.Errorf("%s: %s: %w", name, lmPath, err)
	}
	if mmprojPath == "" {
		return p, nil
	}
	if p.mmFile, err = gguf.Open(mmprojPath); err != nil {
		p.Close()
		return p, fmt.Errorf("%s: %w", name, err)
	}
	if p.Vision, err = loadTower(p.mmFile); err != nil {
		p.Close()
		return p, fmt.Errorf("%s: %s: %w", name, mmprojPath, err)
	}
	return p, nil
}

// Mismatch closes the pair and returns err, a reason why its two files
// do not go together, with the family's name.
func (p *Pair[D, V]) Mismatch(err error) error {
	p.Close()
	return fmt.Errorf("%s: %w", p.name, err)
}

// Close releases the mapped files. The model must not be used afterwards.
func (p *Pair[D, V]) Close() error {
	var errs []error
	for _, f := range []*gguf.File{p.lmFile, p.mmFile} {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	var (
		lm  D
		vis V
	)
	p.lmFile, p.mmFile, p.LM, p.Vision = nil, nil, lm, vis
	return errors.Join(errs...)
}

// Info describes the model.
func (p *Pair[D, V]) Info() model.Info { return p.Meta }

// NewVisionPass checks the images and prepares a resumable pass of the
// tower over them (model.Model).
func (p *Pair[D, V]) NewVisionPass(imgs []model.ImageInput, trace bool) (model.VisionPass, error) {
	if p.mmFile == nil {
		return nil, fmt.Errorf("%s: the model has no vision tower (no mmproj loaded)", p.name)
	}
	return p.Vision.NewVisionPass(imgs, trace)
}

// NewState checks a sequence (ids, image placement) and computes its
// positions (model.Model).
func (p *Pair[D, V]) NewState(seq model.Sequence) (model.State, error) {
	if p.lmFile == nil {
		return nil, fmt.Errorf("%s: model is closed", p.name)
	}
	st, err := p.LM.NewState(seq)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.name, err)
	}
	return st, nil
}

// ForwardChunks runs one decoder pass over chunks of several sequences
// (model.Model): every row is bit for bit what a pass over its whole
// sequence alone gives.
func (p *Pair[D, V]) ForwardChunks(chunks []model.Chunk) ([][]float32, error) {
	if p.lmFile == nil {
		return nil, fmt.Errorf("%s: model is closed", p.name)
	}
	out, err := p.LM.ForwardChunks(chunks)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.name, err)
	}
	return out, nil
}

// Forward runs one sequence alone and returns its final hidden states.
func (p *Pair[D, V]) Forward(seq model.Sequence) ([]float32, error) {
	st, err := p.NewState(seq)
	if err != nil {
		return nil, err
	}
	out, err := p.ForwardChunks([]model.Chunk{{State: st, N: st.Len()}})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}
