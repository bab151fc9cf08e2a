package vlm

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/internal/portmath"
	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/model"
)

// Decoder is the language model of a "qwen2vl" (Qwen2: biased q/k/v,
// sectioned M-RoPE) or "qwen3vl" (Qwen3: no biases, per-head q/k RMSNorm
// before RoPE, interleaved M-RoPE, DeepStack) GGUF, up to the final norm.
// Its methods may be called from several goroutines at once: all state is
// read-only after LoadDecoder, except MergeSize and TemporalStride, which
// the model sets once while loading.
type Decoder struct {
	Arch                                  string
	Hidden, NHead, NKV, HeadDim, FFN, Ctx int
	Vocab                                 int
	// DeepStack is the number of decoder layers after which an image's
	// DeepStack rows are added (qwen3vl.n_deepstack_layers); 0 for Qwen2.
	DeepStack int
	// MergeSize is the side of the vision merger's patch square (grid sides
	// of images are multiples of it); TemporalStride is how far the
	// temporal position advances per frame of an image.
	MergeSize, TemporalStride int
	// ImagePad is the id of <|image_pad|>, -1 when the vocabulary lacks it.
	ImagePad int32
	// Causal is false for a bidirectional decoder (model.KeyCausal): each
	// sequence attends to all of itself and runs in one chunk. OutputNorm
	// is false when the final norm is not applied (model.KeyOutputNorm).
	Causal, OutputNorm bool

	eps, ropeBase float32
	sections      [4]int
	interleaved   bool // Qwen3's M-RoPE layout

	embd    *kernels.Matrix // token_embd: row t is the embedding of token t
	layers  []decoderLayer
	outNorm []float32
}

// decoderLayer is one pre-norm block: GQA attention with M-RoPE (Qwen2:
// biased q/k/v; Qwen3: unbiased, q and k RMS-normalized per head), then a
// SwiGLU MLP.
type decoderLayer struct {
	attnNorm     []float32
	q, k, v, o   *kernels.Matrix
	qB, kB, vB   []float32
	qNorm, kNorm []float32
	ffnNorm      []float32
	mlp          MLP
}

