package kernels

import (
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vembed/vembed/gguf"
)

// declaredTiers parses the package's sources (every architecture's) and
// returns the value of every constant of type Tier.
func declaredTiers(t *testing.T) []Tier {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []Tier
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Tier" {
					continue
				}
				for _, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: a Tier constant that is not a string literal", fset.Position(v.Pos()))
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, Tier(s))
				}
			}
		}
	}
	return out
}

// TestTierRoundingComplete fails when a tier is declared (in any
// architecture's source) or available without a stated rounding, and
// checks the table against this CPU's tiers: a tier marked Int8 multiplies
// quantized weights in integers, and one marked BF16 changes the product
// by a marked float weight, one not marked leaves its float32 bits.
func TestTierRoundingComplete(t *testing.T) {
	declared := declaredTiers(t)
	if len(declared) < 10 {
		t.Fatalf("found only %d Tier constants in the sources: %v", len(declared), declared)
	}
	for _, tier := range declared {
		if _, ok := TierRounding(tier); !ok {
			t.Errorf("tier %s is declared without a rounding in tierRounding", tier)
		}
	}
	for tier := range tierRounding {
		if !slices.Contains(declared, tier) {
			t.Errorf("tierRounding names %s, which the package does not declare", tier)
		}
	}
	if _, ok := TierRounding("no-such-tier"); ok {
		t.Error("an undeclared tier has a rounding")
	}

	saved := Active()
	defer Use(saved)
	rng := rand.New(rand.NewPCG(3, 4))
	const m, k, n = 16, 96, 40
	x := make([]float32, m*k)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	marked := randMatrix(t, gguf.TypeF32, n, k, rng)
	plain := *marked
	plain.BF16 = false
	run := func(w *Matrix) []float32 {
		out := make([]float32, m*n)
		MatMul(out, x, m, w, nil)
		return out
	}
	if err := Use(TierReference); err != nil {
		t.Fatal(err)
	}
	for _, tier := range Available() {
		r, ok := TierRounding(tier)
		if !ok {
			t.Errorf("available tier %s has no rounding", tier)
			continue
		}
		if r.Int8 != int8Tiers[tier] {
			t.Errorf("%s: rounding says Int8 %v, the tier multiplies quantized weights in integers: %v", tier, r.Int8, int8Tiers[tier])
		}
		if err := Use(tier); err != nil {
			t.Fatal(err)
		}
		same := slices.Equal(run(marked), run(&plain))
		if r.BF16 == same {
			t.Errorf("%s: rounding says BF16 %v; a marked float32 weight gives the unmarked bits: %v", tier, r.BF16, same)
		}
		if r.BF16 != slices.Contains(BF16Tiers(), tier) {
			t.Errorf("%s: BF16Tiers() = %v disagrees with its rounding", tier, BF16Tiers())
		}
	}
}
