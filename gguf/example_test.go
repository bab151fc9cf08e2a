package gguf_test

import (
	"bytes"
	"fmt"

	"github.com/vembed/vembed/gguf"
)

func Example() {
	w := gguf.NewWriter()
	w.Add("general.architecture", "demo")
	w.Add("demo.sections", []int32{2, 3, 3, 0})
	q, _ := gguf.Quantize(gguf.TypeQ8_0, []float32{
		0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
		16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
	})
	if err := w.AddTensor("x", gguf.TypeQ8_0, []int64{32}, q); err != nil {
		panic(err)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		panic(err)
	}

	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		panic(err)
	}
	arch, _ := f.String("general.architecture")
	secs, _ := f.Ints("demo.sections")
	x := f.Tensor("x")
	vals, _ := x.Float32s()
	// The block scale 31/127 is stored as F16, hence the rounding.
	fmt.Println(arch, secs, x.Type, x.Dims, vals[31])
	// Output: demo [2 3 3 0] Q8_0 [32] 31.00586
}
