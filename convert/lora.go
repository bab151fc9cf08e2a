// Package convert turns Hugging Face checkpoints into GGUF files. This file
// holds the merge of PEFT LoRA adapters into base weights, which
// jina-embeddings-v4 (one adapter per task), ColQwen and the Qwen3-VL
// embedders need before their weights can be written: W' = W + s·B·A with
// s = lora_alpha / r (or lora_alpha / sqrt(r) with use_rslora), computed
// in float64 one matrix at a time and rounded once when written.
package convert

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
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
}

// Scaling is the factor of B·A.
func (c *AdapterConfig) Scaling() float64 {
	if c.UseRSLoRA {
		return c.Alpha / math.Sqrt(float64(c.R))
	}
	return c.Alpha / float64(c.R)
}

// Adapter is a LoRA adapter: its configuration and weights.
type Adapter struct {
	Config AdapterConfig
	File   *safetensors.File
	Dir    string
}

// OpenAdapter reads dir/adapter_config.json and dir/adapter_model.safetensors
// and checks what the merge relies on: a LoRA adapter, r > 0, no DoRA or
// fan-in-fan-out layout (not supported), and A/B pairs of matching rank.
func OpenAdapter(dir string) (*Adapter, error) {
	b, err := os.ReadFile(filepath.Join(dir, "adapter_config.json"))
	if err != nil {
		return nil, fmt.Errorf("convert: adapter: %w", err)
	}
	var c AdapterConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("convert: %s/adapter_config.json: %w", dir, err)
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
	}
	switch t := c.TargetModules.(type) {
	case string:
		if c.targetsPattern, err = regexp.Compile("^(?:" + t + ")$"); err != nil {
			return nil, fmt.Errorf("convert: %s: target_modules: %w", dir, err)
		}
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
	a := &Adapter{Config: c, File: f, Dir: dir}
	for _, name := range f.Names() {
		base, ok := strings.CutSuffix(name, ".lora_A.weight")
		if !ok {
			continue
		}
		ta := f.Tensors[name]
		tb, ok := f.Tensors[base+".lora_B.weight"]
		if !ok {
			f.Close()
			return nil, fmt.Errorf("convert: %s: %s has no lora_B", dir, name)
		}
		if len(ta.Shape) != 2 || len(tb.Shape) != 2 || ta.Shape[0] != int64(c.R) || tb.Shape[1] != int64(c.R) {
			f.Close()
			return nil, fmt.Errorf("convert: %s: %s is %v and its lora_B %v, which do not match r = %d", dir, base, ta.Shape, tb.Shape, c.R)
		}
	}
	return a, nil
}

// targetsModule reports whether the adapter names a module (its last dotted
// names, as PEFT matches them).
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

// loraName finds the adapter tensors of a base weight "X.weight": PEFT
// stores them as "base_model.model.X.lora_A.weight" (some exports drop
// the prefix, or carry an adapter name: "X.lora_A.default.weight").
func (a *Adapter) loraName(weight string) (aName, bName string, ok bool) {
	module, isWeight := strings.CutSuffix(weight, ".weight")
	if !isWeight {
		return "", "", false
	}
	for _, prefix := range []string{"base_model.model.", ""} {
		for _, infix := range []string{"", ".default"} {
			an, bn := prefix+module+".lora_A"+infix+".weight", prefix+module+".lora_B"+infix+".weight"
			if _, ok := a.File.Tensors[an]; ok {
				if _, ok := a.File.Tensors[bn]; ok {
					return an, bn, true
				}
			}
		}
	}
	return "", "", false
}

// Touches reports whether Merge would change (or refuse) a weight of the
// given rows: the adapter holds tensors for it or targets its module.
func (a *Adapter) Touches(name string, rows int) bool {
	if _, _, ok := a.loraName(name); ok {
		return true
	}
	return a.Config.targetsModule(strings.TrimSuffix(name, ".weight")) && strings.HasSuffix(name, ".weight") && rows > 1
}

// Merge returns base weight name (rows × cols, row-major float64) with the
// adapter's update added, or w itself when the adapter does not touch it.
// It fails when the adapter targets the module but its tensors are
// missing or their shapes do not fit the weight.
func (a *Adapter) Merge(name string, w []float64, rows, cols int) ([]float64, error) {
	an, bn, ok := a.loraName(name)
	if !ok {
		module := strings.TrimSuffix(name, ".weight")
		if a.Config.targetsModule(module) && strings.HasSuffix(name, ".weight") && rows > 1 {
			return nil, fmt.Errorf("convert: %s: the adapter targets %s but holds no lora_A/lora_B for it", a.Dir, module)
		}
		return w, nil
	}
	A, err := a.File.Float64(an)
	if err != nil {
		return nil, err
	}
	B, err := a.File.Float64(bn)
	if err != nil {
		return nil, err
	}
	r := a.Config.R
	if len(A) != r*cols || len(B) != rows*r {
		return nil, fmt.Errorf("convert: %s: adapter of %s is [%d×%d]·[%d×%d], the weight is %d×%d", a.Dir, name, len(B)/max(r, 1), r, r, len(A)/max(r, 1), rows, cols)
	}
	s := a.Config.Scaling()
	out := make([]float64, len(w))
	copy(out, w)
	for i := range rows {
		bi := B[i*r : (i+1)*r]
		o := out[i*cols : (i+1)*cols]
		for k, bik := range bi {
			if bik == 0 {
				continue
			}
			f := s * bik
			ak := A[k*cols : (k+1)*cols]
			for j := range o {
				o[j] += f * ak[j]
			}
		}
	}
	return out, nil
}

// Close closes the adapter's weights.
func (a *Adapter) Close() error { return a.File.Close() }
