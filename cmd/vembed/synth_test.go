package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestSynthCommand(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	code := run([]string{"synth", "--preset", "tiny", "--out", dir, "--type", "f32", "--mvproj", "--seed", "7"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	paths := strings.Fields(out.String())
	if len(paths) != 3 {
		t.Fatalf("printed %q, want three paths", out.String())
	}
	for _, p := range paths {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", p, err)
		}
	}
	for _, bad := range [][]string{
		{"synth"},
		{"synth", "--out", dir, "--preset", "nope"},
		{"synth", "--out", dir, "--type", "Q9"},
		{"synth", "--out", dir, "--std", "-1"},
		{"synth", "--out", dir, "--std", "NaN"},
	} {
		if code := run(bad, &out, &errOut); code == 0 {
			t.Errorf("%v: exit 0", bad)
		}
	}
}
