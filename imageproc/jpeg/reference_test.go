package jpeg

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// This file compares the decoder with libjpeg-turbo through Pillow.
//
// TestTestdata runs always: testdata/*.jpg were encoded by libjpeg-turbo's
// cjpeg from images made by synthImage, and testdata/*.rgb are Pillow 9.4's
// Image.open(f).convert("RGB") of them (libjpeg-turbo 2.1.5).
//
// Two development-only modes need cjpeg and a Python with Pillow:
//
//	VEMBED_JPEG_PYTHON=/usr/bin/python3 VEMBED_JPEG_REGEN=1 go test -run TestTestdata
//	    rewrites testdata from the case list below;
//	VEMBED_JPEG_PYTHON=/usr/bin/python3 go test -run TestPillowRandom
//	    compares random sizes and encoder settings on the fly.

// testCase is one generated JPEG: a synthetic image of the given size
// encoded by cjpeg with args (or by Pillow when pil is set, for CMYK).
type testCase struct {
	Name string   `json:"name"`
	W    int      `json:"width"`
	H    int      `json:"height"`
	Args []string `json:"cjpeg_args,omitempty"`
	// Scans is a cjpeg -scans script, written to a file.
	Scans string `json:"scans,omitempty"`
	// PIL encodes with Pillow in this mode instead of cjpeg ("CMYK").
	PIL string `json:"pil_mode,omitempty"`
	// Static files are kept as committed (made with a small libjpeg
	// program, as cjpeg cannot write them); regeneration only refreshes
	// their Pillow pixels.
	Static string `json:"static,omitempty"`
}

const progressiveSA = `0,1,2: 0-0, 0, 1;
0: 1-5, 0, 2;
2: 1-63, 0, 1;
1: 1-63, 0, 1;
0: 6-63, 0, 2;
0: 1-63, 2, 1;
0,1,2: 0-0, 1, 0;
2: 1-63, 1, 0;
1: 1-63, 1, 0;
0: 1-63, 1, 0;
`

const spectralOnly = `0: 0-0, 0, 0;
1: 0-0, 0, 0;
2: 0-0, 0, 0;
0: 1-2, 0, 0;
0: 3-20, 0, 0;
0: 21-63, 0, 0;
1: 1-63, 0, 0;
2: 1-63, 0, 0;
`

// incompleteScripts leave some of the first nine AC coefficients
// imprecise or missing after the last scan.
var incompleteScripts = []string{
	"0,1,2: 0-0, 0, 0;\n",
	"0,1,2: 0-0, 0, 1;\n",
	"0,1,2: 0-0, 0, 1;\n0: 1-9, 0, 2;\n0,1,2: 0-0, 1, 0;\n0: 1-9, 2, 1;\n",
	"0: 0-0, 0, 0;\n1: 0-0, 0, 0;\n2: 0-0, 0, 0;\n1: 1-3, 0, 0;\n0: 1-63, 0, 1;\n",
	"0,1,2: 0-0, 0, 0;\n2: 1-63, 0, 3;\n0: 6-63, 0, 0;\n",
}

