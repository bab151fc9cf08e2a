package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/synth"
)

func TestQuantizeCommand(t *testing.T) {
	dir := t.TempDir()
	cfg, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.LMType, cfg.MMProjType = "F32", "F16"
	lm, mm, err := synth.WritePair(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	dst := filepath.Join(dir, "lm-q8.gguf")
	if code := run([]string{"quantize", lm, dst, "--type", "q8_0"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	f, err := gguf.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	ft, _ := f.Uint("general.file_type")
	typ := f.Tensor("blk.0.ffn_up.weight").Type
	f.Close()
	if ft != 7 || typ != gguf.TypeQ8_0 {
		t.Errorf("file_type %d, ffn_up %s: want 7, Q8_0", ft, typ)
	}
	// An mmproj without --type takes the default vision type; the summary
	// names the kept groups.
	errOut.Reset()
	if code := run([]string{"quantize", mm, filepath.Join(dir, "mm.gguf")}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "kept: ") {
		t.Errorf("summary %q does not name the kept groups", errOut.String())
	}
	out.Reset()
	if code := run([]string{"quantize", "--dry-run", lm, "--type", "Q4_K_M"}, &out, &errOut); code != 0 {
		t.Fatalf("dry run: exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "token_embd.weight") {
		t.Errorf("dry run printed %q", out.String())
	}
	for _, bad := range [][]string{
		{"quantize"},
		{"quantize", lm},
		{"quantize", lm, filepath.Join(dir, "x.gguf"), "--type", "Q9_K"},
		{"quantize", mm, filepath.Join(dir, "x.gguf"), "--keep", "nothing"},
		{"quantize", filepath.Join(dir, "missing.gguf"), filepath.Join(dir, "x.gguf")},
	} {
		if code := run(bad, &out, &errOut); code == 0 {
			t.Errorf("%v: exit 0", bad)
		}
	}
}
