package qwenvl

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/model"
)

// textModel is the Qwen2 decoder of a "qwen2vl" LM GGUF.
type textModel struct {
	arch                                  string
	hidden, nHead, nKV, headDim, ffn, ctx int
	vocab                                 int
	eps, ropeBase                         float32
	sections                              [4]int

	embd    *kernels.Matrix // token_embd: row t is the embedding of token t
	layers  []decoderLayer
	outNorm []float32
}

// decoderLayer is one pre-norm Qwen2 block: GQA attention with biased q/k/v
// and M-RoPE, then a SwiGLU MLP.
type decoderLayer struct {
	attnNorm   []float32
	q, k, v, o *kernels.Matrix
	qB, kB, vB []float32
	ffnNorm    []float32
	mlp        mlp
}

func loadText(f *gguf.File) (*textModel, error) {
	if err := checkArch(f, "qwen2vl", "language model"); err != nil {
		return nil, err
	}
	c, err := f.LMConfig()
	if err != nil {
		return nil, err
	}
	lm := &textModel{
		arch: c.Arch, hidden: c.EmbeddingLength, nHead: c.HeadCount, nKV: c.HeadCountKV,
		headDim: c.KeyLength, ffn: c.FeedForwardLength, ctx: c.ContextLength,
		eps: c.RMSEpsilon, ropeBase: c.RopeFreqBase, sections: c.RopeSections,
	}
	if lm.nKV == 0 {
		lm.nKV = lm.nHead
	}
	if lm.headDim == 0 && lm.nHead > 0 {
		lm.headDim = lm.hidden / lm.nHead
	}
	switch {
	case lm.hidden <= 0 || lm.nHead <= 0 || lm.headDim <= 0 || lm.ffn <= 0 || c.BlockCount <= 0:
		return nil, fmt.Errorf("metadata: bad dimensions (hidden %d, heads %d, head dim %d, ffn %d, layers %d)", lm.hidden, lm.nHead, lm.headDim, lm.ffn, c.BlockCount)
	case lm.nHead%lm.nKV != 0:
		return nil, fmt.Errorf("metadata: %d heads is not a multiple of %d key/value heads", lm.nHead, lm.nKV)
	case lm.headDim%2 != 0:
		return nil, fmt.Errorf("metadata: head dim %d is odd", lm.headDim)
	case lm.ctx <= 0:
		return nil, fmt.Errorf("metadata: context length %d", lm.ctx)
	case lm.ropeBase <= 0:
		return nil, fmt.Errorf("metadata: rope base %g", lm.ropeBase)
	}
	if s := lm.sections; s[0] < 0 || s[1] < 0 || s[2] < 0 || s[3] < 0 || s[0]+s[1]+s[2]+s[3] == 0 {
		return nil, fmt.Errorf("metadata: bad M-RoPE sections %v", s)
	}
	if lm.eps <= 0 {
		lm.eps = 1e-6
	}

	b := &binder{f: f, file: "LM"}
	te := b.tensor("token_embd.weight")
	if te != nil && len(te.Dims) == 2 {
		lm.vocab = int(te.Dims[1])
	}
	lm.embd = b.matrix("token_embd.weight", lm.vocab, lm.hidden)
	q, kv := lm.nHead*lm.headDim, lm.nKV*lm.headDim
	lm.layers = make([]decoderLayer, c.BlockCount)
	for i := range lm.layers {
		p := fmt.Sprintf("blk.%d.", i)
		lm.layers[i] = decoderLayer{
			attnNorm: b.vector(p+"attn_norm.weight", lm.hidden),
			q:        b.matrix(p+"attn_q.weight", q, lm.hidden),
			qB:       b.vector(p+"attn_q.bias", q),
			k:        b.matrix(p+"attn_k.weight", kv, lm.hidden),
			kB:       b.vector(p+"attn_k.bias", kv),
			v:        b.matrix(p+"attn_v.weight", kv, lm.hidden),
			vB:       b.vector(p+"attn_v.bias", kv),
			o:        b.matrix(p+"attn_output.weight", lm.hidden, q),
			ffnNorm:  b.vector(p+"ffn_norm.weight", lm.hidden),
			mlp: mlp{
				gate: b.matrix(p+"ffn_gate.weight", lm.ffn, lm.hidden),
				up:   b.matrix(p+"ffn_up.weight", lm.ffn, lm.hidden),
				down: b.matrix(p+"ffn_down.weight", lm.hidden, lm.ffn),
			},
		}
	}
	lm.outNorm = b.vector("output_norm.weight", lm.hidden)
	if b.err != nil {
		return nil, b.err
	}
	return lm, nil
}

