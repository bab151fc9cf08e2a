package synth

import "github.com/vembed/vembed/gguf"

// The layouts below are the plans WriteLM, WriteMMProj and WriteMVProj fill
// with random values, given to other writers (the checkpoint converter) so
// that a converted file and a synthetic one share every key, tensor name,
// shape, storage type and order.

// TensorLayout is one planned tensor: its GGUF name, its shape (innermost
// dimension first, as ggml's ne) and its storage type.
type TensorLayout struct {
	Name string
	NE   []int64
	Type gguf.Type
	// Norm marks tensors drawn around 1 (norm weights) by the random fill.
	Norm bool
}

// Elements is the product of the shape.
func (t TensorLayout) Elements() int64 { return elements(t.NE) }

// Layout is a GGUF file without its values: metadata in file order and
// tensors in file order.
type Layout struct {
	KVs     []KV
	Tensors []TensorLayout
}

func (f *fileSpec) layout() *Layout {
	l := &Layout{KVs: append([]KV(nil), f.kvs...)}
	for _, t := range f.tensors {
		l.Tensors = append(l.Tensors, TensorLayout{Name: t.name, NE: append([]int64(nil), t.ne...), Type: t.typ, Norm: t.init == initNorm})
	}
	return l
}

// LMLayout plans the language-model file of c with the given tokenizer
// metadata (as VocabKVs returns it); nil uses c's own vocabulary, as
// WriteLM does.
func (c *Config) LMLayout(tokenizer []KV) (*Layout, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if tokenizer == nil {
		var err error
		if tokenizer, err = c.tokenizerKVs(); err != nil {
			return nil, err
		}
	}
	f, err := c.lmSpec(tokenizer)
	if err != nil {
		return nil, err
	}
	return f.layout(), nil
}

// MMProjLayout plans the vision (mmproj) file of c.
func (c *Config) MMProjLayout() (*Layout, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	f, err := c.mmprojSpec()
	if err != nil {
		return nil, err
	}
	return f.layout(), nil
}

// MVProjLayout plans the multi-vector projector side-car of c.
func (c *Config) MVProjLayout() (*Layout, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	f, err := c.mvprojSpec()
	if err != nil {
		return nil, err
	}
	return f.layout(), nil
}

// VocabKVs returns the tokenizer.* metadata of v as llama.cpp's converter
// writes it for Qwen (model gpt2, pre-tokenizer qwen2), with the given chat
// template ("" writes none).
func VocabKVs(v *Vocab, chatTemplate string) []KV {
	kvs := vocabKVs(v)
	if chatTemplate == "" {
		return kvs[:len(kvs)-1]
	}
	kvs[len(kvs)-1].Value = chatTemplate
	return kvs
}
