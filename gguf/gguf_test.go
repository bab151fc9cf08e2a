package gguf

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// sampleValues covers every value type and a nested array.
var sampleValues = []struct {
	key string
	v   any
	t   ValueType
}{
	{"t.u8", uint8(200), ValueUint8},
	{"t.i8", int8(-100), ValueInt8},
	{"t.u16", uint16(60000), ValueUint16},
	{"t.i16", int16(-30000), ValueInt16},
	{"t.u32", uint32(4000000000), ValueUint32},
	{"t.i32", int32(-2000000000), ValueInt32},
	{"t.f32", float32(1e-6), ValueFloat32},
	{"t.bool", true, ValueBool},
	{"t.str", "héllo", ValueString},
	{"t.u64", uint64(math.MaxUint64), ValueUint64},
	{"t.i64", int64(math.MinInt64), ValueInt64},
	{"t.f64", math.Pi, ValueFloat64},
	{"t.strs", []string{"a", "", "Ġthe"}, ValueArray},
	{"t.i32s", []int32{16, 24, 24, 0}, ValueArray},
	{"t.f32s", []float32{0.48145466, 0.4578275, 0.40821073}, ValueArray},
	{"t.bools", []bool{true, false}, ValueArray},
	{"t.u8s", []uint8{1, 2, 3}, ValueArray},
	{"t.nested", [][]int64{{1, 2}, {}, {-3}}, ValueArray},
	{"t.empty", []uint64{}, ValueArray},
}

func writeSample(t testing.TB, align int) []byte {
	t.Helper()
	return writeSampleWith(t, align, mustAddTensor)
}

