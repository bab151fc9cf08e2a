// Package archhash pins whole results across architectures: hashes of
// float32 vectors recorded per arithmetic name (kernels.Arithmetic) on
// amd64, which every tier of that name must reproduce, arm64's under
// emulation in CI included.
package archhash

import (
	"encoding/binary"
	"hash"
	"hash/fnv"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/model/heads"
)

// Hash is an FNV-1a hash of float32 vectors' bits, the form in which the
// models' tests pin whole embeddings across architectures.
type Hash struct{ h hash.Hash64 }

// NewHash returns an empty Hash.
func NewHash() *Hash { return &Hash{fnv.New64a()} }

// Put adds v's bits, value by value, little-endian.
func (h *Hash) Put(v []float32) {
	buf := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
	}
	h.h.Write(buf)
}

// PutEmbedding normalizes the pooled vector e in place, as a served
// embedding is, and adds it and its Matryoshka truncation to 32 values.
func (h *Hash) PutEmbedding(t testing.TB, e []float32) {
	t.Helper()
	heads.Normalize(e)
	h.Put(e)
	short, err := heads.Truncate(e, 32)
	if err != nil {
		t.Fatal(err)
	}
	h.Put(short)
}

// Sum returns the hash of everything put so far.
func (h *Hash) Sum() uint64 { return h.h.Sum64() }

// ArithmeticHashes runs run on every tier this build and CPU have and
// compares the hash it returns with golden's entry for the tier's
// arithmetic name (kernels.Arithmetic): tiers of one name must compute the
// same bits on every CPU and architecture, so one amd64 machine records
// the hashes that arm64 runs (under emulation in CI) must reproduce. With
// VEMBED_ARITH_RECORD set it prints the hashes instead, to be pasted into
// golden after a change that comes with a new kernels revision. run gets
// the test, with the tier active; SetInt8MinRows(0) is in force, so that
// every product by quantized weights takes the integer path where a tier
// has one, however few its rows.
func ArithmeticHashes(t *testing.T, golden map[string]uint64, run func(t *testing.T) uint64) {
	t.Helper()
	saved := kernels.Active()
	rows := kernels.SetInt8MinRows(0)
	defer func() {
		kernels.Use(saved)
		kernels.SetInt8MinRows(rows)
	}()
	record := os.Getenv("VEMBED_ARITH_RECORD") != ""
	recorded := map[string]bool{}
	checked := 0
	for _, tier := range slices.Backward(kernels.Available()) {
		if err := kernels.Use(tier); err != nil {
			t.Fatal(err)
		}
		name := kernels.Arithmetic()
		want, ok := golden[name]
		if !record && !ok {
			t.Logf("%s: no hash recorded for %q", tier, name)
			continue
		}
		if record && recorded[name] {
			continue
		}
		got := run(t)
		if record {
			recorded[name] = true
			t.Logf("%q: %#x,", name, got)
			continue
		}
		checked++
		if got != want {
			t.Errorf("%s computes other vectors than those recorded for %q (hash %#x, want %#x)", tier, name, got, want)
		}
	}
	if checked == 0 && !record {
		t.Skip("no arithmetic name of this build and CPU has a recorded hash")
	}
}