var testCases = []testCase{
	{Name: "s420_q90", W: 37, H: 29, Args: []string{"-quality", "90", "-sample", "2x2"}},
	{Name: "s422_q85", W: 37, H: 29, Args: []string{"-quality", "85", "-sample", "2x1"}},
	{Name: "s440_q85", W: 37, H: 29, Args: []string{"-quality", "85", "-sample", "1x2"}},
	{Name: "s444_q95", W: 37, H: 29, Args: []string{"-quality", "95", "-sample", "1x1"}},
	{Name: "s411_q80", W: 45, H: 21, Args: []string{"-quality", "80", "-sample", "4x1"}},
	{Name: "s410_q80", W: 45, H: 21, Args: []string{"-quality", "80", "-sample", "4x2"}},
	{Name: "s14_q80", W: 23, H: 41, Args: []string{"-quality", "80", "-sample", "1x4"}},
	{Name: "s31_q80", W: 29, H: 19, Args: []string{"-quality", "80", "-sample", "3x1"}},
	{Name: "chroma_full_luma_half", W: 33, H: 27, Args: []string{"-sample", "1x1,2x2,1x1"}},
	{Name: "mixed_2x2_1x2_2x1", W: 35, H: 31, Args: []string{"-sample", "2x2,1x2,2x1"}},
	{Name: "s420_q100", W: 37, H: 29, Args: []string{"-quality", "100", "-sample", "2x2"}},
	{Name: "s420_q5", W: 37, H: 29, Args: []string{"-quality", "5", "-sample", "2x2"}},
	{Name: "s420_1x1", W: 1, H: 1, Args: []string{"-sample", "2x2"}},
	{Name: "s420_2x2", W: 2, H: 2, Args: []string{"-sample", "2x2"}},
	{Name: "s420_3x3", W: 3, H: 3, Args: []string{"-sample", "2x2"}},
	{Name: "s420_5x3", W: 5, H: 3, Args: []string{"-sample", "2x2"}},
	{Name: "s422_4x1", W: 4, H: 1, Args: []string{"-sample", "2x1"}},
	{Name: "s420_17x1", W: 17, H: 1, Args: []string{"-sample", "2x2"}},
	{Name: "s420_1x17", W: 1, H: 17, Args: []string{"-sample", "2x2"}},
	{Name: "gray", W: 37, H: 29, Args: []string{"-grayscale"}},
	{Name: "gray_prog", W: 37, H: 29, Args: []string{"-grayscale", "-progressive"}},
	{Name: "rgb", W: 37, H: 29, Args: []string{"-rgb"}},
	{Name: "rgb_420", W: 37, H: 29, Args: []string{"-rgb", "-sample", "2x2,1x1,1x1"}},
	{Name: "optimize_420", W: 37, H: 29, Args: []string{"-optimize", "-sample", "2x2"}},
	{Name: "prog_420", W: 61, H: 43, Args: []string{"-progressive", "-sample", "2x2"}},
	{Name: "prog_444_q100", W: 37, H: 29, Args: []string{"-progressive", "-quality", "100", "-sample", "1x1"}},
	{Name: "prog_422_restart", W: 61, H: 43, Args: []string{"-progressive", "-sample", "2x1", "-restart", "1"}},
	{Name: "prog_sa_script", W: 53, H: 37, Args: []string{"-sample", "2x2"}, Scans: progressiveSA},
	{Name: "prog_spectral_script", W: 53, H: 37, Args: []string{"-sample", "2x1"}, Scans: spectralOnly},
	{Name: "restart_rows_420", W: 61, H: 43, Args: []string{"-restart", "1", "-sample", "2x2"}},
	{Name: "restart_blocks_420", W: 61, H: 43, Args: []string{"-restart", "3B", "-sample", "2x2"}},
	{Name: "restart_blocks_gray", W: 37, H: 29, Args: []string{"-grayscale", "-restart", "2B"}},
	{Name: "multiscan_sequential", W: 37, H: 29, Args: []string{"-sample", "2x2"}, Scans: "0;\n2;\n1;\n"},
	{Name: "multiscan_sequential_2", W: 37, H: 29, Args: []string{"-sample", "2x1"}, Scans: "0;\n1 2;\n"},
	{Name: "big_420", W: 131, H: 77, Args: []string{"-quality", "92", "-sample", "2x2"}},
	{Name: "prog_dc_only", W: 45, H: 37, Args: []string{"-sample", "2x2"}, Scans: "0,1,2: 0-0, 0, 0;\n"},
	{Name: "prog_dc_only_sa_narrow", W: 13, H: 50, Args: []string{"-sample", "2x2"}, Scans: "0,1,2: 0-0, 0, 1;\n"},
	{Name: "prog_partial_ac", W: 45, H: 37, Args: []string{"-sample", "2x1"}, Scans: "0,1,2: 0-0, 0, 0;\n0: 1-5, 0, 1;\n"},
	{Name: "prog_ac_al2", W: 45, H: 37, Args: []string{"-sample", "1x1"}, Scans: "0,1,2: 0-0, 0, 0;\n0: 1-63, 0, 2;\n1: 1-63, 0, 1;\n2: 1-63, 0, 0;\n"},
	{Name: "cmyk_pil", W: 37, H: 29, PIL: "CMYK"},
	{Name: "ycck_2211", W: 37, H: 29, Static: "libjpeg: in_color_space CMYK, jpeg_set_colorspace(JCS_YCCK), quality 88, sampling 2x2,1x1,1x1,2x2"},
}

