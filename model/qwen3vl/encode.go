package qwen3vl

import (
	"errors"
	"fmt"

	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/model/internal/vlm"
)

// visionPass is one packed pass of the tower over a set of images, run a
// few stages at a time: stage 0 embeds the patches and adds the position
// table, stages 1..L run the blocks (and the DeepStack mergers tapping
// them), stage L+1 the final merger. Images are laid end to end in
// pixel_values order (2×2 merge windows in raster order) and attend within
// their own frames only, so each image's rows equal encoding it alone.
type visionPass struct {
	vm    *visionModel
	imgs  []model.ImageInput
	trace bool
	stage int
	n     int       // patch rows
	seg   []int     // attention segments: one per image frame
	first []int     // first patch row of each image, then n
	cos   []float32 // n × headDim/2 rotary tables
	sin   []float32
	x     []float32 // n×width activations
	s     *vlm.Scratch
	deep  [][]float32 // per tap: the merged rows of every image

	out    []model.EncodedImage
	vitOut [][]float32
}

// NewVisionPass checks the images and prepares a resumable pass over them.
func (vm *visionModel) NewVisionPass(imgs []model.ImageInput, trace bool) (model.VisionPass, error) {
	if len(imgs) == 0 {
		return nil, errors.New("qwen3vl: a vision pass needs images")
	}
	p := &visionPass{vm: vm, imgs: imgs, trace: trace, seg: []int{0}}
	ms := vm.mergeSize
	for i, im := range imgs {
		if err := vlm.CheckGrid(im, vm.patchVals, ms); err != nil {
			return nil, fmt.Errorf("qwen3vl: image %d: %w", i, err)
		}
		p.first = append(p.first, p.n)
		for range im.GridT {
			p.n += im.GridH * im.GridW
			p.seg = append(p.seg, p.n)
		}
	}
	p.first = append(p.first, p.n)
	half := vm.headDim / 2
	p.cos, p.sin = make([]float32, p.n*half), make([]float32, p.n*half)
	r := 0
	for _, im := range imgs {
		lw := im.GridW / ms
		for range im.GridT {
			for k := range im.GridH * im.GridW {
				u, s := k/(ms*ms), k%(ms*ms)
				vlm.VisionRope(p.cos, p.sin, r, (u/lw)*ms+s/ms, (u%lw)*ms+s%ms, vm.headDim, visionRopeTheta)
				r++
			}
		}
	}
	return p, nil
}

// Stages is the number of steps of the whole pass.
func (p *visionPass) Stages() int { return len(p.vm.blocks) + 2 }

// Done reports whether the pass has finished.
func (p *visionPass) Done() bool { return p.stage == p.Stages() }

// Patches is the number of patch rows in the pass.
func (p *visionPass) Patches() int { return p.n }

// Result returns per image its merger rows and DeepStack rows, once done.
func (p *visionPass) Result() []model.EncodedImage {
	if !p.Done() {
		return nil
	}
	return p.out
}

// VitOut returns per image the last block's output (before the merger's
// norm), when the pass was made with trace.
func (p *visionPass) VitOut() [][]float32 { return p.vitOut }

// Step runs up to n more stages.
func (p *visionPass) Step(n int) error {
	vm := p.vm
	W := vm.width
	for ; n > 0 && !p.Done(); n-- {
		switch st := p.stage; {
		case st == 0:
			pv := p.imgs[0].Patches
			if len(p.imgs) > 1 {
				pv = make([]float32, 0, p.n*vm.patchVals)
				for _, im := range p.imgs {
					pv = append(pv, im.Patches...)
				}
			}
			p.x = make([]float32, p.n*W)
			vlm.MatMul(p.x, pv, p.n, vm.patch, vm.patchB)
			r := 0
			for _, im := range p.imgs {
				for range im.GridT {
					rows := im.GridH * im.GridW
					vm.positionRows(p.x[r*W:(r+rows)*W], im.GridH, im.GridW)
					r += rows
				}
			}
			p.s = vlm.NewScratch(p.n, W, W, W, vm.ffn)
		case st <= len(vm.blocks):
			l := st - 1
			vm.blocks[l].Forward(vm.shape(), p.x, p.n, kernels.Mask{Segments: p.seg}, p.cos, p.sin, p.s)
			for k := range vm.deep {
				if vm.deep[k].after == l {
					p.deep = append(p.deep, vm.deep[k].run(vm, p.x, p.n, p.s))
				}
			}
		default:
			p.merge()
		}
		p.stage++
	}
	return nil
}

// merge runs the final merger, cuts every output per image and frees the
// pass's activations.
func (p *visionPass) merge() {
	vm := p.vm
	u2 := vm.mergeSize * vm.mergeSize
	if p.trace {
		p.vitOut = p.split(p.x, vm.width, 1)
	}
	rows := vm.final.run(vm, p.x, p.n, p.s)
	out := p.split(rows, vm.outDim, u2)
	deep := make([][][]float32, len(p.deep))
	for k, d := range p.deep {
		deep[k] = p.split(d, vm.outDim, u2)
	}
	p.out = make([]model.EncodedImage, len(p.imgs))
	for i := range p.out {
		p.out[i].Rows = out[i]
		for k := range deep {
			p.out[i].Deep = append(p.out[i].Deep, deep[k][i])
		}
	}
	p.x, p.s, p.imgs, p.deep = nil, nil, nil, nil
}

// split cuts rows (rowLen values each, one per per patches of the pass)
// into one slice per image.
func (p *visionPass) split(rows []float32, rowLen, per int) [][]float32 {
	out := make([][]float32, len(p.first)-1)
	for i := range out {
		lo, hi := p.first[i]/per*rowLen, p.first[i+1]/per*rowLen
		out[i] = rows[lo:hi:hi]
	}
	return out
}
