package convert

import (
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/vembed/vembed/safetensors"
)

// AdapterConfig is the part of PEFT's adapter_config.json the merge uses.
type AdapterConfig struct {
	R              int      `json:"r"`
	Alpha          float64  `json:"lora_alpha"`
	TargetModules  any      `json:"target_modules"` // a list of names, or a regular expression
	UseRSLoRA      bool     `json:"use_rslora"`
	UseDoRA        bool     `json:"use_dora"`
	FanInFanOut    bool     `json:"fan_in_fan_out"`
	PeftType       string   `json:"peft_type"`
	ModulesToSave  []string `json:"modules_to_save"`
	BaseModelName  string   `json:"base_model_name_or_path"`
	targets        []string
	targetsPattern *regexp.Regexp
	// towerExcluded: the pattern kept the vision tower out with a
	// lookahead RE2 lacks, so it says nothing of the tower's modules.
	towerExcluded bool
}

// Scaling is the factor of B·A: lora_alpha / r, or lora_alpha / sqrt(r)
// with rsLoRA.
func (c *AdapterConfig) Scaling() float64 {
	if c.UseRSLoRA {
		return c.Alpha / math.Sqrt(float64(c.R))
	}
	return c.Alpha / float64(c.R)
}

// loraPair names one module's A and B tensors in the adapter file.
type loraPair struct{ a, b string }

// Adapter is a PEFT LoRA adapter (one task's, when the file holds
// several): its configuration and the A/B pair of each module, keyed by
// the module's canonical name.
type Adapter struct {
	Config AdapterConfig
	Dir    string
	// Task is the task whose pairs are merged ("" for a single-task
	// adapter).
	Task  string
	file  *safetensors.File
	pairs map[string]loraPair
	// newNames: the adapter names its modules as transformers 4.52+ does
	// (model.language_model.*, model.visual.*), which target_modules was
	// matched against.
	newNames bool

	// the last module's factors, widened once for all its row blocks
	cached string
	A, B   []float64
}

// loraTensor splits an adapter tensor name
// "[base_model.model.]MODULE.lora_A[.INFIX].weight" into its canonical
// module, factor ("A" or "B") and infix (a task name; PEFT's adapter name
// "default" reads as none).
var loraTensor = regexp.MustCompile(`^(.+?)\.lora_(A|B)((?:\.[^.]+)*)\.weight$`)

func parseLoRAName(name string) (module, factor, infix string, ok bool) {
	m := loraTensor.FindStringSubmatch(name)
	if m == nil {
		return "", "", "", false
	}
	var parts []string // "default.retrieval" when the adapter name was kept
	for _, p := range strings.Split(strings.TrimPrefix(m[3], "."), ".") {
		if p != "" && p != "default" {
			parts = append(parts, p)
		}
	}
	return canonical(m[1]), m[2], strings.Join(parts, "."), true
}

// AdapterTasks lists the tasks of a multi-task adapter (the infixes of
// "lora_A.<task>.weight", jina-embeddings-v4's form), sorted; none for a
// single-task adapter.
func AdapterTasks(dir string) ([]string, error) {
	f, err := safetensors.Open(filepath.Join(dir, "adapter_model.safetensors"))
	if err != nil {
		return nil, fmt.Errorf("convert: adapter: %w", err)
	}
	defer f.Close()
	return adapterTasks(f), nil
}

func adapterTasks(f *safetensors.File) []string {
	var tasks []string
	for name := range f.Tensors {
		if _, _, infix, ok := parseLoRAName(name); ok && infix != "" && !slices.Contains(tasks, infix) {
			tasks = append(tasks, infix)
		}
	}
	slices.Sort(tasks)
	return tasks
}

