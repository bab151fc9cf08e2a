package kernels

import (
	"os"

	"golang.org/x/sys/unix"
)

// hwcap2BF16 is HWCAP2_BF16 in the AT_HWCAP2 word of the auxiliary vector
// (Linux's arch/arm64/include/uapi/asm/hwcap.h): BFDOT, BFMMLA, BFMLAL and
// BFCVT.
const (
	atHWCAP2   = 26
	hwcap2BF16 = 1 << 14
)

func hasBF16() bool {
	auxv, err := unix.Auxv()
	if err != nil {
		return false
	}
	for _, kv := range auxv {
		if kv[0] == atHWCAP2 {
			return kv[1]&hwcap2BF16 != 0
		}
	}
	return false
}

// armIdentity reads the implementer and part of the first CPU from
// /proc/cpuinfo; zeros when it does not say (an emulator, a container
// hiding it): the table's rows by feature then decide.
func armIdentity() (impl, part int) {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0, 0
	}
	impl, part, _ = parseCPUInfoARM(string(b))
	return impl, part
}
