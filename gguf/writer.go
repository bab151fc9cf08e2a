package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
)

// Writer builds a GGUF version 3 file: metadata in the order added, then
// tensor infos and data in the order added, each tensor aligned, exactly as
// llama.cpp's reference reader expects.
type Writer struct {
	kvs     []KV
	kvIndex map[string]int
	tensors []pendingTensor
	names   map[string]bool
	err     error // first error from Add, reported by WriteTo
}

// pendingTensor is a tensor's info and the function that will write its
// bytes during WriteTo.
type pendingTensor struct {
	name string
	typ  Type
	dims []int64
	size int64
	fill func(dst io.Writer) error
}

// NewWriter returns an empty Writer.
func NewWriter() *Writer {
	return &Writer{kvIndex: map[string]int{}, names: map[string]bool{}}
}

// SetAlignment sets the alignment of the tensor data (general.alignment).
// n must be a power of two; otherwise WriteTo fails.
func (w *Writer) SetAlignment(n int) {
	if n <= 0 || n > math.MaxUint32 {
		w.setErr(fmt.Errorf("gguf: alignment %d out of range", n))
		return
	}
	w.Add(alignmentKey, uint32(n))
}

func (w *Writer) setErr(err error) {
	if w.err == nil {
		w.err = err
	}
}

// Add sets metadata key to v. The Go type picks the GGUF type (see ValueOf);
// a Value is stored as is. Adding a key again replaces its value in place.
// An unsupported type makes WriteTo fail.
func (w *Writer) Add(key string, v any) {
	if key == "" {
		w.setErr(errors.New("gguf: empty metadata key"))
		return
	}
	val, err := ValueOf(v)
	if err != nil {
		w.setErr(fmt.Errorf("gguf: metadata %q: %w", key, err))
		return
	}
	if i, ok := w.kvIndex[key]; ok {
		w.kvs[i].Value = val
		return
	}
	w.kvIndex[key] = len(w.kvs)
	w.kvs = append(w.kvs, KV{key, val})
}

// AddTensor appends a tensor. dims are ggml's ne, innermost first; data must
// hold exactly the tensor's bytes and is not copied, so it must not change
// before WriteTo.
func (w *Writer) AddTensor(name string, t Type, dims []int64, data []byte) error {
	nb, err := w.checkTensor(name, t, dims)
	if err != nil {
		return err
	}
	if int64(len(data)) != nb {
		return fmt.Errorf("gguf: tensor %q: %s %v needs %d bytes, got %d", name, t, dims, nb, len(data))
	}
	w.appendTensor(name, t, dims, nb, func(dst io.Writer) error {
		_, err := dst.Write(data)
		return err
	})
	return nil
}

// AddTensorFunc appends a tensor whose bytes are produced while the file is
// written, so a file larger than memory can be streamed: WriteTo writes the
// header and all tensor infos first, then calls each tensor's fill in the
// order added. fill must write exactly the tensor's size in bytes (fixed by
// t and dims); WriteTo fails otherwise. An error from fill aborts WriteTo.
func (w *Writer) AddTensorFunc(name string, t Type, dims []int64, fill func(dst io.Writer) error) error {
	nb, err := w.checkTensor(name, t, dims)
	if err != nil {
		return err
	}
	if fill == nil {
		return fmt.Errorf("gguf: tensor %q: nil fill function", name)
	}
	w.appendTensor(name, t, dims, nb, fill)
	return nil
}

// checkTensor validates a new tensor's info and returns its size in bytes.
func (w *Writer) checkTensor(name string, t Type, dims []int64) (int64, error) {
	switch {
	case name == "":
		return 0, errors.New("gguf: empty tensor name")
	case len(name) > maxNameLen:
		return 0, fmt.Errorf("gguf: tensor name %q is longer than %d bytes", name, maxNameLen)
	case w.names[name]:
		return 0, fmt.Errorf("gguf: tensor %q added twice", name)
	case len(dims) > maxDims:
		return 0, fmt.Errorf("gguf: tensor %q: %d dimensions, at most %d allowed", name, len(dims), maxDims)
	}
	nb, err := tensorBytes(t, dims)
	if err != nil {
		return 0, fmt.Errorf("gguf: tensor %q: %w", name, err)
	}
	return nb, nil
}

func (w *Writer) appendTensor(name string, t Type, dims []int64, size int64, fill func(io.Writer) error) {
	w.names[name] = true
	w.tensors = append(w.tensors, pendingTensor{
		name: name, typ: t, dims: append([]int64(nil), dims...), size: size, fill: fill,
	})
}

func (w *Writer) alignment() (int, error) {
	i, ok := w.kvIndex[alignmentKey]
	if !ok {
		return defaultAlignment, nil
	}
	v := w.kvs[i].Value
	if v.typ != ValueUint32 {
		return 0, fmt.Errorf("gguf: metadata %q is %s, must be UINT32", alignmentKey, v.typeName())
	}
	if v.bits == 0 || v.bits&(v.bits-1) != 0 {
		return 0, fmt.Errorf("gguf: alignment %d is not a power of two", v.bits)
	}
	return int(v.bits), nil
}

