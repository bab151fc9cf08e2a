package qwenvl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/kernels"
)

// binder binds named GGUF tensors to weights, checking each shape against
// the dimensions the metadata implies. It records the first error and turns
// later calls into no-ops, so a block constructor reads as a plain list of
// its weights and the caller checks err once.
type binder struct {
	f    *gguf.File
	file string // for error messages: "LM" or "mmproj"
	err  error
}

func (b *binder) fail(format string, args ...any) {
	if b.err == nil {
		b.err = fmt.Errorf("%s: %s", b.file, fmt.Sprintf(format, args...))
	}
}

// tensor returns the named tensor or records a missing-tensor error.
func (b *binder) tensor(name string) *gguf.Tensor {
	if b.err != nil {
		return nil
	}
	t := b.f.Tensor(name)
	if t == nil {
		b.fail("tensor %q is missing", name)
	}
	return t
}

// has reports whether the file holds a tensor of that name.
func (b *binder) has(name string) bool { return b.f.Tensor(name) != nil }

// checkDims records an error unless t has exactly the dims want (ggml order,
// innermost first).
func (b *binder) checkDims(t *gguf.Tensor, want ...int) bool {
	if len(t.Dims) != len(want) {
		b.fail("tensor %q has shape %v, want %v", t.Name, t.Dims, want)
		return false
	}
	for i, d := range t.Dims {
		if d != int64(want[i]) {
			b.fail("tensor %q has shape %v, want %v", t.Name, t.Dims, want)
			return false
		}
	}
	return true
}

// matrix binds a weight of `out` output features by `in` inputs, stored as
// ggml ne = [in, out] in any type. The bytes stay in the mapped file.
func (b *binder) matrix(name string, out, in int) *kernels.Matrix {
	t := b.tensor(name)
	if t == nil || !b.checkDims(t, in, out) {
		return nil
	}
	w, err := kernels.NewMatrix(t.Type, out, in, t.Data)
	if err != nil {
		b.fail("tensor %q: %v", name, err)
		return nil
	}
	kernels.Prepare(w)
	return w
}

// vector reads a 1-D tensor of n values (norm weights and biases) as f32.
func (b *binder) vector(name string, n int) []float32 { return b.floats(name, n) }

// optVector is vector for a tensor that some variants lack (LayerNorm bias
// in Qwen2-VL only); it returns nil when absent.
func (b *binder) optVector(name string, n int) []float32 {
	if b.err != nil || !b.has(name) {
		return nil
	}
	return b.vector(name, n)
}

// floats reads a tensor of exactly the given dims (ggml order) as f32.
func (b *binder) floats(name string, dims ...int) []float32 {
	t := b.tensor(name)
	if t == nil || !b.checkDims(t, dims...) {
		return nil
	}
	v, err := t.Float32s()
	if err != nil {
		b.fail("tensor %q: %v", name, err)
		return nil
	}
	return v
}

// f32Matrix wraps f32 values (built at load time, e.g. the flattened patch
// kernel) as a Matrix of rows×cols.
func f32Matrix(v []float32, rows, cols int) (*kernels.Matrix, error) {
	if len(v) != rows*cols {
		return nil, errors.New("qwenvl: internal: matrix size mismatch")
	}
	data := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(x))
	}
	w, err := kernels.NewMatrix(gguf.TypeF32, rows, cols, data)
	if err != nil {
		return nil, err
	}
	kernels.Prepare(w)
	return w, nil
}
