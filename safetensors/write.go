package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/internal/atomicfile"
)

// Data is a tensor to write: its name, dtype, shape and values (stored in
// the dtype; F32, F16 and BF16 are written from float32 values, BF16 and
// F16 rounded as the gguf package rounds them).
type Data struct {
	Name   string
	DType  DType
	Shape  []int64
	Values []float32
}

// Write writes tensors (sorted by name, as the Python writer does) and
// metadata to path.
func Write(path string, tensors []Data, metadata map[string]string) error {
	sort.Slice(tensors, func(i, j int) bool { return tensors[i].Name < tensors[j].Name })
	specs := make([]Spec, len(tensors))
	for i, t := range tensors {
		specs[i] = Spec{Name: t.Name, DType: t.DType, Shape: t.Shape}
	}
	return WriteStream(path, specs, metadata, func(i int, put func([]float32) error) error {
		return put(tensors[i].Values)
	})
}

// Spec is a tensor WriteStream writes: its name, dtype (F32, F16 or BF16)
// and shape.
type Spec struct {
	Name  string
	DType DType
	Shape []int64
}

// WriteStream writes the tensors of specs, in their order, and metadata to
// path (through a temporary file renamed when complete). fill(i, put)
// produces tensor i's values by calling put with consecutive chunks, so
// that no tensor needs to be in memory whole; it must give exactly as many
// values as the shape holds.
func WriteStream(path string, specs []Spec, metadata map[string]string, fill func(i int, put func([]float32) error) error) error {
	hdr := map[string]any{}
	if len(metadata) > 0 {
		hdr["__metadata__"] = metadata
	}
	var off int64
	sizes := make([]int64, len(specs))
	for i, t := range specs {
		n := int64(1)
		for _, d := range t.Shape {
			if d < 0 {
				return fmt.Errorf("safetensors: %s: shape %v", t.Name, t.Shape)
			}
			n *= d
		}
		if t.DType != F32 && t.DType != F16 && t.DType != BF16 {
			return fmt.Errorf("safetensors: %s: writing %s is not supported", t.Name, t.DType)
		}
		if _, dup := hdr[t.Name]; dup || t.Name == "__metadata__" {
			return fmt.Errorf("safetensors: tensor name %q given twice or reserved", t.Name)
		}
		sizes[i] = n
		size := n * t.DType.Size()
		hdr[t.Name] = map[string]any{"dtype": t.DType, "shape": t.Shape, "data_offsets": [2]int64{off, off + size}}
		off += size
	}
	h, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	// The data section starts 8-aligned, padded with spaces as the Python
	// writer does.
	for (8+len(h))%8 != 0 {
		h = append(h, ' ')
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		if err := binary.Write(w, binary.LittleEndian, uint64(len(h))); err != nil {
			return err
		}
		if _, err := w.Write(h); err != nil {
			return err
		}
		var b []byte
		for i, t := range specs {
			var written int64
			put := func(vals []float32) error {
				if written += int64(len(vals)); written > sizes[i] {
					return fmt.Errorf("safetensors: %s: more than the %d values of shape %v", t.Name, sizes[i], t.Shape)
				}
				b = b[:0]
				for _, v := range vals {
					switch t.DType {
					case F32:
						b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
					case BF16:
						b = binary.LittleEndian.AppendUint16(b, gguf.F32ToBF16(v))
					case F16:
						b = binary.LittleEndian.AppendUint16(b, gguf.F32ToF16(v))
					}
				}
				_, err := w.Write(b)
				return err
			}
			if err := fill(i, put); err != nil {
				return err
			}
			if written != sizes[i] {
				return fmt.Errorf("safetensors: %s: %d values for shape %v", t.Name, written, t.Shape)
			}
		}
		return nil
	})
}
