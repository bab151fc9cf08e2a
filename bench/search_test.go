package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/index"
)

// TestSearchSidecars: a small run measures each page count with each
// sidecar type, says which in every figure, and the float16 sidecars
// take half the vector bytes of the float32 ones (the sign codes and
// offsets, the same in both, aside).
func TestSearchSidecars(t *testing.T) {
	c := SearchConfig{Pages: []int{300}, Tokens: 16, Dims: 64, QueryTokens: 4, Queries: 4, Clusters: 8,
		Sidecars: []index.SidecarType{index.SidecarFloat32, index.SidecarFloat16}, Dir: t.TempDir()}
	rep, err := Search(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Cases) != 2 || rep.Cases[0].Sidecar != "float32" || rep.Cases[1].Sidecar != "float16" {
		t.Fatalf("cases %+v", rep.Cases)
	}
	codes := int64(300 * 16 * 8) // one 64-bit word a token
	vec32, vec16 := rep.Cases[0].SidecarBytes-codes, rep.Cases[1].SidecarBytes-codes
	if vec32 <= 0 || vec16 <= 0 || float64(vec16)/float64(vec32) > 0.52 || float64(vec16)/float64(vec32) < 0.48 {
		t.Fatalf("sidecar bytes %d (float32), %d (float16)", rep.Cases[0].SidecarBytes, rep.Cases[1].SidecarBytes)
	}
	for _, f := range rep.Cases {
		if !strings.Contains(f.Case, f.Sidecar) || f.Recall10 <= 0 {
			t.Errorf("figure %+v", f)
		}
		p, s := c.diskBytesOf(f)
		if s < f.SidecarBytes || s > f.SidecarBytes+f.SidecarBytes/20 || p <= 0 {
			t.Errorf("%s: sidecars estimated at %d bytes, written %d", f.Sidecar, s, f.SidecarBytes)
		}
	}
}

// diskBytesOf is the estimate for a figure's case.
func (c SearchConfig) diskBytesOf(f SearchFigure) (int64, int64) {
	typ, _ := index.ParseSidecarType(f.Sidecar)
	c.defaults()
	return c.diskBytes(benchCase{items: f.Items, multi: true, sidecar: typ})
}

// TestSearchRefusesFullDisk: cases that need more than the folder's
// filesystem has free are refused before anything is written.
func TestSearchRefusesFullDisk(t *testing.T) {
	dir := t.TempDir()
	_, err := Search(SearchConfig{Pages: []int{1 << 40}, Queries: 1, Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "free") {
		t.Fatalf("got %v, want a refusal naming the free space", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		t.Fatalf("%d entries written, first %s", len(ents), filepath.Join(dir, ents[0].Name()))
	}
}
