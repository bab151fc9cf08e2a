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

// displayFamilyModel decodes CPUID leaf 1's EAX: the extended family is
// added to a base family of 15, and the extended model prefixed to the
// model of families 6 and 15 (and above), as Intel's and AMD's manuals
// say.
func displayFamilyModel(eax, _, _, _ uint32) (family, model int) {
	family = int(eax >> 8 & 0xf)
	model = int(eax >> 4 & 0xf)
	if family == 15 {
		family += int(eax >> 20 & 0xff)
	}
	if family >= 6 {
		model |= int(eax>>16&0xf) << 4
	}
	return family, model
}
