package gguf

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// raw assembles GGUF bytes field by field, so tests can write files the
// Writer refuses to produce.
type raw struct{ b []byte }

func (r *raw) u32(x uint32) *raw { r.b = binary.LittleEndian.AppendUint32(r.b, x); return r }
func (r *raw) u64(x uint64) *raw { r.b = binary.LittleEndian.AppendUint64(r.b, x); return r }
func (r *raw) str(s string) *raw { r.u64(uint64(len(s))); r.b = append(r.b, s...); return r }
func (r *raw) bytes(b ...byte) *raw {
	r.b = append(r.b, b...)
	return r
}

func header(nTensors, nKV uint64) *raw {
	r := &raw{}
	return r.u32(magic).u32(3).u64(nTensors).u64(nKV)
}

// tensorFile is a file with one tensor info (F32, the given dims and
// offset) followed by data bytes of the data section.
func tensorFile(dims []uint64, typ uint32, off uint64, data int) []byte {
	r := header(1, 0).str("t").u32(uint32(len(dims)))
	for _, d := range dims {
		r.u64(d)
	}
	r.u32(typ).u64(off)
	for len(r.b)%32 != 0 {
		r.bytes(0)
	}
	r.b = append(r.b, make([]byte, data)...)
	return r.b
}

func TestParseRejects(t *testing.T) {
	be := &raw{}
	be.u32(magic).b = binary.BigEndian.AppendUint32(be.b, 3)
	be.u64(0).u64(0)
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "not a GGUF file"},
		{"magic", []byte("GGML\x03\x00\x00\x00"), "magic"},
		{"v1", (&raw{}).u32(magic).u32(1).u32(0).u32(0).b, "version 1"},
		{"v4", (&raw{}).u32(magic).u32(4).u64(0).u64(0).b, "version 4"},
		{"big-endian", be.b, "big-endian"},
		{"truncated header", (&raw{}).u32(magic).u32(3).u32(0).b, "tensor count"},
		{"huge tensor count", header(1<<62, 0).b, "tensor count"},
		{"huge kv count", header(0, 1<<40).b, "metadata count"},
		{"huge key length", header(0, 1).u64(1 << 60).u64(0).b, "key length"},
		{"empty key", header(0, 1).str("").u32(4).u32(1).b, "empty key"},
		{"duplicate key", header(0, 2).str("a").u32(0).bytes(1).str("a").u32(0).bytes(1).b, "twice"},
		{"unknown value type", header(0, 1).str("a").u32(13).u64(0).b, "unknown value type"},
		{"bad bool", header(0, 1).str("a").u32(7).bytes(2).b, "bool"},
		{"truncated u64", header(0, 1).str("a").u32(10).u32(0).b, "UINT64"},
		{"huge array", header(0, 1).str("a").u32(9).u32(4).u64(1 << 61).b, "array length"},
		{"huge string array", header(0, 1).str("a").u32(9).u32(8).u64(1 << 40).u64(0).b, "array length"},
		{"array of unknown", header(0, 1).str("a").u32(9).u32(99).u64(0).b, "unknown value type"},
		{"deep nesting", deepArray(maxDepth + 1), "nested deeper"},
		{"alignment type", header(0, 1).str(alignmentKey).u32(10).u64(32).b, "must be UINT32"},
		{"alignment zero", header(0, 1).str(alignmentKey).u32(4).u32(0).b, "power of two"},
		{"alignment 24", header(0, 1).str(alignmentKey).u32(4).u32(24).b, "power of two"},
		{"empty tensor name", header(1, 0).str("").u32(1).u64(1).u32(0).u64(0).b, "empty tensor name"},
		{"five dims", header(1, 0).str("t").u32(5).u64(0).u64(0).b, "n_dims"},
		{"negative dim", tensorFile([]uint64{1 << 63}, 0, 0, 0), "negative"},
		{"element overflow", tensorFile([]uint64{1 << 32, 1 << 32}, 0, 0, 0), "2^63"},
		{"byte overflow", tensorFile([]uint64{1 << 62}, 0, 0, 0), "2^63"},
		{"unknown tensor type", tensorFile([]uint64{4}, 4, 0, 16), "unknown tensor type 4"},
		{"partial block", tensorFile([]uint64{33}, uint32(TypeQ4_0), 0, 64), "block size"},
		{"unaligned offset", tensorFile([]uint64{1}, 0, 4, 64), "not a multiple of the alignment"},
		{"data beyond end", tensorFile([]uint64{16}, 0, 0, 60), "beyond the end"},
		{"offset beyond end", tensorFile([]uint64{1}, 0, 1<<40, 64), "beyond the end"},
		{"huge offset", tensorFile([]uint64{1}, 0, 1<<63+32, 64), "offset"},
		{"missing data section", header(1, 0).str("t").u32(1).u64(1).u32(0).u64(0).b, "beyond the end"},
		{"duplicate tensor", dupTensors(), "twice"},
	}
	for _, c := range cases {
		_, err := Parse(c.data)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "gguf: ") {
			t.Errorf("%s: error %q, want it to mention %q", c.name, err, c.want)
		}
	}
}

