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
	// vembed embed --dump writes the format a dump side reads: the model
	// against its own dump agrees on every stage.
	dump := filepath.Join(dir, "dump")
	img2 := filepath.Join(dir, "q.png")
	writePNG(t, img2, 90, 70, 3)
	if code := run([]string{"embed", "--model", m.LM, "--mmproj", m.MMProj, "--dump", dump, "--image", img, "--image", img2}, &stdout, &stderr); code != 0 {
		t.Fatalf("embed --dump: exit %d: %s", code, stderr.String())
	}
	stdout.Reset()
	if code := run([]string{"compare", "--a", side, "--b", dump, img, img2}, &stdout, &stderr); code != 0 {
		t.Fatalf("compare with a dump: exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 13 {
		t.Errorf("want 12 stage rows:\n%s", stdout.String())
	}
	for _, l := range lines[1:] {
		if f := strings.Fields(l); f[len(f)-1] != "1.00000000" || f[len(f)-2] != "0" {
			t.Errorf("a model against its own dump: %s", l)
		}
	}
	if code := run([]string{"compare", "--a", side, img}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "--b is required") {
		t.Errorf("missing --b: exit %d", code)
	}
}
