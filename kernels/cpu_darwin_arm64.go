package kernels

import "golang.org/x/sys/unix"

func hasBF16() bool {
	v, err := unix.SysctlUint32("hw.optional.arm.FEAT_BF16")
	return err == nil && v != 0
}

// armIdentity is Apple's implementer code: macOS does not show programs
// the MIDR, and every arm64 Mac is an Apple core; the table tells the
// generations apart by their features (I8MM from M2 on).
func armIdentity() (impl, part int) { return implApple, 0 }
