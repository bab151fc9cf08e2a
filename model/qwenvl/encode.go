package qwenvl

import (
	"fmt"

	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/model/internal/vlm"
)

// ImageInput is one preprocessed image: GridT·GridH·GridW patch rows of
// 3·2·P·P values (1176 for P = 14) in transformers' pixel_values order, so
// each MergeSize² consecutive rows form one merge unit and units run in
// raster order of the merged grid.
type ImageInput = model.ImageInput

// Trace holds intermediate vision tensors for parity debugging.
type Trace struct {
	// VitOut is per image the output of the last ViT block, before the
	// merger's norm: patches×VisionWidth in pixel_values row order.
	VitOut [][]float32
	// MergerOut is per image what EncodeImages returns.
	MergerOut [][]float32
}

// EncodeImages runs all images through the vision tower in one pass and
// returns per image its GridT·GridH·GridW/MergeSize² merger rows of Hidden
// values, in raster order of the merged grid. Attention never crosses an
// image boundary, so each image's rows equal those of encoding it alone.
func (m *Model) EncodeImages(imgs []ImageInput) ([][]float32, error) {
	out, _, err := m.encode(imgs, false)
	return out, err
}

// EncodeImagesTrace is EncodeImages that also returns the intermediates.
func (m *Model) EncodeImagesTrace(imgs []ImageInput) ([][]float32, *Trace, error) {
	return m.encode(imgs, true)
}

func (m *Model) encode(imgs []ImageInput, trace bool) ([][]float32, *Trace, error) {
	if len(imgs) == 0 {
		return nil, nil, nil
	}
	vp, err := m.NewVisionPass(imgs, trace)
	if err != nil {
		return nil, nil, err
	}
	p := vp.(*visionPass)
	if err := p.Step(p.Stages()); err != nil {
		return nil, nil, err
	}
	var tr *Trace
	if trace {
		tr = &Trace{VitOut: p.vitOut, MergerOut: p.out}
	}
	return p.out, tr, nil
}

// visionPass is one packed pass of the tower over a set of images, run a
// few stages at a time: stage 0 embeds the patches, stages 1..L run the
// blocks, stage L+1 the merger. Between stages the pass holds only its
// activations, so a long pass can yield the cores to other work.
type visionPass struct {
	vm    *visionModel
	lay   *visionLayout
	imgs  []ImageInput
	trace bool
	stage int
	x     []float32 // n×width activations in window order
	s     *vlm.Scratch

	out, vitOut [][]float32
}

// NewVisionPass prepares a resumable pass over imgs.
func (vm *visionModel) NewVisionPass(imgs []ImageInput, trace bool) (model.VisionPass, error) {
	if len(imgs) == 0 {
		return nil, fmt.Errorf("qwenvl: a vision pass needs images")
	}
	lay, err := vm.layout(imgs)
	if err != nil {
		return nil, err
	}
	return &visionPass{vm: vm, lay: lay, imgs: imgs, trace: trace}, nil
}

// Stages is the number of steps of the whole pass.
func (p *visionPass) Stages() int { return len(p.vm.blocks) + 2 }

// Done reports whether the pass has finished.
func (p *visionPass) Done() bool { return p.stage == p.Stages() }

// Patches is the number of patch rows in the pass.
func (p *visionPass) Patches() int { return p.lay.n }

// Result returns per image its merger rows once the pass is done.
func (p *visionPass) Result() []model.EncodedImage {
	if !p.Done() {
		return nil
	}
	res := make([]model.EncodedImage, len(p.out))
	for i, r := range p.out {
		res[i] = model.EncodedImage{Rows: r}
	}
	return res
}

// VitOut returns per image the tower's output before the merger, when the
// pass was made with trace.
func (p *visionPass) VitOut() [][]float32 { return p.vitOut }

// Step runs up to n more stages.
func (p *visionPass) Step(n int) error {
	vm, lay := p.vm, p.lay
	nRows, W, u2 := lay.n, vm.width, vm.mergeSize*vm.mergeSize
	for ; n > 0 && !p.Done(); n-- {
		switch st := p.stage; {
		case st == 0:
			// Patch embedding: one product over every image's patch rows.
			pv := p.imgs[0].Patches
			if len(p.imgs) > 1 {
				pv = make([]float32, 0, nRows*vm.patchVals)
				for _, im := range p.imgs {
					pv = append(pv, im.Patches...)
				}
			}
			emb := make([]float32, nRows*W)
			vlm.MatMul(emb, pv, nRows, vm.patch, nil)
			p.x = make([]float32, nRows*W)
			permuteUnits(p.x, emb, lay.order, u2*W, false)
			p.s = vlm.NewScratch(nRows, W, W, W, vm.ffn)
		case st <= len(vm.blocks):
			vm.blocks[st-1].forward(vm, p.x, lay, p.s)
		default:
			p.merge()
		}
		p.stage++
	}
	return nil
}

