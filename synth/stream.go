package synth

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"

	"github.com/vembed/vembed/gguf"
)

// The GGUF writer here streams: the header and tensor infos are encoded
// first (offsets follow from the tensor sizes), then every tensor is
// generated, encoded and written in row chunks, so a multi-gigabyte model
// never sits in memory. gguf.Writer produces the same bytes for the same
// content (the tests check it) but needs every tensor's data up front.

const (
	alignment   = 32      // GGUF default; the converter writes no general.alignment
	chunkValues = 1 << 18 // values generated per work item (rows are never split)
)

// initKind says how a tensor's values are drawn.
type initKind int

const (
	initWeight initKind = iota // Std·N(0,1), also used for biases
	initNorm                   // 1 + Std·N(0,1)
)

type tensorSpec struct {
	name string
	ne   []int64 // innermost first
	typ  gguf.Type
	init initKind
}

func (t *tensorSpec) elements() int64 {
	n := int64(1)
	for _, d := range t.ne {
		n *= d
	}
	return n
}

func (t *tensorSpec) bytes() (int64, error) {
	rb, err := t.typ.RowBytes(int(t.ne[0]))
	if err != nil {
		return 0, fmt.Errorf("synth: tensor %q: %w", t.name, err)
	}
	return int64(rb) * (t.elements() / t.ne[0]), nil
}

type kv struct {
	key string
	val any
}

// fileSpec is everything one GGUF file holds, with tensor values still to be
// drawn from seed.
type fileSpec struct {
	kvs     []kv
	tensors []*tensorSpec
	seed    uint64
	std     float32
}

// add appends a tensor and returns it.
func (f *fileSpec) add(name string, typ gguf.Type, init initKind, ne ...int64) *tensorSpec {
	t := &tensorSpec{name: name, ne: ne, typ: typ, init: init}
	f.tensors = append(f.tensors, t)
	return t
}

// encodeHeader returns the GGUF header, metadata and tensor infos, padded
// to the alignment, and the total file size.
func (f *fileSpec) encodeHeader() ([]byte, int64, error) {
	var b bytes.Buffer
	e := headerEncoder{w: &b}
	e.u32(0x46554747) // "GGUF"
	e.u32(3)
	e.u64(uint64(len(f.tensors)))
	e.u64(uint64(len(f.kvs)))
	for _, p := range f.kvs {
		e.str(p.key)
		if err := e.value(p.val, true); err != nil {
			return nil, 0, fmt.Errorf("synth: metadata %q: %w", p.key, err)
		}
	}
	var off int64
	for _, t := range f.tensors {
		nb, err := t.bytes()
		if err != nil {
			return nil, 0, err
		}
		e.str(t.name)
		e.u32(uint32(len(t.ne)))
		for _, d := range t.ne {
			e.u64(uint64(d))
		}
		e.u32(uint32(t.typ))
		e.u64(uint64(off))
		off = alignUp(off+nb, alignment)
	}
	b.Write(make([]byte, alignUp(int64(b.Len()), alignment)-int64(b.Len())))
	return b.Bytes(), int64(b.Len()) + off, nil
}

func alignUp(x, a int64) int64 { return (x + a - 1) / a * a }

// headerEncoder writes GGUF scalars, strings and metadata values.
type headerEncoder struct {
	w   *bytes.Buffer
	buf [8]byte
}

func (e *headerEncoder) u32(x uint32) {
	binary.LittleEndian.PutUint32(e.buf[:], x)
	e.w.Write(e.buf[:4])
}

func (e *headerEncoder) u64(x uint64) {
	binary.LittleEndian.PutUint64(e.buf[:], x)
	e.w.Write(e.buf[:8])
}

func (e *headerEncoder) str(s string) {
	e.u64(uint64(len(s)))
	e.w.WriteString(s)
}

// value writes a metadata value whose Go type picks the GGUF type (the same
// mapping as gguf.ValueOf); with tagged it is preceded by its type id.
func (e *headerEncoder) value(v any, tagged bool) error {
	tag := func(t gguf.ValueType) {
		if tagged {
			e.u32(uint32(t))
		}
	}
	switch x := v.(type) {
	case string:
		tag(gguf.ValueString)
		e.str(x)
	case bool:
		tag(gguf.ValueBool)
		if x {
			e.w.WriteByte(1)
		} else {
			e.w.WriteByte(0)
		}
	case uint8:
		tag(gguf.ValueUint8)
		e.w.WriteByte(x)
	case int8:
		tag(gguf.ValueInt8)
		e.w.WriteByte(byte(x))
	case uint16:
		tag(gguf.ValueUint16)
		e.w.Write(binary.LittleEndian.AppendUint16(nil, x))
	case int16:
		tag(gguf.ValueInt16)
		e.w.Write(binary.LittleEndian.AppendUint16(nil, uint16(x)))
	case uint32:
		tag(gguf.ValueUint32)
		e.u32(x)
	case int32:
		tag(gguf.ValueInt32)
		e.u32(uint32(x))
	case float32:
		tag(gguf.ValueFloat32)
		e.u32(math.Float32bits(x))
	case uint64:
		tag(gguf.ValueUint64)
		e.u64(x)
	case int64:
		tag(gguf.ValueInt64)
		e.u64(uint64(x))
	case float64:
		tag(gguf.ValueFloat64)
		e.u64(math.Float64bits(x))
	case []string:
		return encodeArray(e, tagged, gguf.ValueString, x)
	case []int32:
		return encodeArray(e, tagged, gguf.ValueInt32, x)
	case []uint32:
		return encodeArray(e, tagged, gguf.ValueUint32, x)
	case []float32:
		return encodeArray(e, tagged, gguf.ValueFloat32, x)
	case []bool:
		return encodeArray(e, tagged, gguf.ValueBool, x)
	case []uint8:
		return encodeArray(e, tagged, gguf.ValueUint8, x)
	case []int64:
		return encodeArray(e, tagged, gguf.ValueInt64, x)
	case []uint64:
		return encodeArray(e, tagged, gguf.ValueUint64, x)
	case []float64:
		return encodeArray(e, tagged, gguf.ValueFloat64, x)
	default:
		return fmt.Errorf("unsupported metadata type %T", v)
	}
	return nil
}