// OpenAdapter reads dir/adapter_config.json and dir/adapter_model.safetensors
// and checks what the merge relies on: a LoRA adapter, r > 0, no DoRA or
// fan-in-fan-out layout (not supported), A/B pairs of rank r. task picks a
// task's pairs in a multi-task adapter and must be "" for a single-task one.
func OpenAdapter(dir, task string) (*Adapter, error) {
	var c AdapterConfig
	if err := readJSON(dir, "adapter_config.json", &c); err != nil {
		return nil, fmt.Errorf("adapter: %w", err)
	}
	switch {
	case c.PeftType != "" && c.PeftType != "LORA":
		return nil, fmt.Errorf("convert: %s: peft_type %q (only LORA adapters can be merged)", dir, c.PeftType)
	case c.R <= 0:
		return nil, fmt.Errorf("convert: %s: r = %d", dir, c.R)
	case c.UseDoRA:
		return nil, fmt.Errorf("convert: %s: DoRA adapters are not supported", dir)
	case c.FanInFanOut:
		return nil, fmt.Errorf("convert: %s: fan_in_fan_out adapters are not supported", dir)
	case math.IsNaN(c.Alpha) || math.IsInf(c.Alpha, 0):
		return nil, fmt.Errorf("convert: %s: lora_alpha %v", dir, c.Alpha)
	}
	var err error
	switch t := c.TargetModules.(type) {
	case string:
		c.targetsPattern, c.towerExcluded = targetsRegexp(t)
	case []any:
		for _, m := range t {
			s, ok := m.(string)
			if !ok {
				return nil, fmt.Errorf("convert: %s: target_modules holds %v", dir, m)
			}
			c.targets = append(c.targets, s)
		}
	}
	f, err := safetensors.Open(filepath.Join(dir, "adapter_model.safetensors"))
	if err != nil {
		return nil, fmt.Errorf("convert: adapter: %w", err)
	}
	a := &Adapter{Config: c, Dir: dir, Task: task, file: f, pairs: map[string]loraPair{}}
	fail := func(format string, args ...any) (*Adapter, error) {
		f.Close()
		return nil, fmt.Errorf("convert: %s: "+format, append([]any{dir}, args...)...)
	}
	tasks := adapterTasks(f)
	switch {
	case task == "" && len(tasks) > 0:
		return fail("the adapter holds the tasks %v: choose one", tasks)
	case task != "" && !slices.Contains(tasks, task):
		return fail("no task %q in the adapter (it holds %v)", task, tasks)
	}
	for _, name := range f.Names() {
		module, factor, infix, ok := parseLoRAName(name)
		if !ok || infix != task {
			continue
		}
		raw := strings.TrimPrefix(name, "base_model.model.")
		a.newNames = a.newNames || strings.HasPrefix(raw, "model.language_model.") || strings.HasPrefix(raw, "model.visual.")
		p := a.pairs[module]
		if factor == "A" {
			p.a = name
		} else {
			p.b = name
		}
		a.pairs[module] = p
	}
	for module, p := range a.pairs {
		if p.a == "" || p.b == "" {
			return fail("%s has lora_A or lora_B but not both", module)
		}
		ta, tb := f.Tensors[p.a], f.Tensors[p.b]
		if len(ta.Shape) != 2 || len(tb.Shape) != 2 || ta.Shape[0] != int64(c.R) || tb.Shape[1] != int64(c.R) {
			return fail("%s's lora_A is %v and its lora_B %v, which do not match r = %d", module, ta.Shape, tb.Shape, c.R)
		}
	}
	if len(a.pairs) == 0 {
		return fail("no LoRA tensors (lora_A/lora_B) for task %q", task)
	}
	return a, nil
}

// targetsRegexp compiles a target_modules pattern (PEFT matches it in
// full). Python's patterns may hold what RE2 lacks: colpali-engine's
// "(?!.*visual)" keeps the vision tower out; it is dropped, and
// towerExcluded says the pattern then tells nothing of the tower. A
// pattern that still does not compile leaves the targets unchecked (nil),
// the A/B pairs alone saying what is merged.
func targetsRegexp(t string) (re *regexp.Regexp, towerExcluded bool) {
	for i, p := range []string{t, strings.ReplaceAll(t, "(?!.*visual)", "")} {
		if re, err := regexp.Compile("^(?:" + p + ")$"); err == nil {
			return re, i == 1
		}
	}
	return nil, false
}

// targetsModule reports whether adapter_config.json names a module (its
// name as the adapter was trained on the model: by its last dotted names
// as PEFT matches a list, or as a full match of its pattern).
func (c *AdapterConfig) targetsModule(module string) bool {
	if c.targetsPattern != nil {
		return c.targetsPattern.MatchString(module)
	}
	for _, t := range c.targets {
		if module == t || strings.HasSuffix(module, "."+t) {
			return true
		}
	}
	return false
}

// trainedName is a canonical module name as the model the adapter was
// trained on named it: under transformers 4.52+ the decoder is
// model.language_model.* and the tower model.visual.*, which is what
// target_modules was matched against (jina-embeddings-v4's pattern wants
// "model" in the name, so it reaches the tower's MLPs only then).
func (a *Adapter) trainedName(module string) string {
	if a.newNames {
		if rest, ok := strings.CutPrefix(module, "model."); ok {
			return "model.language_model." + rest
		}
		if rest, ok := strings.CutPrefix(module, "visual."); ok {
			return "model.visual." + rest
		}
	}
	return module
}

