package gguf

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// addTensorStreamed adds data through AddTensorFunc, written in pieces of
// 1, 2, 3, ... bytes so the writer must accumulate partial writes.
func addTensorStreamed(t testing.TB, w *Writer, name string, typ Type, dims []int64, data []byte) {
	t.Helper()
	err := w.AddTensorFunc(name, typ, dims, func(dst io.Writer) error {
		rest := data
		for k := 1; len(rest) > 0; k++ {
			n := min(k, len(rest))
			if _, err := dst.Write(rest[:n]); err != nil {
				return err
			}
			rest = rest[n:]
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestAddTensorFuncParity(t *testing.T) {
	for _, align := range []int{0, 1, 64} {
		want := writeSample(t, align)
		got := writeSampleWith(t, align, addTensorStreamed)
		if !bytes.Equal(got, want) {
			t.Errorf("alignment %d: AddTensorFunc wrote %d bytes that differ from AddTensor's %d", align, len(got), len(want))
		}
	}
}

func TestAddTensorFuncErrors(t *testing.T) {
	const size = 4 * 3 // F32 [3]
	bytesFill := func(n int) func(io.Writer) error {
		return func(dst io.Writer) error {
			_, err := dst.Write(make([]byte, n))
			return err
		}
	}
	errFill := errors.New("source failed")
	for _, tc := range []struct {
		name string
		fill func(io.Writer) error
		want string
	}{
		{"short", bytesFill(size - 1), "fill wrote 11 of the 12 bytes"},
		{"none", func(io.Writer) error { return nil }, "fill wrote 0 of the 12 bytes"},
		{"long", bytesFill(size + 1), "fill wrote more than the 12 bytes"},
		{"long ignored", func(dst io.Writer) error {
			dst.Write(make([]byte, size))
			dst.Write([]byte{1}) // error dropped on purpose
			return nil
		}, "fill wrote more than the 12 bytes"},
		{"fill error", func(dst io.Writer) error {
			dst.Write(make([]byte, 4))
			return errFill
		}, "source failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWriter()
			if err := w.AddTensorFunc("first", TypeF32, []int64{1}, bytesFill(4)); err != nil {
				t.Fatal(err)
			}
			if err := w.AddTensorFunc("x", TypeF32, []int64{3}, tc.fill); err != nil {
				t.Fatal(err)
			}
			_, err := w.WriteTo(io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `"x"`) {
				t.Errorf("WriteTo error %v, want one naming \"x\" and containing %q", err, tc.want)
			}
			if tc.name == "fill error" && !errors.Is(err, errFill) {
				t.Errorf("fill's error is not wrapped: %v", err)
			}
		})
	}

	w := NewWriter()
	if err := w.AddTensorFunc("x", TypeF32, []int64{3}, nil); err == nil {
		t.Error("nil fill accepted")
	}
	if err := w.AddTensorFunc("q", TypeQ8_0, []int64{31}, bytesFill(0)); err == nil {
		t.Error("partial block accepted")
	}
	if err := w.AddTensorFunc("x", TypeF32, []int64{3}, bytesFill(size)); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("x", TypeF32, []int64{3}, make([]byte, size)); err == nil {
		t.Error("duplicate name across AddTensor and AddTensorFunc accepted")
	}
}

// failWriter accepts limit bytes and then fails.
type failWriter struct{ limit int }

var errSink = errors.New("disk full")

func (f *failWriter) Write(p []byte) (int, error) {
	if len(p) > f.limit {
		n := f.limit
		f.limit = 0
		return n, errSink
	}
	f.limit -= len(p)
	return len(p), nil
}

// TestAddTensorFuncSinkError checks that a failing destination stops
// WriteTo with its error instead of calling the remaining fills.
func TestAddTensorFuncSinkError(t *testing.T) {
	const n = 1 << 18 // larger than the writer's buffer, so the sink sees it
	w := NewWriter()
	calls := 0
	for _, name := range []string{"a", "b"} {
		err := w.AddTensorFunc(name, TypeF32, []int64{n}, func(dst io.Writer) error {
			calls++
			_, err := dst.Write(make([]byte, 4*n))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := w.WriteTo(&failWriter{limit: 1000})
	if !errors.Is(err, errSink) {
		t.Errorf("WriteTo error %v, want %v", err, errSink)
	}
	if calls != 1 {
		t.Errorf("%d fills called after the sink failed in the first", calls)
	}
}

func TestWriteFileStreamed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.gguf")
	w := NewWriter()
	w.Add("general.architecture", "test")
	addTensorStreamed(t, w, "v", TypeF32, []int64{5}, make([]byte, 20))
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if len(f.Tensors) != 1 || len(f.Tensors[0].Data) != 20 {
		t.Errorf("read back %d tensors", len(f.Tensors))
	}

	// A failing fill leaves no file behind.
	bad := NewWriter()
	bad.AddTensorFunc("v", TypeF32, []int64{5}, func(io.Writer) error { return errSink })
	failed := filepath.Join(t.TempDir(), "bad.gguf")
	if err := bad.WriteFile(failed); !errors.Is(err, errSink) {
		t.Fatalf("WriteFile error %v, want %v", err, errSink)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(failed), "*"))
	if len(left) != 0 {
		t.Errorf("files left after a failed write: %v", left)
	}
}
