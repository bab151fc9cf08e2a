package pdf

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/vembed/vembed/synth"
)

// TestCorruptCache: a compilation cache whose files were damaged (a
// failing disk, a copy cut short) must not stop the renderer from starting:
// it compiles afresh, and the damaged entry does not stay in the way (the
// second start runs from the repaired cache).
func TestCorruptCache(t *testing.T) {
	renderer(t) // fills the shared cache
	for _, damage := range []struct {
		name string
		f    func([]byte) []byte
	}{
		// One kind, as each costs a compilation: the code cut short (its
		// checksum and a flipped byte fail the same way in wazero).
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }},
	} {
		dir := t.TempDir()
		n := 0
		err := filepath.WalkDir(sharedCacheDir, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(sharedCacheDir, path)
			if e.IsDir() {
				return os.MkdirAll(filepath.Join(dir, rel), 0o755)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			n++
			return os.WriteFile(filepath.Join(dir, rel), damage.f(b), 0o644)
		})
		if err != nil || n == 0 {
			t.Fatalf("copying the cache: %d files, %v", n, err)
		}
		for run := range 2 {
			r, err := NewRenderer(Options{Workers: 1, CacheDir: dir})
			if err != nil {
				t.Errorf("%s cache, start %d: %v", damage.name, run+1, err)
				continue
			}
			d, err := r.Open(context.Background(), synth.PDF([]synth.PDFPage{{WidthPt: 20, HeightPt: 20, Text: []string{"x"}}}, synth.PDFOptions{}), "")
			if err != nil {
				t.Errorf("%s cache, start %d: Open: %v", damage.name, run+1, err)
			} else {
				if _, err := d.Render(context.Background(), 0, 72); err != nil {
					t.Errorf("%s cache, start %d: Render: %v", damage.name, run+1, err)
				}
				d.Close()
			}
			r.Close()
		}
	}
}