// AdaptsTower reports whether the adapter (this task's pairs) holds LoRA
// pairs for the vision tower, which then go into the mmproj.
func (a *Adapter) AdaptsTower() bool {
	for module := range a.pairs {
		if strings.HasPrefix(module, "visual.") {
			return true
		}
	}
	return false
}

// check holds the adapter against the checkpoint before anything is
// written: every pair's module is a matrix the checkpoint has that may be
// merged (mergeable), of the shape the pair needs, and every mergeable
// matrix adapter_config.json targets (by the adapter's own module names)
// has a pair. The tower's matrices are held to target_modules only when
// the adapter has pairs on the tower: one without any ran its tower as
// the base's, whatever a broad pattern says.
func (a *Adapter) check(src *source, mergeable func(canon string) bool) error {
	for module := range a.pairs {
		if !mergeable(module + ".weight") {
			return fmt.Errorf("convert: %s: the adapter holds lora_A/lora_B for %s, which is no decoder, vision tower or head matrix of the checkpoint", a.Dir, module)
		}
		t, ok := src.tensor(module + ".weight")
		if !ok || len(t.Shape) != 2 {
			return fmt.Errorf("convert: %s: the adapter adapts %s, which the checkpoint lacks (or is not a matrix)", a.Dir, module)
		}
		ta, tb := a.file.Tensors[a.pairs[module].a], a.file.Tensors[a.pairs[module].b]
		if ta.Shape[1] != t.Shape[1] || tb.Shape[0] != t.Shape[0] {
			return fmt.Errorf("convert: %s: adapter of %s is %v·%v, the weight is %v", a.Dir, module, tb.Shape, ta.Shape, t.Shape)
		}
	}
	tower := a.AdaptsTower() && !a.Config.towerExcluded
	for _, name := range src.names() {
		module, ok := strings.CutSuffix(name, ".weight")
		t, _ := src.tensor(name)
		if !ok || len(t.Shape) != 2 || !mergeable(name) || strings.HasPrefix(module, "visual.") && !tower || !a.Config.targetsModule(a.trainedName(module)) {
			continue
		}
		if _, ok := a.pairs[module]; !ok {
			return fmt.Errorf("convert: %s: adapter_config.json targets %s but the adapter holds no lora_A/lora_B for it", a.Dir, a.trainedName(module))
		}
	}
	return nil
}

// touches reports whether the adapter changes a weight (canonical name).
func (a *Adapter) touches(weight string) bool {
	module, ok := strings.CutSuffix(weight, ".weight")
	_, has := a.pairs[module]
	return ok && has
}

// mergeRows adds the update s·B·A to rows [r0, r0+n) of a weight (its
// canonical name) of cols columns, held row-major in w, in float64.
func (a *Adapter) mergeRows(weight string, w []float64, r0, cols int) error {
	module, _ := strings.CutSuffix(weight, ".weight")
	p, ok := a.pairs[module]
	if !ok {
		return nil
	}
	if a.cached != module {
		var err error
		if a.A, err = a.file.Float64(p.a); err != nil {
			return err
		}
		if a.B, err = a.file.Float64(p.b); err != nil {
			return err
		}
		a.cached = module
	}
	r, s := a.Config.R, a.Config.Scaling()
	n := len(w) / cols
	if len(a.A) != r*cols || len(a.B) < (r0+n)*r {
		return fmt.Errorf("convert: %s: adapter of %s does not fit rows [%d, %d) of %d columns", a.Dir, weight, r0, r0+n, cols)
	}
	for i := range n {
		bi := a.B[(r0+i)*r : (r0+i+1)*r]
		o := w[i*cols : (i+1)*cols]
		for k, bik := range bi {
			if bik == 0 {
				continue
			}
			f := s * bik
			ak := a.A[k*cols : (k+1)*cols]
			for j := range o {
				// A product is converted before it is added to (float64(a*b) + c): that
				// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
				// every build computes the same bits (kernels.TestNoFusedMultiplyAdd).
				o[j] += float64(f * ak[j])
			}
		}
	}
	return nil
}

// Close closes the adapter's weights.
func (a *Adapter) Close() error { return a.file.Close() }
