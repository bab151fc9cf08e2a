package vlm

import (
	"fmt"
	"math"

	"github.com/vembed/vembed/internal/portmath"
	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/model"
)

// VisionBlock is one pre-norm ViT block of the Qwen towers: self-attention
// with biased q/k/v and 2-D rotary positions over a block-diagonal mask,
// then the MLP (SwiGLU or two-layer).
type VisionBlock struct {
	Norm1W, Norm1B   []float32 // Norm1B nil for RMSNorm
	Q, K, V, Out     *kernels.Matrix
	QB, KB, VB, OutB []float32
	Norm2W, Norm2B   []float32
	MLP              MLP
}

// VisionShape is what a tower's blocks share.
type VisionShape struct {
	Width, NHead, HeadDim int
	Eps                   float32
	RMS                   bool // RMSNorm (Qwen2.5-VL) instead of LayerNorm
}

// Norm applies the tower's norm to rows of Width values.
func (vs VisionShape) Norm(dst, x, w, b []float32) {
	if vs.RMS {
		kernels.RMSNorm(dst, x, w, vs.Width, vs.Eps)
	} else {
		kernels.LayerNorm(dst, x, w, b, vs.Width, vs.Eps)
	}
}

// Forward applies the block to the n rows of x in place; cos and sin are
// the n×HeadDim/2 rotary tables of the rows.
func (blk *VisionBlock) Forward(vs VisionShape, x []float32, n int, mask kernels.Mask, cos, sin []float32, s *Scratch) {
	W := vs.Width
	xn, q, k, v, att := s.XN[:n*W], s.Q[:n*W], s.K[:n*W], s.V[:n*W], s.Att[:n*W]

	vs.Norm(xn, x, blk.Norm1W, blk.Norm1B)
	MatMul(q, xn, n, blk.Q, blk.QB)
	MatMul(k, xn, n, blk.K, blk.KB)
	MatMul(v, xn, n, blk.V, blk.VB)
	kernels.RoPE(q, n, vs.NHead, vs.HeadDim, cos, sin)
	kernels.RoPE(k, n, vs.NHead, vs.HeadDim, cos, sin)
	kernels.Attention(att, q, k, v, n, vs.NHead, vs.NHead, vs.HeadDim, float32(1/math.Sqrt(float64(vs.HeadDim))), mask)
	MatMul(xn, att, n, blk.Out, blk.OutB)
	kernels.Add(x, x, xn)

	vs.Norm(xn, x, blk.Norm2W, blk.Norm2B)
	blk.MLP.AddTo(x, xn, n, s)
}

// TowerMLP binds the two-layer MLP of the tower block whose tensors start
// with prefix (ffn_up, ffn_down, with biases), its products narrowed
// (Binder.NarrowMatrix); act is the activation between them.
func TowerMLP(b *Binder, prefix string, width, ffn int, act func([]float32)) MLP {
	return MLP{
		Up:    b.NarrowMatrix(prefix+"ffn_up.weight", ffn, width),
		UpB:   b.Vector(prefix+"ffn_up.bias", ffn),
		Down:  b.NarrowMatrix(prefix+"ffn_down.weight", width, ffn),
		DownB: b.Vector(prefix+"ffn_down.bias", width),
		Act:   act,
	}
}

// CheckGrid fails unless im's patches form its grid: GridT·GridH·GridW
// rows of patchVals values, the sides at least ms and multiples of ms
// (the merger's square). The bounds on each side come first, so that the
// products compared cannot overflow.
func CheckGrid(im model.ImageInput, patchVals, ms int) error {
	rows := len(im.Patches) / patchVals
	if im.GridT < 1 || im.GridH < ms || im.GridW < ms || im.GridH%ms != 0 || im.GridW%ms != 0 ||
		im.GridT > rows || im.GridH > rows || im.GridW > rows || im.GridT*im.GridH > rows ||
		len(im.Patches)%patchVals != 0 || im.GridT*im.GridH*im.GridW != rows {
		return fmt.Errorf("%d values do not form a %dx%dx%d grid of %d-value patches (grid sides multiples of %d)",
			len(im.Patches), im.GridT, im.GridH, im.GridW, patchVals, ms)
	}
	return nil
}

