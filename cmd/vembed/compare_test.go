package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/synth"
)

func TestCompareCommand(t *testing.T) {
	dir := t.TempDir()
	m, err := synth.WriteDemo(dir)
	if err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(dir, "p.png")
	writePNG(t, img, 64, 48, 2)
	side := m.LM + "," + m.MMProj
	out := filepath.Join(dir, "report")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"compare", "--a", side, "--b", side + "@reference", "--out", out, img}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"vision output", "merger", "image hidden states", "embedding"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("no %q in\n%s", want, stdout.String())
		}
	}
	if _, err := os.Stat(filepath.Join(out, "index.html")); err != nil {
		t.Error(err)
	}
	if code := run([]string{"compare", "--a", side, img}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "--b is required") {
		t.Errorf("missing --b: exit %d", code)
	}
}
