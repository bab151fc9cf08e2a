package qwen3vl

import (
	"fmt"
	"math"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/model/internal/vlm"
)

// projectorType is clip.projector_type of a Qwen3-VL mmproj.
const projectorType = "qwen3vl_merger"

// Constants of the Qwen3-VL tower that the mmproj does not store.
const (
	temporalPatchSize = 2     // frames per patch; a still image is repeated
	visionRopeTheta   = 10000 // 2-D rotary base
)

// visionModel is the ViT of a qwen3vl_merger mmproj with its mergers.
type visionModel struct {
	width, nHead, headDim, ffn      int
	patchSize, mergeSize, patchVals int
	outDim                          int
	eps                             float32
	mean, std                       [3]float32
	minPixels, maxPixels            int

	patch   *kernels.Matrix // width × patchVals, the flattened Conv3d
	patchB  []float32
	posSide int       // side of the learned position grid (48)
	pos     []float32 // posSide² rows of width values
	blocks  []vlm.VisionBlock
	final   merger   // after the last block, norm before the 2×2 shuffle
	deep    []merger // DeepStack taps in block order, norm after the shuffle
}

// merger maps each 2×2 window of patches to one LM row: a LayerNorm (per
// patch, or over the window's concatenation for DeepStack), fc1, erf GELU,
// fc2.
type merger struct {
	after        int // the block whose output it reads (DeepStack)
	normW, normB []float32
	postShuffle  bool
	fc1, fc2     *kernels.Matrix
	fc1B, fc2B   []float32
}

func loadVision(f *gguf.File) (*visionModel, error) {
	if arch, err := f.String("general.architecture"); err != nil || arch != "clip" {
		return nil, fmt.Errorf("general.architecture is %q, not an mmproj (clip) file", arch)
	}
	c, err := f.VisionConfig()
	if err != nil {
		return nil, err
	}
	if c.ProjectorType != projectorType {
		return nil, fmt.Errorf("projector type %q is not a Qwen3-VL tower (want %s)", c.ProjectorType, projectorType)
	}
	vm := &visionModel{
		width: c.EmbeddingLength, nHead: c.HeadCount, ffn: c.FeedForwardLength,
		patchSize: c.PatchSize, mergeSize: c.SpatialMergeSize, eps: c.LayerNormEps,
		mean: c.ImageMean, std: c.ImageStd, minPixels: c.MinPixels, maxPixels: c.MaxPixels,
		outDim: c.ProjectionDim,
	}
	vm.headDim = vm.width / vm.nHead
	if vm.headDim%4 != 0 {
		return nil, fmt.Errorf("metadata: vision head dim %d is not a multiple of 4 (2-D rotary needs two halves of pairs)", vm.headDim)
	}
	if vm.patchSize > 64 || vm.mergeSize > 8 {
		return nil, fmt.Errorf("metadata: patch size %d, merge size %d out of range", vm.patchSize, vm.mergeSize)
	}
	vm.patchVals = 3 * temporalPatchSize * vm.patchSize * vm.patchSize
	taps, err := deepstackLayers(f, c.BlockCount)
	if err != nil {
		return nil, err
	}

	b := &vlm.Binder{F: f, File: "mmproj"}
	W := vm.width
	vm.patch = vlm.PatchEmbedding(b, W, vm.patchSize)
	vm.patchB = b.Vector("v.patch_embd.bias", W)
	if t := b.Tensor("v.position_embd.weight"); t != nil && len(t.Dims) == 2 {
		n := int(t.Dims[1])
		vm.posSide = int(math.Sqrt(float64(n)))
		if vm.posSide*vm.posSide != n || n < 1 {
			b.Fail("v.position_embd.weight has %d rows, not a square grid", n)
		}
		vm.pos = b.Floats("v.position_embd.weight", W, n)
	}
	vm.blocks = make([]vlm.VisionBlock, c.BlockCount)
	for i := range vm.blocks {
		p := fmt.Sprintf("v.blk.%d.", i)
		q, k, v := fusedQKV(b, p+"attn_qkv.weight", W)
		qkvB := b.Vector(p+"attn_qkv.bias", 3*W)
		vm.blocks[i] = vlm.VisionBlock{
			Norm1W: b.Vector(p+"ln1.weight", W),
			Norm1B: b.Vector(p+"ln1.bias", W),
			Q:      q, K: k, V: v,
			Out:    b.Matrix(p+"attn_out.weight", W, W),
			OutB:   b.Vector(p+"attn_out.bias", W),
			Norm2W: b.Vector(p+"ln2.weight", W),
			Norm2B: b.Vector(p+"ln2.bias", W),
			MLP:    vlm.TowerMLP(b, p, W, vm.ffn, kernels.GELUTanh),
		}
		if qkvB != nil {
			blk := &vm.blocks[i]
			blk.QB, blk.KB, blk.VB = qkvB[:W], qkvB[W:2*W], qkvB[2*W:]
		}
	}
	unitW := W * vm.mergeSize * vm.mergeSize
	vm.final = merger{
		normW: b.Vector("v.post_ln.weight", W), normB: b.Vector("v.post_ln.bias", W),
		fc1: b.Matrix("mm.0.weight", unitW, unitW), fc1B: b.Vector("mm.0.bias", unitW),
		fc2: b.Matrix("mm.2.weight", vm.outDim, unitW), fc2B: b.Vector("mm.2.bias", vm.outDim),
	}
	for _, l := range taps {
		p := fmt.Sprintf("v.deepstack.%d.", l)
		vm.deep = append(vm.deep, merger{
			after: l, postShuffle: true,
			normW: b.Vector(p+"norm.weight", unitW), normB: b.Vector(p+"norm.bias", unitW),
			fc1: b.Matrix(p+"fc1.weight", unitW, unitW), fc1B: b.Vector(p+"fc1.bias", unitW),
			fc2: b.Matrix(p+"fc2.weight", vm.outDim, unitW), fc2B: b.Vector(p+"fc2.bias", vm.outDim),
		})
	}
	if b.Err != nil {
		return nil, b.Err
	}
	return vm, nil
}

