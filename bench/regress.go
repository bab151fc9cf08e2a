package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vembed/vembed/synth"
)

// Regress, "vembed bench regress", measures what a user of "vembed embed" waits for:
// one image, and eight texts in one call, each as a whole process (loading
// the model, reading and hashing files, preprocessing, both towers,
// exit), run alternately with a baseline binary, the previous release, on
// the same files. A regression outside the model's passes (start-up work
// such as hashing every weight file, which once added 3.5 CPU-seconds to
// a 14-second image) shows here while "bench --model", which measures
// requests inside an engine that is already loaded, cannot see it.
// Process CPU time is the figure it judges: on a shared machine the wall
// clock says more about the neighbours than about the binary.

// regressCase is one measured command line.
type regressCase struct {
	name string
	args []string
}

// RegressFigure is one case's medians, this binary's and the baseline's.
type RegressFigure struct {
	Case      string  `json:"case"`
	WallS     float64 `json:"wall_s"`
	CPUS      float64 `json:"cpu_s"`
	BaseWallS float64 `json:"base_wall_s,omitempty"`
	BaseCPUS  float64 `json:"base_cpu_s,omitempty"`
	CPURatio  float64 `json:"cpu_ratio,omitempty"`  // this binary over the baseline
	WallRatio float64 `json:"wall_ratio,omitempty"` // this binary over the baseline
	// MinCosine is the least cosine between this binary's vectors and the
	// baseline binary's for the same inputs (--against only): both must
	// compute the same model, so it is close to 1.
	MinCosine float64 `json:"min_cosine,omitempty"`
}

// RegressReport is the JSON line "bench regress" prints last; a baseline
// file holds one.
type RegressReport struct {
	Binary   string          `json:"binary"`
	Baseline string          `json:"baseline,omitempty"`
	Rounds   int             `json:"rounds"`
	Cases    []RegressFigure `json:"cases"`
}

// RegressConfig is one run of the regression benchmark.
type RegressConfig struct {
	// LM and MMProj are the model files the measured commands embed with.
	LM, MMProj string
	// Binary is the vembed binary measured (empty: this process's).
	// Exactly one of Against (the baseline binary, run alternately with
	// it on the same files) and Baseline (a file ending with the JSON
	// line of an earlier run) is the baseline.
	Binary, Against, Baseline string
	// Rounds runs of each case per binary; medians are reported.
	Rounds int
	// Texts texts of TextTokens prompt tokens each (the task prefix
	// included) in one call; Image the side of the square image.
	Texts, TextTokens, Image int
	// MaxRatio is the CPU time over the baseline's above which a case is a
	// regression.
	MaxRatio float64
	// Log receives progress lines.
	Log io.Writer
}

// Check reports the first setting of c out of range.
func (c *RegressConfig) Check() error {
	switch {
	case c.LM == "" || c.MMProj == "":
		return errors.New("--lm and --mmproj are required")
	case (c.Against == "") == (c.Baseline == ""):
		return errors.New("give one of --against and --baseline")
	case c.Rounds < 1 || c.Rounds > 100:
		return fmt.Errorf("--rounds %d out of range 1..100", c.Rounds)
	case c.Texts < 1 || c.Texts > 256:
		return fmt.Errorf("--texts %d out of range 1..256", c.Texts)
	case c.Image < 28 || c.Image > 4096:
		return fmt.Errorf("--image %d out of range 28..4096", c.Image)
	case !(c.MaxRatio >= 1):
		return fmt.Errorf("--max-ratio %v: want at least 1", c.MaxRatio)
	}
	return nil
}

