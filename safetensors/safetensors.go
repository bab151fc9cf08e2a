// Package safetensors reads (and, for tests and synthetic checkpoints,
// writes) Hugging Face's safetensors format: an 8-byte little-endian
// header length, a JSON header mapping each tensor name to its dtype,
// shape and [begin, end) byte range, then the data. Checkpoints sharded
// over several files are opened through model.safetensors.index.json.
//
// The header is checked strictly before any tensor is read: its length is
// bounded, every tensor's byte range lies inside the file, matches its
// shape and dtype exactly and overlaps no other. Tensors are read one at a
// time with ReadAt, so a checkpoint is never held in memory whole.
package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/vembed/vembed/gguf"
)

// DType is a tensor element type as safetensors names it.
type DType string

// The element types. Conversion reads F32, F16 and BF16; the others are
// recognized so that errors can name them.
const (
	F64  DType = "F64"
	F32  DType = "F32"
	F16  DType = "F16"
	BF16 DType = "BF16"
	I64  DType = "I64"
	I32  DType = "I32"
	I16  DType = "I16"
	I8   DType = "I8"
	U8   DType = "U8"
	Bool DType = "BOOL"
)

var dtypeSize = map[DType]int64{F64: 8, F32: 4, F16: 2, BF16: 2, I64: 8, I32: 4, I16: 2, I8: 1, U8: 1, Bool: 1}

// Size is the byte size of one element, 0 for an unknown type.
func (d DType) Size() int64 { return dtypeSize[d] }

// MaxHeader bounds the JSON header (the format's own limit is 100 MB).
const MaxHeader = 100 << 20

// ErrFormat is wrapped by every error about a malformed file.
var ErrFormat = errors.New("safetensors: malformed file")

// Tensor describes one tensor of a file.
type Tensor struct {
	Name       string
	DType      DType
	Shape      []int64
	Begin, End int64 // byte range in the data section
}

// Elements is the product of the shape (1 for a scalar).
func (t Tensor) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// File is an open safetensors file.
type File struct {
	Path     string
	Tensors  map[string]Tensor
	Metadata map[string]string
	r        io.ReaderAt
	c        io.Closer
	data     int64 // offset of the data section
}

// Open opens and checks a safetensors file.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	sf, err := Parse(f, st.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	sf.Path, sf.c = path, f
	return sf, nil
}

// Parse reads and checks the header of a safetensors file of size bytes.
func Parse(r io.ReaderAt, size int64) (*File, error) {
	var lenb [8]byte
	if size < 8 {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the header length", ErrFormat, size)
	}
	if _, err := r.ReadAt(lenb[:], 0); err != nil {
		return nil, fmt.Errorf("%w: reading the header length: %v", ErrFormat, err)
	}
	n := binary.LittleEndian.Uint64(lenb[:])
	if n < 2 || n > MaxHeader || int64(n) > size-8 {
		return nil, fmt.Errorf("%w: header length %d (file of %d bytes, at most %d)", ErrFormat, n, size, MaxHeader)
	}
	hdr := make([]byte, n)
	if _, err := r.ReadAt(hdr, 8); err != nil {
		return nil, fmt.Errorf("%w: reading the header: %v", ErrFormat, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &raw); err != nil {
		return nil, fmt.Errorf("%w: header is not a JSON object: %v", ErrFormat, err)
	}
	f := &File{Tensors: map[string]Tensor{}, r: r, data: 8 + int64(n)}
	dataSize := size - f.data
	for name, v := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(v, &f.Metadata); err != nil {
				return nil, fmt.Errorf("%w: __metadata__ must map strings to strings: %v", ErrFormat, err)
			}
			continue
		}
		var e struct {
			DType   DType    `json:"dtype"`
			Shape   []int64  `json:"shape"`
			Offsets [2]int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(v, &e); err != nil {
			return nil, fmt.Errorf("%w: tensor %q: %v", ErrFormat, name, err)
		}
		t := Tensor{Name: name, DType: e.DType, Shape: e.Shape, Begin: e.Offsets[0], End: e.Offsets[1]}
		es := e.DType.Size()
		if es == 0 {
			return nil, fmt.Errorf("%w: tensor %q: unknown dtype %q", ErrFormat, name, e.DType)
		}
		elems := int64(1)
		for _, d := range t.Shape {
			if d < 0 || (d > 0 && elems > math.MaxInt64/es/d) {
				return nil, fmt.Errorf("%w: tensor %q: shape %v", ErrFormat, name, t.Shape)
			}
			elems *= d
		}
		if t.Begin < 0 || t.End < t.Begin || t.End > dataSize {
			return nil, fmt.Errorf("%w: tensor %q: bytes [%d, %d) outside the %d bytes of data", ErrFormat, name, t.Begin, t.End, dataSize)
		}
		if t.End-t.Begin != elems*es {
			return nil, fmt.Errorf("%w: tensor %q: %d bytes for shape %v of %s (want %d)", ErrFormat, name, t.End-t.Begin, t.Shape, t.DType, elems*es)
		}
		f.Tensors[name] = t
	}
	// No two tensors may share bytes.
	ts := make([]Tensor, 0, len(f.Tensors))
	for _, t := range f.Tensors {
		if t.End > t.Begin {
			ts = append(ts, t)
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Begin < ts[j].Begin })
	for i := 1; i < len(ts); i++ {
		if ts[i].Begin < ts[i-1].End {
			return nil, fmt.Errorf("%w: tensors %q and %q overlap", ErrFormat, ts[i-1].Name, ts[i].Name)
		}
	}
	return f, nil
}

