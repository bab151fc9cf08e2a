//go:build amd64 && !linux

package kernels

// amxPermit reports false: only Linux is known here to grant the AMX tile
// state (arch_prctl), so the amx tier is Linux-only.
func amxPermit() bool { return false }