// writeSampleWith writes the sample file, adding its tensors with add.
func writeSampleWith(t testing.TB, align int, add func(testing.TB, *Writer, string, Type, []int64, []byte)) []byte {
	t.Helper()
	w := NewWriter()
	if align != 0 {
		w.SetAlignment(align)
	}
	for _, s := range sampleValues {
		w.Add(s.key, s.v)
	}
	f32 := make([]byte, 4*6)
	for i := range 6 {
		putF32(f32[4*i:], float32(i)-2.5)
	}
	add(t, w, "a", TypeF32, []int64{3, 2}, f32)
	q := make([]byte, 34*2)
	q[0], q[1] = 0x00, 0x3c // d = 1.0
	for i := range 32 {
		q[2+i] = byte(int8(i - 16))
	}
	add(t, w, "b.q8", TypeQ8_0, []int64{64}, q)
	add(t, w, "c.empty", TypeF16, []int64{0, 4}, nil)
	var buf bytes.Buffer
	n, err := w.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo reported %d bytes, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

func mustAddTensor(t testing.TB, w *Writer, name string, typ Type, dims []int64, data []byte) {
	t.Helper()
	if err := w.AddTensor(name, typ, dims, data); err != nil {
		t.Fatal(err)
	}
}

func putF32(b []byte, x float32) {
	u := math.Float32bits(x)
	b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
}

func TestRoundTrip(t *testing.T) {
	for _, align := range []int{0, 8, 64} {
		data := writeSample(t, align)
		f, err := Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		want := align
		if want == 0 {
			want = 32
		}
		if f.Version != 3 || f.Alignment != want || f.DataOffset%int64(want) != 0 {
			t.Fatalf("version %d alignment %d data offset %d", f.Version, f.Alignment, f.DataOffset)
		}
		keys := 0
		for _, s := range sampleValues {
			v, ok := f.Lookup(s.key)
			if !ok {
				t.Fatalf("%s missing", s.key)
			}
			if v.Type() != s.t {
				t.Errorf("%s: type %s, want %s", s.key, v.Type(), s.t)
			}
			got := v.Interface()
			if s.key == "t.nested" {
				want := []any{[]int64{1, 2}, []int64{}, []int64{-3}}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %#v, want %#v", s.key, got, want)
				}
			} else if !reflect.DeepEqual(got, s.v) {
				t.Errorf("%s = %#v, want %#v", s.key, got, s.v)
			}
			if f.KVs[keys+btoi(align != 0)].Key != s.key {
				t.Errorf("key order: %q at %d", f.KVs[keys].Key, keys)
			}
			keys++
		}
		if len(f.Tensors) != 3 {
			t.Fatalf("%d tensors", len(f.Tensors))
		}
		a := f.Tensor("a")
		vals, err := a.Float32s()
		if err != nil || !reflect.DeepEqual(vals, []float32{-2.5, -1.5, -0.5, 0.5, 1.5, 2.5}) {
			t.Errorf("tensor a = %v, %v", vals, err)
		}
		b := f.Tensor("b.q8")
		if b.Offset%int64(want) != 0 || b.NumElements() != 64 || b.Type != TypeQ8_0 {
			t.Errorf("tensor b: %+v", b)
		}
		bv, _ := b.Float32s()
		if bv[0] != -16 || bv[31] != 15 || bv[32] != 0 {
			t.Errorf("tensor b values %v", bv[:33])
		}
		if c := f.Tensor("c.empty"); c == nil || len(c.Data) != 0 || c.NumElements() != 0 {
			t.Errorf("empty tensor %+v", c)
		}
		if f.Tensor("nope") != nil {
			t.Error("absent tensor found")
		}
		// A file rewritten from the parsed values is byte-identical.
		w := NewWriter()
		for _, kv := range f.KVs {
			w.Add(kv.Key, kv.Value)
		}
		for _, tt := range f.Tensors {
			mustAddTensor(t, w, tt.Name, tt.Type, tt.Dims, tt.Data)
		}
		var again bytes.Buffer
		if _, err := w.WriteTo(&again); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again.Bytes(), data) {
			t.Errorf("alignment %d: rewrite differs", align)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestTypedGetters(t *testing.T) {
	f, err := Parse(writeSample(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	if u, err := f.Uint("t.u16"); err != nil || u != 60000 {
		t.Errorf("Uint = %d, %v", u, err)
	}
	if _, err := f.Uint("t.i8"); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("Uint of a negative: %v", err)
	}
	if i, err := f.Int("t.i32"); err != nil || i != -2000000000 {
		t.Errorf("Int = %d, %v", i, err)
	}
	if _, err := f.Int("t.u64"); err == nil {
		t.Error("Int of MaxUint64 did not fail")
	}
	if x, err := f.Float("t.f32"); err != nil || float32(x) != 1e-6 {
		t.Errorf("Float = %g, %v", x, err)
	}
	if x, err := f.Float("t.u32"); err != nil || x != 4e9 {
		t.Errorf("Float of an int = %g, %v", x, err)
	}
	if b, err := f.Bool("t.bool"); err != nil || !b {
		t.Errorf("Bool = %v, %v", b, err)
	}
	if s, err := f.String("t.str"); err != nil || s != "héllo" {
		t.Errorf("String = %q, %v", s, err)
	}
	if ss, err := f.Strings("t.strs"); err != nil || len(ss) != 3 {
		t.Errorf("Strings = %q, %v", ss, err)
	}
	if is, err := f.Ints("t.i32s"); err != nil || !reflect.DeepEqual(is, []int64{16, 24, 24, 0}) {
		t.Errorf("Ints = %v, %v", is, err)
	}
	if fs, err := f.Floats("t.f32s"); err != nil || float32(fs[0]) != 0.48145466 {
		t.Errorf("Floats = %v, %v", fs, err)
	}
	_, err = f.String("t.u32")
	if err == nil || !strings.Contains(err.Error(), `"t.u32"`) || !strings.Contains(err.Error(), "UINT32") {
		t.Errorf("type mismatch error should name key and type: %v", err)
	}
	_, err = f.Ints("t.strs")
	if err == nil || !strings.Contains(err.Error(), "ARRAY of STRING") {
		t.Errorf("array mismatch error: %v", err)
	}
	if _, err := f.Uint("missing"); !errors.Is(err, ErrKeyNotFound) {
		t.Errorf("missing key: %v", err)
	}
}

func TestWriterErrors(t *testing.T) {
	w := NewWriter()
	w.Add("x", struct{}{})
	if _, err := w.WriteTo(&bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), `"x"`) {
		t.Errorf("unsupported type: %v", err)
	}
	w = NewWriter()
	w.SetAlignment(48)
	if _, err := w.WriteTo(&bytes.Buffer{}); err == nil {
		t.Error("alignment 48 accepted")
	}
	w = NewWriter()
	if err := w.AddTensor("a", TypeQ4_0, []int64{31}, make([]byte, 18)); err == nil {
		t.Error("partial block accepted")
	}
	if err := w.AddTensor("a", TypeF32, []int64{2}, make([]byte, 4)); err == nil {
		t.Error("short data accepted")
	}
	if err := w.AddTensor("a", TypeF32, []int64{1}, make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("a", TypeF32, []int64{1}, make([]byte, 4)); err == nil {
		t.Error("duplicate tensor accepted")
	}
	if err := w.AddTensor(strings.Repeat("n", 64), TypeF32, []int64{1}, make([]byte, 4)); err == nil {
		t.Error("64-byte name accepted")
	}
	if err := w.AddTensor("b", Type(16), []int64{256}, make([]byte, 66)); err != nil {
		t.Errorf("IQ2_XXS tensor (sizable, not decodable) rejected: %v", err)
	}
	// Adding a key twice replaces the value.
	w.Add("k", uint32(1))
	w.Add("k", "two")
	f := parseWriter(t, w)
	if s, _ := f.String("k"); s != "two" || len(f.KVs) != 1 {
		t.Errorf("replaced key: %q, %d keys", s, len(f.KVs))
	}
}

func lmWriter() *Writer {
	w := NewWriter()
	w.Add("general.architecture", "qwen2vl")
	w.Add("general.name", "tiny")
	w.Add("qwen2vl.block_count", uint32(2))
	w.Add("qwen2vl.context_length", uint32(128000))
	w.Add("qwen2vl.embedding_length", uint32(64))
	w.Add("qwen2vl.feed_forward_length", uint32(128))
	w.Add("qwen2vl.attention.head_count", uint32(4))
	w.Add("qwen2vl.attention.head_count_kv", uint32(2))
	w.Add("qwen2vl.rope.freq_base", float32(1e6))
	w.Add("qwen2vl.attention.layer_norm_rms_epsilon", float32(1e-6))
	w.Add("qwen2vl.rope.dimension_sections", []int32{2, 3, 3, 0})
	return w
}

func parseWriter(t *testing.T, w *Writer) *File {
	t.Helper()
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestLMConfig(t *testing.T) {
	c, err := parseWriter(t, lmWriter()).LMConfig()
	if err != nil {
		t.Fatal(err)
	}
	want := &LMConfig{Arch: "qwen2vl", Name: "tiny", BlockCount: 2, ContextLength: 128000, EmbeddingLength: 64,
		FeedForwardLength: 128, HeadCount: 4, HeadCountKV: 2, KeyLength: 16, ValueLength: 16,
		RopeFreqBase: 1e6, RMSEpsilon: 1e-6, RopeSections: [4]int{2, 3, 3, 0}, RopeDimensions: 16}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got %+v\nwant %+v", c, want)
	}
	bad := []struct {
		key  string
		v    any
		want string
	}{
		{"qwen2vl.attention.head_count", uint32(3), "not divisible"},
		{"qwen2vl.attention.head_count_kv", uint32(3), "not a multiple"},
		{"qwen2vl.rope.dimension_sections", []int32{2, 3, 4, 0}, "sums to 9"},
		{"qwen2vl.block_count", "two", "want an integer"},
		{"qwen2vl.embedding_length", int32(-64), "negative"},
		{"qwen2vl.attention.head_count", uint32(0), "must be positive"},
	}
	for _, b := range bad {
		w := lmWriter()
		w.Add(b.key, b.v)
		_, err := parseWriter(t, w).LMConfig()
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s = %v: error %v, want %q", b.key, b.v, err, b.want)
		}
	}
	w := NewWriter()
	w.Add("general.architecture", "qwen2vl")
	if _, err := parseWriter(t, w).LMConfig(); err == nil || !strings.Contains(err.Error(), "qwen2vl.block_count") {
		t.Errorf("missing keys: %v", err)
	}
}

func visionWriter() *Writer {
	w := NewWriter()
	w.Add("general.architecture", "clip")
	w.Add("clip.projector_type", "qwen2.5vl_merger")
	w.Add("clip.has_vision_encoder", true)
	w.Add("clip.vision.projection_dim", uint32(64))
	w.Add("clip.vision.image_size", uint32(560))
	w.Add("clip.vision.patch_size", uint32(14))
	w.Add("clip.vision.embedding_length", uint32(32))
	w.Add("clip.vision.feed_forward_length", uint32(64))
	w.Add("clip.vision.block_count", uint32(4))
	w.Add("clip.vision.attention.head_count", uint32(2))
	w.Add("clip.vision.attention.layer_norm_epsilon", float32(1e-6))
	w.Add("clip.vision.image_mean", []float32{0.48145466, 0.4578275, 0.40821073})
	w.Add("clip.vision.image_std", []float32{0.26862954, 0.26130258, 0.27577711})
	w.Add("clip.use_silu", true)
	w.Add("clip.vision.n_wa_pattern", uint32(4))
	return w
}

func TestVisionConfig(t *testing.T) {
	c, err := parseWriter(t, visionWriter()).VisionConfig()
	if err != nil {
		t.Fatal(err)
	}
	want := &VisionConfig{ProjectorType: "qwen2.5vl_merger", ProjectionDim: 64, ImageSize: 560, PatchSize: 14,
		EmbeddingLength: 32, FeedForwardLength: 64, BlockCount: 4, HeadCount: 2, LayerNormEps: 1e-6,
		ImageMean: [3]float32{0.48145466, 0.4578275, 0.40821073}, ImageStd: [3]float32{0.26862954, 0.26130258, 0.27577711},
		UseSilu: true, WAPattern: 4, SpatialMergeSize: 2}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got %+v\nwant %+v", c, want)
	}
	w := visionWriter()
	w.Add("clip.vision.image_std", []float32{1, 1})
	if _, err := parseWriter(t, w).VisionConfig(); err == nil || !strings.Contains(err.Error(), "image_std") {
		t.Errorf("2-element std: %v", err)
	}
	w = visionWriter()
	w.Add("clip.vision.attention.head_count", uint32(5))
	if _, err := parseWriter(t, w).VisionConfig(); err == nil {
		t.Error("width 32 with 5 heads accepted")
	}
}

func TestTokenizerData(t *testing.T) {
	w := NewWriter()
	w.Add("tokenizer.ggml.model", "gpt2")
	w.Add("tokenizer.ggml.pre", "qwen2")
	w.Add("tokenizer.ggml.tokens", []string{"a", "b", "ab", "<|endoftext|>"})
	w.Add("tokenizer.ggml.token_type", []int32{1, 1, 1, 3})
	w.Add("tokenizer.ggml.merges", []string{"a b"})
	w.Add("tokenizer.ggml.eos_token_id", uint32(3))
	d, err := parseWriter(t, w).TokenizerData()
	if err != nil {
		t.Fatal(err)
	}
	want := &TokenizerData{Model: "gpt2", Pre: "qwen2", Tokens: []string{"a", "b", "ab", "<|endoftext|>"},
		TokenTypes: []int32{1, 1, 1, 3}, Merges: []string{"a b"}, BOS: -1, EOS: 3, PAD: -1}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("got %+v\nwant %+v", d, want)
	}
	w.Add("tokenizer.ggml.bos_token_id", uint32(4))
	if _, err := parseWriter(t, w).TokenizerData(); err == nil {
		t.Error("BOS id outside the vocabulary accepted")
	}
	w.Add("tokenizer.ggml.bos_token_id", uint32(0))
	w.Add("tokenizer.ggml.token_type", []int32{1})
	if _, err := parseWriter(t, w).TokenizerData(); err == nil {
		t.Error("token_type length mismatch accepted")
	}
}

