package vlm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/kernels"
)

// Binder binds named GGUF tensors to weights, checking each shape against
// the dimensions the metadata implies. It records the first error in Err and
// turns later calls into no-ops, so a block constructor reads as a plain
// list of its weights and the caller checks Err once.
type Binder struct {
	F    *gguf.File
	File string // for error messages: "LM" or "mmproj"
	Err  error
}

// Fail records an error (the first one wins), prefixed with the file's role.
func (b *Binder) Fail(format string, args ...any) {
	if b.Err == nil {
		b.Err = fmt.Errorf("%s: %s", b.File, fmt.Sprintf(format, args...))
	}
}

// Tensor returns the named tensor or records a missing-tensor error.
func (b *Binder) Tensor(name string) *gguf.Tensor {
	if b.Err != nil {
		return nil
	}
	t := b.F.Tensor(name)
	if t == nil {
		b.Fail("tensor %q is missing", name)
	}
	return t
}

// Has reports whether the file holds a tensor of that name.
func (b *Binder) Has(name string) bool { return b.F.Tensor(name) != nil }

// checkDims records an error unless t has exactly the dims want (ggml order,
// innermost first).
func (b *Binder) checkDims(t *gguf.Tensor, want ...int) bool {
	if len(t.Dims) != len(want) {
		b.Fail("tensor %q has shape %v, want %v", t.Name, t.Dims, want)
		return false
	}
	for i, d := range t.Dims {
		if d != int64(want[i]) {
			b.Fail("tensor %q has shape %v, want %v", t.Name, t.Dims, want)
			return false
		}
	}
	return true
}

// Matrix binds a weight of `out` output features by `in` inputs, stored as
// ggml ne = [in, out] in any type. The bytes stay in the mapped file,
// unless the active kernel tier packs them at load (kernels.Prepare): the
// file's pages of a packed weight are then released from the process, so
// that the packed copy replaces them in memory instead of adding to them.
func (b *Binder) Matrix(name string, out, in int) *kernels.Matrix {
	w := b.View(name, out, in)
	if w != nil {
		b.Prepare(w)
	}
	return w
}

// Prepare prepares w, a view of the file's bytes, for products
// (kernels.Prepare) and, when the active tier packed it, releases the
// file's pages of w from the process and frees the packed copy when the
// file closes.
func (b *Binder) Prepare(w *kernels.Matrix) {
	if kernels.Prepare(w); w.Packed() {
		b.F.Release(w.Data)
		b.F.OnClose(w.Unpack)
	}
}

// View binds a matrix as Matrix does without preparing it for products:
// one read by row, never multiplied (the token embeddings, whose bytes
// stay in the mapped file and only the rows read are paged in), or one
// cut into parts that are prepared on their own (a fused QKV).
func (b *Binder) View(name string, out, in int) *kernels.Matrix {
	t := b.Tensor(name)
	if t == nil || !b.checkDims(t, in, out) {
		return nil
	}
	w, err := kernels.NewMatrix(t.Type, out, in, t.Data)
	if err != nil {
		b.Fail("tensor %q: %v", name, err)
		return nil
	}
	return w
}

// NarrowMatrix is Matrix for a weight a bfloat16 tier may multiply in
// bfloat16 (kernels.Matrix.BF16): the vision towers' MLP weights, two
// thirds of a tower's products. The towers' references run in bfloat16;
// on the fixture models, bfloat16 MLPs move ColQwen's image rows by at
// most 3.4e-5 (1−cos) from float32, while bfloat16 in every tower product
// (attention projections 6.6e-5, merger 4.3e-5 alone) adds up to 1.2e-4,
// past the 1e-4 that embeddings may move on a tier. Attention, mergers and
// the LM keep float32.
func (b *Binder) NarrowMatrix(name string, out, in int) *kernels.Matrix {
	w := b.View(name, out, in)
	if w != nil {
		// Marked before Prepare: amx-bf16 packs marked weights at load.
		w.BF16 = true
		b.Prepare(w)
	}
	return w
}

// Vector reads a 1-D tensor of n values (norm weights and biases) as f32.
func (b *Binder) Vector(name string, n int) []float32 { return b.Floats(name, n) }

// OptVector is Vector for a tensor that some variants lack (LayerNorm bias
// in Qwen2-VL only); it returns nil when absent.
func (b *Binder) OptVector(name string, n int) []float32 {
	if b.Err != nil || !b.Has(name) {
		return nil
	}
	return b.Vector(name, n)
}

// Floats reads a tensor of exactly the given dims (ggml order) as f32.
func (b *Binder) Floats(name string, dims ...int) []float32 {
	t := b.Tensor(name)
	if t == nil || !b.checkDims(t, dims...) {
		return nil
	}
	v, err := t.Float32s()
	if err != nil {
		b.Fail("tensor %q: %v", name, err)
		return nil
	}
	return v
}

// F32Matrix wraps f32 values (built at load time, e.g. the flattened patch
// kernel) as a Matrix of rows×cols.
func F32Matrix(v []float32, rows, cols int) (*kernels.Matrix, error) {
	if len(v) != rows*cols {
		return nil, errors.New("vlm: internal: matrix size mismatch")
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
