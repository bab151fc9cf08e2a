package kernels

import (
	"encoding/binary"

	"golang.org/x/sys/cpu"
)

//go:noescape
func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// readHostCPU reads the vendor, family and model by CPUID and the flags
// the tiers need from x/sys/cpu, which reports a vector extension only
// when the OS saves its registers; the amx_* flags only when Linux granted
// this process the tile state.
func readHostCPU() CPU {
	var c CPU
	_, b, cx, d := cpuid(0, 0)
	var v [12]byte
	binary.LittleEndian.PutUint32(v[0:], b)
	binary.LittleEndian.PutUint32(v[4:], d)
	binary.LittleEndian.PutUint32(v[8:], cx)
	c.Vendor = string(v[:])
	c.Family, c.Model = displayFamilyModel(cpuid(1, 0))
	x := &cpu.X86
	for _, f := range []struct {
		name string
		has  bool
	}{
		{"avx", x.HasAVX}, {"avx2", x.HasAVX2}, {"fma", x.HasFMA}, {"f16c", x.HasF16C},
		{"avx512f", x.HasAVX512F}, {"avx512bw", x.HasAVX512BW}, {"avx512vl", x.HasAVX512VL},
		{"avx512dq", x.HasAVX512DQ}, {"avx512_vnni", x.HasAVX512VNNI}, {"avx512_bf16", x.HasAVX512BF16},
		{"avx_vnni", x.HasAVXVNNI},
		{"amx_tile", x.HasAMXTile && amxGranted}, {"amx_int8", x.HasAMXInt8 && amxGranted},
		{"amx_bf16", x.HasAMXBF16 && amxGranted},
	} {
		if f.has {
			c.Flags = append(c.Flags, f.name)
		}
	}
	return c
}
