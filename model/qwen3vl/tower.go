package qwen3vl

import (
	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/model/internal/vlm"
)

// Tower is the vision tower of a qwen3vl_merger mmproj on its own, for the
// families that pair it with another decoder (Qwen3.5's tower is
// Qwen3-VL's, without DeepStack taps). It is read-only after LoadTower.
type Tower struct{ vm *visionModel }

// LoadTower binds the tower of an opened mmproj file, checking every
// shape against its metadata.
func LoadTower(f *gguf.File) (*Tower, error) {
	vm, err := loadVision(f)
	if err != nil {
		return nil, err
	}
	return &Tower{vm: vm}, nil
}

// OutDim is the width of the merger rows (the LM hidden width it feeds).
func (t *Tower) OutDim() int { return t.vm.outDim }

// DeepStack is the number of DeepStack taps.
func (t *Tower) DeepStack() int { return len(t.vm.deep) }

// MergeSize is the side of the merger's patch square.
func (t *Tower) MergeSize() int { return t.vm.mergeSize }

// Describe records the tower's shape, cost and preprocessing in info.
func (t *Tower) Describe(info *model.Info) {
	v := t.vm
	vlm.TowerInfo{
		Projector: projectorType, Width: v.width, Layers: len(v.blocks), PatchValues: v.patchVals,
		PatchSize: v.patchSize, MergeSize: v.mergeSize, Flops: v.flops(),
		Mean: v.mean, Std: v.std, MinPixels: v.minPixels, MaxPixels: v.maxPixels,
	}.Describe(info)
	info.TemporalPatchSize = temporalPatchSize
}

// NewVisionPass checks the images and prepares a resumable pass over them
// (model.Model's method of the same name).
func (t *Tower) NewVisionPass(imgs []model.ImageInput, trace bool) (model.VisionPass, error) {
	return t.vm.NewVisionPass(imgs, trace)
}
