//go:build !amd64 && !arm64

package kernels

// archIntKernels lists the assembly integer kernels of this architecture:
// none.
func archIntKernels() (map[string]*i8Tier, map[string]*u8Tier) { return nil, nil }

// archVNNIKernels lists the VNNI GEMMs of this architecture: none.
func archVNNIKernels() map[string]*vnniTier { return nil }