// Regress measures the cases of c. It returns the report and, when a
// case takes more than c.MaxRatio times the baseline's CPU time, the
// regressions found, one sentence each.
func Regress(c RegressConfig) (rep *RegressReport, regressions []string, err error) {
	if err := c.Check(); err != nil {
		return nil, nil, err
	}
	log := logTo(c.Log)
	if c.Binary == "" {
		if c.Binary, err = os.Executable(); err != nil {
			return nil, nil, fmt.Errorf("bench regress: %w", err)
		}
	}
	var base *RegressReport
	if c.Baseline != "" {
		if base, err = readRegressReport(c.Baseline); err != nil {
			return nil, nil, err
		}
	}
	dir, err := os.MkdirTemp("", "vembed-regress-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	cases, err := regressCases(dir, c.LM, c.MMProj, c.Image, c.Texts, c.TextTokens)
	if err != nil {
		return nil, nil, err
	}

	rep = &RegressReport{Binary: c.Binary, Baseline: c.Against + c.Baseline, Rounds: c.Rounds}
	for _, tc := range cases {
		var wall, cpu, bWall, bCPU []float64
		minCos := math.Inf(1)
		for r := 0; r < c.Rounds; r++ {
			// Alternate which binary goes first, so that neither always
			// follows the other's page cache and frequency state.
			order := []int{0, 1}
			if r%2 == 1 {
				order = []int{1, 0}
			}
			var outs [2][]byte
			for _, who := range order {
				bin, name := c.Binary, "this binary"
				if who == 1 {
					bin, name = c.Against, "baseline"
				}
				if bin == "" {
					continue
				}
				res, err := runEmbedProcess(bin, tc.args)
				if err != nil {
					return nil, nil, fmt.Errorf("bench regress: %s: %s: %w", tc.name, bin, err)
				}
				outs[who] = res.stdout
				if who == 0 {
					wall, cpu = append(wall, res.wall), append(cpu, res.cpu)
				} else {
					bWall, bCPU = append(bWall, res.wall), append(bCPU, res.cpu)
				}
				fmt.Fprintf(log, "vembed bench regress: %s, %s: %.2fs wall, %.2f CPU-s\n", tc.name, name, res.wall, res.cpu)
			}
			if outs[1] != nil {
				cs, err := vectorCosines(outs[0], outs[1])
				if err != nil {
					return nil, nil, fmt.Errorf("bench regress: %s: comparing the vectors: %w", tc.name, err)
				}
				minCos = min(minCos, cs)
			}
		}
		f := RegressFigure{Case: tc.name, WallS: round4(median(wall)), CPUS: round4(median(cpu))}
		if base != nil {
			for _, b := range base.Cases {
				if b.Case == tc.name {
					bWall, bCPU = []float64{b.WallS}, []float64{b.CPUS}
				}
			}
			if bCPU == nil {
				return nil, nil, fmt.Errorf("bench regress: %s holds no figure for %s", c.Baseline, tc.name)
			}
		} else {
			f.MinCosine = minCos
		}
		f.BaseWallS, f.BaseCPUS = round4(median(bWall)), round4(median(bCPU))
		if f.BaseCPUS > 0 && f.BaseWallS > 0 {
			f.CPURatio = round4(median(cpu) / median(bCPU))
			f.WallRatio = round4(median(wall) / median(bWall))
			if f.CPURatio > c.MaxRatio {
				regressions = append(regressions, fmt.Sprintf("%s takes %.2fx the baseline's CPU time (limit %.2fx)", tc.name, f.CPURatio, c.MaxRatio))
			}
		}
		rep.Cases = append(rep.Cases, f)
	}
	return rep, regressions, nil
}

// regressCases writes the inputs into dir and returns the two command
// lines: one image, and the texts in one call.
func regressCases(dir, lm, mmproj string, size, texts, textTokens int) ([]regressCase, error) {
	img, err := synth.Photo(size, 0, "jpeg")
	if err != nil {
		return nil, err
	}
	imgPath := filepath.Join(dir, fmt.Sprintf("photo_%d.jpg", size))
	if err := os.WriteFile(imgPath, img, 0o644); err != nil {
		return nil, err
	}
	pr, err := lmPrompter(lm)
	if err != nil {
		return nil, fmt.Errorf("bench regress: %w", err)
	}
	model := []string{"embed", "--model", lm, "--mmproj", mmproj}
	textArgs := append([]string(nil), model...)
	for i := 0; i < texts; i++ {
		s, err := textOfTokens(pr, textTokens, uint64(i))
		if err != nil {
			return nil, fmt.Errorf("bench regress: %w", err)
		}
		textArgs = append(textArgs, "--text", s)
	}
	return []regressCase{
		{fmt.Sprintf("image_%d", size), append(append([]string(nil), model...), "--image", imgPath)},
		{fmt.Sprintf("text_%dx%d", texts, textTokens), textArgs},
	}, nil
}

// embedRun is one measured process.
type embedRun struct {
	wall, cpu float64
	stdout    []byte
}

// runEmbedProcess runs bin with args and measures its wall clock and the
// CPU time the process used.
func runEmbedProcess(bin string, args []string) (embedRun, error) {
	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start).Seconds()
	if err != nil {
		msg := strings.TrimSpace(errb.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		return embedRun{}, fmt.Errorf("%w: %s", err, msg)
	}
	st := cmd.ProcessState
	return embedRun{wall: wall, cpu: (st.UserTime() + st.SystemTime()).Seconds(), stdout: out.Bytes()}, nil
}

// vectorCosines returns the least cosine between the vectors two embed
// outputs print (one line of space-separated values per input).
func vectorCosines(a, b []byte) (float64, error) {
	va, err := parseVectors(a)
	if err != nil {
		return 0, err
	}
	vb, err := parseVectors(b)
	if err != nil {
		return 0, err
	}
	if len(va) != len(vb) || len(va) == 0 {
		return 0, fmt.Errorf("%d vectors against %d", len(va), len(vb))
	}
	least := math.Inf(1)
	for i := range va {
		if len(va[i]) != len(vb[i]) {
			return 0, fmt.Errorf("vector %d: %d values against %d", i, len(va[i]), len(vb[i]))
		}
		var dot, na, nb float64
		for k := range va[i] {
			// A product is converted before it is added to (float64(a*b) + c): that
			// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
			// every build computes the same bits (kernels.TestNoFusedMultiplyAdd).
			dot += float64(va[i][k] * vb[i][k])
			na += float64(va[i][k] * va[i][k])
			nb += float64(vb[i][k] * vb[i][k])
		}
		if na == 0 || nb == 0 {
			return 0, fmt.Errorf("vector %d is zero", i)
		}
		least = min(least, dot/math.Sqrt(na*nb))
	}
	return least, nil
}

func parseVectors(out []byte) ([][]float64, error) {
	var vs [][]float64
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 1<<16), 1<<26)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		v := make([]float64, len(fields))
		for i, f := range fields {
			x, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", len(vs)+1, err)
			}
			v[i] = x
		}
		vs = append(vs, v)
	}
	return vs, sc.Err()
}

// readRegressReport reads the last JSON line of an earlier run's output.
func readRegressReport(path string) (*RegressReport, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--baseline: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var rep RegressReport
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil {
		return nil, fmt.Errorf("--baseline %s: its last line is not the JSON line of bench regress: %w", path, err)
	}
	if len(rep.Cases) == 0 {
		return nil, errors.New("--baseline " + path + ": no cases")
	}
	return &rep, nil
}
