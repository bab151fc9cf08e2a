package qwenvl

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/model/internal/vlm"
)

// Constants of the Qwen vision tower that the mmproj does not store.
const (
	visionRopeTheta = 10000 // 2-D rotary base
	windowPixels    = 112   // Qwen2.5-VL attention window side, in pixels
	// defaultWAPattern places full attention in every 8th block (7, 15, 23,
	// 31) when an mmproj does not record n_wa_pattern.
	defaultWAPattern = 8
)

// visionModel is the ViT of an mmproj GGUF with its patch merger.
type visionModel struct {
	projector                       string
	width, nHead, headDim, ffn      int
	patchSize, mergeSize, patchVals int
	outDim                          int
	eps                             float32
	rms                             bool // RMSNorm (2.5) or LayerNorm (2-VL)
	windowed                        bool // Qwen2.5-VL window attention
	window                          int  // window side in merged units
	mean, std                       [3]float32
	minPixels, maxPixels            int

	patch      *kernels.Matrix // width × patchVals, the flattened Conv3d
	blocks     []visionBlock
	postNormW  []float32 // the merger's ln_q
	postNormB  []float32
	mm0, mm2   *kernels.Matrix
	mm0B, mm2B []float32
}

// visionBlock is one pre-norm ViT block: self-attention with 2-D rotary
// positions over a block-diagonal mask (windows or whole frames), then the
// MLP.
type visionBlock struct {
	vlm.VisionBlock
	fullAttn bool // attends within whole frames rather than windows
}

