package kernels

import "testing"

// TestAMXTier checks, where the CPU has AMX int8 tiles and the OS granted
// them, that the amx tier exists, is not the default (its kernel is
// verified by TestAMXI8MatchesAVX2Int8, which runs the assembly there, but
// not yet measured faster than avx512-vnni) and packs every integer type
// at load.
func TestAMXTier(t *testing.T) {
	if !hasAMX {
		t.Skip("no AMX int8 on this CPU (or the OS refused the tile state): the amx tier's assembly is not run here")
	}
	if defaultTier().tier == TierAMX {
		t.Error("the amx tier is the default")
	}
	if !hasTier(TierAMX) {
		t.Error("AMX present but no amx tier")
	}
}