// merge runs the patch merger: norm, concatenate each unit's rows, MLP
// with exact GELU; then frees the pass's activations.
func (p *visionPass) merge() {
	vm, lay := p.vm, p.lay
	n, W, u2 := lay.n, vm.width, vm.mergeSize*vm.mergeSize
	x, s := p.x, p.s
	if p.trace {
		emb := make([]float32, n*W)
		permuteUnits(emb, x, lay.order, u2*W, true)
		p.vitOut = lay.split(emb, u2*W)
	}
	units := n / u2
	xn := s.XN[:n*W]
	vm.shape().Norm(xn, x, vm.postNormW, vm.postNormB)
	hid := make([]float32, units*u2*W)
	vlm.MatMul(hid, xn, units, vm.mm0, vm.mm0B)
	kernels.GELU(hid)
	y := make([]float32, units*vm.outDim)
	vlm.MatMul(y, hid, units, vm.mm2, vm.mm2B)
	out := make([]float32, len(y))
	permuteUnits(out, y, lay.order, vm.outDim, true)
	p.out = lay.split(out, vm.outDim)
	p.x, p.s, p.imgs = nil, nil, nil
}

// visionLayout is where every patch row of a batch of images sits in the
// tower's sequence, which is window order for Qwen2.5-VL.
type visionLayout struct {
	n      int   // patch rows
	order  []int // order[k]: raster index of the merge unit at sequence position k
	full   []int // segment bounds (rows) of full-attention blocks: one segment per image frame
	window []int // segment bounds of windowed blocks: one per non-empty window
	first  []int // first merge unit of each image, then the total

	cos, sin []float32 // n × headDim/2 rotary tables in sequence order
}

// split cuts rows (in raster unit order, rowLen values per unit) into one
// slice per image.
func (l *visionLayout) split(rows []float32, rowLen int) [][]float32 {
	out := make([][]float32, len(l.first)-1)
	for i := range out {
		lo, hi := l.first[i]*rowLen, l.first[i+1]*rowLen
		out[i] = rows[lo:hi:hi]
	}
	return out
}

// permuteUnits moves blocks of unit values: dst[k] = src[order[k]], or the
// inverse dst[order[k]] = src[k].
func permuteUnits(dst, src []float32, order []int, unit int, inverse bool) {
	for k, o := range order {
		if inverse {
			copy(dst[o*unit:(o+1)*unit], src[k*unit:(k+1)*unit])
		} else {
			copy(dst[k*unit:(k+1)*unit], src[o*unit:(o+1)*unit])
		}
	}
}

// layout checks the images and computes the window order (transformers'
// get_window_index, per image and frame, windows of window×window merge
// units in raster order, units in raster order inside each), the attention
// segments and the rotary tables.
func (vm *visionModel) layout(imgs []ImageInput) (*visionLayout, error) {
	ms := vm.mergeSize
	u2 := ms * ms
	lay := &visionLayout{full: []int{0}, window: []int{0}}
	type unitPos struct{ i, j int } // merged row and column within its frame
	var pos []unitPos
	for n, im := range imgs {
		if err := vlm.CheckGrid(im, vm.patchVals, ms); err != nil {
			return nil, fmt.Errorf("qwenvl: image %d: %w", n, err)
		}
		lay.first = append(lay.first, len(pos))
		lh, lw := im.GridH/ms, im.GridW/ms
		for t := 0; t < im.GridT; t++ {
			base := len(pos)
			for i := 0; i < lh; i++ {
				for j := 0; j < lw; j++ {
					pos = append(pos, unitPos{i, j})
				}
			}
			if !vm.windowed {
				for u := base; u < len(pos); u++ {
					lay.order = append(lay.order, u)
				}
			} else {
				win := vm.window
				for wi := 0; wi < lh; wi += win {
					for wj := 0; wj < lw; wj += win {
						for i := wi; i < min(wi+win, lh); i++ {
							for j := wj; j < min(wj+win, lw); j++ {
								lay.order = append(lay.order, base+i*lw+j)
							}
						}
						lay.window = append(lay.window, len(lay.order)*u2)
					}
				}
			}
			lay.full = append(lay.full, len(pos)*u2)
		}
	}
	lay.first = append(lay.first, len(pos))
	lay.n = len(pos) * u2

	half := vm.headDim / 2
	lay.cos = make([]float32, lay.n*half)
	lay.sin = make([]float32, lay.n*half)
	for k, u := range lay.order {
		for s := 0; s < u2; s++ {
			vlm.VisionRope(lay.cos, lay.sin, k*u2+s, pos[u].i*ms+s/ms, pos[u].j*ms+s%ms, vm.headDim, visionRopeTheta)
		}
	}
	return lay, nil
}
