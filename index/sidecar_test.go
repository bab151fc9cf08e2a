package index

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/gguf"
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

// sidecarValue is value j of token tok in sc's vectors, as float32.
func sidecarValue(sc *Sidecar, tok, j int) float32 {
	i := tok*sc.Dims + j
	if sc.Type == SidecarFloat16 {
		return gguf.F16ToF32(binary.LittleEndian.Uint16(sc.Vectors[2*i:]))
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(sc.Vectors[4*i:]))
}

// TestSidecarRoundTrip: what writeSidecar writes, ParseSidecar reads
// back: offsets, sign bits and vectors, for widths of one and several
// code words, in float32 (the values themselves) and float16 (each the
// nearest binary16, the sign bits of the rounded values).
func TestSidecarRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, typ := range []SidecarType{SidecarFloat32, SidecarFloat16} {
		for _, dims := range []int{1, 63, 64, 128, 130} {
			rows := sidecarRows(r, 7, dims)
			// Values float16 rounds to zero or cannot hold.
			rows[0].Vectors = append(rows[0].Vectors, make([]float32, dims))
			rows[0].Vectors[len(rows[0].Vectors)-1][0] = 1e-9
			rows[0].Vectors[len(rows[0].Vectors)-1][dims-1] = -7e4
			path := filepath.Join(t.TempDir(), "x.mv")
			over, err := writeSidecar(path, rows, dims, typ)
			if err != nil {
				t.Fatal(err)
			}
			if wantOver := map[SidecarType]int{SidecarFloat16: 1}[typ]; over != wantOver {
				t.Fatalf("%s: %d values overflowed, want %d", typ, over, wantOver)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := ParseSidecar(data)
			if err != nil {
				t.Fatal(err)
			}
			if sc.Type != typ || sc.Dims != dims || sc.Rows != len(rows) || sc.VectorsAt%64 != 0 {
				t.Fatalf("type %s dims %d rows %d at %d", sc.Type, sc.Dims, sc.Rows, sc.VectorsAt)
			}
			tok := 0
			for i, row := range rows {
				if int(sc.Offsets[i+1]-sc.Offsets[i]) != len(row.Vectors) {
					t.Fatalf("row %d: %d tokens, want %d", i, sc.Offsets[i+1]-sc.Offsets[i], len(row.Vectors))
				}
				for _, v := range row.Vectors {
					for k, x := range v {
						got, want := sidecarValue(sc, tok, k), x
						if typ == SidecarFloat16 {
							want = gguf.F16ToF32(gguf.F32ToF16(x))
						}
						if math.Float32bits(got) != math.Float32bits(want) {
							t.Fatalf("%s dims %d token %d dim %d: %g stored for %g, want %g", typ, dims, tok, k, got, x, want)
						}
						w := sc.Codes[8*(tok*sc.Words()+k/64):]
						if bit := w[(k%64)/8]>>(k%8)&1 == 1; bit != (want > 0) {
							t.Fatalf("%s dims %d token %d dim %d: sign bit %v for %g stored as %g", typ, dims, tok, k, bit, x, want)
						}
					}
					tok++
				}
			}
		}
	}
}

// TestFloat16Rounding pins the stored values: ties to even, overflow to
// infinity from 65520 on, NaN kept, below the smallest subnormal zero.
func TestFloat16Rounding(t *testing.T) {
	dst := make([]float32, 1)
	for _, c := range []struct{ in, want float32 }{
		{1, 1},
		{1 + 0x1p-11, 1},              // a tie: to the even 1
		{1 + 3*0x1p-11, 1 + 0x1p-9},   // a tie: to the even 1+2^-9
		{65504, 65504},                // the largest float16
		{65519, 65504},                // below the halfway point
		{65520, float32(math.Inf(1))}, // from it, infinity
		{-1e6, float32(math.Inf(-1))}, //
		{0x1p-25, 0},                  // half the smallest subnormal: a tie, to 0
		{0x1p-24 * 1.5, 0x1p-23},      // subnormals round to nearest even too
		{float32(math.Inf(1)), float32(math.Inf(1))},
	} {
		storedValues(dst, []float32{c.in}, SidecarFloat16)
		if math.Float32bits(dst[0]) != math.Float32bits(c.want) {
			t.Errorf("%g stored as %g, want %g", c.in, dst[0], c.want)
		}
	}
	if n := storedValues(dst, []float32{float32(math.NaN())}, SidecarFloat16); !math.IsNaN(float64(dst[0])) || n != 0 {
		t.Errorf("NaN stored as %g (%d overflows)", dst[0], n)
	}
}

