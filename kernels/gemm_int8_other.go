//go:build !amd64

package kernels

// archI8Kernels lists the assembly integer kernels of this architecture:
// none.
func archI8Kernels() map[string]*i8Tier { return nil }
