package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/kernels"
)

// TestConfigChecks: every benchmark refuses a configuration out of range
// before measuring anything, naming the flag it comes from.
func TestConfigChecks(t *testing.T) {
	kc := func(edit func(*KernelConfig)) KernelConfig {
		c := KernelConfig{Types: []gguf.Type{gguf.TypeF32}, Ms: []int{1}, K: 32, N: 32, Time: time.Millisecond, Rounds: 1}
		edit(&c)
		return c
	}
	for name, c := range map[string]KernelConfig{
		"no types":     kc(func(c *KernelConfig) { c.Types = nil }),
		"zero rows":    kc(func(c *KernelConfig) { c.Ms = []int{0} }),
		"zero k":       kc(func(c *KernelConfig) { c.K = 0 }),
		"no time":      kc(func(c *KernelConfig) { c.Time = 0 }),
		"unknown tier": kc(func(c *KernelConfig) { c.Tiers = []kernels.Tier{"no-such-tier"} }),
	} {
		if _, err := Kernels(c); err == nil || (name != "unknown tier" && !strings.Contains(err.Error(), "--")) {
			t.Errorf("kernels, %s: %v, want an error naming the flag", name, err)
		}
	}
	valid := kc(func(*KernelConfig) {})
	if err := valid.Check(); err != nil {
		t.Errorf("a valid kernel configuration: %v", err)
	}

	mc := func(edit func(*ModelConfig)) ModelConfig {
		c := ModelConfig{Texts: 1, TextTokens: 8, Repeat: 1, ImageFormat: "jpeg"}
		edit(&c)
		return c
	}
	for name, c := range map[string]ModelConfig{
		"lm alone":      mc(func(c *ModelConfig) { c.LM = "x.gguf" }),
		"texts":         mc(func(c *ModelConfig) { c.Texts = -1 }),
		"repeat":        mc(func(c *ModelConfig) { c.Repeat = 0 }),
		"image format":  mc(func(c *ModelConfig) { c.ImageFormat = "gif" }),
		"image too big": mc(func(c *ModelConfig) { c.ImageSizes = []int{20000} }),
	} {
		if _, err := Model(c); err == nil || !strings.Contains(err.Error(), "--") {
			t.Errorf("model, %s: %v, want an error naming the flag", name, err)
		}
	}

	sc := ServeConfig{Scenarios: []string{"Q"}, Clients: 1, Requests: 2, Sizes: []int{56}, Large: 56, QRounds: 1}
	for name, edit := range map[string]func(*ServeConfig){
		"no sizes":   func(c *ServeConfig) { c.Sizes = nil },
		"no clients": func(c *ServeConfig) { c.Clients = 0 },
		"q rounds":   func(c *ServeConfig) { c.QRounds = 101 },
	} {
		c := sc
		edit(&c)
		if _, err := Serve(c); err == nil || !strings.Contains(err.Error(), "--") {
			t.Errorf("serve, %s: %v, want an error naming the flag", name, err)
		}
	}

	rc := RegressConfig{LM: "lm.gguf", MMProj: "mmproj.gguf", Against: "old", Rounds: 1, Texts: 1, TextTokens: 8, Image: 56, MaxRatio: 1}
	for name, edit := range map[string]func(*RegressConfig){
		"no baseline":   func(c *RegressConfig) { c.Against = "" },
		"two baselines": func(c *RegressConfig) { c.Baseline = "old.json" },
		"no mmproj":     func(c *RegressConfig) { c.MMProj = "" },
		"max ratio":     func(c *RegressConfig) { c.MaxRatio = 0.5 },
	} {
		c := rc
		edit(&c)
		if _, _, err := Regress(c); err == nil || !strings.Contains(err.Error(), "--") {
			t.Errorf("regress, %s: %v, want an error naming the flag", name, err)
		}
	}
	if err := rc.Check(); err != nil {
		t.Errorf("a valid regress configuration: %v", err)
	}
}
