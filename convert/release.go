package convert

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/vembed/vembed/hub"
	"github.com/vembed/vembed/qwenlayout"
)

// A release such as ColQwen2.5 is two repositories: a base checkpoint and
// a PEFT adapter whose adapter_config.json names the base in
// base_model_name_or_path. locate tells which directory is which.

// parts are the directories of one conversion.
type parts struct {
	base    string // the checkpoint (config.json, weights, tokenizer)
	adapter string // a separate adapter directory, "" for none
	// found says the base was found from the adapter's
	// base_model_name_or_path rather than given.
	found bool
}

// locate resolves dir and the options into a base and an adapter: dir is
// the base (with --adapter, or alone), or an adapter directory whose base
// is --base, or found by base_model_name_or_path beside the adapter, as a
// path, or in the Hugging Face cache.
func locate(dir string, o Options, log *slog.Logger) (parts, error) {
	isAdapter := exists(filepath.Join(dir, "adapter_config.json")) && !exists(filepath.Join(dir, "config.json"))
	switch {
	case o.Adapter != "" && isAdapter:
		return parts{}, fmt.Errorf("convert: %s is itself an adapter; --adapter goes with a base checkpoint directory", dir)
	case o.Adapter != "" && o.NoAdapter:
		return parts{}, errors.New("convert: --adapter and --no-adapter contradict each other")
	case o.Adapter != "":
		if !exists(filepath.Join(o.Adapter, "adapter_config.json")) {
			return parts{}, fmt.Errorf("convert: --adapter %s: no adapter_config.json there", o.Adapter)
		}
		return parts{base: dir, adapter: o.Adapter}, nil
	case !isAdapter:
		if o.Base != "" {
			return parts{}, fmt.Errorf("convert: --base goes with an adapter directory; %s is a checkpoint (give its adapter with --adapter)", dir)
		}
		return parts{base: dir}, nil
	case o.NoAdapter:
		return parts{}, fmt.Errorf("convert: %s is an adapter; --no-adapter converts a base alone", dir)
	}
	if o.Base != "" {
		if !exists(filepath.Join(o.Base, "config.json")) {
			return parts{}, fmt.Errorf("convert: --base %s: no config.json there", o.Base)
		}
		return parts{base: o.Base, adapter: dir}, nil
	}
	var ac struct {
		Base string `json:"base_model_name_or_path"`
	}
	if err := readJSON(dir, "adapter_config.json", &ac); err != nil {
		return parts{}, err
	}
	if ac.Base == "" {
		return parts{}, fmt.Errorf("convert: %s/adapter_config.json names no base_model_name_or_path: give the base with --base DIR", dir)
	}
	var tried []string
	try := func(d string) bool {
		tried = append(tried, d)
		return exists(filepath.Join(d, "config.json"))
	}
	for _, d := range []string{
		filepath.Join(filepath.Dir(filepath.Clean(dir)), path.Base(ac.Base)), // beside the adapter
		filepath.FromSlash(ac.Base), // a path, as given or relative to the working directory
		filepath.Join(dir, filepath.FromSlash(ac.Base)),
	} {
		if try(d) {
			log.Info("found the adapter's base", "base", d, "base_model_name_or_path", ac.Base)
			return parts{base: d, adapter: dir, found: true}, nil
		}
	}
	if strings.Count(ac.Base, "/") == 1 && !filepath.IsAbs(ac.Base) {
		if c, err := hub.NewClient(); err == nil {
			if d, err := c.CachedSnapshot(ac.Base, "main"); err == nil && try(d) {
				log.Info("found the adapter's base in the Hugging Face cache", "base", d)
				return parts{base: d, adapter: dir, found: true}, nil
			}
			tried = append(tried, c.RepoDir(ac.Base))
		}
	}
	return parts{}, fmt.Errorf("convert: the base %q of adapter %s is not found (looked in %s): fetch it with `vembed pull %s` or give its directory with --base DIR",
		ac.Base, dir, strings.Join(tried, ", "), ac.Base)
}

// pixelBudget reads min_pixels / max_pixels from preprocessor_config.json
// (or its size.shortest_edge / longest_edge) in the first directory that
// has the file; ok is false when none states a budget. Values that no
// processor could use are errors.
func pixelBudget(dirs ...string) (minPx, maxPx int, from string, err error) {
	for _, dir := range dirs {
		if dir == "" || !exists(filepath.Join(dir, "preprocessor_config.json")) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, "preprocessor_config.json"))
		if err != nil {
			return 0, 0, "", fmt.Errorf("convert: %w", err)
		}
		from = filepath.Join(dir, "preprocessor_config.json")
		minPx, maxPx, err = parsePixelBudget(b)
		if err != nil {
			return 0, 0, "", fmt.Errorf("convert: %s: %w; fix the file", from, err)
		}
		return minPx, maxPx, from, nil
	}
	return 0, 0, "", nil
}

// adapterBaseName is base_model_name_or_path of an adapter directory ("" if
// unreadable).
func adapterBaseName(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "adapter_config.json"))
	if err != nil {
		return ""
	}
	var ac struct {
		Base string `json:"base_model_name_or_path"`
	}
	json.Unmarshal(b, &ac)
	return ac.Base
}

// statedBudget reads the image budget a preprocessor_config.json states:
// min_pixels and max_pixels, else size.shortest_edge and
// size.longest_edge; nil for a bound it does not state.
func statedBudget(b []byte) (lo, hi *float64, err error) {
	var pre struct {
		Min  *float64 `json:"min_pixels"`
		Max  *float64 `json:"max_pixels"`
		Size struct {
			Min *float64 `json:"shortest_edge"`
			Max *float64 `json:"longest_edge"`
		} `json:"size"`
	}
	if err := json.Unmarshal(b, &pre); err != nil {
		return nil, nil, err
	}
	if pre.Min == nil && pre.Max == nil {
		return pre.Size.Min, pre.Size.Max, nil
	}
	return pre.Min, pre.Max, nil
}

// parsePixelBudget reads the budget of a preprocessor_config.json: 0, 0
// when it states none.
func parsePixelBudget(b []byte) (minPx, maxPx int, err error) {
	lo, hi, err := statedBudget(b)
	if err != nil {
		return 0, 0, err
	}
	whole := func(v float64) bool { return v == math.Trunc(v) && v >= 0 && v <= qwenlayout.MaxImagePixels }
	switch {
	case lo == nil && hi == nil:
		return 0, 0, nil
	case lo == nil || hi == nil:
		return 0, 0, errors.New("it gives one of min_pixels and max_pixels but not the other: give both")
	case !whole(*lo) || !whole(*hi) || *hi < 28*28:
		return 0, 0, fmt.Errorf("min_pixels %v, max_pixels %v: want whole pixel counts, max_pixels from %d (one 28x28 token) to %d", *lo, *hi, 28*28, qwenlayout.MaxImagePixels)
	case *lo > *hi:
		return 0, 0, fmt.Errorf("min_pixels %v exceeds max_pixels %v", *lo, *hi)
	}
	return int(*lo), int(*hi), nil
}
