package engine

import (
	"fmt"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/model/qwen35"
	"github.com/vembed/vembed/model/qwen3vl"
	"github.com/vembed/vembed/model/qwenvl"
	"github.com/vembed/vembed/recipe"
)

// modelLoaders opens a model family's LM (and optional mmproj) by the LM's
// general.architecture.
var modelLoaders = map[string]func(lm, mmproj string) (model.Model, error){
	"qwen2vl": func(lm, mm string) (model.Model, error) { return qwenvl.Load(lm, mm) },
	"qwen3vl": func(lm, mm string) (model.Model, error) { return qwen3vl.Load(lm, mm) },
	"qwen35":  func(lm, mm string) (model.Model, error) { return qwen35.Load(lm, mm) },
}

// openModel loads the model pair with the loader of the LM's architecture.
func openModel(lm, mmproj string) (model.Model, error) {
	f, err := gguf.Open(lm)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	arch, err := f.String("general.architecture")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", lm, err)
	}
	if mmproj != "" {
		// A task adapter that adapts the tower has its own mmproj: the
		// pair must be converted together (the recipe's rule).
		mf, err := gguf.Open(mmproj)
		if err != nil {
			return nil, err
		}
		err = recipe.CheckVisionAdapter(f, mf)
		mf.Close()
		if err != nil {
			return nil, fmt.Errorf("%s with %s: %w", lm, mmproj, err)
		}
	}
	load, ok := modelLoaders[arch]
	if !ok {
		return nil, fmt.Errorf("%s: architecture %q is not supported (qwen2vl, qwen3vl, qwen35)", lm, arch)
	}
	return load(lm, mmproj)
}
