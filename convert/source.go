package convert

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vembed/vembed/safetensors"
)

// prefixes maps the tensor-name prefixes of the exports in use to the
// canonical ones of qwenlayout's naming table ("model." for the decoder,
// "visual." for the tower): transformers 4.52+ nests both under "model."
// ("model.language_model.", "model.visual."), colpali-engine's
// Qwen2_5_VLModel subclasses drop the outer "model." ("language_model.").
// TomoroAI's ColQwen3 wraps the whole Qwen3VLForConditionalGeneration as
// "vlm." ("vlm.model.language_model.", "vlm.model.visual.", "vlm.lm_head.").
var prefixes = []struct{ from, to string }{
	{"vlm.model.language_model.", "model."},
	{"vlm.model.visual.", "visual."},
	{"vlm.lm_head.", "lm_head."},
	// Ops-ColQwen3's loader strips an optional "model." before its head,
	// as ColQwen3's accepts the legacy names.
	{"model.custom_text_proj.", "custom_text_proj."},
	{"model.embedding_proj_layer.", "embedding_proj_layer."},
	{"model.language_model.", "model."},
	{"language_model.model.", "model."},
	{"language_model.", "model."},
	{"model.visual.", "visual."},
}

// canonical returns a checkpoint (or adapter module) name with canonical
// prefixes; PEFT's "base_model.model." wrapper is dropped.
func canonical(name string) string {
	name = strings.TrimPrefix(name, "base_model.model.")
	for _, p := range prefixes {
		if rest, ok := strings.CutPrefix(name, p.from); ok {
			return p.to + rest
		}
	}
	return name
}

// source is a checkpoint seen through canonical names.
type source struct {
	ck   *safetensors.Checkpoint
	real map[string]string // canonical → stored name
	used map[string]bool
	// saved holds, by canonical name, the whole tensors a PEFT adapter
	// saved beside its LoRA pairs (modules_to_save: ColQwen3.5's head),
	// which stand for the base's.
	saved     map[string]string
	savedFile *safetensors.File
}

// addSaved overlays the whole (non-LoRA) tensors of an adapter's
// adapter_model.safetensors; it returns their canonical names.
func (s *source) addSaved(dir string) ([]string, error) {
	f, err := safetensors.Open(filepath.Join(dir, "adapter_model.safetensors"))
	if err != nil {
		return nil, fmt.Errorf("convert: adapter: %w", err)
	}
	s.savedFile, s.saved = f, map[string]string{}
	var names []string
	for _, n := range f.Names() {
		if _, _, _, lora := parseLoRAName(n); lora {
			continue
		}
		switch f.Tensors[n].DType {
		case safetensors.BF16, safetensors.F16, safetensors.F32, safetensors.F64:
		default:
			return nil, fmt.Errorf("convert: %s: adapter tensor %q is %s; weights must be BF16, F16 or F32", dir, n, f.Tensors[n].DType)
		}
		c := canonical(n)
		s.saved[c] = n
		if _, ok := s.real[c]; !ok {
			s.real[c] = n
		}
		names = append(names, c)
	}
	return names, nil
}

func openSource(dir string) (*source, error) {
	ck, err := safetensors.OpenCheckpoint(dir)
	if err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	s := &source{ck: ck, real: map[string]string{}, used: map[string]bool{}}
	for _, n := range ck.Names() {
		t, f, _ := ck.Tensor(n)
		switch t.DType {
		case safetensors.BF16, safetensors.F16, safetensors.F32, safetensors.F64:
		default:
			ck.Close()
			return nil, fmt.Errorf("convert: %s: tensor %q is %s; weights must be BF16, F16 or F32", filepath.Base(f.Path), n, t.DType)
		}
		c := canonical(n)
		if other, dup := s.real[c]; dup {
			ck.Close()
			return nil, fmt.Errorf("convert: the checkpoint holds both %s and %s", other, n)
		}
		s.real[c] = n
	}
	return s, nil
}

func (s *source) tensor(canon string) (safetensors.Tensor, bool) {
	if n, ok := s.saved[canon]; ok {
		return s.savedFile.Tensors[n], true
	}
	t, _, ok := s.ck.Tensor(s.real[canon])
	return t, ok
}

// names lists the canonical names, sorted.
func (s *source) names() []string { return slices.Sorted(maps.Keys(s.real)) }

// values reads n values of a tensor from value start, widened to float64.
func (s *source) values(canon string, start, n int64) ([]float64, error) {
	if saved, ok := s.saved[canon]; ok {
		s.used[canon] = true
		return s.savedFile.Float64Range(saved, start, n)
	}
	name := s.real[canon]
	_, f, ok := s.ck.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("convert: the checkpoint has no %s", canon)
	}
	s.used[canon] = true
	return f.Float64Range(name, start, n)
}

// unused lists the tensors no output read, with their stored names.
func (s *source) unused() []string {
	var out []string
	for _, c := range s.names() {
		if !s.used[c] {
			out = append(out, s.real[c])
		}
	}
	return out
}

func (s *source) Close() error {
	if s.savedFile != nil {
		s.savedFile.Close()
	}
	return s.ck.Close()
}
