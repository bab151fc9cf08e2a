package heads

import (
	"errors"
	"fmt"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/kernels"
)

// MultiVector is the late-interaction projector of jina-embeddings-v4: a
// Linear map from every token's final hidden state to OutputDim values,
// each result L2-normalized, scored with ColBERT MaxSim.
//
// # Format
//
// The weights live in a small side-car GGUF (v3) file, or in the LM GGUF
// itself; the loader looks for the same tensors in both:
//
//	mvproj.weight   ggml ne = [input_dim, output_dim] (torch [output_dim, input_dim]):
//	                y[o] = Σ_i W[o][i]·x[i] + b[o]; any weight type vembed reads
//	mvproj.bias     ne = [output_dim], float type (optional; zero when absent)
//
// and reads this metadata, all optional, checked against the tensors when
// present:
//
//	general.architecture = "mvproj", general.type = "mvproj"
//	mvproj.input_dim   u32   the LM hidden width
//	mvproj.output_dim  u32   128 for jina-embeddings-v4
//	mvproj.normalize   bool  L2-normalize each output vector (default true)
//	mvproj.task        string the task whose LoRA is merged into the weights
//
// A multi-vector output has one vector per token, prompt tokens included.
//
// An LM GGUF whose KeyMultiVectorSource is "hidden" needs no projector:
// its rows are the hidden states themselves, L2-normalized
// (nemotron-colembed-vl-v2); HiddenRows makes that identity projector.
type MultiVector struct {
	InputDim, OutputDim int
	Normalize           bool   // L2-normalize each projected vector
	Task                string // "" when not recorded

	w    *kernels.Matrix
	bias []float32
	file *gguf.File // owned when loaded from a path
}

// KeyMultiVectorSource is the LM metadata key (STRING) that says where a
// model's per-token rows come from: "mvproj" (the default: a projector,
// in the LM or a side-car) or "hidden" (the hidden states, normalized).
const KeyMultiVectorSource = "vembed.multivector.source"

// HiddenRows returns the projector of a model whose per-token rows are its
// dim-wide hidden states, each L2-normalized.
func HiddenRows(dim int) *MultiVector {
	return &MultiVector{InputDim: dim, OutputDim: dim, Normalize: true}
}

// LoadMultiVector opens a projector side-car (or an LM GGUF carrying the
// mvproj tensors). The projector keeps the file mapped until Close.
func LoadMultiVector(path string) (*MultiVector, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("heads: %w", err)
	}
	p, err := MultiVectorFrom(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("heads: %s: %w", path, err)
	}
	p.file = f
	return p, nil
}

// HasMultiVector reports whether f carries projector tensors.
func HasMultiVector(f *gguf.File) bool { return f.Tensor("mvproj.weight") != nil }

// MultiVectorFrom binds the projector in an open file, which the caller
// keeps open while the projector is used.
func MultiVectorFrom(f *gguf.File) (*MultiVector, error) {
	t := f.Tensor("mvproj.weight")
	if t == nil {
		return nil, errors.New(`no "mvproj.weight" tensor`)
	}
	if len(t.Dims) != 2 || t.Dims[0] <= 0 || t.Dims[1] <= 0 {
		return nil, fmt.Errorf("tensor %q has shape %v, want [input_dim, output_dim]", t.Name, t.Dims)
	}
	p := &MultiVector{InputDim: int(t.Dims[0]), OutputDim: int(t.Dims[1]), Normalize: true}
	for key, want := range map[string]int{"mvproj.input_dim": p.InputDim, "mvproj.output_dim": p.OutputDim} {
		v, err := f.Uint(key)
		if err == nil && v != uint64(want) {
			return nil, fmt.Errorf("metadata %s = %d but mvproj.weight has shape %v", key, v, t.Dims)
		} else if err != nil && !errors.Is(err, gguf.ErrKeyNotFound) {
			return nil, err
		}
	}
	if v, err := f.Bool("mvproj.normalize"); err == nil {
		p.Normalize = v
	} else if !errors.Is(err, gguf.ErrKeyNotFound) {
		return nil, err
	}
	if v, err := f.String("mvproj.task"); err == nil {
		p.Task = v
	}
	w, err := kernels.NewMatrix(t.Type, p.OutputDim, p.InputDim, t.Data)
	if err != nil {
		return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	if kernels.Prepare(w); w.Packed() {
		f.OnClose(w.Unpack)
	}
	p.w = w
	if b := f.Tensor("mvproj.bias"); b != nil {
		if len(b.Dims) != 1 || b.Dims[0] != int64(p.OutputDim) {
			return nil, fmt.Errorf("tensor %q has shape %v, want [%d]", b.Name, b.Dims, p.OutputDim)
		}
		if p.bias, err = b.Float32s(); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Project maps the n rows of hidden (n×InputDim) to n vectors of
// OutputDim, each L2-normalized when the projector says so.
func (p *MultiVector) Project(hidden []float32, n int) [][]float32 {
	if n < 0 || len(hidden) < n*p.InputDim {
		panic(fmt.Sprintf("heads: Project of %d rows of %d needs %d values, have %d", n, p.InputDim, n*p.InputDim, len(hidden)))
	}
	flat := make([]float32, n*p.OutputDim)
	if p.w == nil { // HiddenRows
		copy(flat, hidden[:n*p.InputDim])
	} else {
		kernels.MatMul(flat, hidden, n, p.w, p.bias)
	}
	out := make([][]float32, n)
	for i := range out {
		out[i] = flat[i*p.OutputDim : (i+1)*p.OutputDim : (i+1)*p.OutputDim]
		if p.Normalize {
			Normalize(out[i])
		}
	}
	return out
}

// Close releases the file LoadMultiVector opened; a projector bound with
// MultiVectorFrom leaves its file to the caller.
func (p *MultiVector) Close() error {
	if p.file == nil {
		return nil
	}
	err := p.file.Close()
	p.file = nil
	return err
}