func TestValueOf(t *testing.T) {
	for _, bad := range []any{nil, map[string]int{}, struct{}{}, []any{1}, []func(){nil}, complex(1, 2), Value{typ: 99}} {
		if _, err := ValueOf(bad); err == nil {
			t.Errorf("ValueOf(%#v) accepted", bad)
		}
	}
	deep := any([]int8{1})
	for range maxDepth {
		deep = []any{deep}
	}
	if _, err := ValueOf(deep); err == nil {
		t.Error("nesting beyond the limit accepted")
	}
	v, err := ValueOf([]any{[]string{"a"}, []float64{1.5}})
	if err != nil {
		t.Fatal(err)
	}
	if v.Len() != 2 || v.ElemType() != ValueArray || v.Index(0).ElemType() != ValueString {
		t.Errorf("mixed nested array: %v", v)
	}
	if s := v.String(); s != `[["a"], [1.5]]` {
		t.Errorf("String() = %s", s)
	}
	// int and uint map to the 64-bit types.
	if v, _ := ValueOf(3); v.Type() != ValueInt64 {
		t.Errorf("int is %s", v.Type())
	}
	if v, _ := ValueOf([]uint{3}); v.ElemType() != ValueUint64 {
		t.Errorf("[]uint is %s", v.ElemType())
	}
	if b, err := mustValue(t, []bool{true, false}).AsBools(); err != nil || !b[0] || b[1] {
		t.Errorf("AsBools = %v, %v", b, err)
	}
	if _, err := mustValue(t, []int64{-1}).AsInts(); err != nil {
		t.Error(err)
	}
	if _, err := mustValue(t, []uint64{math.MaxUint64}).AsInts(); err == nil {
		t.Error("MaxUint64 widened to int64")
	}
}

func mustValue(t *testing.T, x any) Value {
	t.Helper()
	v, err := ValueOf(x)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