// encoder writes little-endian values and counts the bytes.
type encoder struct {
	w   *bufio.Writer
	n   int64
	err error
	buf [8]byte
}

func (e *encoder) write(b []byte) {
	if e.err != nil {
		return
	}
	n, err := e.w.Write(b)
	e.n += int64(n)
	e.err = err
}

func (e *encoder) u32(x uint32) {
	binary.LittleEndian.PutUint32(e.buf[:], x)
	e.write(e.buf[:4])
}

func (e *encoder) u64(x uint64) {
	binary.LittleEndian.PutUint64(e.buf[:], x)
	e.write(e.buf[:8])
}

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	if e.err == nil {
		n, err := e.w.WriteString(s)
		e.n += int64(n)
		e.err = err
	}
}

func (e *encoder) pad(align int) {
	var zero [64]byte
	for k := alignUp(e.n, align) - e.n; k > 0; {
		c := min(k, int64(len(zero)))
		e.write(zero[:c])
		k -= c
	}
}

// scalar writes a fixed-size value from its 64-bit form.
func (e *encoder) scalar(t ValueType, bits uint64) {
	e.write(appendScalar(e.buf[:0], t, bits))
}

func (e *encoder) value(v Value) {
	switch v.typ {
	case ValueString:
		e.str(v.str)
		return
	case ValueArray:
	default:
		e.scalar(v.typ, v.bits)
		return
	}
	e.u32(uint32(v.elem))
	e.u64(uint64(v.Len()))
	switch v.elem {
	case ValueString:
		for _, s := range v.strs {
			e.str(s)
		}
	case ValueArray:
		for _, a := range v.arrs {
			e.value(a)
		}
	default:
		e.write(v.raw)
	}
}

// WriteTo writes the file to out and returns the number of bytes written.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	if w.err != nil {
		return 0, w.err
	}
	align, err := w.alignment()
	if err != nil {
		return 0, err
	}
	e := &encoder{w: bufio.NewWriterSize(out, 1<<16)}
	e.u32(magic)
	e.u32(3)
	e.u64(uint64(len(w.tensors)))
	e.u64(uint64(len(w.kvs)))
	for _, kv := range w.kvs {
		e.str(kv.Key)
		e.u32(uint32(kv.Value.typ))
		e.value(kv.Value)
	}
	var off int64
	for _, t := range w.tensors {
		e.str(t.name)
		e.u32(uint32(len(t.dims)))
		for _, d := range t.dims {
			e.u64(uint64(d))
		}
		e.u32(uint32(t.typ))
		e.u64(uint64(off))
		off = alignUp(off+t.size, align)
	}
	e.pad(align)
	for _, t := range w.tensors {
		if e.err != nil {
			break
		}
		if err := e.tensor(t); err != nil {
			return e.n, err
		}
		e.pad(align)
	}
	if e.err == nil {
		e.err = e.w.Flush()
	}
	if e.err != nil {
		return e.n, fmt.Errorf("gguf: write: %w", e.err)
	}
	return e.n, nil
}

// tensor runs t's fill and checks that it wrote exactly t.size bytes. A
// write past the size is refused, so the next tensor's offset stays right
// even if fill ignores the error.
func (e *encoder) tensor(t pendingTensor) error {
	tw := &tensorWriter{e: e, left: t.size}
	err := t.fill(tw)
	switch {
	case e.err != nil:
		return fmt.Errorf("gguf: write: tensor %q: %w", t.name, e.err)
	case tw.over:
		return fmt.Errorf("gguf: tensor %q: fill wrote more than the %d bytes of %s %v", t.name, t.size, t.typ, t.dims)
	case err != nil:
		return fmt.Errorf("gguf: tensor %q: %w", t.name, err)
	case tw.left != 0:
		return fmt.Errorf("gguf: tensor %q: fill wrote %d of the %d bytes of %s %v", t.name, t.size-tw.left, t.size, t.typ, t.dims)
	}
	return nil
}

// errTensorFull is returned to a fill function that writes past its tensor.
var errTensorFull = errors.New("write past the end of the tensor")

// tensorWriter is the io.Writer a fill function writes one tensor through.
type tensorWriter struct {
	e    *encoder
	left int64 // bytes still expected
	over bool  // a write past the end was refused
}

func (tw *tensorWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > tw.left {
		tw.over = true
		return 0, errTensorFull
	}
	n0 := tw.e.n
	tw.e.write(p)
	n := int(tw.e.n - n0)
	tw.left -= int64(n)
	return n, tw.e.err
}

// WriteFile writes the file to path, replacing it only once complete.
func (w *Writer) WriteFile(path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	// CreateTemp makes the file private; a model is an ordinary file.
	if err = tmp.Chmod(0o644); err != nil {
		err = fmt.Errorf("gguf: %w", err)
	} else {
		_, err = w.WriteTo(tmp)
	}
	if cerr := tmp.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("gguf: %w", cerr)
	}
	if err == nil {
		if err = os.Rename(tmp.Name(), path); err != nil {
			err = fmt.Errorf("gguf: %w", err)
		}
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
