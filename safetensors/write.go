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
	hdr := map[string]any{}
	if len(metadata) > 0 {
		hdr["__metadata__"] = metadata
	}
	var off int64
	for _, t := range tensors {
		n := int64(1)
		for _, d := range t.Shape {
			n *= d
		}
		if n != int64(len(t.Values)) {
			return fmt.Errorf("safetensors: %s: %d values for shape %v", t.Name, len(t.Values), t.Shape)
		}
		size := n * t.DType.Size()
		if t.DType != F32 && t.DType != F16 && t.DType != BF16 {
			return fmt.Errorf("safetensors: %s: writing %s is not supported", t.Name, t.DType)
		}
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
		for _, t := range tensors {
			b := make([]byte, 0, int64(len(t.Values))*t.DType.Size())
			for _, v := range t.Values {
				switch t.DType {
				case F32:
					b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
				case BF16:
					b = binary.LittleEndian.AppendUint16(b, gguf.F32ToBF16(v))
				case F16:
					b = binary.LittleEndian.AppendUint16(b, gguf.F32ToF16(v))
				}
			}
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
		return nil
	})
}
