package gguf

import (
	"errors"
	"fmt"
	"math"
)

// LMConfig holds the hyper-parameters of a decoder-only language model as
// llama.cpp's converter writes them under "<arch>.".
type LMConfig struct {
	Arch, Name string

	BlockCount, ContextLength, EmbeddingLength, FeedForwardLength int
	HeadCount, HeadCountKV, KeyLength, ValueLength                int

	RopeFreqBase, RMSEpsilon float32
	RopeSections             [4]int // M-RoPE sections (t, h, w, unused); zero when absent
	// RopeDimensions is how many leading dimensions of a head rotary
	// positions turn (rope.dimension_count; the head dimension when absent).
	RopeDimensions int
}

// VisionConfig holds the hyper-parameters of a Qwen2-VL / Qwen2.5-VL vision
// tower stored in an mmproj ("clip") file.
type VisionConfig struct {
	ProjectorType string // "qwen2vl_merger" or "qwen2.5vl_merger"

	ProjectionDim, ImageSize, PatchSize, EmbeddingLength, FeedForwardLength, BlockCount, HeadCount int

	LayerNormEps        float32
	ImageMean, ImageStd [3]float32
	UseSilu, UseGelu    bool

	WAPattern        int // full attention every WAPattern blocks (n_wa_pattern); 0 if absent
	SpatialMergeSize int // side of the merged patch square; 2 when absent
	MinPixels        int // clip.vision.image_min_pixels, 0 if absent
	MaxPixels        int // clip.vision.image_max_pixels, 0 if absent
}

// TokenizerData is the tokenizer stored in a GGUF file's "tokenizer.ggml."
// keys.
type TokenizerData struct {
	Model, Pre string
	Tokens     []string
	TokenTypes []int32 // nil when the file has none
	Merges     []string
	BOS        int // -1 if absent
	EOS        int // -1 if absent
	PAD        int // -1 if absent
	AddBOS     bool
}

// metaReader reads typed keys and remembers the first error, so config views
// read as a list of fields.
type metaReader struct {
	f   *File
	err error
}

func (r *metaReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// int reads a required non-negative integer key that fits in an int.
func (r *metaReader) int(key string) int {
	v, err := r.f.Uint(key)
	if err == nil && v > math.MaxInt32 {
		err = fmt.Errorf("gguf: metadata %q = %d is out of range", key, v)
	}
	if err != nil {
		r.fail(err)
		return 0
	}
	return int(v)
}

func (r *metaReader) has(key string) bool {
	_, ok := r.f.Lookup(key)
	return ok
}

// optInt reads an optional integer key, def when absent.
func (r *metaReader) optInt(key string, def int) int {
	if !r.has(key) {
		return def
	}
	return r.int(key)
}

func (r *metaReader) float(key string) float32 {
	v, err := r.f.Float(key)
	if err != nil {
		r.fail(err)
	}
	return float32(v)
}

func (r *metaReader) optFloat(key string, def float32) float32 {
	if !r.has(key) {
		return def
	}
	return r.float(key)
}

func (r *metaReader) str(key string) string {
	s, err := r.f.String(key)
	if err != nil {
		r.fail(err)
	}
	return s
}

func (r *metaReader) optStr(key string) string {
	if !r.has(key) {
		return ""
	}
	return r.str(key)
}

func (r *metaReader) optBool(key string) bool {
	if !r.has(key) {
		return false
	}
	b, err := r.f.Bool(key)
	if err != nil {
		r.fail(err)
	}
	return b
}

// float3 reads a required array of exactly three numbers.
func (r *metaReader) float3(key string) (out [3]float32) {
	v, err := r.f.Floats(key)
	if err == nil && len(v) != 3 {
		err = fmt.Errorf("gguf: metadata %q has %d elements, want 3", key, len(v))
	}
	if err != nil {
		r.fail(err)
		return out
	}
	for i := range out {
		out[i] = float32(v[i])
	}
	return out
}

func positive(fields ...any) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if v := fields[i+1].(int); v <= 0 {
			return fmt.Errorf("%s is %d, must be positive", fields[i], v)
		}
	}
	return nil
}

