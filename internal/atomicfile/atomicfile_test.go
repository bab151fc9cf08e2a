package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestWrite: a write that fails half way leaves neither a partial
// file nor a temporary one, and an existing file untouched.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.f32")
	fail := errors.New("interrupted")
	if err := Write(path, func(w io.Writer) error { w.Write(make([]byte, 3<<20)); return fail }); !errors.Is(err, fail) {
		t.Fatalf("got %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
	if err := WriteFile(path, []byte("old")); err != nil {
		t.Fatal(err)
	}
	Write(path, func(w io.Writer) error { w.Write([]byte("partial new")); return fail })
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("file now %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("directory holds %d entries", len(ents))
	}
}
