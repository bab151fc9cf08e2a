// Package gguf reads and writes GGUF files, the container llama.cpp uses for
// model weights and metadata, and converts between ggml tensor encodings and
// float32.
//
// Files are memory-mapped; tensor data are views into the mapping, so a File
// must stay open while its tensors are in use. Every length, count and offset
// in a file is checked against the file size before it is used, so a hostile
// file yields an error, never a panic or a large allocation.
package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// File is a parsed GGUF file.
type File struct {
	Version    uint32
	Alignment  int
	DataOffset int64     // absolute file offset of the tensor data section
	KVs        []KV      // in file order
	Tensors    []*Tensor // in file order

	kvIndex     map[string]int
	tensorIndex map[string]*Tensor
	unmap       func() error
	// release, set for a mapped file, drops the whole pages of a range of
	// the mapping from the process (Release).
	release func(data []byte)
	// onClose runs at Close (OnClose).
	onClose []func()
}

// KV is one metadata key/value pair.
type KV struct {
	Key   string
	Value Value
}

// Tensor is one tensor of a file.
type Tensor struct {
	Name   string
	Type   Type
	Dims   []int64 // ne, innermost (fastest-varying) first
	Offset int64   // relative to the data section
	Data   []byte  // exactly the tensor's bytes; a view into the file
}

// NumElements is the product of the dimensions.
func (t *Tensor) NumElements() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// Dim returns ne[i], or 1 for i beyond the stored dimensions.
func (t *Tensor) Dim(i int) int64 {
	if i < len(t.Dims) {
		return t.Dims[i]
	}
	return 1
}

// Float32s returns a dequantized copy of the tensor's values in memory order.
func (t *Tensor) Float32s() ([]float32, error) {
	if !CanDequantize(t.Type) {
		return nil, fmt.Errorf("gguf: tensor %q: dequantize: type %s not supported", t.Name, t.Type)
	}
	n := t.NumElements()
	if n > math.MaxInt/4 {
		return nil, fmt.Errorf("gguf: tensor %q: %d elements do not fit in memory", t.Name, n)
	}
	out := make([]float32, n)
	if err := Dequantize(t.Type, t.Data, out); err != nil {
		return nil, fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
	}
	return out, nil
}

const (
	magic            = 0x46554747 // "GGUF" read as a little-endian uint32
	defaultAlignment = 32
	maxDims          = 4
	maxNameLen       = 63 // GGML_MAX_NAME (64) minus the NUL llama.cpp stores
	alignmentKey     = "general.alignment"
)

// Parse parses a GGUF file held in memory. Tensor data are views into data.
func Parse(data []byte) (*File, error) {
	p := &parser{data: data}
	f, err := p.file()
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	return f, nil
}

// Release tells the system that the process no longer needs data, a
// range of the file's tensor data (a tensor whose values were copied
// elsewhere, such as weights repacked at load), in memory: the whole
// pages inside it leave the process's resident set, and are read again
// from the file if data is touched later. It does nothing for a File from
// Parse, for data outside the mapping, or where the system cannot.
func (f *File) Release(data []byte) {
	if f.release != nil && len(data) > 0 {
		f.release(data)
	}
}

// OnClose registers fn to run when f is closed, before its mapping is
// released: for memory made from the file's tensors that should go with
// it (weights repacked at load). Functions run once, the last registered
// first.
func (f *File) OnClose(fn func()) { f.onClose = append(f.onClose, fn) }

// Close runs the OnClose functions and releases the file mapping; tensor
// data must not be used afterwards. Closing a File from Parse releases no
// mapping.
func (f *File) Close() error {
	for len(f.onClose) > 0 {
		fn := f.onClose[len(f.onClose)-1]
		f.onClose = f.onClose[:len(f.onClose)-1]
		fn()
	}
	if f.unmap == nil {
		return nil
	}
	u := f.unmap
	f.unmap = nil
	return u()
}

// Tensor returns the tensor named name, or nil.
func (f *File) Tensor(name string) *Tensor { return f.tensorIndex[name] }

// Lookup returns the value of a metadata key.
func (f *File) Lookup(key string) (Value, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return Value{}, false
	}
	return f.KVs[i].Value, true
}

