package tokenizer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
)

// readVocabGGUF reads the tokenizer keys of a GGUF file with a minimal
// metadata reader, so these tests do not depend on the gguf package.
func readVocabGGUF(path string) (Vocab, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Vocab{}, err
	}
	r := &ggufReader{b: data}
	if string(r.take(4)) != "GGUF" {
		return Vocab{}, errors.New("not a GGUF file")
	}
	r.u32() // version
	r.u64() // tensor count
	nkv := r.u64()
	kv := map[string]any{}
	for i := uint64(0); i < nkv && r.err == nil; i++ {
		k := r.str()
		kv[k] = r.value(r.u32())
	}
	if r.err != nil {
		return Vocab{}, r.err
	}
	v := Vocab{BOS: -1, EOS: -1, PAD: -1}
	v.Model, _ = kv["tokenizer.ggml.model"].(string)
	v.Pre, _ = kv["tokenizer.ggml.pre"].(string)
	for _, x := range asSlice(kv["tokenizer.ggml.tokens"]) {
		v.Tokens = append(v.Tokens, x.(string))
	}
	for _, x := range asSlice(kv["tokenizer.ggml.token_type"]) {
		v.TokenTypes = append(v.TokenTypes, int32(x.(int64)))
	}
	for _, x := range asSlice(kv["tokenizer.ggml.merges"]) {
		v.Merges = append(v.Merges, x.(string))
	}
	for key, dst := range map[string]*int{"bos": &v.BOS, "eos": &v.EOS, "padding": &v.PAD} {
		if x, ok := kv["tokenizer.ggml."+key+"_token_id"].(int64); ok {
			*dst = int(x)
		}
	}
	v.AddBOS, _ = kv["tokenizer.ggml.add_bos_token"].(bool)
	return v, nil
}

func asSlice(x any) []any { s, _ := x.([]any); return s }

type ggufReader struct {
	b   []byte
	err error
}

func (r *ggufReader) take(n uint64) []byte {
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = errors.New("truncated GGUF")
		return make([]byte, n%64)
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *ggufReader) u32() uint32 {
	p := r.take(4)
	if r.err != nil {
		return 0
	}
	return binary.LittleEndian.Uint32(p)
}

func (r *ggufReader) u64() uint64 {
	p := r.take(8)
	if r.err != nil {
		return 0
	}
	return binary.LittleEndian.Uint64(p)
}

func (r *ggufReader) str() string { return string(r.take(r.u64())) }

// value reads one value; integers come back as int64, floats as float64.
func (r *ggufReader) value(typ uint32) any {
	sizes := map[uint32]uint64{0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
	switch typ {
	case 8:
		return r.str()
	case 9:
		et, n := r.u32(), r.u64()
		if n > uint64(len(r.b)) {
			r.err = fmt.Errorf("array of %d elements", n)
			return nil
		}
		out := make([]any, 0, n)
		for i := uint64(0); i < n && r.err == nil; i++ {
			out = append(out, r.value(et))
		}
		return out
	}
	sz, ok := sizes[typ]
	if !ok {
		r.err = fmt.Errorf("value type %d", typ)
		return nil
	}
	p := r.take(sz)
	if r.err != nil {
		return nil
	}
	var u uint64
	for i := int(sz) - 1; i >= 0; i-- {
		u = u<<8 | uint64(p[i])
	}
	switch typ {
	case 7:
		return u != 0
	case 1:
		return int64(int8(u))
	case 3:
		return int64(int16(u))
	case 5:
		return int64(int32(u))
	case 6:
		return float64(math.Float32frombits(uint32(u)))
	case 12:
		return math.Float64frombits(u)
	}
	return int64(u)
}
