package qwenlayout

import "github.com/vembed/vembed/gguf"

// KV is one metadata key and its value, typed as the file stores it.
type KV struct {
	Key   string
	Value any
}

// TensorLayout is one planned tensor: its GGUF name, its shape (innermost
// dimension first, as ggml's ne) and its storage type.
type TensorLayout struct {
	Name string
	NE   []int64
	Type gguf.Type
	// Norm marks norm weights (values around 1), which a random fill draws
	// differently.
	Norm bool
}

// Elements is the product of the shape.
func (t TensorLayout) Elements() int64 { return Elements(t.NE) }

// Elements is the product of a shape's dimensions.
func Elements(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// Layout is a GGUF file without its values: metadata in file order and
// tensors in file order.
type Layout struct {
	KVs     []KV
	Tensors []TensorLayout
}

// add appends a tensor.
func (l *Layout) add(name string, typ gguf.Type, norm bool, ne ...int64) {
	l.Tensors = append(l.Tensors, TensorLayout{Name: name, NE: ne, Type: typ, Norm: norm})
}
