package kernels

import "golang.org/x/sys/cpu"

//go:noescape
func peakAMXInt8(n int, cfg, src, dst *byte)

//go:noescape
func peakAMXBF16(n int, cfg, src, dst *byte)

// amxProbe wraps an AMX probe loop as a peakProbe: every tile 16 rows of
// 64 bytes (amxBF16Config's), each row of the A tiles the first 64 bytes
// of src, of the B tiles the next 64.
func amxProbe(loop func(n int, cfg, src, dst *byte), opsPerIter float64) peakProbe {
	return peakProbe{func(n int, src, dst *byte) {
		var cfg [64]byte
		amxBF16Config(cfg[:])
		loop(n, &cfg[0], src, dst)
	}, opsPerIter}
}

// amxPeakProbes adds the AMX probes where the CPU has the tiles and the
// OS granted their state: each iteration four tile products of 16×16
// outputs, TDPBUSD over 64 byte products each (16·16·64·2 operations),
// TDPBF16PS over 32 bfloat16 ones (16·16·32·2 flops).
func amxPeakProbes(m map[PeakUnit]peakProbe) {
	if amxGranted && cpu.X86.HasAMXInt8 {
		m[PeakAMXInt8] = amxProbe(peakAMXInt8, 4*16*16*64*2)
	}
	if amxGranted && cpu.X86.HasAMXBF16 {
		m[PeakAMXBF16] = amxProbe(peakAMXBF16, 4*16*16*32*2)
	}
}