func loadVision(f *gguf.File) (*visionModel, error) {
	if err := checkArch(f, "clip", "mmproj (vision)"); err != nil {
		return nil, err
	}
	c, err := f.VisionConfig()
	if err != nil {
		return nil, err
	}
	vm := &visionModel{
		projector: c.ProjectorType, width: c.EmbeddingLength, nHead: c.HeadCount,
		patchSize: c.PatchSize, mergeSize: c.SpatialMergeSize, eps: c.LayerNormEps,
		mean: c.ImageMean, std: c.ImageStd, minPixels: c.MinPixels, maxPixels: c.MaxPixels,
	}
	switch vm.projector {
	case "qwen2.5vl_merger":
		vm.windowed, vm.rms = true, true
	case "qwen2vl_merger":
	default:
		return nil, fmt.Errorf("projector type %q is not supported (want qwen2vl_merger or qwen2.5vl_merger)", vm.projector)
	}
	if vm.patchSize == 0 {
		vm.patchSize = 14
	}
	if vm.mergeSize == 0 {
		vm.mergeSize = 2
	}
	if vm.eps <= 0 {
		vm.eps = 1e-6
	}
	if vm.width <= 0 || vm.nHead <= 0 || vm.width%vm.nHead != 0 || c.BlockCount <= 0 || vm.patchSize < 0 || vm.mergeSize < 0 {
		return nil, fmt.Errorf("metadata: bad vision dimensions (width %d, heads %d, blocks %d, patch %d, merge %d)", vm.width, vm.nHead, c.BlockCount, vm.patchSize, vm.mergeSize)
	}
	vm.headDim = vm.width / vm.nHead
	if vm.headDim%4 != 0 {
		return nil, fmt.Errorf("metadata: vision head dim %d is not a multiple of 4 (2-D rotary needs two halves of pairs)", vm.headDim)
	}
	if vm.windowed {
		unit := vm.patchSize * vm.mergeSize
		if _, err := f.Uint("clip.vision.n_wa_pattern"); errors.Is(err, gguf.ErrKeyNotFound) {
			// Converters before the key existed: every Qwen2.5-VL size has
			// full attention in blocks 7, 15, 23, 31.
			c.WAPattern = defaultWAPattern
			slog.Warn("mmproj lacks clip.vision.n_wa_pattern; assuming Qwen2.5-VL's full attention every 8 blocks")
		}
		if c.WAPattern <= 0 {
			return nil, fmt.Errorf("metadata: clip.vision.n_wa_pattern = %d; Qwen2.5-VL needs a positive block period for its full-attention blocks", c.WAPattern)
		}
		if windowPixels%unit != 0 {
			return nil, fmt.Errorf("metadata: the %d px attention window is not a whole number of %d px merge units", windowPixels, unit)
		}
		vm.window = windowPixels / unit
	}
	vm.patchVals = 3 * temporalPatchSize * vm.patchSize * vm.patchSize

	b := &vlm.Binder{F: f, File: "mmproj"}
	// Qwen2-VL converters record the LM width as feed_forward_length, so the
	// real MLP width comes from the tensor.
	if t := b.Tensor("v.blk.0.ffn_up.weight"); t != nil && len(t.Dims) == 2 {
		vm.ffn = int(t.Dims[1])
	}
	if vm.windowed && vm.ffn != c.FeedForwardLength {
		b.Fail("v.blk.0.ffn_up.weight has %d outputs but feed_forward_length is %d", vm.ffn, c.FeedForwardLength)
	}
	if t := b.Tensor("mm.2.weight"); t != nil && len(t.Dims) == 2 {
		vm.outDim = int(t.Dims[1])
	}
	if c.ProjectionDim != 0 && vm.outDim != c.ProjectionDim {
		b.Fail("mm.2.weight has %d outputs but projection_dim is %d", vm.outDim, c.ProjectionDim)
	}
	vm.patch = vlm.PatchEmbedding(b, vm.width, vm.patchSize)

	act := kernels.QuickGELU
	if c.UseGelu {
		act = kernels.GELU
	}
	W := vm.width
	vm.blocks = make([]visionBlock, c.BlockCount)
	for i := range vm.blocks {
		p := fmt.Sprintf("v.blk.%d.", i)
		blk := visionBlock{VisionBlock: vlm.VisionBlock{
			Norm1W: b.Vector(p+"ln1.weight", W),
			Q:      b.Matrix(p+"attn_q.weight", W, W),
			QB:     b.Vector(p+"attn_q.bias", W),
			K:      b.Matrix(p+"attn_k.weight", W, W),
			KB:     b.Vector(p+"attn_k.bias", W),
			V:      b.Matrix(p+"attn_v.weight", W, W),
			VB:     b.Vector(p+"attn_v.bias", W),
			Out:    b.Matrix(p+"attn_out.weight", W, W),
			OutB:   b.Vector(p+"attn_out.bias", W),
			Norm2W: b.Vector(p+"ln2.weight", W),
			MLP:    vlm.TowerMLP(b, p, W, vm.ffn, act),
		}, fullAttn: !vm.windowed || (i+1)%c.WAPattern == 0}
		if vm.rms {
			blk.MLP.Gate = b.NarrowMatrix(p+"ffn_gate.weight", vm.ffn, W)
			blk.MLP.GateB = b.Vector(p+"ffn_gate.bias", vm.ffn)
		} else {
			blk.Norm1B = b.Vector(p+"ln1.bias", W)
			blk.Norm2B = b.Vector(p+"ln2.bias", W)
		}
		vm.blocks[i] = blk
	}
	vm.postNormW = b.Vector("v.post_ln.weight", W)
	if !vm.rms {
		vm.postNormB = b.Vector("v.post_ln.bias", W)
	}
	unitW := W * vm.mergeSize * vm.mergeSize
	vm.mm0 = b.Matrix("mm.0.weight", unitW, unitW)
	vm.mm0B = b.Vector("mm.0.bias", unitW)
	vm.mm2 = b.Matrix("mm.2.weight", vm.outDim, unitW)
	vm.mm2B = b.Vector("mm.2.bias", vm.outDim)
	if b.Err != nil {
		return nil, b.Err
	}
	return vm, nil
}

// shape is what the blocks share.
func (vm *visionModel) shape() vlm.VisionShape {
	return vlm.VisionShape{Width: vm.width, NHead: vm.nHead, HeadDim: vm.headDim, Eps: vm.eps, RMS: vm.rms}
}

// forward applies the block to x (n×width, window order) in place.
func (blk *visionBlock) forward(vm *visionModel, x []float32, lay *visionLayout, s *vlm.Scratch) {
	mask := kernels.Mask{Segments: lay.window}
	if blk.fullAttn {
		mask.Segments = lay.full
	}
	blk.Forward(vm.shape(), x, lay.n, mask, lay.cos, lay.sin, s)
}