// LoadDecoder binds the decoder of an LM GGUF whose general.architecture is
// "qwen2vl" or "qwen3vl", checking every shape against the metadata.
func LoadDecoder(f *gguf.File) (*Decoder, error) {
	c, err := f.LMConfig()
	if err != nil {
		return nil, err
	}
	qwen3 := false
	switch c.Arch {
	case "qwen2vl":
	case "qwen3vl":
		qwen3 = true
	default:
		return nil, fmt.Errorf("general.architecture is %q, not a Qwen-VL language model (qwen2vl or qwen3vl)", c.Arch)
	}
	lm := &Decoder{
		Arch: c.Arch, Hidden: c.EmbeddingLength, NHead: c.HeadCount, NKV: c.HeadCountKV,
		HeadDim: c.KeyLength, FFN: c.FeedForwardLength, Ctx: c.ContextLength,
		eps: c.RMSEpsilon, ropeBase: c.RopeFreqBase, sections: c.RopeSections,
		interleaved: qwen3, MergeSize: 2, TemporalStride: 1, ImagePad: FindToken(f, "<|image_pad|>"),
		Causal: true, OutputNorm: true,
	}
	for key, dst := range map[string]*bool{model.KeyCausal: &lm.Causal, model.KeyOutputNorm: &lm.OutputNorm} {
		switch v, err := f.Bool(key); {
		case err == nil:
			*dst = v
		case !errors.Is(err, gguf.ErrKeyNotFound):
			return nil, fmt.Errorf("metadata %s: %w", key, err)
		}
	}
	if lm.NKV == 0 {
		lm.NKV = lm.NHead
	}
	if lm.HeadDim == 0 && lm.NHead > 0 {
		lm.HeadDim = lm.Hidden / lm.NHead
	}
	switch {
	case lm.Hidden <= 0 || lm.NHead <= 0 || lm.HeadDim <= 0 || lm.FFN <= 0 || c.BlockCount <= 0:
		return nil, fmt.Errorf("metadata: bad dimensions (hidden %d, heads %d, head dim %d, ffn %d, layers %d)", lm.Hidden, lm.NHead, lm.HeadDim, lm.FFN, c.BlockCount)
	case lm.NHead%lm.NKV != 0:
		return nil, fmt.Errorf("metadata: %d heads is not a multiple of %d key/value heads", lm.NHead, lm.NKV)
	case lm.HeadDim%2 != 0:
		return nil, fmt.Errorf("metadata: head dim %d is odd", lm.HeadDim)
	case c.ValueLength != lm.HeadDim:
		return nil, fmt.Errorf("metadata: value length %d differs from key length %d", c.ValueLength, lm.HeadDim)
	case c.RopeDimensions != lm.HeadDim:
		return nil, fmt.Errorf("metadata: rotary positions on %d of %d head dimensions; this decoder turns whole heads", c.RopeDimensions, lm.HeadDim)
	case lm.Ctx <= 0:
		return nil, fmt.Errorf("metadata: context length %d", lm.Ctx)
	case lm.ropeBase <= 0:
		return nil, fmt.Errorf("metadata: rope base %g", lm.ropeBase)
	}
	if s := lm.sections; s[0] < 0 || s[1] < 0 || s[2] < 0 || s[3] < 0 || s[0]+s[1]+s[2]+s[3] == 0 {
		return nil, fmt.Errorf("metadata: bad M-RoPE sections %v", s)
	}
	if lm.eps <= 0 {
		lm.eps = 1e-6
	}
	if qwen3 {
		ds, err := f.Uint(c.Arch + ".n_deepstack_layers")
		switch {
		case errors.Is(err, gguf.ErrKeyNotFound):
		case err != nil:
			return nil, err
		case ds > uint64(c.BlockCount):
			return nil, fmt.Errorf("metadata: %d DeepStack layers in a %d-layer model", ds, c.BlockCount)
		default:
			lm.DeepStack = int(ds)
		}
	}

	b := &Binder{F: f, File: "LM"}
	te := b.Tensor("token_embd.weight")
	if te != nil && len(te.Dims) == 2 {
		lm.Vocab = int(te.Dims[1])
	}
	lm.embd = b.View("token_embd.weight", lm.Vocab, lm.Hidden)
	q, kv := lm.NHead*lm.HeadDim, lm.NKV*lm.HeadDim
	lm.layers = make([]decoderLayer, c.BlockCount)
	for i := range lm.layers {
		p := fmt.Sprintf("blk.%d.", i)
		l := decoderLayer{
			attnNorm: b.Vector(p+"attn_norm.weight", lm.Hidden),
			q:        b.Matrix(p+"attn_q.weight", q, lm.Hidden),
			k:        b.Matrix(p+"attn_k.weight", kv, lm.Hidden),
			v:        b.Matrix(p+"attn_v.weight", kv, lm.Hidden),
			o:        b.Matrix(p+"attn_output.weight", lm.Hidden, q),
			ffnNorm:  b.Vector(p+"ffn_norm.weight", lm.Hidden),
			mlp: MLP{
				Gate: b.Matrix(p+"ffn_gate.weight", lm.FFN, lm.Hidden),
				Up:   b.Matrix(p+"ffn_up.weight", lm.FFN, lm.Hidden),
				Down: b.Matrix(p+"ffn_down.weight", lm.Hidden, lm.FFN),
			},
		}
		if qwen3 {
			l.qNorm = b.Vector(p+"attn_q_norm.weight", lm.HeadDim)
			l.kNorm = b.Vector(p+"attn_k_norm.weight", lm.HeadDim)
		} else {
			l.qB = b.Vector(p+"attn_q.bias", q)
			l.kB = b.Vector(p+"attn_k.bias", kv)
			l.vB = b.Vector(p+"attn_v.bias", kv)
		}
		lm.layers[i] = l
	}
	lm.outNorm = b.Vector("output_norm.weight", lm.Hidden)
	if b.Err != nil {
		return nil, b.Err
	}
	return lm, nil
}

