package kernels

import (
	"encoding/binary"
	"testing"
)

// TestAMXConfig checks the tile configurations against what each TDPBUSD
// of the kernel requires (Intel SDM: C rows = A rows, C bytes per row =
// B bytes per row, A bytes per row = 4·B rows, at most 16 rows and 64
// bytes per row) and against the data each TILELOADD reads: A 16 rows of
// the 32-byte (or 16-byte half) block rows, B the 8 (or 4) k steps of a
// panel block.
func TestAMXConfig(t *testing.T) {
	type dims struct{ rows, colsb int }
	read := func(cfg []byte, tile int) dims {
		return dims{int(cfg[48+tile]), int(binary.LittleEndian.Uint16(cfg[16+2*tile:]))}
	}
	for _, c := range []struct {
		mul      bool
		products [][3]int // c, a, b of each TDPBUSD
		a, b     dims
	}{
		{false, [][3]int{{0, 2, 3}, {1, 2, 4}}, dims{16, 32}, dims{8, 64}},
		{true, [][3]int{{0, 4, 6}, {1, 4, 7}, {2, 5, 6}, {3, 5, 7}}, dims{16, 16}, dims{4, 64}},
	} {
		cfg := make([]byte, 64)
		amxConfig(cfg, c.mul)
		if cfg[0] != 1 || cfg[1] != 0 {
			t.Fatalf("mul=%v: palette %d, start row %d", c.mul, cfg[0], cfg[1])
		}
		for _, p := range c.products {
			cd, ad, bd := read(cfg, p[0]), read(cfg, p[1]), read(cfg, p[2])
			if cd.rows != ad.rows || cd.colsb != bd.colsb || ad.colsb != 4*bd.rows || cd.rows > 16 || cd.colsb > 64 {
				t.Errorf("mul=%v: TDPBUSD tmm%d, tmm%d, tmm%d with shapes %v %v %v", c.mul, p[0], p[1], p[2], cd, ad, bd)
			}
			if ad != c.a || bd != c.b || cd != (dims{16, 4 * vnniNR}) {
				t.Errorf("mul=%v: tiles %v %v %v, the kernel's data are A %v, B %v, C 16×64 bytes", c.mul, cd, ad, bd, c.a, c.b)
			}
		}
		kb := i8Block // k values one B tile holds: a block, or half of one
		if c.mul {
			kb /= 2
		}
		if c.b.rows*c.b.colsb != kb*vnniNR {
			t.Errorf("mul=%v: a B tile of %v is not a panel's (half) block", c.mul, c.b)
		}
	}
}

// TestAMXTier reports whether the amx tier could run here; on AMX hardware
// TestVNNIMatchesAVX2Int8 and TestVNNIMutants cover it (as "amx"), and
// this test checks that it is not the default tier.
func TestAMXTier(t *testing.T) {
	if !hasAMX {
		t.Skip("no AMX int8 on this CPU (or the OS refused the tile state): the amx tier's assembly is not run here")
	}
	if defaultTier().tier == TierAMX {
		t.Error("the unverified amx tier is the default")
	}
	if !hasTier(TierAMX) {
		t.Error("AMX present but no amx tier")
	}
}
