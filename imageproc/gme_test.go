package imageproc

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/vembed/vembed/internal/fixtures"
)

// TestColQwenGMEStages checks every image case of the colqwen-gme
// fixtures at each resize stage: GME's fetch_image size and pixels, then
// the processor's size, pixels (SHA-256) and the first patch rows; ColQwen's
// single resize under the checkpoint's own budget.
func TestColQwenGMEStages(t *testing.T) {
	dir := fixtures.Dir(t, "colqwen-gme")
	var idx struct {
		GME struct {
			MinPixels int `json:"min_pixels"`
			MaxPixels int `json:"max_pixels"`
		} `json:"gme"`
		Cases []struct {
			ID    string `json:"id"`
			Model string `json:"model"`
			Kind  string `json:"kind"`
		} `json:"cases"`
	}
	fixtures.ReadJSON(t, filepath.Join(dir, "index.json"), &idx)
	var cq struct {
		ColQwen struct {
			MinPixels int `json:"min_pixels"`
			MaxPixels int `json:"max_pixels"`
		} `json:"colqwen"`
	}
	fixtures.ReadJSON(t, filepath.Join(dir, "index.json"), &cq)
	n := 0
	for _, c := range idx.Cases {
		if c.Kind == "text" {
			continue
		}
		t.Run(c.ID, func(t *testing.T) {
			var cs struct {
				Images []struct {
					File      string       `json:"file"`
					FetchHW   []int        `json:"fetch_image_hw"`
					FetchSHA  string       `json:"fetch_image_rgb_sha256"`
					ProcHW    []int        `json:"processor_hw"`
					ResizedHW []int        `json:"resized_hw"`
					SHA       string       `json:"resized_rgb_sha256"`
					Head      fixtures.Raw `json:"patches_head"`
					NMerged   int          `json:"n_merged_tokens"`
				} `json:"images"`
			}
			cdir := filepath.Join(dir, "cases", c.ID)
			fixtures.ReadJSON(t, filepath.Join(cdir, "case.json"), &cs)
			im := cs.Images[0]
			data, err := os.ReadFile(filepath.Join(cdir, im.File))
			if err != nil {
				t.Fatal(err)
			}
			img, err := Decode(data, DecodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cfg := JinaV4Config()
			cfg.MinPixels, cfg.MaxPixels = cq.ColQwen.MinPixels, cq.ColQwen.MaxPixels
			want := im.ResizedHW
			if c.Model == "gme" {
				cfg.MinPixels, cfg.MaxPixels, cfg.Fetch = idx.GME.MinPixels, idx.GME.MaxPixels, GMEFetch()
				fetched, err := cfg.FetchImage(img)
				if err != nil {
					t.Fatal(err)
				}
				if fetched.Height != im.FetchHW[0] || fetched.Width != im.FetchHW[1] {
					t.Fatalf("fetch_image size %dx%d, want %v", fetched.Height, fetched.Width, im.FetchHW)
				}
				if got := sha(fetched.Pix); got != im.FetchSHA {
					t.Errorf("fetch_image pixels differ (sha256 %s, want %s)", got, im.FetchSHA)
				}
				want = im.ProcHW
			}
			w, h, err := cfg.TargetSize(img.Width, img.Height)
			if err != nil || h != want[0] || w != want[1] {
				t.Fatalf("target size %dx%d (%v), want %v", h, w, err, want)
			}
			fetched, _ := cfg.FetchImage(img)
			resized := ResizeBicubic(fetched, w, h)
			if got := sha(resized.Pix); got != im.SHA {
				t.Errorf("processor pixels differ (sha256 %s, want %s)", got, im.SHA)
			}
			p, err := Preprocess(data, cfg, DecodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if p.ResizedH != h || p.ResizedW != w || p.MergedTokens() != im.NMerged {
				t.Errorf("Preprocess: %dx%d, %d tokens; want %dx%d, %d", p.ResizedH, p.ResizedW, p.MergedTokens(), h, w, im.NMerged)
			}
			head := fixtures.ReadF32(t, cdir, im.Head)
			for i, v := range head {
				if d := p.Data[i] - v; d > 1e-5 || d < -1e-5 {
					t.Fatalf("patch value %d: %v, want %v", i, p.Data[i], v)
				}
			}
		})
		n++
	}
	if n < 7 {
		t.Errorf("%d image cases, want the fixtures' 7", n)
	}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
