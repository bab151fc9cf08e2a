package kernels

// The probe loops of peak_arm64.s: 16 instructions an iteration.

//go:noescape
func peakFMLA(n int, src, dst *byte)

//go:noescape
func peakSDOT(n int, src, dst *byte)

//go:noescape
func peakSMMLA(n int, src, dst *byte)

//go:noescape
func peakBFDOT(n int, src, dst *byte)

//go:noescape
func peakBFMMLA(n int, src, dst *byte)

// archPeakProbes lists the arm64 probes this CPU runs.
func archPeakProbes() map[PeakUnit]peakProbe {
	m := map[PeakUnit]peakProbe{}
	if hasNEON {
		m[PeakFMLA] = peakProbe{peakFMLA, 16 * 4 * 2}
	}
	if hasDotProd {
		m[PeakSDOT] = peakProbe{peakSDOT, 16 * 16 * 2}
	}
	if hasI8MM {
		m[PeakSMMLA] = peakProbe{peakSMMLA, 16 * 32 * 2}
	}
	if hasNEON && hasBF16() {
		m[PeakBFDOT] = peakProbe{peakBFDOT, 16 * 8 * 2}
		m[PeakBFMMLA] = peakProbe{peakBFMMLA, 16 * 16 * 2}
	}
	return m
}
