package qwen35

import (
	"errors"
	"fmt"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/model/internal/vlm"
)

// Decoder is the language model of a "qwen35" GGUF up to the final norm.
// Its methods may be called from several goroutines at once: all state is
// read-only after LoadDecoder, except MergeSize, which the model sets once
// while loading.
type Decoder struct {
	Hidden, NHead, NKV, HeadDim, FFN, Ctx, Vocab int
	// MergeSize is the side of the vision merger's patch square.
	MergeSize int
	// ImagePad is the id of <|image_pad|>, -1 when the vocabulary lacks it.
	ImagePad int32
	// Causal is false when qwen35.attention.causal (or model.KeyCausal)
	// says so: the full-attention layers then see the whole sequence, which
	// runs in one chunk; the DeltaNet layers stay a forward scan.
	Causal bool

	rotDim             int // rotary dimensions at the start of each head
	nK, nV, dK, dV     int // DeltaNet key/value heads and their widths
	convK              int // causal convolution taps
	eps, ropeBase      float32
	sections           [4]int
	embd               *kernels.Matrix
	layers             []layer
	outNorm            []float32
	nAttn, nNet        int // layers of each kind
	attnIndex, netIndx []int
}

// layer is one pre-norm block: a mixer (DeltaNet or gated attention, the
// other nil), then a SwiGLU MLP.
type layer struct {
	attnNorm, postNorm []float32
	net                *deltaNet
	att                *attention
	mlp                vlm.MLP
}

func (lm *Decoder) convDim() int { return 2*lm.nK*lm.dK + lm.nV*lm.dV }

// LoadDecoder binds the decoder of a "qwen35" LM GGUF, checking every shape
// against the metadata.
func LoadDecoder(f *gguf.File) (*Decoder, error) {
	if arch, _ := f.String("general.architecture"); arch != "qwen35" {
		return nil, fmt.Errorf("general.architecture is %q, not a Qwen3.5 language model (qwen35)", arch)
	}
	c, err := f.LMConfig()
	if err != nil {
		return nil, err
	}
	lm := &Decoder{
		Hidden: c.EmbeddingLength, NHead: c.HeadCount, NKV: c.HeadCountKV, HeadDim: c.KeyLength,
		FFN: c.FeedForwardLength, Ctx: c.ContextLength, eps: c.RMSEpsilon, ropeBase: c.RopeFreqBase,
		sections: c.RopeSections, rotDim: c.RopeDimensions, MergeSize: 2, ImagePad: vlm.FindToken(f, "<|image_pad|>"), Causal: true,
	}
	a := c.Arch + "."
	u := func(key string, dst *int, def int) {
		v, e := f.Uint(a + key)
		switch {
		case errors.Is(e, gguf.ErrKeyNotFound) && def >= 0:
			*dst = def
		case e != nil:
			err = errors.Join(err, fmt.Errorf("metadata %s%s: %w", a, key, e))
		case v > 1<<20:
			err = errors.Join(err, fmt.Errorf("metadata %s%s: %d out of range", a, key, v))
		default:
			*dst = int(v)
		}
	}
	var inner, interval int
	u("ssm.conv_kernel", &lm.convK, -1)
	u("ssm.state_size", &lm.dK, -1)
	u("ssm.group_count", &lm.nK, -1)
	u("ssm.time_step_rank", &lm.nV, -1)
	u("ssm.inner_size", &inner, -1)
	u("full_attention_interval", &interval, 4)
	if err != nil {
		return nil, err
	}
	for _, key := range []string{a + "attention.causal", model.KeyCausal} {
		switch v, e := f.Bool(key); {
		case e == nil:
			lm.Causal = v
		case !errors.Is(e, gguf.ErrKeyNotFound):
			return nil, fmt.Errorf("metadata %s: %w", key, e)
		}
	}
	if lm.nV > 0 {
		lm.dV = inner / lm.nV
	}
	switch {
	case lm.HeadDim%2 != 0 || c.ValueLength != lm.HeadDim:
		return nil, fmt.Errorf("metadata: attention key length %d and value length %d (equal and even)", lm.HeadDim, c.ValueLength)
	case lm.rotDim <= 0 || lm.rotDim > lm.HeadDim || lm.rotDim%2 != 0:
		return nil, fmt.Errorf("metadata: %d rotary dimensions in heads of %d", lm.rotDim, lm.HeadDim)
	case lm.nK <= 0 || lm.nV <= 0 || lm.dK <= 0 || lm.convK <= 0 || inner <= 0 || inner%lm.nV != 0:
		return nil, fmt.Errorf("metadata: DeltaNet shape (%d key heads of %d, inner %d over %d value heads, conv %d)", lm.nK, lm.dK, inner, lm.nV, lm.convK)
	case lm.nV%lm.nK != 0:
		return nil, fmt.Errorf("metadata: %d DeltaNet value heads is not a multiple of %d key heads", lm.nV, lm.nK)
	case interval <= 0:
		return nil, fmt.Errorf("metadata: full_attention_interval %d", interval)
	case lm.Ctx <= 0:
		return nil, fmt.Errorf("metadata: context length %d", lm.Ctx)
	}
	if s := lm.sections; s[0] < 0 || s[1] < 0 || s[2] < 0 || s[3] < 0 || 2*(s[0]+s[1]+s[2]+s[3]) != lm.rotDim {
		return nil, fmt.Errorf("metadata: M-RoPE sections %v do not cover the %d rotary dimensions", s, lm.rotDim)
	}

	b := &vlm.Binder{F: f, File: "LM"}
	if te := b.Tensor("token_embd.weight"); te != nil && len(te.Dims) == 2 {
		lm.Vocab = int(te.Dims[1])
	}
	lm.embd = b.View("token_embd.weight", lm.Vocab, lm.Hidden)
	H, q, kv, vw := lm.Hidden, lm.NHead*lm.HeadDim, lm.NKV*lm.HeadDim, lm.nV*lm.dV
	lm.layers = make([]layer, c.BlockCount)
	for i := range lm.layers {
		p := fmt.Sprintf("blk.%d.", i)
		l := layer{
			attnNorm: b.Vector(p+"attn_norm.weight", H),
			postNorm: b.Vector(p+"post_attention_norm.weight", H),
			mlp: vlm.MLP{
				Gate: b.Matrix(p+"ffn_gate.weight", lm.FFN, H),
				Up:   b.Matrix(p+"ffn_up.weight", lm.FFN, H),
				Down: b.Matrix(p+"ffn_down.weight", H, lm.FFN),
			},
		}
		if (i+1)%interval == 0 {
			l.att = &attention{
				q: b.Matrix(p+"attn_q.weight", 2*q, H), k: b.Matrix(p+"attn_k.weight", kv, H),
				v: b.Matrix(p+"attn_v.weight", kv, H), o: b.Matrix(p+"attn_output.weight", H, q),
				qNorm: b.Vector(p+"attn_q_norm.weight", lm.HeadDim),
				kNorm: b.Vector(p+"attn_k_norm.weight", lm.HeadDim),
			}
			lm.attnIndex = append(lm.attnIndex, lm.nAttn)
			lm.netIndx = append(lm.netIndx, -1)
			lm.nAttn++
		} else {
			l.net = &deltaNet{
				qkv: b.Matrix(p+"attn_qkv.weight", lm.convDim(), H), z: b.Matrix(p+"attn_gate.weight", vw, H),
				beta: b.Matrix(p+"ssm_beta.weight", lm.nV, H), alpha: b.Matrix(p+"ssm_alpha.weight", lm.nV, H),
				out:   b.Matrix(p+"ssm_out.weight", H, vw),
				convT: transpose(b.Floats(p+"ssm_conv1d.weight", lm.convK, lm.convDim()), lm.convDim(), lm.convK),
				dtB:   b.Vector(p+"ssm_dt.bias", lm.nV), a: b.Vector(p+"ssm_a", lm.nV),
				norm: b.Vector(p+"ssm_norm.weight", lm.dV),
			}
			lm.attnIndex = append(lm.attnIndex, -1)
			lm.netIndx = append(lm.netIndx, lm.nNet)
			lm.nNet++
		}
		lm.layers[i] = l
	}
	lm.outNorm = b.Vector("output_norm.weight", H)
	if b.Err != nil {
		return nil, b.Err
	}
	return lm, nil
}

