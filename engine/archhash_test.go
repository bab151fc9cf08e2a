package engine

import (
	"context"
	"testing"

	"github.com/vembed/vembed/internal/archhash"
)

// demoGolden holds demoHash by arithmetic name, recorded on amd64
// (VEMBED_ARITH_RECORD=1 prints them).
var demoGolden = map[string]uint64{
	"reference/4":             0xb3e99bbf2400e110,
	"generic/4":               0xb7805f10de487b19,
	"avx2/4":                  0xafaca4724b242de6,
	"avx2-int8/4":             0xafaca4724b242de6,
	"avx512-bf16+avx2-int8/4": 0x7dc807987c9c52ce,
}

// TestDemoEmbeddingHashes pins what the engine serves from the demo
// model (the tiny preset with its multi-vector projector, as `vembed
// serve` without a model writes it) per arithmetic name: a text query, an
// image document and an interleaved input, as single vectors whole and
// truncated and as multi-vectors, on every tier this CPU has. The engine
// runs one request at a time here, so switching tiers between requests
// is safe.
func TestDemoEmbeddingHashes(t *testing.T) {
	e := sharedEngine(t)
	img := testPNG(t, 84, 56, 11)
	in := []Input{
		TextInput("where is the cat sitting"),
		ImageInput(img),
		{Parts: []Part{Text("a page:"), Image(img), Text("with a caption")}},
	}
	archhash.ArithmeticHashes(t, demoGolden, func(t *testing.T) uint64 {
		h := archhash.NewHash()
		for _, req := range []Request{
			{Inputs: in},
			{Inputs: in, Dimensions: 32},
			{Inputs: in, Multivector: true},
		} {
			resp, err := e.Embed(context.Background(), req)
			if err != nil {
				t.Fatalf("Embed: %v", err)
			}
			for _, emb := range resp.Embeddings {
				h.Put(emb.Vector)
				for _, row := range emb.Multi {
					h.Put(row)
				}
			}
		}
		return h.Sum()
	})
}
