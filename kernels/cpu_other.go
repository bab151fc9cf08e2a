//go:build !amd64 && !arm64

package kernels

// readHostCPU returns an identity without vendor or flags: the default
// table's last rows (the portable tier) apply.
func readHostCPU() CPU { return CPU{} }
