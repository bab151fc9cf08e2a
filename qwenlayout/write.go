package qwenlayout

import (
	"fmt"
	"io"

	"github.com/vembed/vembed/gguf"
)

// Fill writes the bytes of one planned tensor, encoded in its type, to dst.
// WriteFile calls it once per tensor, in file order.
type Fill func(t TensorLayout, dst io.Writer) error

// WriteFile streams the file l plans to path: the header and tensor infos
// first (offsets follow from the tensor sizes), then each tensor's bytes as
// fill writes them, so a multi-gigabyte model never sits in memory. The
// file is written to a temporary name and renamed when complete, so an
// error leaves nothing behind. Files keep gguf.Writer's default alignment,
// 32, as llama.cpp's converter writes no general.alignment.
func WriteFile(path string, l *Layout, fill Fill) error {
	w := gguf.NewWriter()
	for _, kv := range l.KVs {
		w.Add(kv.Key, kv.Value)
	}
	for _, t := range l.Tensors {
		if err := w.AddTensorFunc(t.Name, t.Type, t.NE, func(dst io.Writer) error {
			if err := fill(t, dst); err != nil {
				return fmt.Errorf("%s: %w", t.Name, err)
			}
			return nil
		}); err != nil {
			return fmt.Errorf("qwenlayout: %s: %w", t.Name, err)
		}
	}
	if err := w.WriteFile(path); err != nil {
		return fmt.Errorf("qwenlayout: %w", err)
	}
	return nil
}
