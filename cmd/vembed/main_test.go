package main

import (
	"bytes"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/vembed/vembed/kernels"
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

// TestMissingArgumentsNamed: a command line missing what a command needs
// says what is missing, not only the usage.
func TestMissingArgumentsNamed(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tokenize", "hi"}, "--model is required"},
		{[]string{"tokenize", "--model", "x.gguf"}, "at least one TEXT"},
		{[]string{"preprocess", "img.png"}, "--mmproj is required"},
		{[]string{"preprocess", "--mmproj", "m.gguf", "img.png"}, "--out is required"},
		{[]string{"inspect"}, "one FILE.gguf"},
		{[]string{"quantize", "in.gguf"}, "IN.gguf and OUT.gguf"},
		{[]string{"synth"}, "--out is required"},
		{[]string{"pull"}, "ORG/NAME"},
		{[]string{"embed"}, "nothing to embed"},
		{[]string{"embed", "--mmproj", "m.gguf", "--text", "a"}, "need --model"},
		{[]string{"bench", "--model", "lm.gguf"}, `unexpected argument "lm.gguf"`},
		{[]string{"convert", "--out", "x.gguf"}, "give one HF_DIR"},
		{[]string{"convert", "dir"}, "--out DIR is required"},
	} {
		var out, errb bytes.Buffer
		if code := run(c.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errb.String(), c.want)
		}
	}
}

func TestEmbedWithoutModelUsesDemo(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"embed", "--text", "hello", "--dimensions", "8"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "RANDOM WEIGHTS") || len(strings.Fields(out.String())) != 8 {
		t.Errorf("stdout %q, stderr %q", out.String(), errb.String())
	}
}

// TestEmbedPackFlag checks that embed, a one-shot command, loads without
// packing weights unless --pack asks for it, and gives the same vector
// either way (packing is bit-identical).
func TestEmbedPackFlag(t *testing.T) {
	defer kernels.SetPacking(kernels.SetPacking(true))
	outs := map[bool]string{}
	for _, pack := range []bool{false, true} {
		args := []string{"embed", "--text", "hello", "--dimensions", "8"}
		if pack {
			args = append(args, "--pack")
		}
		kernels.SetPacking(!pack)
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 0 {
			t.Fatalf("--pack=%v: exit %d: %s", pack, code, errb.String())
		}
		if got := kernels.SetPacking(true); got != pack {
			t.Errorf("embed --pack=%v left packing %v", pack, got)
		}
		outs[pack] = out.String()
	}
	if outs[false] != outs[true] {
		t.Errorf("packed %q, unpacked %q", outs[true], outs[false])
	}
}
