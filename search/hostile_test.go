//go:build unix

package search

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vembed/vembed/index"
)

// TestSidecarCutUnderMapping: a sidecar truncated in place while it is
// mapped (not what an index run does, which renames whole files in)
// faults on the pages past its new end. Searches go on without its part
// instead of the process dying of SIGBUS, and the next Refresh reports
// the part; float32 and float16 sidecars alike.
func TestSidecarCutUnderMapping(t *testing.T) {
	for _, typ := range []index.SidecarType{index.SidecarFloat32, index.SidecarFloat16} {
		t.Run(typ.String(), func(t *testing.T) { testSidecarCutUnderMapping(t, typ) })
	}
}

func testSidecarCutUnderMapping(t *testing.T, typ index.SidecarType) {
	_, out := writeCorpusAs(t, 150, true, typ)
	parts, _ := filepath.Glob(filepath.Join(out, index.PartsDir, "*.parquet"))
	if len(parts) < 2 {
		t.Fatalf("%d parts", len(parts))
	}
	x, err := Open(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	cut := filepath.Base(parts[0])
	cutRows, err := index.ReadPart(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	// Past the header and offsets: the vectors' pages are gone.
	if err := os.Truncate(filepath.Join(out, index.SidecarDir, index.SidecarName(cut)), 64); err != nil {
		t.Fatal(err)
	}
	q := queries(1, true)[0]
	for _, o := range []Options{{TopK: 150, Exact: true, Maps: true}, {TopK: 10}} {
		res, err := x.Search(Query{Multi: q.Multi}, o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		if len(res.Hits) == 0 {
			t.Fatalf("%+v: no hits", o)
		}
		for _, h := range res.Hits {
			for _, r := range cutRows {
				if h.ID == r.ID {
					t.Errorf("%+v: hit %s of the cut part", o, h.ID)
				}
			}
		}
	}
	if err := x.Refresh(); err != nil {
		t.Fatal(err)
	}
	in := x.Info()
	if len(in.Problems) != 1 || in.Problems[0].Part != cut || !strings.Contains(in.Problems[0].Reason, "sidecar") {
		t.Errorf("problems after the cut: %+v", in.Problems)
	}
	if in.Items != 150-len(cutRows) {
		t.Errorf("%d items served, want %d", in.Items, 150-len(cutRows))
	}
}

// writePNG writes a w x h picture of one colour, padded with zeros to
// pad bytes when shorter (a PNG decoder stops at its end chunk).
func writePNG(t *testing.T, path string, w, h int, c uint8, pad int) []byte {
	t.Helper()
	im := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range im.Pix {
		im.Pix[i] = c
	}
	var b bytes.Buffer
	if err := png.Encode(&b, im); err != nil {
		t.Fatal(err)
	}
	data := b.Bytes()
	if len(data) < pad {
		data = append(data, make([]byte, pad-len(data))...)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return data
}

// TestPagesServeOnlyIndexedBytes: the page route renders the bytes it
// hashed. A source replaced by a symbolic link to a file outside the
// indexed folder, of the same size and modification time, is refused as
// changed (a check by size and time, then a second read, served the
// outside file); a source changed or removed after its page was rendered
// is said so, not served from the page cache.
func TestPagesServeOnlyIndexedBytes(t *testing.T) {
	src, outside, out := t.TempDir(), t.TempDir(), t.TempDir()
	page := filepath.Join(src, "page.png")
	data := writePNG(t, page, 40, 30, 200, 4096)
	sum := sha256.Sum256(data)
	row := index.Row{ID: "a", Path: page, Page: 1, SHA256: hex.EncodeToString(sum[:]), Width: 40, Height: 30, Embedding: []float32{1, 0}}
	if err := index.WritePart(out, "s0of1-g000001-000001.parquet", []index.Row{row}, index.SidecarFloat32); err != nil {
		t.Fatal(err)
	}
	x, err := Open(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	pg := NewPages(x, nil)
	defer pg.Close()
	ctx := context.Background()
	for _, w := range []int{0, 10} {
		b, err := pg.Image(ctx, "a", w)
		if err != nil {
			t.Fatalf("width %d: %v", w, err)
		}
		if im, err := png.Decode(bytes.NewReader(b)); err != nil || (w > 0 && im.Bounds().Dx() != w) {
			t.Fatalf("width %d: %v", w, err)
		}
	}
	for _, id := range []string{"b", "../a", "a/../a", page, ""} {
		if _, err := pg.Image(ctx, id, 0); !errors.Is(err, ErrNoItem) {
			t.Errorf("id %q: %v", id, err)
		}
	}

	st, _ := os.Stat(page)
	secret := filepath.Join(outside, "secret.png")
	writePNG(t, secret, 40, 30, 7, len(data))
	os.Chtimes(secret, st.ModTime(), st.ModTime())
	if err := os.Remove(page); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, page); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	for _, w := range []int{0, 10, 20} {
		if b, err := pg.Image(ctx, "a", w); !errors.Is(err, ErrSourceChanged) {
			t.Errorf("width %d of a source swapped for a link outside: %d bytes, %v", w, len(b), err)
		}
	}
	os.Remove(page)
	for _, w := range []int{0, 10} {
		if _, err := pg.Image(ctx, "a", w); !errors.Is(err, ErrSourceGone) {
			t.Errorf("width %d of a source gone: %v", w, err)
		}
	}
	// Back as it was: served again.
	os.WriteFile(page, data, 0o644)
	if _, err := pg.Image(ctx, "a", 10); err != nil {
		t.Errorf("the source restored: %v", err)
	}
	// While every rendering slot is taken, a page not kept waits for one
	// until its request's time is up.
	for range cap(pg.slots) {
		pg.slots <- struct{}{}
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	if _, err := pg.Image(short, "a", 11); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("every slot taken: %v", err)
	}
	cancel()
	for range cap(pg.slots) {
		<-pg.slots
	}
	if _, err := pg.Image(ctx, "a", 11); err != nil {
		t.Errorf("a slot free again: %v", err)
	}
	// A FIFO in its place is not opened (it would block).
	os.Remove(page)
	if err := syscall.Mkfifo(page, 0o644); err == nil {
		if _, err := pg.Image(ctx, "a", 15); !errors.Is(err, ErrSourceGone) {
			t.Errorf("a FIFO for the source: %v", err)
		}
	}
}

// TestSearchBounds: a filter as long as a request body, a malformed one
// (the pattern not repeated in the error), and maps whose similarities
// (query vectors x page tokens over the hits) pass MaxMapValues are
// refused as bad queries; within the bounds, maps come back.
func TestSearchBounds(t *testing.T) {
	_, out := writeCorpus(t, 150, true)
	x, err := Open(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	q := queries(1, true)[0]
	long := strings.Repeat("*a", MaxFilterBytes/2) + "b"
	for _, f := range []string{long, "secret-pattern-[", "d1/[z-"} {
		_, err := x.Search(Query{Multi: q.Multi}, Options{Filter: f})
		if !errors.Is(err, ErrBadQuery) || !strings.Contains(err.Error(), "filter") {
			t.Errorf("filter of %d bytes: %v", len(f), err)
		} else if strings.Contains(err.Error(), f[:min(len(f), 10)]) {
			t.Errorf("the error repeats the filter: %v", err)
		}
	}
	if res, err := x.Search(Query{Multi: q.Multi}, Options{Filter: strings.Repeat("*", MaxFilterBytes-4) + ".txt", TopK: 150}); err != nil || len(res.Hits) != 150 {
		t.Errorf("a filter of %d bytes: %v", MaxFilterBytes, err)
	}
	res, err := x.Search(Query{Multi: q.Multi}, Options{TopK: 10, Maps: true})
	if err != nil || len(res.Hits) != 10 || len(res.Hits[0].Sims) != len(q.Multi) {
		t.Fatalf("maps of 10 hits: %v", err)
	}
	var huge [][]float32
	for len(huge) < 2000 {
		huge = append(huge, q.Multi...)
	}
	if _, err := x.Search(Query{Multi: huge}, Options{TopK: 150, Maps: true}); !errors.Is(err, ErrBadQuery) || !strings.Contains(err.Error(), "maps") {
		t.Errorf("maps of 150 hits x %d query vectors: %v", len(huge), err)
	}
	if res, err := x.Search(Query{Multi: huge}, Options{TopK: 150}); err != nil || len(res.Hits) != 150 {
		t.Errorf("the same search without maps: %v", err)
	}
}

// TestHostileFolderFiles: a manifest that is a FIFO or a link to an
// endless device, and a sidecar that is a FIFO, are errors, not a
// refresh blocked for ever or a read without end.
func TestHostileFolderFiles(t *testing.T) {
	_, out := writeCorpus(t, 70, true)
	parts, _ := filepath.Glob(filepath.Join(out, index.PartsDir, "*.parquet"))
	if len(parts) < 2 {
		t.Fatalf("%d parts", len(parts))
	}
	sc := filepath.Join(out, index.SidecarDir, index.SidecarName(filepath.Base(parts[0])))
	os.Remove(sc)
	if err := syscall.Mkfifo(sc, 0o644); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	x, err := Open(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := x.Info()
	if len(in.Problems) != 1 || !strings.Contains(in.Problems[0].Reason, "regular") {
		t.Errorf("a FIFO for a sidecar: %+v", in.Problems)
	}
	x.Close()

	man := filepath.Join(out, "manifest-0of1.json")
	for _, mk := range []func() error{
		func() error { return syscall.Mkfifo(man, 0o644) },
		func() error { return os.Symlink("/dev/zero", man) },
	} {
		os.Remove(man)
		if err := mk(); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(out, nil); err == nil || !strings.Contains(err.Error(), "manifest-0of1.json") {
			t.Errorf("a manifest that is no file: %v", err)
		}
	}
}

// FuzzManifest: any bytes as a shard's manifest beside a part open as an
// index or fail with an error, and an opened index answers Info and
// searches of either kind without a panic.
func FuzzManifest(f *testing.F) {
	tmpl := f.TempDir()
	row := index.Row{ID: "a", Path: "a.png", Page: 1, SHA256: "00", Width: 4, Height: 4, Embedding: []float32{1, 2, 3}}
	if err := index.WritePart(tmpl, "s0of1-g000001-000001.parquet", []index.Row{row}, index.SidecarFloat32); err != nil {
		f.Fatal(err)
	}
	part := filepath.Join(tmpl, index.PartsDir, "s0of1-g000001-000001.parquet")
	f.Add([]byte(`{"model": "m", "model_identity": "i", "vectors": "embedding", "dimensions": 3, "shard": 0, "shards": 1, "items": 1, "dpi": 72, "root": "/"}`))
	f.Add([]byte(`{"vectors": "multivector", "dimensions": -5, "items": -1, "dpi": -1}`))
	f.Add([]byte(`{"vectors": "embedding", "dimensions": 1e9, "written": "2026-01-01T00:00:00Z"}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		os.Mkdir(filepath.Join(dir, index.PartsDir), 0o755)
		if err := os.Link(part, filepath.Join(dir, index.PartsDir, filepath.Base(part))); err != nil {
			t.Skip(err)
		}
		os.WriteFile(filepath.Join(dir, "manifest-0of1.json"), b, 0o644)
		x, err := Open(dir, nil)
		if err != nil {
			return
		}
		defer x.Close()
		x.Info()
		x.Search(Query{Single: []float32{1, 0, 0}}, Options{})
		x.Search(Query{Multi: [][]float32{{1, 0, 0}}}, Options{Maps: true})
		x.Search(Query{}, Options{Exact: true})
	})
}

// TestCorruptParts: a part cut in half, a part given another part's
// sidecar and one whose sidecar's header claims more tokens are each
// reported and left out; the rest is searched. So is a part whose
// sidecar declares an element type this version does not know. Float32
// and float16 sidecars alike.
func TestCorruptParts(t *testing.T) {
	for _, typ := range []index.SidecarType{index.SidecarFloat32, index.SidecarFloat16} {
		t.Run(typ.String(), func(t *testing.T) { testCorruptParts(t, typ) })
	}
}

func testCorruptParts(t *testing.T, typ index.SidecarType) {
	_, out := writeCorpusAs(t, 260, true, typ)
	parts, _ := filepath.Glob(filepath.Join(out, index.PartsDir, "*.parquet"))
	if len(parts) < 5 {
		t.Fatalf("%d parts", len(parts))
	}
	sidecar := func(i int) string {
		return filepath.Join(out, index.SidecarDir, index.SidecarName(filepath.Base(parts[i])))
	}
	lost := 0
	for _, i := range []int{0, 1, 2, 4} {
		rows, err := index.ReadPart(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		lost += len(rows)
	}
	b, _ := os.ReadFile(parts[0])
	os.WriteFile(parts[0], b[:len(b)/2], 0o644)
	b, _ = os.ReadFile(sidecar(3))
	os.WriteFile(sidecar(1), b, 0o644)
	b, _ = os.ReadFile(sidecar(2))
	b[24]++ // the token count
	os.WriteFile(sidecar(2), b, 0o644)
	b, _ = os.ReadFile(sidecar(4))
	b[8] = 9 // the element type
	os.WriteFile(sidecar(4), b, 0o644)
	x, err := Open(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	in := x.Info()
	if len(in.Problems) != 4 || in.Items != 260-lost {
		t.Fatalf("%d items, problems %+v", in.Items, in.Problems)
	}
	if p := in.Problems[3]; p.Part != filepath.Base(parts[4]) || !strings.Contains(p.Reason, "element type 9") {
		t.Errorf("the sidecar of an unknown element type: %+v", p)
	}
	q := queries(1, true)[0]
	for _, o := range []Options{{TopK: 300, Exact: true}, {TopK: 10}} {
		if res, err := x.Search(Query{Multi: q.Multi}, o); err != nil || len(res.Hits) != min(o.TopK, 260-lost) {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

// TestNonFiniteScores: a row whose vectors hold NaN (a corrupt part) or
// that has none scores no number a JSON answer can carry; such rows are
// left out of the hits instead of failing every answer they reach (and
// a NaN no longer takes a place among the best). A multi-vector row
// scoring a number beside a token of infinite values has that token's
// similarities in its maps as the largest finite float32s instead.
func TestNonFiniteScores(t *testing.T) {
	nan := float32(math.NaN())
	for _, multi := range []bool{false, true} {
		dir := t.TempDir()
		var rows []index.Row
		for i := range 40 {
			r := index.Row{ID: fmt.Sprintf("r%02d", i), Path: "p", Page: 1}
			v := []float32{1, float32(i), 2, 3}
			switch {
			case i%10 == 3:
				v[1] = nan
			case i%10 == 7 && !multi:
				v = nil
			case i%10 == 5:
				v[2] = float32(math.Inf(-1)) // a finite MaxSim by the other token
			}
			if multi {
				r.Vectors = [][]float32{v, {0, 1, 0, 1}}
			} else {
				r.Embedding = v
			}
			rows = append(rows, r)
		}
		// Multi-vectors in a float16 sidecar: NaN and infinities kept.
		if err := index.WritePart(dir, "s0of1-g000001-000001.parquet", rows, index.SidecarFloat16); err != nil {
			t.Fatal(err)
		}
		x, err := Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		q := Query{Single: []float32{1, 1, 1, 1}, Multi: [][]float32{{1, 1, 1, 1}, {0, 1, 1, 0}}}
		for _, o := range []Options{{TopK: 40, Maps: multi}, {TopK: 40, Exact: true}, {TopK: 3, Candidates: 5}} {
			res, err := x.Search(q, o)
			if err != nil {
				t.Fatalf("multi %v %+v: %v", multi, o, err)
			}
			want := o.TopK
			if o.TopK == 40 {
				want = 36
				if !multi {
					want = 28
				}
			}
			if len(res.Hits) != want {
				t.Errorf("multi %v %+v: %d hits, want %d", multi, o, len(res.Hits), want)
			}
			for _, h := range res.Hits {
				if math.IsNaN(h.Score) || math.IsInf(h.Score, 0) {
					t.Errorf("multi %v %+v: %s scores %v", multi, o, h.ID, h.Score)
				}
			}
			if _, err := json.Marshal(res.Hits); err != nil {
				t.Errorf("multi %v %+v: %v", multi, o, err)
			}
		}
		x.Close()
	}
}
