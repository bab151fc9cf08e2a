//go:build !amd64 && !arm64

package kernels

// archTiers lists the tiers specific to this architecture, best first.
func archTiers() []*impl { return nil }

func fmaProbe() (func(n int), float64) { return nil, 0 }

func archPeakProbes() map[PeakUnit]peakProbe { return map[PeakUnit]peakProbe{} }
