package main

import (
	"bytes"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func TestParseFlagsInterspersed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		pos  []string
		n    int
	}{
		{[]string{"a.gguf", "--values", "3"}, []string{"a.gguf"}, 3},
		{[]string{"--values", "3", "a.gguf", "b"}, []string{"a.gguf", "b"}, 3},
		{[]string{"a", "--values=2", "b"}, []string{"a", "b"}, 2},
		{[]string{"--", "-x", "--values"}, []string{"-x", "--values"}, 0},
	} {
		var errOut bytes.Buffer
		fs := newFlags("t", "", &errOut)
		n := fs.Int("values", 0, "")
		pos, err := parseFlags(fs, tc.args)
		if err != nil {
			t.Fatalf("%v: %v (%s)", tc.args, err, errOut.String())
		}
		if !reflect.DeepEqual(pos, tc.pos) || *n != tc.n {
			t.Errorf("%v: got %v %d, want %v %d", tc.args, pos, *n, tc.pos, tc.n)
		}
	}
}

func TestUnknownCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"no-such"}, &out, &errOut); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if code := run(nil, &out, &errOut); code != 0 {
		t.Fatalf("help exit %d", code)
	}
}

func TestVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if err := runVersion(nil, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.HasPrefix(s, "vembed ") || !strings.Contains(s, runtime.Version()) {
		t.Errorf("version: %q", s)
	}
}
