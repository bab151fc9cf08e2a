package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/vembed/vembed/gguf"
)

func init() {
	register(&command{
		name:    "inspect",
		summary: "show a GGUF file's metadata and tensors, or a tensor's values",
		run:     runInspect,
	})
}

// Long metadata values are shortened in the text table; the JSON output
// keeps arrays up to jsonArrayLimit elements and otherwise the first
// jsonArrayHead with the total count.
const (
	textValueLimit = 100
	jsonArrayLimit = 64
	jsonArrayHead  = 16
)

func runInspect(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("inspect", "[--json] [--tensor NAME [--values N]] FILE.gguf", stderr)
	asJSON := fs.Bool("json", false, "print JSON instead of tables")
	tensor := fs.String("tensor", "", "print the values of the tensor `NAME` instead of the tables")
	values := fs.Int("values", 10, "with --tensor: how many leading values to print (dequantized)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError(fs, stderr, "give one FILE.gguf (got %d arguments)", len(pos))
	}
	if *values < 0 {
		return usageError(fs, stderr, "--values must not be negative")
	}
	f, err := gguf.Open(pos[0])
	if err != nil {
		return err
	}
	defer f.Close()
	if *tensor != "" {
		return printTensorValues(stdout, f, pos[0], *tensor, *values, *asJSON)
	}
	if *asJSON {
		return printFileJSON(stdout, f)
	}
	return printFileTables(stdout, f)
}

// leadingValues dequantizes the first n values of t, decoding only the
// blocks that hold them.
func leadingValues(t *gguf.Tensor, n int) ([]float32, error) {
	n = int(min(int64(n), t.NumElements()))
	bs := t.Type.BlockSize()
	whole := (n + bs - 1) / bs * bs
	out := make([]float32, whole)
	if err := gguf.Dequantize(t.Type, t.Data, out); err != nil {
		return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	return out[:n], nil
}

func printTensorValues(w io.Writer, f *gguf.File, path, name string, n int, asJSON bool) error {
	t := f.Tensor(name)
	if t == nil {
		return fmt.Errorf("%s has no tensor %q", path, name)
	}
	vals, err := leadingValues(t, n)
	if err != nil {
		return err
	}
	if !asJSON {
		for _, v := range vals {
			if _, err := fmt.Fprintf(w, "%.9g\n", v); err != nil {
				return err
			}
		}
		return nil
	}
	js := make([]any, len(vals))
	for i, v := range vals {
		js[i] = jsonNumber(float64(v), true)
	}
	return writeJSON(w, map[string]any{
		"name": t.Name, "type": t.Type.String(), "shape": t.Dims, "offset": t.Offset,
		"n_elements": t.NumElements(), "values": js,
	})
}

func printFileTables(w io.Writer, f *gguf.File) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "GGUF v%d, alignment %d, tensor data at %d, %d metadata keys, %d tensors\n\n",
		f.Version, f.Alignment, f.DataOffset, len(f.KVs), len(f.Tensors))
	fmt.Fprintln(tw, "KEY\tTYPE\tVALUE")
	for _, kv := range f.KVs {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", kv.Key, typeName(kv.Value), shorten(kv.Value.String(), textValueLimit))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "TENSOR\tTYPE\tSHAPE\tOFFSET\tBYTES")
	for _, t := range f.Tensors {
		fmt.Fprintf(tw, "%s\t%s\t%v\t%d\t%d\n", t.Name, t.Type, t.Dims, t.Offset, len(t.Data))
	}
	return tw.Flush()
}

func typeName(v gguf.Value) string {
	if v.Type() == gguf.ValueArray {
		return fmt.Sprintf("%s[%d]", v.ElemType(), v.Len())
	}
	return v.Type().String()
}

// shorten cuts s to about limit bytes on a character boundary.
func shorten(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", s[:cut], len(s))
}

func printFileJSON(w io.Writer, f *gguf.File) error {
	type jsonKV struct {
		Key       string `json:"key"`
		Type      string `json:"type"`
		ElemType  string `json:"elem_type,omitempty"`
		Count     *int   `json:"count,omitempty"`
		Truncated bool   `json:"truncated,omitempty"`
		Value     any    `json:"value"`
	}
	type jsonTensor struct {
		Name   string  `json:"name"`
		Type   string  `json:"type"`
		Shape  []int64 `json:"shape"`
		Offset int64   `json:"offset"`
		Bytes  int     `json:"bytes"`
	}
	kvs := make([]jsonKV, len(f.KVs))
	for i, kv := range f.KVs {
		v := kv.Value
		kvs[i] = jsonKV{Key: kv.Key, Type: v.Type().String()}
		if v.Type() == gguf.ValueArray {
			n := v.Len()
			kvs[i].ElemType, kvs[i].Count = v.ElemType().String(), &n
			kvs[i].Truncated = n > jsonArrayLimit
		}
		kvs[i].Value = jsonValue(v)
	}
	ts := make([]jsonTensor, len(f.Tensors))
	for i, t := range f.Tensors {
		ts[i] = jsonTensor{t.Name, t.Type.String(), t.Dims, t.Offset, len(t.Data)}
	}
	return writeJSON(w, map[string]any{
		"version": f.Version, "alignment": f.Alignment, "data_offset": f.DataOffset,
		"metadata": kvs, "tensors": ts,
	})
}

// jsonValue converts a metadata value for encoding/json: long arrays keep
// their first elements, and non-finite floats (which JSON cannot hold)
// become strings.
func jsonValue(v gguf.Value) any {
	switch v.Type() {
	case gguf.ValueArray:
		n := v.Len()
		if n > jsonArrayLimit {
			n = jsonArrayHead
		}
		out := make([]any, n)
		for i := range out {
			out[i] = jsonValue(v.Index(i))
		}
		return out
	case gguf.ValueFloat32, gguf.ValueFloat64:
		x, _ := v.AsFloat()
		return jsonNumber(x, v.Type() == gguf.ValueFloat32)
	}
	return v.Interface()
}

// jsonNumber gives x a form encoding/json accepts: float32 values print in
// their shortest float32 form, NaN and infinities as strings.
func jsonNumber(x float64, is32 bool) any {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return strings.ToLower(fmt.Sprint(x))
	case is32:
		return float32(x)
	}
	return x
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