// OutputNormWeight is output_norm.weight.
func (lm *Decoder) OutputNormWeight() []float32 { return lm.outNorm }

// Eps is the RMSNorm epsilon of the decoder's norms.
func (lm *Decoder) Eps() float32 { return lm.eps }

// Layers is the number of decoder layers.
func (lm *Decoder) Layers() int { return len(lm.layers) }

// Flops is the weight-product work per token.
func (lm *Decoder) Flops() int64 {
	var n int64
	for _, l := range lm.layers {
		n += Flops(l.q, l.k, l.v, l.o, l.mlp.Gate, l.mlp.Up, l.mlp.Down)
	}
	return n
}

// FindToken returns the id of a token in the LM's vocabulary, or -1.
func FindToken(f *gguf.File, tok string) int32 {
	toks, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return -1
	}
	for i, s := range toks {
		if s == tok {
			return int32(i)
		}
	}
	return -1
}

// seqState is a sequence on its way through the decoder (model.State).
type seqState struct {
	ids  []int32
	imgs []PlacedImage
	pos  [][3]int // M-RoPE position of every token
	done int
	// k and v hold per layer the keys and values of the tokens computed so
	// far, once the sequence is cut into chunks; a sequence computed in one
	// chunk never needs them.
	k, v [][]float32
}

func (s *seqState) Len() int  { return len(s.ids) }
func (s *seqState) Done() int { return s.done }
func (s *seqState) Release()  { s.k, s.v = nil, nil }

// NewState checks a sequence (ids, image placement, DeepStack rows) and
// computes its positions (model.Model).
func (lm *Decoder) NewState(seq model.Sequence) (model.State, error) {
	n := len(seq.IDs)
	if n == 0 {
		return nil, errors.New("empty token sequence")
	}
	if n > lm.Ctx {
		return nil, fmt.Errorf("%d tokens exceed the context length %d", n, lm.Ctx)
	}
	imgs, err := lm.PlaceImages(seq.IDs, seq.Images)
	if err != nil {
		return nil, err
	}
	for _, im := range imgs {
		if len(im.Deep) != lm.DeepStack {
			return nil, fmt.Errorf("image %d: %d DeepStack row sets, the model adds %d", im.index, len(im.Deep), lm.DeepStack)
		}
		for k, d := range im.Deep {
			if len(d) != len(im.Rows) {
				return nil, fmt.Errorf("image %d: DeepStack set %d has %d values, want %d", im.index, k, len(d), len(im.Rows))
			}
		}
	}
	return &seqState{ids: seq.IDs, imgs: imgs, pos: MRoPEPositions(n, imgs, lm.TemporalStride)}, nil
}

// part is one chunk placed in a pass.
type part = Span[*seqState]