// parser reads the header of a GGUF image. Every read checks the remaining
// length first; counts read from the file are checked against the bytes that
// remain before anything is allocated for them.
type parser struct {
	data []byte
	pos  int
}

var errTruncated = errors.New("unexpected end of file")

func (p *parser) remaining() int { return len(p.data) - p.pos }

func (p *parser) bytes(n int, what string) ([]byte, error) {
	if n < 0 || n > p.remaining() {
		return nil, fmt.Errorf("%s at offset %d: %w", what, p.pos, errTruncated)
	}
	b := p.data[p.pos : p.pos+n]
	p.pos += n
	return b, nil
}

func (p *parser) u32(what string) (uint32, error) {
	b, err := p.bytes(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (p *parser) u64(what string) (uint64, error) {
	b, err := p.bytes(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// count reads a uint64 element count and checks that count elements of at
// least minSize bytes each fit in the rest of the file.
func (p *parser) count(what string, minSize int) (int, error) {
	at := p.pos
	n, err := p.u64(what)
	if err != nil {
		return 0, err
	}
	if n > uint64(p.remaining()/minSize) {
		return 0, fmt.Errorf("%s %d at offset %d exceeds the %d bytes left in the file", what, n, at, p.remaining())
	}
	return int(n), nil
}

// strBytes reads a string's length and returns its bytes, still in the file.
func (p *parser) strBytes(what string) ([]byte, error) {
	at := p.pos
	n, err := p.u64(what)
	if err != nil {
		return nil, err
	}
	if n > uint64(p.remaining()) {
		return nil, fmt.Errorf("%s length %d at offset %d exceeds the %d bytes left in the file", what, n, at, p.remaining())
	}
	return p.bytes(int(n), what)
}

func (p *parser) str(what string) (string, error) {
	b, err := p.strBytes(what)
	return string(b), err
}

// strs reads n strings. They are validated first and then copied out of the
// file in one piece, so a vocabulary of 150k tokens costs one allocation
// instead of 150k.
func (p *parser) strs(n int) ([]string, error) {
	start := p.pos
	for i := range n {
		if _, err := p.strBytes("string"); err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
	}
	blob := string(p.data[start:p.pos])
	out := make([]string, n)
	off := 0
	for i := range out {
		l := int(binary.LittleEndian.Uint64(p.data[start+off:]))
		out[i] = blob[off+8 : off+8+l]
		off += 8 + l
	}
	return out, nil
}

func (p *parser) file() (*File, error) {
	m, err := p.u32("magic")
	if err != nil {
		return nil, fmt.Errorf("not a GGUF file: %w", err)
	}
	if m != magic {
		return nil, fmt.Errorf("not a GGUF file: magic is %q", p.data[:4])
	}
	v, err := p.u32("version")
	if err != nil {
		return nil, err
	}
	switch {
	case v&0xffff == 0 && v != 0:
		return nil, fmt.Errorf("version field is %#08x: the file is big-endian, which is not supported", v)
	case v < 2:
		return nil, fmt.Errorf("version %d is not supported (need 2 or 3)", v)
	case v > 3:
		return nil, fmt.Errorf("version %d is newer than this reader (3)", v)
	}
	f := &File{Version: v, Alignment: defaultAlignment}
	// Minimum encoded sizes bound the counts: a tensor info is at least a
	// name length, n_dims, type and offset; a KV a key length, a type and
	// one byte.
	nTensors, err := p.count("tensor count", 8+4+4+8)
	if err != nil {
		return nil, err
	}
	nKV, err := p.count("metadata count", 8+4+1)
	if err != nil {
		return nil, err
	}
	if err := p.kvs(f, nKV); err != nil {
		return nil, err
	}
	if err := p.tensorInfos(f, nTensors); err != nil {
		return nil, err
	}
	return f, p.tensorData(f)
}

func (p *parser) kvs(f *File, n int) error {
	f.KVs = make([]KV, 0, n)
	f.kvIndex = make(map[string]int, n)
	for i := range n {
		key, err := p.str(fmt.Sprintf("metadata %d key", i))
		if err != nil {
			return err
		}
		if key == "" {
			return fmt.Errorf("metadata %d: empty key", i)
		}
		if _, dup := f.kvIndex[key]; dup {
			return fmt.Errorf("metadata key %q appears twice", key)
		}
		t, err := p.u32("value type")
		if err != nil {
			return fmt.Errorf("metadata %q: %w", key, err)
		}
		v, err := p.value(ValueType(t), 0)
		if err != nil {
			return fmt.Errorf("metadata %q: %w", key, err)
		}
		f.kvIndex[key] = len(f.KVs)
		f.KVs = append(f.KVs, KV{key, v})
	}
	if v, ok := f.Lookup(alignmentKey); ok {
		if v.typ != ValueUint32 {
			return fmt.Errorf("metadata %q is %s, must be UINT32", alignmentKey, v.typeName())
		}
		a := v.bits
		if a == 0 || a&(a-1) != 0 {
			return fmt.Errorf("metadata %q = %d is not a power of two", alignmentKey, a)
		}
		f.Alignment = int(a)
	}
	return nil
}

func (p *parser) value(t ValueType, depth int) (Value, error) {
	if !t.valid() {
		return Value{}, fmt.Errorf("unknown value type %d", uint32(t))
	}
	switch t {
	case ValueString:
		s, err := p.str("string")
		return Value{typ: ValueString, str: s}, err
	case ValueArray:
		return p.array(depth)
	}
	b, err := p.bytes(t.size(), t.String())
	if err != nil {
		return Value{}, err
	}
	bits, err := decodeScalar(t, b)
	return Value{typ: t, bits: bits}, err
}

func decodeScalar(t ValueType, b []byte) (uint64, error) {
	switch t {
	case ValueUint8:
		return uint64(b[0]), nil
	case ValueInt8:
		return uint64(int64(int8(b[0]))), nil
	case ValueBool:
		if b[0] > 1 {
			return 0, fmt.Errorf("bool byte is %d, must be 0 or 1", b[0])
		}
		return uint64(b[0]), nil
	case ValueUint16:
		return uint64(binary.LittleEndian.Uint16(b)), nil
	case ValueInt16:
		return uint64(int64(int16(binary.LittleEndian.Uint16(b)))), nil
	case ValueUint32:
		return uint64(binary.LittleEndian.Uint32(b)), nil
	case ValueInt32:
		return uint64(int64(int32(binary.LittleEndian.Uint32(b)))), nil
	case ValueFloat32:
		return math.Float64bits(float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))), nil
	}
	// UINT64, INT64 and FLOAT64 keep their bits.
	return binary.LittleEndian.Uint64(b), nil
}

func (p *parser) array(depth int) (Value, error) {
	if depth >= maxDepth {
		return Value{}, fmt.Errorf("arrays nested deeper than %d", maxDepth)
	}
	et, err := p.u32("array element type")
	if err != nil {
		return Value{}, err
	}
	elem := ValueType(et)
	if !elem.valid() {
		return Value{}, fmt.Errorf("array of unknown value type %d", et)
	}
	minSize := elem.size()
	switch elem {
	case ValueString:
		minSize = 8
	case ValueArray:
		minSize = 4 + 8
	}
	n, err := p.count("array length", minSize)
	if err != nil {
		return Value{}, err
	}
	v := Value{typ: ValueArray, elem: elem}
	switch elem {
	case ValueString:
		if v.strs, err = p.strs(n); err != nil {
			return Value{}, err
		}
	case ValueArray:
		v.arrs = make([]Value, n)
		for i := range v.arrs {
			if v.arrs[i], err = p.array(depth + 1); err != nil {
				return Value{}, fmt.Errorf("element %d: %w", i, err)
			}
		}
	default:
		// The count check above guarantees the bytes are there.
		b, _ := p.bytes(n*minSize, "array")
		if elem == ValueBool {
			for i, x := range b {
				if x > 1 {
					return Value{}, fmt.Errorf("element %d: bool byte is %d, must be 0 or 1", i, x)
				}
			}
		}
		v.raw = append([]byte(nil), b...)
	}
	return v, nil
}

func (p *parser) tensorInfos(f *File, n int) error {
	f.Tensors = make([]*Tensor, 0, n)
	f.tensorIndex = make(map[string]*Tensor, n)
	for i := range n {
		name, err := p.str(fmt.Sprintf("tensor %d name", i))
		if err != nil {
			return err
		}
		t, err := p.tensorInfo(name)
		if err != nil {
			return fmt.Errorf("tensor %q: %w", name, err)
		}
		if _, dup := f.tensorIndex[name]; dup {
			return fmt.Errorf("tensor name %q appears twice", name)
		}
		f.tensorIndex[name] = t
		f.Tensors = append(f.Tensors, t)
	}
	return nil
}

func (p *parser) tensorInfo(name string) (*Tensor, error) {
	if name == "" {
		return nil, errors.New("empty tensor name")
	}
	nd, err := p.u32("n_dims")
	if err != nil {
		return nil, err
	}
	if nd > maxDims {
		return nil, fmt.Errorf("n_dims is %d, at most %d allowed", nd, maxDims)
	}
	t := &Tensor{Name: name, Dims: make([]int64, nd)}
	for i := range t.Dims {
		d, err := p.u64("ne")
		if err != nil {
			return nil, err
		}
		if d > math.MaxInt64 {
			return nil, fmt.Errorf("ne[%d] = %d is negative as int64", i, d)
		}
		t.Dims[i] = int64(d)
	}
	typ, err := p.u32("type")
	if err != nil {
		return nil, err
	}
	t.Type = Type(typ)
	off, err := p.u64("offset")
	if err != nil {
		return nil, err
	}
	if off > math.MaxInt64 {
		return nil, fmt.Errorf("offset %d out of range", off)
	}
	t.Offset = int64(off)
	if _, err := tensorBytes(t.Type, t.Dims); err != nil {
		return nil, err
	}
	return t, nil
}

// tensorBytes is the byte size of a tensor of type t and dimensions dims,
// with every product checked for overflow.
func tensorBytes(t Type, dims []int64) (int64, error) {
	if !t.Known() {
		return 0, fmt.Errorf("unknown tensor type %d", uint32(t))
	}
	var n uint64 = 1
	for i, d := range dims {
		if d < 0 {
			return 0, fmt.Errorf("ne[%d] = %d is negative", i, d)
		}
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, fmt.Errorf("shape %v has more than 2^63 elements", dims)
		}
		n = lo
	}
	ne0 := int64(1)
	if len(dims) > 0 {
		ne0 = dims[0]
	}
	bs, ts := int64(t.BlockSize()), int64(t.TypeSize())
	if ne0%bs != 0 {
		return 0, fmt.Errorf("ne[0] = %d is not a multiple of the %s block size %d", ne0, t, bs)
	}
	hi, lo := bits.Mul64(n/uint64(bs), uint64(ts))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, fmt.Errorf("shape %v of %s is more than 2^63 bytes", dims, t)
	}
	return int64(lo), nil
}

func alignUp(x int64, a int) int64 {
	r := x % int64(a)
	if r == 0 {
		return x
	}
	return x + int64(a) - r
}

func (p *parser) tensorData(f *File) error {
	f.DataOffset = alignUp(int64(p.pos), f.Alignment)
	size := int64(len(p.data))
	if len(f.Tensors) > 0 && f.DataOffset > size {
		return fmt.Errorf("tensor data section at %d starts beyond the end of the %d-byte file", f.DataOffset, size)
	}
	for _, t := range f.Tensors {
		nb, _ := tensorBytes(t.Type, t.Dims) // checked in tensorInfo
		if t.Offset%int64(f.Alignment) != 0 {
			return fmt.Errorf("tensor %q: offset %d is not a multiple of the alignment %d", t.Name, t.Offset, f.Alignment)
		}
		room := size - f.DataOffset
		if t.Offset > room || nb > room-t.Offset {
			return fmt.Errorf("tensor %q: %d bytes at data offset %d extend beyond the end of the %d-byte file", t.Name, nb, t.Offset, size)
		}
		start := f.DataOffset + t.Offset
		t.Data = p.data[start : start+nb : start+nb]
	}
	return nil
}
