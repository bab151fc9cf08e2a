//go:build arm64 && !linux && !darwin

package kernels

func hasBF16() bool { return false }

// armIdentity is unknown on these systems: the table's rows by feature
// decide.
func armIdentity() (impl, part int) { return 0, 0 }
