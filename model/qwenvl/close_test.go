package qwenvl

import (
	"testing"

	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/model/internal/modeltest"
)

// TestCloseFreesPackedWeights checks that a model packed at load gives
// the packed copies back when it closes, without waiting for a garbage
// collection (they live outside the Go heap, so nothing else would make
// one happen).
func TestCloseFreesPackedWeights(t *testing.T) {
	tier := modeltest.UsePackingTier(t)
	lm, mm := modeltest.SynthPair(t, "tiny", "Q8_0", "Q8_0", nil)
	before := kernels.PackedBytes()
	m, err := Load(lm, mm)
	if err != nil {
		t.Fatal(err)
	}
	loaded := kernels.PackedBytes()
	if loaded <= before {
		t.Fatalf("loading a Q8_0 model on %s packed nothing (%d -> %d bytes)", tier, before, loaded)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// Copies of other models may be collected meanwhile, never added.
	if after := kernels.PackedBytes(); after > before {
		t.Errorf("after Close %d bytes of packed weights remain, %d before Load (%d after)", after, before, loaded)
	}
}
