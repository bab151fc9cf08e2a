package kernels

import "golang.org/x/sys/cpu"

// readHostCPU returns the identity of this ARM CPU: the MIDR where the OS
// shows it (armIdentity, per OS) and the features x/sys/cpu reads from the
// OS (HWCAP and HWCAP2 on Linux, sysctls on macOS), with BF16, which
// x/sys/cpu does not report, read by hasBF16.
func readHostCPU() CPU {
	var flags []string
	for _, f := range []struct {
		has  bool
		name string
	}{
		{cpu.ARM64.HasASIMD, flagASIMD},
		{cpu.ARM64.HasASIMDDP, flagASIMDDP},
		{cpu.ARM64.HasI8MM, flagI8MM},
		{hasBF16(), flagBF16},
	} {
		if f.has {
			flags = append(flags, f.name)
		}
	}
	impl, part := armIdentity()
	return armCPU(impl, part, flags)
}