// transpose returns the cols×rows transpose of a rows×cols matrix (nil
// stays nil: a binding error already recorded).
func transpose(a []float32, rows, cols int) []float32 {
	if a == nil {
		return nil
	}
	t := make([]float32, len(a))
	for r := range rows {
		for c := range cols {
			t[c*rows+r] = a[r*cols+c]
		}
	}
	return t
}

// Layers is the number of decoder layers.
func (lm *Decoder) Layers() int { return len(lm.layers) }

// Flops is the weight-product work per token.
func (lm *Decoder) Flops() int64 {
	var n int64
	for _, l := range lm.layers {
		if l.att != nil {
			n += vlm.Flops(l.att.q, l.att.k, l.att.v, l.att.o)
		} else {
			n += vlm.Flops(l.net.qkv, l.net.z, l.net.beta, l.net.alpha, l.net.out)
		}
		n += vlm.Flops(l.mlp.Gate, l.mlp.Up, l.mlp.Down)
	}
	return n
}

// seqState is a sequence on its way through the decoder (model.State).
// Cut into chunks, it keeps per attention layer the keys and values so far
// and per DeltaNet layer its netState; a sequence computed in one chunk
// never needs them.
type seqState struct {
	ids  []int32
	imgs []vlm.PlacedImage
	pos  [][3]int // M-RoPE position of every token
	done int
	kv   []*kvCache
	nets []*netState
}

type kvCache struct{ k, v []float32 }

func (s *seqState) Len() int  { return len(s.ids) }
func (s *seqState) Done() int { return s.done }
func (s *seqState) Release()  { s.kv, s.nets = nil, nil }

// cache returns the keys and values of attention layer l, nil for a
// sequence computed in one chunk.
func (s *seqState) cache(lm *Decoder, l int) *kvCache {
	if s.kv == nil {
		return nil
	}
	return s.kv[lm.attnIndex[l]]
}