// deepstackLayers returns the blocks flagged in clip.vision.is_deepstack_layers.
func deepstackLayers(f *gguf.File, blocks int) ([]int, error) {
	const key = "clip.vision.is_deepstack_layers"
	v, ok := f.Lookup(key)
	if !ok {
		return nil, nil
	}
	flags, err := v.AsBools()
	if err != nil {
		return nil, fmt.Errorf("metadata: %s: %w", key, err)
	}
	if len(flags) != blocks {
		return nil, fmt.Errorf("metadata: %s has %d flags for %d blocks", key, len(flags), blocks)
	}
	var taps []int
	for l, on := range flags {
		if on {
			taps = append(taps, l)
		}
	}
	return taps, nil
}

// fusedQKV binds the three W×W thirds of a fused attn_qkv weight (rows q,
// then k, then v) as separate matrices over the same bytes.
func fusedQKV(b *vlm.Binder, name string, W int) (q, k, v *kernels.Matrix) {
	all := b.View(name, 3*W, W)
	if all == nil {
		return nil, nil, nil
	}
	rb := all.RowBytes()
	part := func(i int) *kernels.Matrix {
		m, err := kernels.NewMatrix(all.Type, W, W, all.Data[i*W*rb:(i+1)*W*rb])
		if err != nil {
			b.Fail("tensor %q: %v", name, err)
			return nil
		}
		b.Prepare(m)
		return m
	}
	return part(0), part(1), part(2)
}

// shape is what the blocks share.
func (vm *visionModel) shape() vlm.VisionShape {
	return vlm.VisionShape{Width: vm.width, NHead: vm.nHead, HeadDim: vm.headDim, Eps: vm.eps}
}

// flops is the weight-product work per patch of a whole pass.
func (vm *visionModel) flops() int64 {
	n := vlm.Flops(vm.patch)
	for _, b := range vm.blocks {
		n += vlm.Flops(b.Q, b.K, b.V, b.Out, b.MLP.Up, b.MLP.Down)
	}
	u2 := int64(vm.mergeSize * vm.mergeSize)
	for _, m := range append([]merger{vm.final}, vm.deep...) {
		n += vlm.Flops(m.fc1, m.fc2) / u2
	}
	return n
}

// positionRows adds to x (gh·gw rows in merge-window order) the learned
// position table resampled bilinearly to a gh×gw grid with align_corners
// (transformers' fast_pos_embed_interpolate: sample points linspace(0,
// side−1, n) per axis).
func (vm *visionModel) positionRows(x []float32, gh, gw int) {
	W, side, ms := vm.width, vm.posSide, vm.mergeSize
	axis := func(n int) (lo, hi []int, frac []float64) {
		lo, hi, frac = make([]int, n), make([]int, n), make([]float64, n)
		for i := range n {
			p := 0.0
			if n > 1 {
				p = float64(i) * float64(side-1) / float64(n-1)
			}
			lo[i] = int(p)
			hi[i] = min(lo[i]+1, side-1)
			frac[i] = p - float64(lo[i])
		}
		return lo, hi, frac
	}
	h0, h1, dh := axis(gh)
	w0, w1, dw := axis(gw)
	lw := gw / ms
	for r := 0; r < gh*gw; r++ {
		u, s := r/(ms*ms), r%(ms*ms)
		i, j := (u/lw)*ms+s/ms, (u%lw)*ms+s%ms
		corners := [4]struct {
			row int
			w   float64
		}{
			{h0[i]*side + w0[j], (1 - dh[i]) * (1 - dw[j])},
			{h0[i]*side + w1[j], (1 - dh[i]) * dw[j]},
			{h1[i]*side + w0[j], dh[i] * (1 - dw[j])},
			{h1[i]*side + w1[j], dh[i] * dw[j]},
		}
		dst := x[r*W : (r+1)*W]
		for d := range dst {
			var v float64
			for _, c := range corners {
				// A product is converted before it is added to (float64(a*b) + c): that
				// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
				// every build computes the same bits (kernels.TestNoFusedMultiplyAdd).
				v += float64(c.w * float64(vm.pos[c.row*W+d]))
			}
			dst[d] += float32(v)
		}
	}
}

// run applies the merger to x (n patch rows of width values, windows of
// mergeSize² consecutive rows) and returns n/mergeSize² rows of outDim.
func (mg *merger) run(vm *visionModel, x []float32, n int, s *vlm.Scratch) []float32 {
	W := vm.width
	u2 := vm.mergeSize * vm.mergeSize
	units, unitW := n/u2, u2*W
	xn := s.XN[:n*W]
	if mg.postShuffle {
		kernels.LayerNorm(xn, x, mg.normW, mg.normB, unitW, vm.eps)
	} else {
		kernels.LayerNorm(xn, x, mg.normW, mg.normB, W, vm.eps)
	}
	hid := make([]float32, units*unitW)
	vlm.MatMul(hid, xn, units, mg.fc1, mg.fc1B)
	kernels.GELU(hid)
	y := make([]float32, units*vm.outDim)
	vlm.MatMul(y, hid, units, mg.fc2, mg.fc2B)
	return y
}
