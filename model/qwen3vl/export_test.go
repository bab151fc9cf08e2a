package qwen3vl

import "github.com/vembed/vembed/model/internal/vlm"

type vlmPlaced = vlm.PlacedImage

func positions(m *Model, ids []int32, imgs []vlm.PlacedImage) [][3]int {
	return vlm.MRoPEPositions(len(ids), imgs, m.LM.TemporalStride)
}
