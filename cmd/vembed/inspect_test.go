package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/gguf"
)

func writeInspectFile(t *testing.T) string {
	t.Helper()
	w := gguf.NewWriter()
	w.Add("general.architecture", "test")
	w.Add("test.values", []float32{1.5, -2})
	w.Add("test.long", make([]int32, 100))
	x := make([]float32, 64)
	for i := range x {
		x[i] = float32(i) - 31.5
	}
	q, err := gguf.Quantize(gguf.TypeQ8_0, x)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("w", gguf.TypeQ8_0, []int64{32, 2}, q); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "t.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func runOK(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(args, &out, &errOut); code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errOut.String())
	}
	return out.String()
}

func TestInspectTables(t *testing.T) {
	out := runOK(t, "inspect", writeInspectFile(t))
	for _, want := range []string{"general.architecture", `"test"`, "FLOAT32[2]", "[1.5, -2]", "INT32[100]",
		"(100 elements)", "w ", "Q8_0", "[32 2]"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestInspectValues(t *testing.T) {
	path := writeInspectFile(t)
	// %.9g prints a float32 exactly, so parsing the lines gives the values back.
	out := runOK(t, "inspect", path, "--tensor", "w", "--values", "3")
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	all, err := f.Tensor("w").Float32s()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines: %q", len(lines), out)
	}
	for i, l := range lines {
		var v float32
		if _, err := fmt.Sscan(l, &v); err != nil || v != all[i] {
			t.Errorf("line %d = %q, want %.9g", i, l, all[i])
		}
	}
	// More values than the tensor has prints them all.
	out = runOK(t, "inspect", "--values", "1000", "--tensor", "w", path)
	if n := strings.Count(out, "\n"); n != 64 {
		t.Errorf("%d lines for a 64-value tensor", n)
	}
}

func TestInspectJSON(t *testing.T) {
	path := writeInspectFile(t)
	var file struct {
		Version  int `json:"version"`
		Metadata []struct {
			Key       string `json:"key"`
			Count     int    `json:"count"`
			Truncated bool   `json:"truncated"`
			Value     any    `json:"value"`
		} `json:"metadata"`
		Tensors []struct {
			Name  string  `json:"name"`
			Type  string  `json:"type"`
			Shape []int64 `json:"shape"`
		} `json:"tensors"`
	}
	if err := json.Unmarshal([]byte(runOK(t, "inspect", "--json", path)), &file); err != nil {
		t.Fatal(err)
	}
	if file.Version != 3 || len(file.Metadata) != 3 || len(file.Tensors) != 1 || file.Tensors[0].Type != "Q8_0" ||
		!file.Metadata[2].Truncated || file.Metadata[2].Count != 100 {
		t.Errorf("%+v", file)
	}
	var vals struct {
		Values []float32 `json:"values"`
	}
	if err := json.Unmarshal([]byte(runOK(t, "inspect", "--json", "--tensor", "w", "--values", "2", path)), &vals); err != nil {
		t.Fatal(err)
	}
	if len(vals.Values) != 2 {
		t.Errorf("values %v", vals.Values)
	}
}

func TestInspectErrors(t *testing.T) {
	path := writeInspectFile(t)
	for _, args := range [][]string{
		{"inspect"},
		{"inspect", path, "--tensor", "absent"},
		{"inspect", filepath.Join(t.TempDir(), "missing.gguf")},
		{"inspect", path, "--values", "-1"},
	} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code == 0 {
			t.Errorf("%v succeeded", args)
		}
	}
}
