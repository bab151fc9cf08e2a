package search

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/vembed/vembed/index"
)

// benchIndex writes n pages of 768 random 128-dimension tokens, with
// sidecars of type typ.
func benchIndex(b *testing.B, n int, typ index.SidecarType) *Index {
	dir := b.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	for first := 0; first < n; first += 64 {
		var rows []index.Row
		for i := first; i < min(n, first+64); i++ {
			row := index.Row{ID: fmt.Sprint(i), Path: "p", Page: 1}
			for range 768 {
				v := make([]float32, 128)
				for k := range v {
					v[k] = float32(r.NormFloat64())
				}
				row.Vectors = append(row.Vectors, v)
			}
			rows = append(rows, row)
		}
		if err := index.WritePart(dir, fmt.Sprintf("s0of1-g000001-%06d.parquet", first/64+1), rows, typ); err != nil {
			b.Fatal(err)
		}
	}
	x, err := Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { x.Close() })
	return x
}

func benchQuery() Query {
	r := rand.New(rand.NewPCG(3, 4))
	var q Query
	for range 20 {
		v := make([]float32, 128)
		for k := range v {
			v[k] = float32(r.NormFloat64())
		}
		q.Multi = append(q.Multi, normalized(v))
	}
	return q
}

// BenchmarkExactStage: exact MaxSim over 256 pages from the mapped
// sidecars (the second stage's work for 256 candidates), float32 and
// float16 (converted to float32 first), with and without releasing the
// pages read.
func BenchmarkExactStage(b *testing.B) {
	q := benchQuery()
	for _, typ := range []index.SidecarType{index.SidecarFloat32, index.SidecarFloat16} {
		x := benchIndex(b, 256, typ)
		for _, keep := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/keep-pages=%v", typ, keep), func(b *testing.B) {
				if keep {
					for _, p := range x.snap.Load().parts {
						p.drop = nil
					}
				}
				for b.Loop() {
					if _, err := x.Search(q, Options{TopK: 10, Exact: true}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkHammingStage: the first stage over 2048 pages.
func BenchmarkHammingStage(b *testing.B) {
	x := benchIndex(b, 2048, index.SidecarFloat32)
	q := benchQuery()
	s := x.snap.Load()
	rows := s.candidates("")
	for b.Loop() {
		hammingStage(q.Multi, rows, 128, 200)
	}
}

// BenchmarkSingle: 8192 vectors of 2048 dimensions, exact (float32 over
// every row) against two stages (the packed Q8_0 copy, then float32 over
// 100 candidates).
func BenchmarkSingle(b *testing.B) {
	dir := b.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	for first := 0; first < 8192; first += 256 {
		var rows []index.Row
		for i := first; i < first+256; i++ {
			v := make([]float32, 2048)
			for k := range v {
				v[k] = float32(r.NormFloat64())
			}
			rows = append(rows, index.Row{ID: fmt.Sprint(i), Path: "p", Page: 1, Embedding: v})
		}
		if err := index.WritePart(dir, fmt.Sprintf("s0of1-g000001-%06d.parquet", first/256+1), rows, index.SidecarFloat32); err != nil {
			b.Fatal(err)
		}
	}
	x, err := Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	q := Query{Single: make([]float32, 2048)}
	for k := range q.Single {
		q.Single[k] = float32(r.NormFloat64())
	}
	for _, exact := range []bool{true, false} {
		b.Run(fmt.Sprintf("exact=%v", exact), func(b *testing.B) {
			for b.Loop() {
				if _, err := x.Search(q, Options{TopK: 10, Exact: exact}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
