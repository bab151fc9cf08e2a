package qwenvl

import (
	"fmt"
	"math"

	"github.com/vembed/vembed/kernels"
)

// ImageInput is one preprocessed image: GridT·GridH·GridW patch rows of
// 3·2·P·P values (1176 for P = 14) in transformers' pixel_values order, so
// each MergeSize² consecutive rows form one merge unit and units run in
// raster order of the merged grid.
type ImageInput struct {
	Patches             []float32
	GridT, GridH, GridW int // in patches
}

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
	return m.encode(imgs, nil)
}

// EncodeImagesTrace is EncodeImages that also returns the intermediates.
func (m *Model) EncodeImagesTrace(imgs []ImageInput) ([][]float32, *Trace, error) {
	tr := &Trace{}
	out, err := m.encode(imgs, tr)
	if err != nil {
		return nil, nil, err
	}
	return out, tr, nil
}

func (m *Model) encode(imgs []ImageInput, tr *Trace) ([][]float32, error) {
	vm := m.vis
	if vm == nil {
		return nil, fmt.Errorf("qwenvl: the model has no vision tower (no mmproj loaded)")
	}
	if len(imgs) == 0 {
		return nil, nil
	}
	lay, err := vm.layout(imgs)
	if err != nil {
		return nil, err
	}
	n, W, u2 := lay.n, vm.width, vm.mergeSize*vm.mergeSize

	// Patch embedding: one product over every image's patch rows.
	p := imgs[0].Patches
	if len(imgs) > 1 {
		p = make([]float32, 0, n*vm.patchVals)
		for _, im := range imgs {
			p = append(p, im.Patches...)
		}
	}
	emb := make([]float32, n*W)
	matMul(emb, p, n, vm.patch, nil)
	x := make([]float32, n*W)
	permuteUnits(x, emb, lay.order, u2*W, false)

	s := newScratch(n, W, W, W, vm.ffn)
	for i := range vm.blocks {
		vm.blocks[i].forward(vm, x, lay, s)
	}
	if tr != nil {
		permuteUnits(emb, x, lay.order, u2*W, true)
		tr.VitOut = lay.split(emb, u2*W)
	}

	// Patch merger: norm, concatenate each unit's rows, MLP with exact GELU.
	units := n / u2
	xn := s.xn[:n*W]
	vm.norm(xn, x, vm.postNormW, vm.postNormB)
	hid := make([]float32, units*u2*W)
	matMul(hid, xn, units, vm.mm0, vm.mm0B)
	kernels.GELU(hid)
	y := make([]float32, units*vm.outDim)
	matMul(y, hid, units, vm.mm2, vm.mm2B)
	out := make([]float32, len(y))
	permuteUnits(out, y, lay.order, vm.outDim, true)
	res := lay.split(out, vm.outDim)
	if tr != nil {
		tr.MergerOut = res
	}
	return res, nil
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
		rows := len(im.Patches) / vm.patchVals
		if im.GridT < 1 || im.GridH < ms || im.GridW < ms || im.GridH%ms != 0 || im.GridW%ms != 0 ||
			im.GridT > rows || im.GridH > rows || im.GridW > rows || im.GridT*im.GridH > rows ||
			len(im.Patches)%vm.patchVals != 0 || im.GridT*im.GridH*im.GridW != rows {
			return nil, fmt.Errorf("qwenvl: image %d: %d values do not form a %dx%dx%d grid of %d-value patches (grid sides multiples of %d)",
				n, len(im.Patches), im.GridT, im.GridH, im.GridW, vm.patchVals, ms)
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

	// Rotary: dims (d, d+headDim/2) rotate by hpos·inv[d] for d < headDim/4,
	// by wpos·inv[d-headDim/4] above, where inv[i] = θ^(-2i/(headDim/2)).
	half, quarter := vm.headDim/2, vm.headDim/4
	inv := make([]float64, quarter)
	for i := range inv {
		inv[i] = math.Pow(visionRopeTheta, -2*float64(i)/float64(half))
	}
	lay.cos = make([]float32, lay.n*half)
	lay.sin = make([]float32, lay.n*half)
	for k, u := range lay.order {
		for s := 0; s < u2; s++ {
			r := k*u2 + s
			hpos, wpos := pos[u].i*ms+s/ms, pos[u].j*ms+s%ms
			for d := 0; d < half; d++ {
				a := float64(hpos) * inv[d%quarter]
				if d >= quarter {
					a = float64(wpos) * inv[d-quarter]
				}
				lay.cos[r*half+d] = float32(math.Cos(a))
				lay.sin[r*half+d] = float32(math.Sin(a))
			}
		}
	}
	return lay, nil
}