// LMConfig reads the language-model hyper-parameters. The architecture comes
// from general.architecture; key_length and value_length default to
// embedding_length / head_count and head_count_kv to head_count, as in
// llama.cpp.
func (f *File) LMConfig() (*LMConfig, error) {
	r := &metaReader{f: f}
	c := &LMConfig{Arch: r.str("general.architecture"), Name: r.optStr("general.name")}
	if r.err != nil {
		return nil, r.err
	}
	a := c.Arch + "."
	c.BlockCount = r.int(a + "block_count")
	c.ContextLength = r.int(a + "context_length")
	c.EmbeddingLength = r.int(a + "embedding_length")
	c.FeedForwardLength = r.int(a + "feed_forward_length")
	c.HeadCount = r.int(a + "attention.head_count")
	c.HeadCountKV = r.optInt(a+"attention.head_count_kv", c.HeadCount)
	c.RopeFreqBase = r.optFloat(a+"rope.freq_base", 10000)
	c.RMSEpsilon = r.float(a + "attention.layer_norm_rms_epsilon")
	if r.err != nil {
		return nil, r.err
	}
	err := positive("block_count", c.BlockCount, "embedding_length", c.EmbeddingLength,
		"feed_forward_length", c.FeedForwardLength, "head_count", c.HeadCount, "head_count_kv", c.HeadCountKV)
	if err != nil {
		return nil, fmt.Errorf("gguf: %s: %w", c.Arch, err)
	}
	if !r.has(a+"attention.key_length") && c.EmbeddingLength%c.HeadCount != 0 {
		return nil, fmt.Errorf("gguf: %s: embedding_length %d is not divisible by head_count %d", c.Arch, c.EmbeddingLength, c.HeadCount)
	}
	c.KeyLength = r.optInt(a+"attention.key_length", c.EmbeddingLength/c.HeadCount)
	c.ValueLength = r.optInt(a+"attention.value_length", c.KeyLength)
	if r.err != nil {
		return nil, r.err
	}
	c.RopeDimensions = r.optInt(a+"rope.dimension_count", c.KeyLength)
	if r.err != nil {
		return nil, r.err
	}
	if err := positive("key_length", c.KeyLength, "value_length", c.ValueLength, "rope.dimension_count", c.RopeDimensions); err != nil {
		return nil, fmt.Errorf("gguf: %s: %w", c.Arch, err)
	}
	if c.RopeDimensions > c.KeyLength || c.RopeDimensions%2 != 0 {
		return nil, fmt.Errorf("gguf: %s: rope.dimension_count %d in heads of %d (even, at most the head)", c.Arch, c.RopeDimensions, c.KeyLength)
	}
	if c.HeadCount%c.HeadCountKV != 0 {
		return nil, fmt.Errorf("gguf: %s: head_count %d is not a multiple of head_count_kv %d", c.Arch, c.HeadCount, c.HeadCountKV)
	}
	if !(c.RMSEpsilon > 0) || !(c.RopeFreqBase > 0) {
		return nil, fmt.Errorf("gguf: %s: rms epsilon %g and rope base %g must be positive", c.Arch, c.RMSEpsilon, c.RopeFreqBase)
	}
	if err := c.readSections(f, a+"rope.dimension_sections"); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *LMConfig) readSections(f *File, key string) error {
	secs, err := f.Ints(key)
	if errors.Is(err, ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(secs) == 0 || len(secs) > 4 {
		return fmt.Errorf("gguf: metadata %q has %d elements, want 1 to 4", key, len(secs))
	}
	sum := 0
	for i, s := range secs {
		if s < 0 || s > math.MaxInt32 {
			return fmt.Errorf("gguf: metadata %q: section %d is %d", key, i, s)
		}
		c.RopeSections[i] = int(s)
		sum += int(s)
	}
	if sum != c.RopeDimensions/2 {
		return fmt.Errorf("gguf: metadata %q = %v sums to %d, want rotary dimensions / 2 = %d", key, secs, sum, c.RopeDimensions/2)
	}
	return nil
}

// VisionConfig reads the vision-tower hyper-parameters of an mmproj file.
func (f *File) VisionConfig() (*VisionConfig, error) {
	r := &metaReader{f: f}
	if r.has("clip.has_vision_encoder") && !r.optBool("clip.has_vision_encoder") {
		return nil, errors.New("gguf: clip.has_vision_encoder is false: the file has no vision tower")
	}
	const v = "clip.vision."
	c := &VisionConfig{
		ProjectorType:     r.str("clip.projector_type"),
		ProjectionDim:     r.int(v + "projection_dim"),
		ImageSize:         r.optInt(v+"image_size", 560),
		PatchSize:         r.int(v + "patch_size"),
		EmbeddingLength:   r.int(v + "embedding_length"),
		FeedForwardLength: r.int(v + "feed_forward_length"),
		BlockCount:        r.int(v + "block_count"),
		HeadCount:         r.int(v + "attention.head_count"),
		LayerNormEps:      r.optFloat(v+"attention.layer_norm_epsilon", 1e-6),
		ImageMean:         r.float3(v + "image_mean"),
		ImageStd:          r.float3(v + "image_std"),
		UseSilu:           r.optBool("clip.use_silu"),
		UseGelu:           r.optBool("clip.use_gelu"),
		WAPattern:         r.optInt(v+"n_wa_pattern", 0),
		SpatialMergeSize:  r.optInt(v+"spatial_merge_size", 2),
		MinPixels:         r.optInt(v+"image_min_pixels", 0),
		MaxPixels:         r.optInt(v+"image_max_pixels", 0),
	}
	if r.err != nil {
		return nil, r.err
	}
	err := positive("projection_dim", c.ProjectionDim, "image_size", c.ImageSize, "patch_size", c.PatchSize,
		"embedding_length", c.EmbeddingLength, "feed_forward_length", c.FeedForwardLength,
		"block_count", c.BlockCount, "head_count", c.HeadCount, "spatial_merge_size", c.SpatialMergeSize)
	if err != nil {
		return nil, fmt.Errorf("gguf: clip.vision: %w", err)
	}
	if c.EmbeddingLength%c.HeadCount != 0 {
		return nil, fmt.Errorf("gguf: clip.vision: embedding_length %d is not divisible by head_count %d", c.EmbeddingLength, c.HeadCount)
	}
	if c.MaxPixels != 0 && c.MinPixels > c.MaxPixels {
		return nil, fmt.Errorf("gguf: clip.vision: image_min_pixels %d exceeds image_max_pixels %d", c.MinPixels, c.MaxPixels)
	}
	for i, s := range c.ImageStd {
		if !(s > 0) {
			return nil, fmt.Errorf("gguf: clip.vision.image_std[%d] = %g must be positive", i, s)
		}
	}
	if !(c.LayerNormEps > 0) {
		return nil, fmt.Errorf("gguf: clip.vision: layer_norm_epsilon %g must be positive", c.LayerNormEps)
	}
	return c, nil
}

// TokenizerData reads the tokenizer. Token types and merges are optional;
// special-token ids must index the vocabulary.
func (f *File) TokenizerData() (*TokenizerData, error) {
	const p = "tokenizer.ggml."
	r := &metaReader{f: f}
	d := &TokenizerData{Model: r.str(p + "model"), Pre: r.optStr(p + "pre"), AddBOS: r.optBool(p + "add_bos_token")}
	if r.err != nil {
		return nil, r.err
	}
	var err error
	if d.Tokens, err = f.Strings(p + "tokens"); err != nil {
		return nil, err
	}
	if len(d.Tokens) == 0 {
		return nil, fmt.Errorf("gguf: metadata %q is empty", p+"tokens")
	}
	if r.has(p + "token_type") {
		types, err := f.Ints(p + "token_type")
		if err != nil {
			return nil, err
		}
		if len(types) != len(d.Tokens) {
			return nil, fmt.Errorf("gguf: %d token types for %d tokens", len(types), len(d.Tokens))
		}
		d.TokenTypes = make([]int32, len(types))
		for i, t := range types {
			if t < math.MinInt32 || t > math.MaxInt32 {
				return nil, fmt.Errorf("gguf: token %d: type %d out of range", i, t)
			}
			d.TokenTypes[i] = int32(t)
		}
	}
	if r.has(p + "merges") {
		if d.Merges, err = f.Strings(p + "merges"); err != nil {
			return nil, err
		}
	}
	for _, s := range []struct {
		key string
		dst *int
	}{{"bos_token_id", &d.BOS}, {"eos_token_id", &d.EOS}, {"padding_token_id", &d.PAD}} {
		*s.dst = r.optInt(p+s.key, -1)
		if r.err != nil {
			return nil, r.err
		}
		if *s.dst >= len(d.Tokens) {
			return nil, fmt.Errorf("gguf: metadata %q = %d is not a token id (vocabulary of %d)", p+s.key, *s.dst, len(d.Tokens))
		}
	}
	return d, nil
}