func deepArray(depth int) []byte {
	r := header(0, 1).str("a").u32(uint32(ValueArray))
	for range depth - 1 {
		r.u32(uint32(ValueArray)).u64(1)
	}
	r.u32(uint32(ValueUint8)).u64(0)
	return r.b
}

func dupTensors() []byte {
	r := header(2, 0)
	for range 2 {
		r.str("t").u32(1).u64(8).u32(0).u64(0)
	}
	for len(r.b)%32 != 0 {
		r.bytes(0)
	}
	r.b = append(r.b, make([]byte, 32)...)
	return r.b
}

func TestParseAccepts(t *testing.T) {
	// Version 2 has the same layout as version 3.
	v2 := header(0, 1).str("a").u32(uint32(ValueUint8)).bytes(7).b
	v2[4] = 2
	if f, err := Parse(v2); err != nil || f.Version != 2 {
		t.Errorf("version 2: %v", err)
	}
	// A vocabulary-only file may end right after its metadata.
	if _, err := Parse(header(0, 0).b); err != nil {
		t.Errorf("no tensors, no padding: %v", err)
	}
	// Nesting up to the limit is fine.
	if _, err := Parse(deepArray(maxDepth)); err != nil {
		t.Errorf("depth %d: %v", maxDepth, err)
	}
	// A zero-dimensional tensor is a scalar.
	f, err := Parse(tensorFile(nil, 0, 0, 32))
	if err != nil || f.Tensors[0].NumElements() != 1 || len(f.Tensors[0].Data) != 4 {
		t.Errorf("scalar tensor: %v", err)
	}
}

// TestTruncations parses every prefix of a valid file: each must fail with
// an error (the full file parses), none may panic.
func TestTruncations(t *testing.T) {
	data := writeSample(t, 0)
	for n := range len(data) {
		if _, err := Parse(data[:n]); err == nil {
			f, _ := Parse(data[:n])
			// Only the trailing tensor padding may be cut off.
			if len(f.Tensors) != 3 || n < int(f.DataOffset)+int(f.Tensors[2].Offset) {
				t.Fatalf("prefix of %d bytes accepted", n)
			}
		}
	}
	if _, err := Parse(data); err != nil {
		t.Fatal(err)
	}
}

func FuzzParse(f *testing.F) {
	for _, align := range []int{0, 8} {
		data := writeSample(f, align)
		f.Add(data)
		for _, n := range []int{4, 8, 24, len(data) / 3, len(data) / 2, len(data) - 1} {
			f.Add(data[:n])
		}
	}
	f.Add(tensorFile([]uint64{32, 2}, uint32(TypeQ4_K), 0, 256))
	f.Add(tensorFile([]uint64{256}, uint32(TypeQ6_K), 0, 256))
	f.Add(deepArray(3))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			return
		}
		// Whatever parsed must be usable without panics.
		file.LMConfig()
		file.VisionConfig()
		file.TokenizerData()
		decoded := 0
		for _, tt := range file.Tensors {
			if int64(len(tt.Data)) != mustBytes(t, tt) {
				t.Fatalf("tensor %q: %d data bytes", tt.Name, len(tt.Data))
			}
			if decoded < 1<<20 {
				if v, err := tt.Float32s(); err == nil {
					decoded += len(v)
				}
			}
		}
		// Writing the parsed file back gives a file that parses to the same
		// metadata and tensors.
		w := NewWriter()
		for _, kv := range file.KVs {
			w.Add(kv.Key, kv.Value)
		}
		for _, tt := range file.Tensors {
			if err := w.AddTensor(tt.Name, tt.Type, tt.Dims, tt.Data); err != nil {
				return // names the writer refuses (too long) are fine to read
			}
		}
		var buf bytes.Buffer
		if _, err := w.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		again, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatalf("rewritten file does not parse: %v", err)
		}
		if len(again.KVs) != len(file.KVs) || len(again.Tensors) != len(file.Tensors) {
			t.Fatal("rewritten file differs")
		}
		for i, kv := range file.KVs {
			if again.KVs[i].Key != kv.Key || again.KVs[i].Value.String() != kv.Value.String() {
				t.Fatalf("key %q changed", kv.Key)
			}
		}
		for i, tt := range file.Tensors {
			if !bytes.Equal(again.Tensors[i].Data, tt.Data) {
				t.Fatalf("tensor %q changed", tt.Name)
			}
		}
	})
}

func mustBytes(t *testing.T, tt *Tensor) int64 {
	n, err := tensorBytes(tt.Type, tt.Dims)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