// ForwardChunks runs one decoder pass over chunks of several sequences
// (model.Model). Every row goes through the same kernels whatever else is
// in the pass (matrix products and norms are row-independent, attention
// reads the sequence's own keys in blocks anchored at its first token), so
// results equal one pass over each whole sequence alone, bit for bit.
func (lm *Decoder) ForwardChunks(chunks []model.Chunk) ([][]float32, error) {
	parts, n, err := PlaceChunks[*seqState](chunks, lm.Causal)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	h := lm.Hidden
	x := make([]float32, n*h)
	pos := make([][3]int, 0, n)
	for _, p := range parts {
		if err := lm.embed(x[p.Row*h:(p.Row+p.B-p.A)*h], p.St.ids, p.St.imgs, p.A, p.B); err != nil {
			return nil, err
		}
		pos = append(pos, p.St.pos[p.A:p.B]...)
		if (p.A > 0 || p.B < len(p.St.ids)) && p.St.k == nil {
			kvw := lm.NKV * lm.HeadDim
			p.St.k, p.St.v = make([][]float32, len(lm.layers)), make([][]float32, len(lm.layers))
			for l := range lm.layers {
				p.St.k[l] = make([]float32, len(p.St.ids)*kvw)
				p.St.v[l] = make([]float32, len(p.St.ids)*kvw)
			}
		}
	}
	cos, sin := lm.RopeTables(pos)
	s := NewScratch(n, lm.Hidden, lm.NHead*lm.HeadDim, lm.NKV*lm.HeadDim, lm.FFN)
	spans := make([]kernels.KVSpan, len(parts))
	mask := PassMask(parts, n, lm.Causal)
	for l := range lm.layers {
		lm.layers[l].forward(lm, l, x, n, cos, sin, parts, spans, mask, s)
		if l < lm.DeepStack {
			lm.addDeepStack(x, l, parts)
		}
	}
	if lm.OutputNorm {
		kernels.RMSNorm(x, x, lm.outNorm, lm.Hidden, lm.eps)
	}
	out := SpanRows(x, h, parts)
	for _, p := range parts {
		p.St.done = p.B
		if p.B == len(p.St.ids) {
			p.St.Release()
		}
	}
	return out, nil
}

// addDeepStack adds DeepStack set l of every image to the rows of its
// placeholder tokens in the pass, as Qwen3-VL does after decoder layer l.
func (lm *Decoder) addDeepStack(x []float32, l int, parts []part) {
	h := lm.Hidden
	for _, p := range parts {
		for _, im := range p.St.imgs {
			lo, hi := max(im.First, p.A), min(im.First+im.Tokens(), p.B)
			if lo >= hi {
				continue
			}
			dst := x[(p.Row+lo-p.A)*h : (p.Row+hi-p.A)*h]
			kernels.Add(dst, dst, im.Deep[l][(lo-im.First)*h:(hi-im.First)*h])
		}
	}
}

// PlacedImage is an ImageEmbedding checked against its sequence, with its
// merged grid.
type PlacedImage struct {
	model.ImageEmbedding
	index      int // in the caller's list
	lt, lh, lw int
}

// NewPlacedImage places an image of merged grid lt×lh×lw (for tests of
// positions).
func NewPlacedImage(im model.ImageEmbedding, lt, lh, lw int) PlacedImage {
	return PlacedImage{ImageEmbedding: im, lt: lt, lh: lh, lw: lw}
}

// Tokens is the number of placeholder tokens the image covers.
func (p PlacedImage) Tokens() int { return p.lt * p.lh * p.lw }

// PlaceImages validates the images against ids and returns them sorted by
// position.
func (lm *Decoder) PlaceImages(ids []int32, images []model.ImageEmbedding) ([]PlacedImage, error) {
	return PlaceImages(ids, images, lm.MergeSize, lm.Hidden, lm.ImagePad)
}

// PlaceImages validates images of rows hidden wide, grid sides multiples
// of ms, against ids whose placeholder id is imagePad (-1: not checked),
// and returns them sorted by position.
func PlaceImages(ids []int32, images []model.ImageEmbedding, ms, hidden int, imagePad int32) ([]PlacedImage, error) {
	out := make([]PlacedImage, len(images))
	for i, im := range images {
		if im.GridT < 1 || im.GridH < ms || im.GridW < ms || im.GridH%ms != 0 || im.GridW%ms != 0 ||
			im.GridT > len(ids) || im.GridH > ms*len(ids) || im.GridW > ms*len(ids) {
			return nil, fmt.Errorf("image %d: bad grid %dx%dx%d", i, im.GridT, im.GridH, im.GridW)
		}
		p := PlacedImage{ImageEmbedding: im, index: i, lt: im.GridT, lh: im.GridH / ms, lw: im.GridW / ms}
		nt := p.Tokens()
		if len(im.Rows) != nt*hidden {
			return nil, fmt.Errorf("image %d: %d values, want %d rows of %d", i, len(im.Rows), nt, hidden)
		}
		if im.First < 0 || im.First+nt > len(ids) {
			return nil, fmt.Errorf("image %d: tokens [%d, %d) outside the %d-token sequence", i, im.First, im.First+nt, len(ids))
		}
		out[i] = p
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].First < out[b].First })
	next := 0
	for _, p := range out {
		if p.First < next {
			return nil, fmt.Errorf("images overlap at token %d", p.First)
		}
		next = p.First + p.Tokens()
	}
	if imagePad < 0 {
		return out, nil
	}
	// Placeholders and image rows must coincide exactly, as the reference's
	// masked scatter requires.
	k := 0
	for j, id := range ids {
		for k < len(out) && j >= out[k].First+out[k].Tokens() {
			k++
		}
		inImage := k < len(out) && j >= out[k].First
		switch {
		case inImage && id != imagePad:
			return nil, fmt.Errorf("image %d covers token %d (id %d), which is not <|image_pad|>", out[k].index, j, id)
		case !inImage && id == imagePad:
			return nil, fmt.Errorf("token %d is <|image_pad|> but no image covers it", j)
		}
	}
	return out, nil
}

