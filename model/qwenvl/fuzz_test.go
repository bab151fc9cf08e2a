package qwenvl

import (
	"encoding/binary"
	"math"
	"testing"
)

// FuzzInputs feeds arbitrary token ids, image placements and grids to
// Forward and EncodeImages: every input must give a result of the right
// size or an error, never a panic or an allocation sized by a bad number.
func FuzzInputs(f *testing.F) {
	m := loadSynth(f, "tiny", "F32", "F32", nil)
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{0xf2, 0x01, 0x00, 0x00, 0x01, 0x04, 0x06, 0x02, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01})
	f.Add([]byte{0xff, 0xff, 0xff, 0x7f, 0x80, 0x80, 0x80, 0x80, 0x00})
	f.Add([]byte{0x05, 0x01, 0x02, 0x02, 0x02, 0x03, 0x03, 0x03, 0x03, 0x09})
	f.Fuzz(func(t *testing.T, data []byte) {
		next := func() int {
			if len(data) == 0 {
				return 0
			}
			v := int(int8(data[0]))
			data = data[1:]
			return v
		}
		// Grid and placement of up to two images, as small signed numbers.
		nImg := next() & 3
		var embs []ImageEmbedding
		var inputs []ImageInput
		for i := 0; i < nImg; i++ {
			gt, gh, gw, first := next(), next(), next(), next()
			// Rows as the grid implies, capped so the harness itself stays
			// small; a grid larger than its rows must be an error.
			rows := 0
			if gt > 0 && gh > 0 && gw > 0 {
				rows = min(gt*gh*gw, 256)
			}
			if next()&1 == 1 {
				rows++ // a wrong row count
			}
			embs = append(embs, ImageEmbedding{Rows: make([]float32, rows/4*m.Info().Hidden), First: first, GridT: gt, GridH: gh, GridW: gw})
			inputs = append(inputs, ImageInput{Patches: make([]float32, rows*1176), GridT: gt, GridH: gh, GridW: gw})
		}
		ids := make([]int32, len(data)/4)
		for i := range ids {
			ids[i] = int32(binary.LittleEndian.Uint32(data[4*i:]))
			if ids[i] >= 0 {
				ids[i] %= 520 // mostly in the 512-token vocabulary, with <|image_pad|> often
			}
		}
		if h, err := m.Forward(ids, embs); err == nil {
			if len(h) != len(ids)*m.Info().Hidden {
				t.Fatalf("%d ids gave %d values", len(ids), len(h))
			}
			for _, v := range h {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatal("non-finite hidden state")
				}
			}
		}
		if out, err := m.EncodeImages(inputs); err == nil {
			for k, rows := range out {
				if len(rows) != len(inputs[k].Patches)/1176/4*m.Info().Hidden {
					t.Fatalf("image %d: %d values", k, len(rows))
				}
			}
		}
	})
}