// VisionRope fills row r of the n×headDim/2 rotary tables of a tower for a
// patch at full-resolution position (hpos, wpos): pairs d < headDim/4
// rotate by hpos·inv[d], the next quarter by wpos·inv[d−headDim/4], where
// inv[i] = θ^(−2i/(headDim/2)) (transformers' VisionRotaryEmbedding).
func VisionRope(cos, sin []float32, r, hpos, wpos, headDim int, theta float64) {
	half, quarter := headDim/2, headDim/4
	for d := 0; d < half; d++ {
		pos, i := hpos, d
		if d >= quarter {
			pos, i = wpos, d-quarter
		}
		// portmath's Pow: the same frequencies on every architecture.
		a := float64(pos) * portmath.Pow(theta, -2*float64(i)/float64(half))
		cos[r*half+d] = float32(math.Cos(a))
		sin[r*half+d] = float32(math.Sin(a))
	}
}

// PatchEmbedding returns the Conv3d patch kernel as one width×(3·2·P·P)
// matrix over patch vectors ordered (channel, frame, row, col). It uses
// v.patch_embd.weight_flat as stored when present; otherwise it interleaves
// the converter's two per-frame conv2d kernels (weight = frame 0, weight.1 =
// frame 1) channel by channel.
func PatchEmbedding(b *Binder, width, patchSize int) *kernels.Matrix {
	const frames = 2
	vals := 3 * frames * patchSize * patchSize
	if b.Has("v.patch_embd.weight_flat") {
		return b.Matrix("v.patch_embd.weight_flat", width, vals)
	}
	ps := patchSize
	f0 := b.Floats("v.patch_embd.weight", ps, ps, 3, width)
	f1 := b.Floats("v.patch_embd.weight.1", ps, ps, 3, width)
	if b.Err != nil {
		return nil
	}
	plane := ps * ps
	flat := make([]float32, width*vals)
	for o := 0; o < width; o++ {
		for c := 0; c < 3; c++ {
			src := (o*3 + c) * plane
			dst := o*vals + c*frames*plane
			copy(flat[dst:dst+plane], f0[src:src+plane])
			copy(flat[dst+plane:dst+2*plane], f1[src:src+plane])
		}
	}
	w, err := F32Matrix(flat, width, vals)
	if err != nil {
		b.Fail("flattened patch embedding: %v", err)
	}
	return w
}

// TowerInfo is what a loaded vision tower tells the engine through
// model.Info: its shape, the cost model's unit and its preprocessing.
type TowerInfo struct {
	Projector                  string
	Width, Layers, PatchValues int
	PatchSize, MergeSize       int
	Flops                      int64 // one image pass's, per patch
	Mean, Std                  [3]float32
	MinPixels, MaxPixels       int // 0: keep the LM recipe's defaults
}

// Describe records the tower in info. A pass has Layers + 2 stages (the
// patch embedding and the merger besides the blocks), the scheduler's
// unit of vision work.
func (t TowerInfo) Describe(info *model.Info) {
	info.Projector = t.Projector
	info.VisionWidth, info.VisionLayers = t.Width, t.Layers
	info.PatchValues = t.PatchValues
	info.FlopsPerPatchStage = t.Flops / int64(t.Layers+2)
	info.PatchSize, info.MergeSize = t.PatchSize, t.MergeSize
	info.ImageMean, info.ImageStd = t.Mean, t.Std
	if t.MinPixels > 0 {
		info.MinPixels = t.MinPixels
	}
	if t.MaxPixels > 0 {
		info.MaxPixels = t.MaxPixels
	}
	info.HasVision = true
}