// synthImage is a deterministic photo-like test picture: smooth gradients,
// a sinusoidal texture, sharp saturated edges and a little noise, so every
// coefficient position, the clamps and chroma edges are exercised.
func synthImage(w, h int, seed uint64) []uint8 {
	rng := rand.New(rand.NewPCG(seed, 7))
	pix := make([]uint8, w*h*3)
	for y := range h {
		for x := range w {
			for c := range 3 {
				fx, fy := float64(x), float64(y)
				v := 128 + 90*math.Sin(fx*0.21*float64(c+1)+fy*0.07)*math.Cos(fy*0.13-float64(c))
				v += 60 * (fx/float64(max(w, 1)) - 0.5) * float64(c-1)
				if (x/7+y/5)%4 == c {
					v = 255 - v/3
				}
				if x > w/2 && y > h/2 && c == 0 {
					v = 255
				}
				v += rng.NormFloat64() * 6
				pix[(y*w+x)*3+c] = uint8(min(max(math.Round(v), 0), 255))
			}
		}
	}
	return pix
}

func writePPM(path string, w, h int, pix []uint8) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "P6\n%d %d\n255\n", w, h)
	b.Write(pix)
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// pillowDecode runs Pillow's Image.open(f).convert("RGB") on a file.
func pillowDecode(python, path string) ([]uint8, error) {
	out, err := exec.Command(python, "-c",
		"import sys; from PIL import Image; sys.stdout.buffer.write(Image.open(sys.argv[1]).convert('RGB').tobytes())",
		path).Output()
	if err != nil {
		return nil, fmt.Errorf("pillow on %s: %w", path, err)
	}
	return out, nil
}

// encodeCase produces the JPEG of a test case with cjpeg (or Pillow).
func encodeCase(python, dir string, tc testCase, seed uint64) ([]byte, error) {
	ppm := filepath.Join(dir, tc.Name+".ppm")
	if err := writePPM(ppm, tc.W, tc.H, synthImage(tc.W, tc.H, seed)); err != nil {
		return nil, err
	}
	out := filepath.Join(dir, tc.Name+".jpg")
	var cmd *exec.Cmd
	if tc.PIL != "" {
		cmd = exec.Command(python, "-c",
			"import sys; from PIL import Image; Image.open(sys.argv[1]).convert(sys.argv[3]).save(sys.argv[2], quality=90)",
			ppm, out, tc.PIL)
	} else {
		args := append([]string{}, tc.Args...)
		if tc.Scans != "" {
			sf := filepath.Join(dir, tc.Name+".scans")
			if err := os.WriteFile(sf, []byte(tc.Scans), 0o644); err != nil {
				return nil, err
			}
			args = append(args, "-scans", sf)
		}
		args = append(args, "-outfile", out, ppm)
		cmd = exec.Command("cjpeg", args...)
	}
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("encoding %s: %v: %s", tc.Name, err, msg)
	}
	return os.ReadFile(out)
}

func referencePython(t *testing.T) string {
	py := os.Getenv("VEMBED_JPEG_PYTHON")
	if py == "" {
		t.Skip("set VEMBED_JPEG_PYTHON to a Python with Pillow (and put cjpeg on PATH) to compare with libjpeg-turbo directly")
	}
	if _, err := exec.LookPath("cjpeg"); err != nil {
		t.Skip("cjpeg (libjpeg-turbo-progs) not found")
	}
	return py
}

func TestTestdata(t *testing.T) {
	if os.Getenv("VEMBED_JPEG_REGEN") != "" {
		regenerate(t, referencePython(t))
	}
	checkTestdata(t)
}

// checkTestdata requires every case in testdata to decode to its reference
// pixels exactly.
func checkTestdata(t *testing.T) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []testCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < len(testCases) {
		t.Fatalf("testdata has %d cases, the list %d: regenerate", len(cases), len(testCases))
	}
	for _, tc := range cases {
		data, err := os.ReadFile(filepath.Join("testdata", tc.Name+".jpg"))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("testdata", tc.Name+".rgb"))
		if err != nil {
			t.Fatal(err)
		}
		checkExact(t, tc.Name, data, want, tc.W, tc.H)
	}
}

