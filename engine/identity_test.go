package engine

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"github.com/vembed/vembed/kernels"
)

// TestIdentities checks the model identities: content digests that any
// process computes alike (each file's SHA-256 under its base name) with
// the kernels' arithmetic, which tells apart vectors of CPUs that compute
// different bits; values of the engine's own with LocalIdentity, unless
// something is shared.
func TestIdentities(t *testing.T) {
	lm, mmproj, mv := modelFiles(t)
	want := func(domain string, paths ...string) Key {
		h := newHasher("files/" + domain).str(kernels.Arithmetic())
		for _, p := range paths {
			h.str(filepath.Base(p))
			if p == "" {
				continue
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			d := sha256.Sum256(b)
			h.bytes(d[:])
		}
		return h.sum()
	}
	wantModel, wantVision := want("model", lm, mmproj, mv), want("vision", mmproj)
	textOnlyModel := want("model", lm, "", "")
	if wantModel == wantVision || wantModel == textOnlyModel {
		t.Fatal("the expected identities collide")
	}

	base := Config{Model: lm, MMProj: mmproj, MVProj: mv}
	check := func(name string, cfg Config, local bool) (Key, Key) {
		t.Helper()
		m, v, err := identities(cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := m == wantModel && v == wantVision; got == local {
			t.Errorf("%s: content identities %v, want %v", name, got, !local)
		}
		if m == v {
			t.Errorf("%s: model and vision identities are equal", name)
		}
		return m, v
	}
	check("hashed", base, false)
	m, v, err := identities(Config{Model: lm})
	if err != nil || m != textOnlyModel || v != want("vision", "") {
		t.Errorf("text only: %v, %v, %v; want the digests of the LM alone", m, v, err)
	}

	local := base
	local.LocalIdentity = true
	m1, v1 := check("local", local, true)
	m2, v2 := check("local again", local, true)
	if m1 == m2 || v1 == v2 {
		t.Error("two engines with LocalIdentity drew the same identity")
	}
	for name, share := range map[string]func(*Config){
		"CacheDir":    func(c *Config) { c.CacheDir = t.TempDir() },
		"CacheURL":    func(c *Config) { c.CacheURL = "redis://127.0.0.1:1/0" },
		"EncoderURLs": func(c *Config) { c.EncoderURLs = []string{"http://127.0.0.1:1"} },
	} {
		cfg := local
		share(&cfg)
		check("local with "+name, cfg, false)
	}

	// Another arithmetic, another identity; the same arithmetic on another
	// tier (avx512 computes avx2's bits), the same.
	saved := kernels.Active()
	defer kernels.Use(saved)
	seen := map[string]Key{}
	for _, tier := range kernels.Available() {
		if tier == kernels.TierReference {
			continue
		}
		kernels.Use(tier)
		m, _, err := identities(base)
		if err != nil {
			t.Fatal(err)
		}
		a := kernels.Arithmetic()
		if k, ok := seen[a]; ok && k != m {
			t.Errorf("tier %s: arithmetic %q gave another identity", tier, a)
		}
		for other, k := range seen {
			if other != a && k == m {
				t.Errorf("tier %s: arithmetics %q and %q share an identity", tier, a, other)
			}
		}
		seen[a] = m
	}
	kernels.Use(saved)

	bad := base
	bad.MMProj = filepath.Join(t.TempDir(), "missing.gguf")
	if _, _, err := identities(bad); err == nil {
		t.Error("a missing file hashed without error")
	}
}
