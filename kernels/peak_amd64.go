package kernels

import "golang.org/x/sys/cpu"

// The probe loops of peak_amd64.s.

//go:noescape
func peakFMA512(n int, src, dst *byte)

//go:noescape
func peakVNNI512(n int, src, dst *byte)

//go:noescape
func peakVNNI256(n int, src, dst *byte)

//go:noescape
func peakBF16(n int, src, dst *byte)

// hasAVX512Regs reports AVX-512F with the OS saving the zmm state (x/sys/cpu
// reports AVX-512 features only then), which every zmm probe needs.
var hasAVX512Regs = cpu.X86.HasAVX512F

// archPeakProbes lists the amd64 probes the CPU runs beyond the AVX2 FMA.
func archPeakProbes() map[PeakUnit]peakProbe {
	m := map[PeakUnit]peakProbe{}
	if hasAVX512Regs {
		m[PeakFMA512] = peakProbe{peakFMA512, 16 * 16 * 2}
	}
	if hasAVX512Regs && cpu.X86.HasAVX512VNNI {
		m[PeakVNNI512] = peakProbe{peakVNNI512, 16 * 64 * 2}
	}
	if hasAVX512Regs && cpu.X86.HasAVX512BF16 {
		m[PeakBF16] = peakProbe{peakBF16, 16 * 32 * 2}
	}
	if cpu.X86.HasAVX && cpu.X86.HasAVXVNNI {
		m[PeakVNNI256] = peakProbe{peakVNNI256, 12 * 32 * 2}
	}
	amxPeakProbes(m)
	return m
}