// embed writes to x the input rows of tokens [a, b) of ids: token
// embeddings, with the rows of images where their placeholders are.
func (lm *Decoder) embed(x []float32, ids []int32, imgs []PlacedImage, a, b int) error {
	return Embed(x, lm.embd, ids, imgs, a, b)
}

// Embed writes to x the input rows of tokens [a, b) of ids: rows of the
// embedding table embd (one per id), with the rows of images where their
// placeholders are.
func Embed(x []float32, embd *kernels.Matrix, ids []int32, imgs []PlacedImage, a, b int) error {
	h, vocab := embd.Cols, embd.Rows
	rb := embd.RowBytes()
	lookup := func(lo, hi int) error {
		for i := max(lo, a); i < min(hi, b); i++ {
			id := ids[i]
			if id < 0 || int(id) >= vocab {
				return fmt.Errorf("token %d: id %d outside the vocabulary of %d", i, id, vocab)
			}
			if err := gguf.Dequantize(embd.Type, embd.Data[int(id)*rb:(int(id)+1)*rb], x[(i-a)*h:(i-a+1)*h]); err != nil {
				return fmt.Errorf("token embedding: %w", err)
			}
		}
		return nil
	}
	next := 0
	for _, im := range imgs {
		if err := lookup(next, im.First); err != nil {
			return err
		}
		end := im.First + im.Tokens()
		if lo, hi := max(im.First, a), min(end, b); lo < hi {
			copy(x[(lo-a)*h:(hi-a)*h], im.Rows[(lo-im.First)*h:(hi-im.First)*h])
		}
		next = end
	}
	return lookup(next, len(ids))
}

// MRoPEPositions returns the (t, h, w) position of every token, following
// transformers' get_rope_index: text advances all three by one; an image
// starting at p spans t = p (+frame·stride), h = p..p+lh-1, w = p..p+lw-1,
// and the text after it continues at one past the largest of those.
func MRoPEPositions(n int, imgs []PlacedImage, tStride int) [][3]int {
	pos := make([][3]int, n)
	next, i := 0, 0
	for _, im := range imgs {
		for ; i < im.First; i++ {
			pos[i] = [3]int{next, next, next}
			next++
		}
		hi := 0
		for a := 0; a < im.lt; a++ {
			for b := 0; b < im.lh; b++ {
				for c := 0; c < im.lw; c++ {
					pos[i] = [3]int{next + a*tStride, next + b, next + c}
					hi = max(hi, a*tStride, b, c)
					i++
				}
			}
		}
		next += hi + 1
	}
	for ; i < n; i++ {
		pos[i] = [3]int{next, next, next}
		next++
	}
	return pos
}

