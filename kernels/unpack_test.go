package kernels

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/vembed/vembed/gguf"
)

// TestUnpack checks that Unpack frees a packed copy at once (the count
// drops by its size with no collection), that products by the matrix
// then decode the stored weights to the same bits, and that a second
// Unpack, and the collector finding the copy later, free nothing twice.
func TestUnpack(t *testing.T) {
	var tier Tier
	for _, c := range []Tier{TierAVX512VNNI, TierAVXVNNI} {
		if hasTier(c) {
			tier = c
			break
		}
	}
	if tier == "" {
		t.Skip("no VNNI tier on this CPU: nothing packs")
	}
	saved := Active()
	defer Use(saved)
	Use(tier)
	defer SetPacking(SetPacking(true))
	rng := rand.New(rand.NewPCG(61, 62))
	w := randMatrix(t, gguf.TypeQ8_0, 97, 320, rng)
	x := randVec(5*w.Cols, rng)
	product := func() []float32 {
		out := make([]float32, 5*w.Rows)
		MatMul(out, x, 5, w, nil)
		return out
	}
	unpacked := product()
	Prepare(w)
	if !w.Packed() {
		t.Fatalf("%s did not pack a Q8_0 matrix", tier)
	}
	size := int64(w.packed.(*vnniPacked).size)
	pm := w.packed.(*vnniPacked).mem
	packed := product()
	before := PackedBytes()
	w.Unpack()
	if w.Packed() {
		t.Fatal("still packed after Unpack")
	}
	// Other tests' copies may be collected meanwhile, never added.
	if after := PackedBytes(); after > before-size {
		t.Errorf("Unpack freed %d bytes of a %d-byte copy", before-after, size)
	}
	if got := product(); !slices.Equal(got, packed) || !slices.Equal(got, unpacked) {
		t.Errorf("products after Unpack differ from the packed and unpacked ones")
	}
	// The memory is freed once: a second Unpack, the copy's cleanup
	// after a collection, or a stray free find nothing left to unmap
	// (the same range may hold other memory by then).
	w.Unpack()
	if pm.mem != nil {
		t.Error("the freed memory is still referenced")
	}
	pm.free()
	runtime.GC()
	runtime.GC()
	if PackedBytes() < 0 {
		t.Errorf("the count went below zero: %d", PackedBytes())
	}
}
