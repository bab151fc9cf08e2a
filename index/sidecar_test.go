package index

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

func sidecarRows(r *rand.Rand, n, dims int) []Row {
	rows := make([]Row, n)
	for i := range rows {
		rows[i].ID = string(rune('a' + i%26))
		for range r.IntN(5) {
			v := make([]float32, dims)
			for k := range v {
				v[k] = float32(r.NormFloat64())
			}
			rows[i].Vectors = append(rows[i].Vectors, v)
		}
	}
	return rows
}

// TestSidecarRoundTrip: what writeSidecar writes, ParseSidecar reads
// back: offsets, sign bits and vectors, for widths of one and several
// code words.
func TestSidecarRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, dims := range []int{1, 63, 64, 128, 130} {
		rows := sidecarRows(r, 7, dims)
		path := filepath.Join(t.TempDir(), "x.mv")
		if err := writeSidecar(path, rows, dims); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := ParseSidecar(data)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Dims != dims || sc.Rows != len(rows) || sc.VectorsAt%64 != 0 {
			t.Fatalf("dims %d rows %d at %d", sc.Dims, sc.Rows, sc.VectorsAt)
		}
		tok := 0
		for i, row := range rows {
			if int(sc.Offsets[i+1]-sc.Offsets[i]) != len(row.Vectors) {
				t.Fatalf("row %d: %d tokens, want %d", i, sc.Offsets[i+1]-sc.Offsets[i], len(row.Vectors))
			}
			for _, v := range row.Vectors {
				for k, x := range v {
					w := sc.Codes[8*(tok*sc.Words()+k/64):]
					bit := w[(k%64)/8]>>(k%8)&1 == 1
					if bit != (x > 0) {
						t.Fatalf("dims %d token %d dim %d: sign bit %v for %g", dims, tok, k, bit, x)
					}
					got := uint32(sc.Vectors[4*(tok*dims+k)]) | uint32(sc.Vectors[4*(tok*dims+k)+1])<<8 | uint32(sc.Vectors[4*(tok*dims+k)+2])<<16 | uint32(sc.Vectors[4*(tok*dims+k)+3])<<24
					if got != math.Float32bits(x) {
						t.Fatalf("dims %d token %d dim %d: vector value differs", dims, tok, k)
					}
				}
				tok++
			}
		}
	}
}

// FuzzParseSidecar: any bytes parse to an error or to views inside them,
// whose offsets stay within the tokens.
func FuzzParseSidecar(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	path := filepath.Join(f.TempDir(), "x.mv")
	if err := writeSidecar(path, sidecarRows(r, 3, 128), 128); err != nil {
		f.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add([]byte(sidecarMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := ParseSidecar(data)
		if err != nil {
			return
		}
		tokens := uint64(len(sc.Vectors) / 4 / sc.Dims)
		if len(sc.Offsets) != sc.Rows+1 || sc.Offsets[sc.Rows] != tokens || len(sc.Codes) != 8*sc.Words()*int(tokens) {
			t.Fatalf("inconsistent views: %d offsets for %d rows, %d tokens, %d code bytes", len(sc.Offsets), sc.Rows, tokens, len(sc.Codes))
		}
	})
}