// net returns the carried state of DeltaNet layer l, nil for a sequence
// computed in one chunk.
func (s *seqState) net(lm *Decoder, l int) *netState {
	if s.nets == nil {
		return nil
	}
	return s.nets[lm.netIndx[l]]
}

// keep allocates what a sequence cut into chunks carries between them.
func (s *seqState) keep(lm *Decoder) {
	kvw := lm.NKV * lm.HeadDim
	for range lm.nAttn {
		s.kv = append(s.kv, &kvCache{k: make([]float32, len(s.ids)*kvw), v: make([]float32, len(s.ids)*kvw)})
	}
	for range lm.nNet {
		s.nets = append(s.nets, &netState{
			hist: make([]float32, (lm.convK-1)*lm.convDim()),
			st:   make([]float32, lm.nV*lm.dV*lm.dK),
		})
	}
}

// NewState checks a sequence (ids, image placement) and computes its
// positions (model.Model).
func (lm *Decoder) NewState(seq model.Sequence) (model.State, error) {
	n := len(seq.IDs)
	if n == 0 {
		return nil, errors.New("empty token sequence")
	}
	if n > lm.Ctx {
		return nil, fmt.Errorf("%d tokens exceed the context length %d", n, lm.Ctx)
	}
	imgs, err := vlm.PlaceImages(seq.IDs, seq.Images, lm.MergeSize, lm.Hidden, lm.ImagePad)
	if err != nil {
		return nil, err
	}
	for _, im := range imgs {
		if len(im.Deep) != 0 {
			return nil, fmt.Errorf("image has %d DeepStack row sets, this model adds none", len(im.Deep))
		}
	}
	// Still images: every frame has temporal position 0, as in Qwen3-VL.
	return &seqState{ids: seq.IDs, imgs: imgs, pos: vlm.MRoPEPositions(n, imgs, 0)}, nil
}

// part is one chunk placed in a pass.
type part = vlm.Span[*seqState]

// scratch holds the work buffers of one pass.
type scratch struct {
	*vlm.Scratch
	qg, gate              []float32 // attention: [query | gate] rows, the gates
	qkv, conv, z, b, a, o []float32 // DeltaNet
	ones                  []float32 // 1s, for SiLU as SwiGLU
}

// ForwardChunks runs one decoder pass over chunks of several sequences
// (model.Model). Every row goes through the same kernels whatever else is
// in the pass, and the delta rule's blocks start at multiples of chunkLen
// of each sequence, so results equal one pass over each whole sequence
// alone, bit for bit.
func (lm *Decoder) ForwardChunks(chunks []model.Chunk) ([][]float32, error) {
	parts, n, err := vlm.PlaceChunks[*seqState](chunks, lm.Causal)
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
		if err := vlm.Embed(x[p.Row*h:(p.Row+p.B-p.A)*h], lm.embd, p.St.ids, p.St.imgs, p.A, p.B); err != nil {
			return nil, err
		}
		pos = append(pos, p.St.pos[p.A:p.B]...)
		if (p.A > 0 || p.B < len(p.St.ids)) && p.St.nets == nil {
			p.St.keep(lm)
		}
	}
	cos, sin := vlm.RopeTables(pos, lm.rotDim, lm.ropeBase, lm.sections, true)
	qw, kvw, vw, C := lm.NHead*lm.HeadDim, lm.NKV*lm.HeadDim, lm.nV*lm.dV, lm.convDim()
	maxPart := 0
	for _, p := range parts {
		maxPart = max(maxPart, p.B-p.A)
	}
	s := &scratch{
		Scratch: vlm.NewScratch(n, h, qw, kvw, lm.FFN),
		qg:      make([]float32, n*2*qw), gate: make([]float32, n*qw),
		qkv: make([]float32, n*C), conv: make([]float32, maxPart*C),
		z: make([]float32, n*vw), b: make([]float32, n*lm.nV), a: make([]float32, n*lm.nV), o: make([]float32, n*vw),
		ones: make([]float32, maxPart*C),
	}
	for i := range s.ones {
		s.ones[i] = 1
	}
	mask := vlm.PassMask(parts, n, lm.Causal)
	xn := s.XN[:n*h]
	for l := range lm.layers {
		ly := &lm.layers[l]
		kernels.RMSNorm(xn, x, ly.attnNorm, h, lm.eps)
		if ly.att != nil {
			ly.att.forward(lm, l, x, xn, n, cos, sin, parts, mask, s)
		} else {
			ly.net.forward(lm, l, x, xn, n, parts, s)
		}
		kernels.RMSNorm(xn, x, ly.postNorm, h, lm.eps)
		ly.mlp.AddTo(x, xn, n, s.Scratch)
	}
	kernels.RMSNorm(x, x, lm.outNorm, h, lm.eps)
	out := vlm.SpanRows(x, h, parts)
	for _, p := range parts {
		p.St.done = p.B
		if p.B == len(p.St.ids) {
			p.St.Release()
		}
	}
	return out, nil
}