// FuzzParseSidecar: any bytes parse to an error or to views inside them,
// whose offsets stay within the tokens.
func FuzzParseSidecar(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	path := filepath.Join(f.TempDir(), "x.mv")
	if _, err := writeSidecar(path, sidecarRows(r, 3, 128), 128, SidecarFloat32); err != nil {
		f.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add([]byte(sidecarMagic))
	if _, err := writeSidecar(path, sidecarRows(r, 3, 130), 130, SidecarFloat16); err != nil {
		f.Fatal(err)
	}
	half, _ := os.ReadFile(path)
	f.Add(half)
	f.Add(half[:len(half)-2])
	unknown := append([]byte(nil), half...)
	unknown[8] = 3
	f.Add(unknown)
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := ParseSidecar(data)
		if err != nil {
			return
		}
		if sc.Type != SidecarFloat32 && sc.Type != SidecarFloat16 {
			t.Fatalf("parsed a sidecar of element type %d", sc.Type)
		}
		tokens := uint64(len(sc.Vectors) / sc.Type.Size() / sc.Dims)
		if len(sc.Offsets) != sc.Rows+1 || sc.Offsets[sc.Rows] != tokens || len(sc.Codes) != 8*sc.Words()*int(tokens) {
			t.Fatalf("inconsistent views: %d offsets for %d rows, %d tokens, %d code bytes", len(sc.Offsets), sc.Rows, tokens, len(sc.Codes))
		}
	})
}

// TestSidecarTypeChange: a run with another --sidecar than the last
// rewrites every sidecar of the shard in its type from the parts, and
// embeds nothing again; the values are the parts' (float32) or their
// nearest float16s; the manifest names the type.
func TestSidecarTypeChange(t *testing.T) {
	corpus, out := textCorpus(t, 7)
	for k, typ := range []SidecarType{0, SidecarFloat16, SidecarFloat16, SidecarFloat32} {
		emb := &hashEmbedder{}
		o := testOptions(out, corpus)
		o.Request.Multivector, o.Sidecar = true, typ
		if _, err := Run(context.Background(), emb, o); err != nil {
			t.Fatal(err)
		}
		if k > 0 && emb.calls != 0 {
			t.Fatalf("run %d (%s): %d items embedded again", k, typ, emb.calls)
		}
		sidecarsMatchParts(t, out, func(p string, rows []Row, sc *Sidecar) {
			if sc.Type != typ.orDefault() {
				t.Fatalf("run %d: a sidecar of %s after a run asking %s", k, sc.Type, typ)
			}
			stored := make([]float32, sc.Dims)
			tok := 0
			for _, row := range rows {
				for _, v := range row.Vectors {
					storedValues(stored, v, sc.Type)
					for j, want := range stored {
						if got := sidecarValue(sc, tok, j); got != want {
							t.Fatalf("run %d, %s token %d: %g stored, want %g", k, p, tok, got, want)
						}
					}
					tok++
				}
			}
		})
		b, err := os.ReadFile(filepath.Join(out, "manifest-0of1.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m Manifest
		if err := json.Unmarshal(b, &m); err != nil || m.Sidecar != typ.String() {
			t.Fatalf("run %d: manifest sidecar %q (%v), want %q", k, m.Sidecar, err, typ)
		}
	}
}

// TestParseSidecarUnknownType: a sidecar of an element type this version
// does not know is refused, naming it.
func TestParseSidecarUnknownType(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.mv")
	if _, err := writeSidecar(path, sidecarRows(rand.New(rand.NewPCG(5, 6)), 3, 64), 64, SidecarFloat16); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	data[8] = 7
	if _, err := ParseSidecar(data); err == nil || !strings.Contains(err.Error(), "element type 7") {
		t.Fatalf("got %v, want an error naming element type 7", err)
	}
}

// TestMissingSidecarWritten: a multi-vector run writes the sidecars its
// shard's parts lack, from the parts, embedding nothing again.
func TestMissingSidecarWritten(t *testing.T) {
	corpus, out := textCorpus(t, 5)
	o := testOptions(out, corpus)
	o.Request.Multivector = true
	if _, err := Run(context.Background(), &hashEmbedder{}, o); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(out, SidecarDir)); err != nil {
		t.Fatal(err)
	}
	emb := &hashEmbedder{}
	if _, err := Run(context.Background(), emb, o); err != nil {
		t.Fatal(err)
	}
	if emb.calls != 0 {
		t.Fatalf("%d items embedded again", emb.calls)
	}
	sidecarsMatchParts(t, out, nil)
}
