package synth

import (
	"bytes"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readTree returns every file under dir by relative path.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestWriteDataset: the same seed writes the same files, another seed
// other pages; pages decode as PNG or JPEG (every third) at their size;
// the layouts and counts are the ones documented.
func TestWriteDataset(t *testing.T) {
	a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
	for _, dir := range []string{a, b} {
		if err := WriteDataset(dir, DatasetOptions{Docs: 5, Queries: 3, Seed: 9}); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteDataset(c, DatasetOptions{Docs: 5, Queries: 3, Seed: 10}); err != nil {
		t.Fatal(err)
	}
	fa, fb, fc := readTree(t, a), readTree(t, b), readTree(t, c)
	for _, name := range []string{"corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "parquet/corpus.parquet", "parquet/queries.parquet", "parquet/qrels/test.parquet", "vidore/test.parquet", "images/page0000.png", "images/page0002.jpg"} {
		if len(fa[name]) == 0 {
			t.Errorf("%s missing", name)
		}
	}
	if len(fa) != len(fb) || len(fa) != 12 {
		t.Errorf("%d and %d files, want 12", len(fa), len(fb))
	}
	for name, data := range fa {
		if !bytes.Equal(data, fb[name]) {
			t.Errorf("%s differs between two writes with one seed", name)
		}
	}
	if bytes.Equal(fa["images/page0001.png"], fc["images/page0001.png"]) {
		t.Error("another seed drew the same page")
	}
	for name, data := range fa {
		if !strings.HasPrefix(name, "images/") {
			continue
		}
		img, format, err := image.Decode(bytes.NewReader(data))
		if err != nil || !strings.HasSuffix(name, "."+strings.Replace(format, "jpeg", "jpg", 1)) || img.Bounds().Dx() != 400 {
			t.Errorf("%s: %v %s", name, err, format)
		}
	}
	if n := strings.Count(string(fa["queries.jsonl"]), "\n"); n != 3 {
		t.Errorf("%d queries", n)
	}
	if n := strings.Count(string(fa["qrels/test.tsv"]), "\t2\n"); n != 3 {
		t.Errorf("%d own pages in the qrels", n)
	}
	if err := WriteDataset(t.TempDir(), DatasetOptions{Docs: 2, Queries: 3}); err == nil {
		t.Error("more queries than pages accepted")
	}
}
