//go:build !linux

package kernels

// allocPacked returns n bytes for a packed weight copy: on the Go heap
// here, freed by the collector.
func allocPacked(n int) ([]byte, bool) {
	if n <= 0 {
		return nil, false
	}
	return make([]byte, n), false
}

// freePacked is never called for heap memory.
func freePacked([]byte) {}

// trimPacked returns mem[:n] (heap memory cannot be given back in part).
func trimPacked(mem []byte, n int) []byte { return mem[:n] }