// ImageEmbedding places one image's merger rows into a token sequence:
// Rows holds GridT·GridH·GridW/MergeSize² rows of Hidden values in raster
// order of the merged grid, as EncodeImages returns them, starting at the
// placeholder token First.
type ImageEmbedding = model.ImageEmbedding

// Sequence is one input of ForwardBatch: token ids and the images placed in
// them.
type Sequence = model.Sequence

// Forward runs the decoder over one sequence of token ids in which every
// image's <|image_pad|> run is replaced by its rows, and returns the n×Hidden
// final hidden states (after the output norm). The whole sequence is one
// pass under one causal mask: image tokens attend causally like text.
func (m *Model) Forward(ids []int32, images []ImageEmbedding) ([]float32, error) {
	out, err := m.ForwardBatch([]Sequence{{IDs: ids, Images: images}})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// ForwardBatch runs several independent sequences in one pass: they are
// packed end to end, each with its own positions, under a causal mask that
// never crosses a sequence boundary, so each result equals Forward of that
// sequence alone while the matrix products run over all tokens at once.
func (m *Model) ForwardBatch(seqs []Sequence) ([][]float32, error) {
	if m.lm == nil {
		return nil, fmt.Errorf("qwenvl: model is closed")
	}
	chunks := make([]model.Chunk, len(seqs))
	for i, sq := range seqs {
		st, err := m.newState(sq)
		if err != nil {
			if len(seqs) == 1 {
				return nil, fmt.Errorf("qwenvl: %w", err)
			}
			return nil, fmt.Errorf("qwenvl: sequence %d: %w", i, err)
		}
		chunks[i] = model.Chunk{State: st, N: st.Len()}
	}
	return m.ForwardChunks(chunks)
}

// seqState is a sequence on its way through the decoder (model.State).
type seqState struct {
	ids  []int32
	imgs []placedImage
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

// NewState checks a sequence and computes its positions (model.Model).
func (m *Model) NewState(seq Sequence) (model.State, error) {
	if m.lm == nil {
		return nil, fmt.Errorf("qwenvl: model is closed")
	}
	st, err := m.newState(seq)
	if err != nil {
		return nil, fmt.Errorf("qwenvl: %w", err)
	}
	return st, nil
}

func (m *Model) newState(seq Sequence) (*seqState, error) {
	n := len(seq.IDs)
	if n == 0 {
		return nil, errors.New("empty token sequence")
	}
	if n > m.lm.ctx {
		return nil, fmt.Errorf("%d tokens exceed the context length %d", n, m.lm.ctx)
	}
	imgs, err := m.placeImages(seq.IDs, seq.Images)
	if err != nil {
		return nil, err
	}
	for i, im := range imgs {
		if len(im.Deep) > 0 {
			return nil, fmt.Errorf("image %d: DeepStack rows given to a model without DeepStack", i)
		}
	}
	return &seqState{ids: seq.IDs, imgs: imgs, pos: mropePositions(n, imgs, m.temporalStride())}, nil
}

// part is one chunk placed in a pass: tokens [a, b) of st at rows
// [row, row+b−a).
type part struct {
	st        *seqState
	a, b, row int
}

// ForwardChunks runs one decoder pass over chunks of several sequences
// (model.Model). Every row goes through the same kernels whatever else is
// in the pass (matrix products and norms are row-independent, attention
// reads the sequence's own keys in blocks anchored at its first token), so
// results equal one pass over each whole sequence alone, bit for bit.
func (m *Model) ForwardChunks(chunks []model.Chunk) ([][]float32, error) {
	lm := m.lm
	if lm == nil {
		return nil, fmt.Errorf("qwenvl: model is closed")
	}
	parts := make([]part, len(chunks))
	seen := make(map[*seqState]bool, len(chunks))
	n := 0
	for i, c := range chunks {
		st, ok := c.State.(*seqState)
		if !ok || st == nil {
			return nil, fmt.Errorf("qwenvl: chunk %d: state of another model", i)
		}
		if seen[st] {
			return nil, fmt.Errorf("qwenvl: chunk %d: a sequence may advance once per pass", i)
		}
		seen[st] = true
		if c.N <= 0 || st.done+c.N > len(st.ids) {
			return nil, fmt.Errorf("qwenvl: chunk %d: %d tokens from %d of a %d-token sequence", i, c.N, st.done, len(st.ids))
		}
		parts[i] = part{st: st, a: st.done, b: st.done + c.N, row: n}
		n += c.N
	}
	if n == 0 {
		return nil, nil
	}
	h := lm.hidden
	x := make([]float32, n*h)
	pos := make([][3]int, 0, n)
	for _, p := range parts {
		if err := lm.embed(x[p.row*h:(p.row+p.b-p.a)*h], p.st.ids, p.st.imgs, p.a, p.b); err != nil {
			return nil, fmt.Errorf("qwenvl: %w", err)
		}
		pos = append(pos, p.st.pos[p.a:p.b]...)
		if (p.a > 0 || p.b < len(p.st.ids)) && p.st.k == nil {
			kvw := lm.nKV * lm.headDim
			p.st.k, p.st.v = make([][]float32, len(lm.layers)), make([][]float32, len(lm.layers))
			for l := range lm.layers {
				p.st.k[l] = make([]float32, len(p.st.ids)*kvw)
				p.st.v[l] = make([]float32, len(p.st.ids)*kvw)
			}
		}
	}
	cos, sin := lm.ropeTables(pos)
	s := newScratch(n, lm.hidden, lm.nHead*lm.headDim, lm.nKV*lm.headDim, lm.ffn)
	spans := make([]kernels.KVSpan, len(parts))
	for l := range lm.layers {
		lm.layers[l].forward(lm, l, x, n, cos, sin, parts, spans, s)
	}
	kernels.RMSNorm(x, x, lm.outNorm, lm.hidden, lm.eps)
	out := make([][]float32, len(parts))
	for i, p := range parts {
		lo, hi := p.row*h, (p.row+p.b-p.a)*h
		out[i] = x[lo:hi:hi]
		p.st.done = p.b
		if p.b == len(p.st.ids) {
			p.st.Release()
		}
	}
	return out, nil
}

// placedImage is an ImageEmbedding checked against the sequence, with its
// merged grid.
type placedImage struct {
	ImageEmbedding
	index      int // in the caller's list
	lt, lh, lw int
}

func (p placedImage) tokens() int { return p.lt * p.lh * p.lw }

// placeImages validates the images against ids and returns them sorted by
// position.
func (m *Model) placeImages(ids []int32, images []ImageEmbedding) ([]placedImage, error) {
	ms := m.info.MergeSize
	out := make([]placedImage, len(images))
	for i, im := range images {
		if im.GridT < 1 || im.GridH < ms || im.GridW < ms || im.GridH%ms != 0 || im.GridW%ms != 0 ||
			im.GridT > len(ids) || im.GridH > ms*len(ids) || im.GridW > ms*len(ids) {
			return nil, fmt.Errorf("image %d: bad grid %dx%dx%d", i, im.GridT, im.GridH, im.GridW)
		}
		p := placedImage{ImageEmbedding: im, index: i, lt: im.GridT, lh: im.GridH / ms, lw: im.GridW / ms}
		nt := p.tokens()
		if len(im.Rows) != nt*m.lm.hidden {
			return nil, fmt.Errorf("image %d: %d values, want %d rows of %d", i, len(im.Rows), nt, m.lm.hidden)
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
		next = p.First + p.tokens()
	}
	if m.imagePad < 0 {
		return out, nil
	}
	// Placeholders and image rows must coincide exactly, as the reference's
	// masked scatter requires.
	k := 0
	for j, id := range ids {
		for k < len(out) && j >= out[k].First+out[k].tokens() {
			k++
		}
		inImage := k < len(out) && j >= out[k].First
		switch {
		case inImage && id != m.imagePad:
			return nil, fmt.Errorf("image %d covers token %d (id %d), which is not <|image_pad|>", out[k].index, j, id)
		case !inImage && id == m.imagePad:
			return nil, fmt.Errorf("token %d is <|image_pad|> but no image covers it", j)
		}
	}
	return out, nil
}

// temporalStride is how far the temporal position advances per frame of an
// image: Qwen2-VL counts frames, Qwen2.5-VL scales by seconds per frame,
// which is 0 for still images.
func (m *Model) temporalStride() int {
	if m.vis != nil && m.vis.windowed {
		return 0
	}
	return 1
}

// embed writes to x the input rows of tokens [a, b) of ids: token
// embeddings, with the rows of images where their placeholders are.
func (lm *textModel) embed(x []float32, ids []int32, imgs []placedImage, a, b int) error {
	h := lm.hidden
	rb := lm.embd.RowBytes()
	lookup := func(lo, hi int) error {
		for i := max(lo, a); i < min(hi, b); i++ {
			id := ids[i]
			if id < 0 || int(id) >= lm.vocab {
				return fmt.Errorf("token %d: id %d outside the vocabulary of %d", i, id, lm.vocab)
			}
			if err := gguf.Dequantize(lm.embd.Type, lm.embd.Data[int(id)*rb:(int(id)+1)*rb], x[(i-a)*h:(i-a+1)*h]); err != nil {
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
		end := im.First + im.tokens()
		if lo, hi := max(im.First, a), min(end, b); lo < hi {
			copy(x[(lo-a)*h:(hi-a)*h], im.Rows[(lo-im.First)*h:(hi-im.First)*h])
		}
		next = end
	}
	return lookup(next, len(ids))
}

// mropePositions returns the (t, h, w) position of every token, following
// transformers' get_rope_index: text advances all three by one; an image
// starting at p spans t = p (+frame·stride), h = p..p+lh-1, w = p..p+lw-1,
// and the text after it continues at one past the largest of those.
func mropePositions(n int, imgs []placedImage, tStride int) [][3]int {
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

// ropeTables returns the n×headDim/2 cos and sin tables of M-RoPE: rotation
// pair k takes its position from the component whose section holds
// k mod Σsections (t, h, w, then a fourth that is always 0), as
// ggml_rope_multi does; with sections summing to headDim/2 this is exactly
// transformers' chunked cos/sin.
func (lm *textModel) ropeTables(pos [][3]int) (cos, sin []float32) {
	half := lm.headDim / 2
	s := lm.sections
	total := s[0] + s[1] + s[2] + s[3]
	inv := make([]float64, half)
	for k := range inv {
		inv[k] = math.Pow(float64(lm.ropeBase), -2*float64(k)/float64(lm.headDim))
	}
	comp := make([]int, half) // which position component pair k uses; 3 = none
	for k := range comp {
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
// which sequence and tokens each run of rows is.
func (d *decoderLayer) forward(lm *textModel, l int, x []float32, n int, cos, sin []float32, parts []part, spans []kernels.KVSpan, s *scratch) {
	h, hd := lm.hidden, lm.headDim
	kvw := lm.nKV * hd
	xn := s.xn[:n*h]
	q, att := s.q[:n*lm.nHead*hd], s.att[:n*lm.nHead*hd]
	k, v := s.k[:n*kvw], s.v[:n*kvw]

	kernels.RMSNorm(xn, x, d.attnNorm, h, lm.eps)
	matMul(q, xn, n, d.q, d.qB)
	matMul(k, xn, n, d.k, d.kB)
	matMul(v, xn, n, d.v, d.vB)
	kernels.RoPE(q, n, lm.nHead, hd, cos, sin)
	kernels.RoPE(k, n, lm.nKV, hd, cos, sin)
	for i, p := range parts {
		r0, r1 := p.row, p.row+p.b-p.a
		kk, vv := k[r0*kvw:r1*kvw], v[r0*kvw:r1*kvw]
		if p.st.k != nil {
			copy(p.st.k[l][p.a*kvw:], kk)
			copy(p.st.v[l][p.a*kvw:], vv)
			kk, vv = p.st.k[l][:p.b*kvw], p.st.v[l][:p.b*kvw]
		}
		spans[i] = kernels.KVSpan{Q0: r0, Q1: r1, K: kk, V: vv, Pos: p.a}
	}
	kernels.AttentionKV(att, q, lm.nHead, lm.nKV, hd, float32(1/math.Sqrt(float64(hd))), spans)
	matMul(xn, att, n, d.o, nil)
	kernels.Add(x, x, xn)

	kernels.RMSNorm(xn, x, d.ffnNorm, h, lm.eps)
	d.mlp.addTo(x, xn, n, s)
}