// Names lists the tensors, sorted.
func (f *File) Names() []string { return slices.Sorted(maps.Keys(f.Tensors)) }

// Raw reads a tensor's bytes.
func (f *File) Raw(name string) ([]byte, error) {
	t, ok := f.Tensors[name]
	if !ok {
		return nil, fmt.Errorf("safetensors: %s: no tensor %q", f.Path, name)
	}
	b := make([]byte, t.End-t.Begin)
	if _, err := f.r.ReadAt(b, f.data+t.Begin); err != nil {
		return nil, fmt.Errorf("safetensors: %s: tensor %q: %w", f.Path, name, err)
	}
	return b, nil
}

// Float64 reads a floating-point tensor (F32, F16, BF16 or F64) widened
// to float64, exactly.
func (f *File) Float64(name string) ([]float64, error) {
	t, ok := f.Tensors[name]
	if !ok {
		return nil, fmt.Errorf("safetensors: %s: no tensor %q", f.Path, name)
	}
	return f.Float64Range(name, 0, t.Elements())
}

// Float64Range reads n values of a floating-point tensor from value
// start, so that a large tensor can be converted a block at a time.
func (f *File) Float64Range(name string, start, n int64) ([]float64, error) {
	t, ok := f.Tensors[name]
	if !ok {
		return nil, fmt.Errorf("safetensors: %s: no tensor %q", f.Path, name)
	}
	switch t.DType {
	case F32, F16, BF16, F64:
	default:
		return nil, fmt.Errorf("safetensors: %s: tensor %q: dtype %s is not a floating-point type", f.Path, name, t.DType)
	}
	if start < 0 || n < 0 || start+n > t.Elements() {
		return nil, fmt.Errorf("safetensors: %s: tensor %q: values [%d, %d) of %d", f.Path, name, start, start+n, t.Elements())
	}
	es := t.DType.Size()
	b := make([]byte, n*es)
	if _, err := f.r.ReadAt(b, f.data+t.Begin+start*es); err != nil {
		return nil, fmt.Errorf("safetensors: %s: tensor %q: %w", f.Path, name, err)
	}
	out := make([]float64, n)
	for i := range out {
		switch t.DType {
		case F32:
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		case F64:
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		case BF16:
			out[i] = float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16))
		case F16:
			out[i] = float64(gguf.F16ToF32(binary.LittleEndian.Uint16(b[2*i:])))
		}
	}
	return out, nil
}

// Close closes the file.
func (f *File) Close() error {
	if f.c == nil {
		return nil
	}
	return f.c.Close()
}

// Checkpoint is a model's tensors over one or several files.
type Checkpoint struct {
	files map[string]*File
	where map[string]*File // tensor name -> its file
}

// OpenCheckpoint opens dir/model.safetensors, or the shards listed by
// dir/model.safetensors.index.json ({"weight_map": {tensor: file}}).
func OpenCheckpoint(dir string) (*Checkpoint, error) {
	c := &Checkpoint{files: map[string]*File{}, where: map[string]*File{}}
	idx, err := os.ReadFile(filepath.Join(dir, "model.safetensors.index.json"))
	switch {
	case errors.Is(err, os.ErrNotExist):
		f, err := Open(filepath.Join(dir, "model.safetensors"))
		if err != nil {
			return nil, err
		}
		c.add("model.safetensors", f)
		return c, nil
	case err != nil:
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(idx, &index); err != nil || len(index.WeightMap) == 0 {
		return nil, fmt.Errorf("safetensors: %s: model.safetensors.index.json has no weight_map", dir)
	}
	for name, file := range index.WeightMap {
		if filepath.Base(file) != file {
			c.Close()
			return nil, fmt.Errorf("safetensors: index names shard %q outside %s", file, dir)
		}
		f, ok := c.files[file]
		if !ok {
			if f, err = Open(filepath.Join(dir, file)); err != nil {
				c.Close()
				return nil, fmt.Errorf("safetensors: shard %s listed in the index: %w", file, err)
			}
			c.add(file, f)
		}
		if _, ok := f.Tensors[name]; !ok {
			c.Close()
			return nil, fmt.Errorf("safetensors: the index puts %q in %s, which does not hold it", name, file)
		}
		c.where[name] = f
	}
	return c, nil
}

func (c *Checkpoint) add(name string, f *File) {
	c.files[name] = f
	for t := range f.Tensors {
		c.where[t] = f
	}
}

// Tensor describes a tensor and the file holding it.
func (c *Checkpoint) Tensor(name string) (Tensor, *File, bool) {
	f, ok := c.where[name]
	if !ok {
		return Tensor{}, nil, false
	}
	return f.Tensors[name], f, true
}

// Names lists every tensor of the checkpoint, sorted.
func (c *Checkpoint) Names() []string {
	names := make([]string, 0, len(c.where))
	for n := range c.where {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Close closes every file.
func (c *Checkpoint) Close() error {
	var errs []error
	for _, f := range c.files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}