func regenerate(t *testing.T, python string) {
	tmp := t.TempDir()
	for i, tc := range testCases {
		if tc.Static != "" {
			want, err := pillowDecode(python, filepath.Join("testdata", tc.Name+".jpg"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join("testdata", tc.Name+".rgb"), want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := encodeCase(python, tmp, tc, uint64(i))
		if err != nil {
			t.Fatal(err)
		}
		want, err := pillowDecode(python, filepath.Join(tmp, tc.Name+".jpg"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("testdata", tc.Name+".jpg"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("testdata", tc.Name+".rgb"), want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	js, err := json.MarshalIndent(testCases, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", "cases.json"), append(js, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPillowRandom encodes random sizes with random cjpeg settings and
// requires bit-exact agreement with Pillow on each.
func TestPillowRandom(t *testing.T) {
	python := referencePython(t)
	n := 60
	if s := os.Getenv("VEMBED_JPEG_RANDOM_N"); s != "" {
		fmt.Sscan(s, &n)
	}
	rng := rand.New(rand.NewPCG(uint64(len(os.Args)), 99))
	samplings := []string{"1x1", "2x1", "1x2", "2x2", "4x1", "1x4", "4x2", "2x4", "3x1", "1x3", "3x3",
		"2x2,1x1,2x2", "1x2,2x1,1x1", "2x1,1x2,1x1", "4x4,2x2,1x1", "1x1,2x2,2x2", "4x1,2x1,1x1"}
	tmp := t.TempDir()
	compared := 0
	defer func() { t.Logf("%d random files compared", compared) }()
	for i := range n {
		tc := testCase{Name: fmt.Sprintf("r%d", i), W: 1 + rng.IntN(90), H: 1 + rng.IntN(70)}
		tc.Args = []string{"-quality", fmt.Sprint(1 + rng.IntN(100))}
		gray := false
		switch rng.IntN(6) {
		case 0:
			gray = true
			tc.Args = append(tc.Args, "-grayscale")
		case 1:
			tc.Args = append(tc.Args, "-rgb")
		}
		tc.Args = append(tc.Args, "-sample", samplings[rng.IntN(len(samplings))])
		switch rng.IntN(4) {
		case 0, 1:
			tc.Args = append(tc.Args, "-progressive")
		case 2:
			// Incomplete progressions exercise block smoothing.
			if gray {
				tc.Scans = [...]string{"0: 0-0, 0, 0;\n", "0: 0-0, 0, 1;\n0: 1-5, 0, 1;\n"}[rng.IntN(2)]
			} else {
				tc.Scans = incompleteScripts[rng.IntN(len(incompleteScripts))]
			}
		}
		if rng.IntN(3) == 0 {
			tc.Args = append(tc.Args, "-restart", fmt.Sprintf("%dB", 1+rng.IntN(5)))
		}
		if rng.IntN(3) == 0 {
			tc.Args = append(tc.Args, "-optimize")
		}
		data, err := encodeCase(python, tmp, tc, uint64(1000+i))
		if err != nil {
			if strings.Contains(err.Error(), "Sampling factors too large") || strings.Contains(err.Error(), "MCU") {
				continue
			}
			t.Fatal(err)
		}
		want, err := pillowDecode(python, filepath.Join(tmp, tc.Name+".jpg"))
		if err != nil {
			t.Fatal(err)
		}
		img, err := Decode(data, 1<<24)
		if err != nil {
			t.Errorf("%s %v %dx%d: %v", tc.Name, tc.Args, tc.W, tc.H, err)
			continue
		}
		compared++
		if maxd, mean, nd := residual(img.Pix, want); nd != 0 {
			t.Errorf("%s %v %dx%d: max %d mean %.4f, %d bytes differ", tc.Name, tc.Args, tc.W, tc.H, maxd, mean, nd)
		}
	}
}

// TestGoRootImages decodes the JPEGs of Go's own image/testdata (written by
// several encoders: 4:1:0, 4:1:1, 4:2:2, 4:4:0, 2x2-1x2-1x2 sampling,
// progressive with separate DC scans, restarts, CMYK, RGB, gray) and
// compares a SHA-256 of the pixels with Pillow 9.4's, recorded in
// testdata/goroot_pillow.json together with the input's hash. Files that
// are absent or changed in the installed Go are skipped.
func TestGoRootImages(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "goroot_pillow.json"))
	if err != nil {
		t.Fatal(err)
	}
	var files []struct {
		File      string `json:"file"`
		SHA256    string `json:"sha256"`
		W         int    `json:"width"`
		H         int    `json:"height"`
		PixSHA256 string `json:"pillow_rgb_sha256"`
	}
	if err := json.Unmarshal(raw, &files); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(runtime.GOROOT(), "src", "image", "testdata")
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f.File))
		if err != nil || fmt.Sprintf("%x", sha256.Sum256(data)) != f.SHA256 {
			continue
		}
		img, err := Decode(data, 1<<24)
		if err != nil {
			t.Errorf("%s: %v", f.File, err)
			continue
		}
		if img.Width != f.W || img.Height != f.H || fmt.Sprintf("%x", sha256.Sum256(img.Pix)) != f.PixSHA256 {
			t.Errorf("%s: pixels differ from Pillow's", f.File)
		}
		checked++
	}
	if checked == 0 {
		t.Skip("Go's image/testdata JPEGs not found or changed")
	}
	t.Logf("%d of %d files match Pillow", checked, len(files))
}
