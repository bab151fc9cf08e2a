package gguf

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/vembed/vembed/internal/memstat"
)

// rssKiB is the process's resident set in KiB; it skips where it cannot
// be read.
func rssKiB(t *testing.T) int {
	t.Helper()
	n, err := memstat.ResidentKiB()
	if err != nil {
		t.Skip(err)
	}
	return n
}

// TestReleaseDropsPages checks that Release takes a read tensor's pages
// out of the resident set, that its values read back the same (from the
// file) afterwards, and that the other tensors and ranges outside the
// mapping are left alone.
func TestReleaseDropsPages(t *testing.T) {
	const n = 16 << 20
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i*7 + i>>12)
	}
	w := NewWriter()
	w.Add("general.architecture", "test")
	if err := w.AddTensor("a", TypeI8, []int64{n}, data); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("b", TypeI8, []int64{4096}, data[:4096]); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "r.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, b := f.Tensor("a"), f.Tensor("b")
	var sum int
	for i := 0; i < len(a.Data); i += 4096 {
		sum += int(a.Data[i])
	}
	before := rssKiB(t)
	f.Release(a.Data)
	f.Release(data) // not in the mapping: ignored
	after := rssKiB(t)
	if before-after < n/1024/2 {
		t.Errorf("Release of %d MiB took the resident set from %d to %d KiB", n>>20, before, after)
	}
	if !bytes.Equal(a.Data, data) || !bytes.Equal(b.Data, data[:4096]) {
		t.Fatal("tensor values changed after Release")
	}
	if sum == 0 {
		t.Fatal("tensor a reads as zeros")
	}
	Parse(nil) // a File from Parse has nothing to release
	(&File{}).Release(data)
}