// RopeTables returns the n×HeadDim/2 cos and sin tables of M-RoPE. In the
// sectioned layout (Qwen2-VL) rotation pair k takes its position from the
// component whose section holds k mod Σsections (t, h, w, then a fourth
// that is always 0), as ggml_rope_multi does; with sections summing to
// HeadDim/2 this is exactly transformers' chunked cos/sin. In the
// interleaved layout (Qwen3-VL, transformers' apply_interleaved_mrope)
// pair k takes h when k mod 3 = 1 and k < 3·s_h, w when k mod 3 = 2 and
// k < 3·s_w, and t otherwise.
func (lm *Decoder) RopeTables(pos [][3]int) (cos, sin []float32) {
	return RopeTables(pos, lm.HeadDim, lm.ropeBase, lm.sections, lm.interleaved)
}

// RopeTables returns the n×rotDim/2 cos and sin tables of M-RoPE over the
// first rotDim dimensions of a head (Decoder.RopeTables tells the layouts).
func RopeTables(pos [][3]int, rotDim int, base float32, s [4]int, interleaved bool) (cos, sin []float32) {
	half := rotDim / 2
	total := s[0] + s[1] + s[2] + s[3]
	inv := make([]float64, half)
	for k := range inv {
		// portmath's, not math.Pow: the same frequencies on every
		// architecture (one unit in the last place, times a position of a
		// few thousand, turns a float32 rotation).
		inv[k] = portmath.Pow(float64(base), -2*float64(k)/float64(rotDim))
	}
	comp := make([]int, half) // which position component pair k uses; 3 = none
	for k := range comp {
		if interleaved {
			switch {
			case k%3 == 1 && k < 3*s[1]:
				comp[k] = 1
			case k%3 == 2 && k < 3*s[2]:
				comp[k] = 2
			}
			continue
		}
		switch r := k % total; {
		case r < s[0]:
			comp[k] = 0
		case r < s[0]+s[1]:
			comp[k] = 1
		case r < s[0]+s[1]+s[2]:
			comp[k] = 2
		default:
			comp[k] = 3
		}
	}
	cos = make([]float32, len(pos)*half)
	sin = make([]float32, len(pos)*half)
	for t, p := range pos {
		for k := 0; k < half; k++ {
			var a float64
			if comp[k] < 3 {
				a = float64(p[comp[k]]) * inv[k]
			}
			cos[t*half+k] = float32(math.Cos(a))
			sin[t*half+k] = float32(math.Sin(a))
		}
	}
	return cos, sin
}

// forward applies layer l to the rows x of a pass in place; parts say
// which sequence and tokens each run of rows is. A bidirectional decoder's
// parts are whole sequences, the segments of mask.
func (d *decoderLayer) forward(lm *Decoder, l int, x []float32, n int, cos, sin []float32, parts []part, spans []kernels.KVSpan, mask kernels.Mask, s *Scratch) {
	h, hd := lm.Hidden, lm.HeadDim
	kvw := lm.NKV * hd
	xn := s.XN[:n*h]
	q, att := s.Q[:n*lm.NHead*hd], s.Att[:n*lm.NHead*hd]
	k, v := s.K[:n*kvw], s.V[:n*kvw]

	kernels.RMSNorm(xn, x, d.attnNorm, h, lm.eps)
	MatMul(q, xn, n, d.q, d.qB)
	MatMul(k, xn, n, d.k, d.kB)
	MatMul(v, xn, n, d.v, d.vB)
	if d.qNorm != nil { // Qwen3: every head's q and k RMS-normalized
		kernels.RMSNorm(q, q, d.qNorm, hd, lm.eps)
		kernels.RMSNorm(k, k, d.kNorm, hd, lm.eps)
	}
	kernels.RoPE(q, n, lm.NHead, hd, cos, sin)
	kernels.RoPE(k, n, lm.NKV, hd, cos, sin)
	scale := float32(1 / math.Sqrt(float64(hd)))
	if !lm.Causal {
		// Each segment is its own key source whose blocks start at its
		// first row, so a row's bits do not depend on the pass around it.
		kernels.Attention(att, q, k, v, n, lm.NHead, lm.NKV, hd, scale, mask)
	} else {
		d.attendCausal(lm, l, att, q, k, v, parts, spans, scale)
	}
	MatMul(xn, att, n, d.o, nil)
	kernels.Add(x, x, xn)

	kernels.RMSNorm(xn, x, d.ffnNorm, h, lm.eps)
	d.mlp.AddTo(x, xn, n, s)
}

