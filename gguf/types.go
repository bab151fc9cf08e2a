package gguf

import "fmt"

// Type is a ggml tensor type id as stored in a GGUF tensor info.
type Type uint32

// The ggml tensor types. Ids are fixed by the file format.
const (
	TypeF32    Type = 0
	TypeF16    Type = 1
	TypeQ4_0   Type = 2
	TypeQ4_1   Type = 3
	TypeQ5_0   Type = 6
	TypeQ5_1   Type = 7
	TypeQ8_0   Type = 8
	TypeQ8_1   Type = 9
	TypeQ2_K   Type = 10
	TypeQ3_K   Type = 11
	TypeQ4_K   Type = 12
	TypeQ5_K   Type = 13
	TypeQ6_K   Type = 14
	TypeQ8_K   Type = 15
	TypeIQ4_NL Type = 20
	TypeIQ4_XS Type = 23
	TypeI8     Type = 24
	TypeI16    Type = 25
	TypeI32    Type = 26
	TypeI64    Type = 27
	TypeF64    Type = 28
	TypeBF16   Type = 30

	// Types whose block size is known, so files holding them open and can be
	// listed, but which Dequantize does not decode (the IQ grid types need
	// large codebooks this package does not carry).
	TypeIQ2_XXS Type = 16
	TypeIQ2_XS  Type = 17
	TypeIQ3_XXS Type = 18
	TypeIQ1_S   Type = 19
	TypeIQ3_S   Type = 21
	TypeIQ2_S   Type = 22
	TypeIQ1_M   Type = 29
	TypeTQ1_0   Type = 34
	TypeTQ2_0   Type = 35
	TypeMXFP4   Type = 39
)

type typeTraits struct {
	name      string
	blockSize int // values per block
	typeSize  int // bytes per block
}

// traits lists the types this package can size. Types absent here (removed
// repacked types, ids newer than this package) are rejected when a file is
// read.
var traits = map[Type]typeTraits{
	TypeF32:    {"F32", 1, 4},
	TypeF16:    {"F16", 1, 2},
	TypeQ4_0:   {"Q4_0", 32, 18},
	TypeQ4_1:   {"Q4_1", 32, 20},
	TypeQ5_0:   {"Q5_0", 32, 22},
	TypeQ5_1:   {"Q5_1", 32, 24},
	TypeQ8_0:   {"Q8_0", 32, 34},
	TypeQ8_1:   {"Q8_1", 32, 36},
	TypeQ2_K:   {"Q2_K", 256, 84},
	TypeQ3_K:   {"Q3_K", 256, 110},
	TypeQ4_K:   {"Q4_K", 256, 144},
	TypeQ5_K:   {"Q5_K", 256, 176},
	TypeQ6_K:   {"Q6_K", 256, 210},
	TypeQ8_K:   {"Q8_K", 256, 292},
	TypeIQ4_NL: {"IQ4_NL", 32, 18},
	TypeIQ4_XS: {"IQ4_XS", 256, 136},
	TypeI8:     {"I8", 1, 1},
	TypeI16:    {"I16", 1, 2},
	TypeI32:    {"I32", 1, 4},
	TypeI64:    {"I64", 1, 8},
	TypeF64:    {"F64", 1, 8},
	TypeBF16:   {"BF16", 1, 2},

	TypeIQ2_XXS: {"IQ2_XXS", 256, 66},
	TypeIQ2_XS:  {"IQ2_XS", 256, 74},
	TypeIQ3_XXS: {"IQ3_XXS", 256, 98},
	TypeIQ1_S:   {"IQ1_S", 256, 50},
	TypeIQ3_S:   {"IQ3_S", 256, 110},
	TypeIQ2_S:   {"IQ2_S", 256, 82},
	TypeIQ1_M:   {"IQ1_M", 256, 56},
	TypeTQ1_0:   {"TQ1_0", 256, 54},
	TypeTQ2_0:   {"TQ2_0", 256, 66},
	TypeMXFP4:   {"MXFP4", 32, 17},
}

// Known reports whether the package knows the block layout of t.
func (t Type) Known() bool { _, ok := traits[t]; return ok }

// String returns the ggml name of the type, e.g. "Q4_K".
func (t Type) String() string {
	if tr, ok := traits[t]; ok {
		return tr.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockSize is the number of values one block of t holds (1 for scalar types).
func (t Type) BlockSize() int { return traits[t].blockSize }

// TypeSize is the number of bytes of one block of t.
func (t Type) TypeSize() int { return traits[t].typeSize }

// RowBytes returns the bytes taken by n consecutive values of type t. n must
// be a multiple of the block size.
func (t Type) RowBytes(n int) (int, error) {
	tr, ok := traits[t]
	if !ok {
		return 0, fmt.Errorf("gguf: unknown tensor type %d", uint32(t))
	}
	if n < 0 || n%tr.blockSize != 0 {
		return 0, fmt.Errorf("gguf: %d values of %s is not a whole number of %d-value blocks", n, tr.name, tr.blockSize)
	}
	return n / tr.blockSize * tr.typeSize, nil
}

// ParseType maps a ggml type name ("Q4_K", "f16", ...) to its Type.
func ParseType(name string) (Type, error) {
	for t, tr := range traits {
		if equalFold(tr.name, name) {
			return t, nil
		}
	}
	return 0, fmt.Errorf("gguf: unknown tensor type name %q", name)
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'a' <= x && x <= 'z' {
			x -= 'a' - 'A'
		}
		if 'a' <= y && y <= 'z' {
			y -= 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
