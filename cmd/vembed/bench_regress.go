package main

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
	"text/tabwriter"
	"time"
)

// vembed bench regress measures what a user of "vembed embed" waits for:
// one image, and eight texts in one call, each as a whole process (loading
// the model, reading and hashing files, preprocessing, both towers,
// exit), run alternately with a baseline binary, the previous release, on
// the same files. A regression outside the model's passes (start-up work
// such as hashing every weight file, which once added 3.5 CPU-seconds to
// a 14-second image) shows here while "bench --model", which measures
// requests inside an engine that is already loaded, cannot see it.
// Process CPU time is the figure it judges: on a shared machine the wall
// clock says more about the neighbours than about the binary.

const benchRegressUsage = `--lm LM.gguf --mmproj MMPROJ.gguf (--against OLD_VEMBED | --baseline FIGURES.json)
       [--rounds 3] [--texts 8] [--text-tokens 137] [--image 448] [--max-ratio 1.05] [--binary VEMBED]`

// regressCase is one measured command line.
type regressCase struct {
	name string
	args []string
}

// regressFigure is one case's medians, this binary's and the baseline's.
type regressFigure struct {
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

// regressReport is the JSON line "bench regress" prints last; --baseline
// reads one back.
type regressReport struct {
	Binary   string          `json:"binary"`
	Baseline string          `json:"baseline,omitempty"`
	Rounds   int             `json:"rounds"`
	Cases    []regressFigure `json:"cases"`
}

func runBenchRegress(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench regress", benchRegressUsage, stderr)
	lm := fs.String("lm", "", "language-model `GGUF`")
	mmproj := fs.String("mmproj", "", "vision-tower `GGUF`")
	against := fs.String("against", "", "baseline `binary` (the previous release's vembed), run alternately with this one")
	baseline := fs.String("baseline", "", "`file` holding the JSON line of an earlier run on this machine (e.g. of the previous release), to compare with instead of running a baseline binary")
	rounds := fs.Int("rounds", 3, "alternated runs of each case per binary; medians are reported")
	texts := fs.Int("texts", 8, "texts of the text case, in one embed call")
	textTokens := fs.Int("text-tokens", 137, "prompt `tokens` of each text, the task prefix included")
	size := fs.Int("image", 448, "side in pixels of the square image of the image case")
	maxRatio := fs.Float64("max-ratio", 1.05, "fail when a case takes more than this times the baseline's CPU time")
	binary := fs.String("binary", "", "the vembed `binary` to measure (default: this one)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usageError(fs, stderr, "unexpected argument %q", pos[0])
	case *lm == "" || *mmproj == "":
		return usageError(fs, stderr, "--lm and --mmproj are required")
	case (*against == "") == (*baseline == ""):
		return usageError(fs, stderr, "give one of --against and --baseline")
	case *rounds < 1 || *rounds > 100:
		return usageError(fs, stderr, "--rounds %d out of range 1..100", *rounds)
	case *texts < 1 || *texts > 256:
		return usageError(fs, stderr, "--texts %d out of range 1..256", *texts)
	case *size < 28 || *size > 4096:
		return usageError(fs, stderr, "--image %d out of range 28..4096", *size)
	case !(*maxRatio >= 1):
		return usageError(fs, stderr, "--max-ratio %v: want at least 1", *maxRatio)
	}
	self := *binary
	if self == "" {
		if self, err = os.Executable(); err != nil {
			return fmt.Errorf("bench regress: %w", err)
		}
	}
	var base *regressReport
	if *baseline != "" {
		if base, err = readRegressReport(*baseline); err != nil {
			return err
		}
	}

	dir, err := os.MkdirTemp("", "vembed-regress-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cases, err := regressCases(dir, *lm, *mmproj, *size, *texts, *textTokens)
	if err != nil {
		return err
	}

	rep := regressReport{Binary: self, Baseline: *against, Rounds: *rounds}
	if base != nil {
		rep.Baseline = *baseline
	}
	var failed []string
	for _, c := range cases {
		var wall, cpu, bWall, bCPU []float64
		minCos := math.Inf(1)
		for r := 0; r < *rounds; r++ {
			// Alternate which binary goes first, so that neither always
			// follows the other's page cache and frequency state.
			order := []int{0, 1}
			if r%2 == 1 {
				order = []int{1, 0}
			}
			var outs [2][]byte
			for _, who := range order {
				bin, name := self, "this binary"
				if who == 1 {
					bin, name = *against, "baseline"
				}
				if bin == "" {
					continue
				}
				res, err := runEmbedProcess(bin, c.args)
				if err != nil {
					return fmt.Errorf("bench regress: %s: %s: %w", c.name, bin, err)
				}
				outs[who] = res.stdout
				if who == 0 {
					wall, cpu = append(wall, res.wall), append(cpu, res.cpu)
				} else {
					bWall, bCPU = append(bWall, res.wall), append(bCPU, res.cpu)
				}
				fmt.Fprintf(stderr, "vembed bench regress: %s, %s: %.2fs wall, %.2f CPU-s\n", c.name, name, res.wall, res.cpu)
			}
			if outs[1] != nil {
				cs, err := vectorCosines(outs[0], outs[1])
				if err != nil {
					return fmt.Errorf("bench regress: %s: comparing the vectors: %w", c.name, err)
				}
				minCos = min(minCos, cs)
			}
		}
		f := regressFigure{Case: c.name, WallS: round4(median(wall)), CPUS: round4(median(cpu))}
		if base != nil {
			for _, b := range base.Cases {
				if b.Case == c.name {
					bWall, bCPU = []float64{b.WallS}, []float64{b.CPUS}
				}
			}
			if bCPU == nil {
				return fmt.Errorf("bench regress: %s holds no figure for %s", *baseline, c.name)
			}
		} else {
			f.MinCosine = minCos
		}
		f.BaseWallS, f.BaseCPUS = round4(median(bWall)), round4(median(bCPU))
		if f.BaseCPUS > 0 && f.BaseWallS > 0 {
			f.CPURatio = round4(median(cpu) / median(bCPU))
			f.WallRatio = round4(median(wall) / median(bWall))
			if f.CPURatio > *maxRatio {
				failed = append(failed, fmt.Sprintf("%s takes %.2fx the baseline's CPU time (limit %.2fx)", c.name, f.CPURatio, *maxRatio))
			}
		}
		rep.Cases = append(rep.Cases, f)
	}

	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\twall s\tCPU s\tbaseline wall s\tbaseline CPU s\tCPU ratio\twall ratio\tmin cosine\t")
	for _, f := range rep.Cases {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.3f\t%.3f\t%.6f\t\n", f.Case, f.WallS, f.CPUS, f.BaseWallS, f.BaseCPUS, f.CPURatio, f.WallRatio, f.MinCosine)
	}
	tw.Flush()
	line, err := json.Marshal(&rep)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s\n", line)
	if len(failed) > 0 {
		return fmt.Errorf("regression: %s", strings.Join(failed, "; "))
	}
	return nil
}

// regressCases writes the inputs into dir and returns the two command
// lines: one image, and the texts in one call.
func regressCases(dir, lm, mmproj string, size, texts, textTokens int) ([]regressCase, error) {
	img, err := photoImage(size, 0, "jpeg")
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
			dot += va[i][k] * vb[i][k]
			na += va[i][k] * va[i][k]
			nb += vb[i][k] * vb[i][k]
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
func readRegressReport(path string) (*regressReport, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--baseline: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var rep regressReport
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil {
		return nil, fmt.Errorf("--baseline %s: its last line is not the JSON line of bench regress: %w", path, err)
	}
	if len(rep.Cases) == 0 {
		return nil, errors.New("--baseline " + path + ": no cases")
	}
	return &rep, nil
}