// attendCausal is causal attention over chunks: each part reads the keys
// and values of its sequence's earlier chunks, kept in its state.
func (d *decoderLayer) attendCausal(lm *Decoder, l int, att, q, k, v []float32, parts []part, spans []kernels.KVSpan, scale float32) {
	kvw := lm.NKV * lm.HeadDim
	for i, p := range parts {
		r0, r1 := p.Row, p.Row+p.B-p.A
		kk, vv := k[r0*kvw:r1*kvw], v[r0*kvw:r1*kvw]
		if p.St.k != nil {
			copy(p.St.k[l][p.A*kvw:], kk)
			copy(p.St.v[l][p.A*kvw:], vv)
			kk, vv = p.St.k[l][:p.B*kvw], p.St.v[l][:p.B*kvw]
		}
		spans[i] = kernels.KVSpan{Q0: r0, Q1: r1, K: kk, V: vv, Pos: p.A}
	}
	kernels.AttentionKV(att, q, lm.NHead, lm.NKV, lm.HeadDim, scale, spans)
}

// Span is a chunk placed in a pass: tokens [A, B) of its sequence St at
// rows [Row, Row+B−A) of the pass.
type Span[S any] struct {
	St        S
	A, B, Row int
}

// PassMask is the attention mask of a pass of n rows over spans: none for
// a causal decoder (its attention reads each sequence's own keys), and
// for a bidirectional one a segment per sequence.
func PassMask[S any](spans []Span[S], n int, causal bool) kernels.Mask {
	var mask kernels.Mask
	if !causal {
		mask.Segments = make([]int, 0, len(spans)+1)
		for _, sp := range spans {
			mask.Segments = append(mask.Segments, sp.Row)
		}
		mask.Segments = append(mask.Segments, n)
	}
	return mask
}

// SpanRows cuts x, the pass's rows of h values, into the rows of each
// span, capped so that appending to one cannot overwrite the next.
func SpanRows[S any](x []float32, h int, spans []Span[S]) [][]float32 {
	out := make([][]float32, len(spans))
	for i, sp := range spans {
		lo, hi := sp.Row*h, (sp.Row+sp.B-sp.A)*h
		out[i] = x[lo:hi:hi]
	}
	return out
}

// PlaceChunks checks the chunks of one decoder pass (states of the
// decoder's own type S, each sequence advancing once, within its length,
// and for a decoder that is not causal each sequence whole) and lays them
// out one after the other; n is the pass's row count.
func PlaceChunks[S interface {
	comparable
	model.State
}](chunks []model.Chunk, causal bool) (spans []Span[S], n int, err error) {
	var none S
	spans = make([]Span[S], len(chunks))
	seen := make(map[S]bool, len(chunks))
	for i, c := range chunks {
		st, ok := c.State.(S)
		if !ok || st == none {
			return nil, 0, fmt.Errorf("chunk %d: state of another model", i)
		}
		if seen[st] {
			return nil, 0, fmt.Errorf("chunk %d: a sequence may advance once per pass", i)
		}
		seen[st] = true
		done, length := st.Done(), st.Len()
		if c.N <= 0 || done+c.N > length {
			return nil, 0, fmt.Errorf("chunk %d: %d tokens from %d of a %d-token sequence", i, c.N, done, length)
		}
		if !causal && (done != 0 || c.N != length) {
			return nil, 0, fmt.Errorf("chunk %d: %d tokens from %d of a %d-token sequence: a bidirectional decoder runs each sequence in one chunk", i, c.N, done, length)
		}
		spans[i] = Span[S]{St: st, A: done, B: done + c.N, Row: n}
		n += c.N
	}
	return spans, n, nil
}
