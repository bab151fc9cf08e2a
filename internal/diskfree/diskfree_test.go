package diskfree

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestBytes: a folder's filesystem reports some free space; a missing
// path is an error.
func TestBytes(t *testing.T) {
	n, err := Bytes(t.TempDir())
	if errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil || n <= 0 {
		t.Fatalf("%d bytes free, %v", n, err)
	}
	if _, err := Bytes(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing path gave no error")
	}
}
