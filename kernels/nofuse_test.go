package kernels

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/vembed/vembed/internal/objdump"
)

// fusedBuild is a build of vembed whose compiler fuses a·b + c into one
// rounding wherever the code lets it, and how to find the fused
// instructions in its machine code: the disassembler and a pattern for
// the scalar fused multiply-adds in its output (the vector ones only come
// from assembly files, whose order is chosen by hand).
type fusedBuild struct {
	name  string
	env   []string
	tool  func(goBin, exe string) (*exec.Cmd, error)
	fused *regexp.Regexp
}

var fusedBuilds = []fusedBuild{
	{"linux/arm64", []string{"GOOS=linux", "GOARCH=arm64"},
		func(goBin, exe string) (*exec.Cmd, error) {
			return exec.Command(goBin, "tool", "objdump", "-s", "^github.com/vembed/vembed/", exe), nil
		},
		// go tool objdump: "  file.go:12\t\t0x3ec188\t\t1f041006\t\tFMSUBS F4, F0, F6, F6"
		regexp.MustCompile(`^\s+\S+:\d+\s+0x([0-9a-f]+)\s.*\sFN?M(ADD|SUB)[SD] `)},
	{"linux/amd64 GOAMD64=v3", []string{"GOOS=linux", "GOARCH=amd64", "GOAMD64=v3"},
		func(_, exe string) (*exec.Cmd, error) {
			objdump, err := exec.LookPath("objdump")
			if err != nil {
				return nil, fmt.Errorf("binutils' objdump is not installed (Go's own does not decode VFMADD)")
			}
			return exec.Command(objdump, "-d", "--no-show-raw-insn", exe), nil
		},
		// objdump -d: "  88732c:\tvfmadd231sd %xmm1,%xmm3,%xmm2"
		regexp.MustCompile(`^\s+([0-9a-f]+):\s+vfn?m(add|sub)(132|213|231)s[sd]\s`)},
}

// TestNoFusedMultiplyAdd builds vembed for arm64 and for amd64 at
// GOAMD64=v3, whose compilers fuse x·y + z into one rounding unless an
// explicit conversion of the product forbids it (float32(x·y) + z, the
// Go spec), and decodes both: every scalar fused multiply-add in the
// module's Go code must come from a line that calls math.FMA (fma32, which
// mirrors the assembly's VFMADD on purpose). Any other would round
// differently than amd64's default build does, and Arithmetic's names,
// which are the same for every build, would then name two arithmetics.
func TestNoFusedMultiplyAdd(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-builds the vembed binary twice")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build with")
	}
	for _, b := range fusedBuilds {
		t.Run(strings.NewReplacer("/", "-", " ", "-").Replace(b.name), func(t *testing.T) {
			exe := filepath.Join(t.TempDir(), "vembed")
			build := exec.Command(goBin, "build", "-o", exe, "github.com/vembed/vembed/cmd/vembed")
			build.Dir = ".."
			build.Env = append(append(os.Environ(), "CGO_ENABLED=0"), b.env...)
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build for %s: %v\n%s", b.name, err, out)
			}
			cmd, err := b.tool(goBin, exe)
			if err != nil {
				t.Skip(err)
			}
			dis, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: %v", cmd.Path, err)
			}
			for _, site := range fusedSites(t, exe, dis, b.fused) {
				t.Errorf("%s: a fused multiply-add: convert the product (float32(a*b) + c) so that every build rounds it", site)
			}
		})
	}
}

// fusedSites returns the source lines (file:line, function) of the
// instructions pattern matches in dis, the disassembly of exe, that are in
// the module's functions and not on a line calling math.FMA.
func fusedSites(t *testing.T, exe string, dis []byte, pattern *regexp.Regexp) []string {
	t.Helper()
	tab, _ := objdump.Symbols(t, exe)
	sources := map[string][]string{}
	seen := map[string]bool{}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(dis))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m := pattern.FindSubmatch(sc.Bytes())
		if m == nil {
			continue
		}
		pc, err := strconv.ParseUint(string(m[1]), 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		file, line, fn := tab.PCToLine(pc)
		if fn == nil || !strings.HasPrefix(fn.Name, "github.com/vembed/vembed/") {
			continue
		}
		src, ok := sources[file]
		if !ok {
			if b, err := os.ReadFile(file); err == nil {
				src = strings.Split(string(b), "\n")
			}
			sources[file] = src
		}
		if line >= 1 && line <= len(src) && strings.Contains(src[line-1], "math.FMA(") {
			continue
		}
		site := fmt.Sprintf("%s:%d (%s)", file, line, fn.Name)
		if !seen[site] {
			seen[site] = true
			out = append(out, site)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