func encodeArray[T any](e *headerEncoder, tagged bool, elem gguf.ValueType, xs []T) error {
	if tagged {
		e.u32(uint32(gguf.ValueArray))
	}
	e.u32(uint32(elem))
	e.u64(uint64(len(xs)))
	for _, x := range xs {
		if err := e.value(x, false); err != nil {
			return err
		}
	}
	return nil
}

// chunk is one work item: whole rows of one tensor.
type chunk struct {
	t          *tensorSpec
	index      int64 // chunk number within the tensor (part of its seed)
	rows       int64
	lastOfTens bool
	out        chan chunkResult
}

type chunkResult struct {
	data []byte
	err  error
}

// tensorStream derives the random stream of a tensor chunk from the file
// seed, the tensor name and the chunk number, so values depend neither on
// the order of tensors in the file nor on the number of workers.
func tensorStream(seed uint64, name string, index int64) *rand.Rand {
	h := fnv.New64a()
	io.WriteString(h, name)
	return rand.New(rand.NewPCG(seed, h.Sum64()+uint64(index)*0x9E3779B97F4A7C15))
}

// generate draws and encodes one chunk.
func (f *fileSpec) generate(c *chunk, vals []float32) ([]byte, error) {
	n := c.rows * c.t.ne[0]
	vals = vals[:n]
	rng := tensorStream(f.seed, c.t.name, c.index)
	std := float64(f.std)
	base := 0.0
	if c.t.init == initNorm {
		base = 1
	}
	for i := range vals {
		vals[i] = float32(base + std*rng.NormFloat64())
	}
	if c.t.typ == gguf.TypeF32 {
		out := make([]byte, 4*n)
		for i, v := range vals {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
		}
		return out, nil
	}
	out, err := gguf.Quantize(c.t.typ, vals)
	if err != nil {
		return nil, fmt.Errorf("synth: tensor %q as %s: %w", c.t.name, c.t.typ, err)
	}
	return out, nil
}

// write streams the file to path (via a temporary file renamed when
// complete) and returns its size.
func (f *fileSpec) write(path string, workers int) (int64, error) {
	header, size, err := f.encodeHeader()
	if err != nil {
		return 0, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return 0, fmt.Errorf("synth: %w", err)
	}
	err = tmp.Chmod(0o644) // CreateTemp makes files private; models are ordinary files
	if err == nil {
		err = f.writeTo(tmp, header, workers)
	}
	if cerr := tmp.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("synth: %w", cerr)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return 0, err
	}
	return size, nil
}

func (f *fileSpec) writeTo(out io.Writer, header []byte, workers int) error {
	workers = max(workers, 1)
	bw := bufio.NewWriterSize(out, 1<<20)
	if _, err := bw.Write(header); err != nil {
		return fmt.Errorf("synth: %w", err)
	}

	done := make(chan struct{})
	order := make(chan *chunk, 2*workers+2) // bounds the chunks in flight
	work := make(chan *chunk)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // producer: chunks in file order
		defer wg.Done()
		defer close(order)
		defer close(work)
		for _, t := range f.tensors {
			rowsPer := max(1, chunkValues/t.ne[0])
			nrows := t.elements() / t.ne[0]
			for idx, r0 := int64(0), int64(0); r0 < nrows; idx, r0 = idx+1, r0+rowsPer {
				c := &chunk{t: t, index: idx, rows: min(rowsPer, nrows-r0), out: make(chan chunkResult, 1)}
				c.lastOfTens = r0+c.rows >= nrows
				select {
				case order <- c:
				case <-done:
					return
				}
				select {
				case work <- c:
				case <-done:
					return
				}
			}
		}
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var vals []float32
			for c := range work {
				if need := int(c.rows * c.t.ne[0]); cap(vals) < need {
					vals = make([]float32, need)
				}
				data, err := f.generate(c, vals)
				c.out <- chunkResult{data, err}
			}
		}()
	}

	err := func() error {
		var written int64 // bytes of the current tensor
		for c := range order {
			r := <-c.out
			if r.err != nil {
				return r.err
			}
			if _, err := bw.Write(r.data); err != nil {
				return fmt.Errorf("synth: %w", err)
			}
			written += int64(len(r.data))
			if c.lastOfTens {
				if _, err := bw.Write(make([]byte, alignUp(written, alignment)-written)); err != nil {
					return fmt.Errorf("synth: %w", err)
				}
				written = 0
			}
		}
		return bw.Flush()
	}()
	if err != nil {
		close(done)
		// Let the producer and workers see done and stop; chunks already in
		// flight complete into their buffered result channels.
		for range order {
		}
	}
	wg.Wait()
	return err
}
