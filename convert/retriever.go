package convert

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/vembed/vembed/qwenlayout"
	"github.com/vembed/vembed/recipe"
)

// The Qwen3-VL multi-vector retrievers (ColQwen3, Ops-ColQwen3,
// nemotron-colembed-vl-v2) convert as a Qwen3-VL checkpoint (qwen3vl LM,
// qwen3vl_merger mmproj) plus:
//   - their prefixes stripped ("vlm.model." for ColQwen3, none for Ops,
//     and the names their loaders also accept: "model.", the optional
//     "model." before Ops' head, ColQwen3's head saved as
//     custom_text_proj), and any tensor outside the backbone and the head
//     refused: a prefix the converter does not know would otherwise leave
//     weights behind;
//   - no LM head (they never use it), token_embd standing for it;
//   - the head as the mvproj side-car: ColQwen3's embedding_proj_layer
//     whole, Ops-ColQwen3's custom_text_proj cut to its first dims rows
//     (config.json's dims, else all), which is slicing its output;
//   - nemotron's decoder mode in the LM (bidirectional, no final norm,
//     rows from the hidden states: layoutInfo.keys), and its processor's
//     prompt bounds (nemotronTruncation);
//   - the image budget: ColQwen3's processor caps images at 1280 visual
//     tokens (1,310,720 pixels) whatever preprocessor_config.json says;
//     the others keep its size.shortest_edge / longest_edge.
//
// Every check runs before anything is written.

// Image budgets of the retrievers' processors.
const (
	retrieverMinPixels = 65536       // Qwen3-VL's size.shortest_edge
	colqwen3MaxPixels  = 1280 * 1024 // ColQwen3Processor(max_num_visual_tokens=1280), 32² pixels a token
)

// retrieverChecks checks a retriever checkpoint and sets its image budget
// and tied LM in base; it returns the rows of the head the mvproj gets (0
// without a head).
func retrieverChecks(dir string, src *source, cfg *hfConfig, base *qwenlayout.Config, layout string, info layoutInfo, log *slog.Logger) (int, error) {
	var odd []string
	for _, n := range src.names() {
		if !strings.HasPrefix(n, "model.") && !strings.HasPrefix(n, "visual.") && !strings.HasPrefix(n, "lm_head.") &&
			(info.head == "" || !strings.HasPrefix(n, info.head+".")) {
			odd = append(odd, src.real[n])
		}
	}
	if len(odd) > 0 {
		return 0, fmt.Errorf("convert: %s: %d tensors under a prefix the %s layout does not have (%s): %s; the backbone is read under %s",
			dir, len(odd), layout, strings.Join(odd[:min(3, len(odd))], ", "), retrieverNaming(layout), "model.language_model. / model.visual. (also language_model., visual., vlm.model.language_model., vlm.model.visual.)")
	}
	base.LM.Untied = false // lm_head is unused: token_embd stands for it

	rows := 0
	if info.head != "" {
		w, ok := src.tensor(info.head + ".weight")
		if !ok {
			return 0, fmt.Errorf("convert: %s: a %s checkpoint without its head %s.weight", dir, layout, info.head)
		}
		b, ok := src.tensor(info.head + ".bias")
		H := int64(base.LM.Hidden)
		switch {
		case len(w.Shape) != 2 || w.Shape[1] != H || w.Shape[0] <= 0:
			return 0, fmt.Errorf("convert: %s: the head %s.weight is %v, which does not fit the LM's width %d (want [rows, %d])", dir, info.head, w.Shape, H, H)
		case !ok || len(b.Shape) != 1 || b.Shape[0] != w.Shape[0]:
			return 0, fmt.Errorf("convert: %s: the head's %s.bias is missing or not [%d]", dir, info.head, w.Shape[0])
		}
		rows = int(w.Shape[0])
		switch layout {
		case qwenlayout.LayoutColQwen3:
			if cfg.EmbedDim != 0 && cfg.EmbedDim != rows {
				return 0, fmt.Errorf("convert: %s: config.json's embed_dim %d differs from the head's %d rows", dir, cfg.EmbedDim, rows)
			}
		case qwenlayout.LayoutOpsColQwen3:
			switch {
			case cfg.Dims < 0 || cfg.Dims > rows:
				return 0, fmt.Errorf("convert: %s: config.json's dims %d is beyond the head's %d rows (custom_text_proj %v)", dir, cfg.Dims, rows, w.Shape)
			case cfg.Dims > 0:
				rows = cfg.Dims
			}
		}
	}

	lo, hi, err := retrieverBudget(dir, log)
	if err != nil {
		return 0, err
	}
	if layout == qwenlayout.LayoutColQwen3 {
		if hi != colqwen3MaxPixels && hi != 0 {
			log.Info("ColQwen3's processor caps images at 1280 visual tokens whatever preprocessor_config.json says", "longest_edge", hi, "max_pixels", colqwen3MaxPixels)
		}
		hi = colqwen3MaxPixels
	}
	if hi == 0 {
		lo, hi = retrieverMinPixels, colqwen3MaxPixels
		log.Warn("no image budget in preprocessor_config.json: the mmproj gets 65536..1310720 pixels")
	}
	if lo == 0 && layout == qwenlayout.LayoutColQwen3 {
		lo = retrieverMinPixels
	}
	base.Vision.MinPixels, base.Vision.MaxPixels = min(lo, hi), hi
	return rows, nil
}

// retrieverNaming says how a layout names its backbone.
func retrieverNaming(layout string) string {
	switch layout {
	case qwenlayout.LayoutColQwen3:
		return "vlm.model.language_model., vlm.model.visual., embedding_proj_layer"
	case qwenlayout.LayoutOpsColQwen3:
		return "language_model., visual., custom_text_proj"
	}
	return "model.language_model., model.visual."
}

// retrieverBudget reads preprocessor_config.json's budget (min_pixels /
// max_pixels, else size.shortest_edge / longest_edge); 0, 0 when there is
// none. A budget above qwenlayout.MaxImagePixels (stock Qwen3-VL states
// 16,777,216) is lowered to it with a warning.
func retrieverBudget(dir string, log *slog.Logger) (lo, hi int, err error) {
	path := filepath.Join(dir, "preprocessor_config.json")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, nil
	} else if err != nil {
		return 0, 0, fmt.Errorf("convert: %w", err)
	}
	lo, hi, lowered, err := parseRetrieverBudget(b)
	if err != nil {
		return 0, 0, fmt.Errorf("convert: %s: %w; fix the file", path, err)
	}
	if lowered {
		log.Warn("the image budget is above what vembed preprocesses: lowered", "file", path, "to", qwenlayout.MaxImagePixels)
	}
	return lo, hi, nil
}

// parseRetrieverBudget reads a preprocessor_config.json's budget (see
// retrieverBudget); lowered reports a maximum lowered to MaxImagePixels.
func parseRetrieverBudget(b []byte) (lo, hi int, lowered bool, err error) {
	l, h, err := statedBudget(b)
	if err != nil {
		return 0, 0, false, err
	}
	whole := func(v *float64) bool { return v != nil && *v == math.Trunc(*v) && *v >= 0 && *v < 1<<40 }
	switch {
	case l == nil && h == nil:
		return 0, 0, false, nil
	case !whole(l) || !whole(h) || *h < 32*32 || *l > *h:
		return 0, 0, false, fmt.Errorf("image budget %v..%v: want whole pixel counts, the least at most the greatest, the greatest from %d (one 32x32 token)", deref(l), deref(h), 32*32)
	}
	lo, hi = int(*l), int(*h)
	if hi > qwenlayout.MaxImagePixels {
		hi, lowered = qwenlayout.MaxImagePixels, true
		lo = min(lo, hi)
	}
	return lo, hi, lowered, nil
}

func deref(v *float64) any {
	if v == nil {
		return "none"
	}
	return *v
}

// nemotronTruncation reads the prompt bounds of nemotron's
// processor_config.json (q_max_length, p_max_length,
// reserve_tokens_for_images; a field it lacks keeps the processor's
// default) as the LM keys the recipe reads; none without the file (the
// recipe then applies the defaults). Prefixes other than the published
// "query:" / "passage:", which the recipe's prompts hold, are warnings.
func nemotronTruncation(dir string, log *slog.Logger) (kvs []qwenlayout.KV, warnings []string, err error) {
	path := filepath.Join(dir, "processor_config.json")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	} else if err != nil {
		return nil, nil, fmt.Errorf("convert: %w", err)
	}
	t, warnings, err := parseNemotronProcessor(b)
	if err != nil {
		return nil, nil, fmt.Errorf("convert: %s: %w; fix the file", path, err)
	}
	for _, w := range warnings {
		log.Warn(w, "file", path)
	}
	return []qwenlayout.KV{
		{Key: recipe.QueryMaxTokensKey, Value: uint32(t.QueryMax)},
		{Key: recipe.PassageMaxTokensKey, Value: uint32(t.PassageMax)},
		{Key: recipe.ImageReserveTokensKey, Value: uint32(t.ImageReserve)},
	}, warnings, nil
}

// parseNemotronProcessor reads a processor_config.json's prompt bounds
// over the processor's defaults, and says which prompt prefixes differ
// from the recipe's.
func parseNemotronProcessor(b []byte) (recipe.NemotronTruncation, []string, error) {
	var pc struct {
		Q       *float64 `json:"q_max_length"`
		P       *float64 `json:"p_max_length"`
		Reserve *float64 `json:"reserve_tokens_for_images"`
		QPrefix *string  `json:"query_prefix"`
		PPrefix *string  `json:"passage_prefix"`
	}
	if err := json.Unmarshal(b, &pc); err != nil {
		return recipe.NemotronTruncation{}, nil, err
	}
	t := recipe.DefaultNemotronTruncation
	for _, f := range []struct {
		name string
		v    *float64
		dst  *int
	}{{"q_max_length", pc.Q, &t.QueryMax}, {"p_max_length", pc.P, &t.PassageMax}, {"reserve_tokens_for_images", pc.Reserve, &t.ImageReserve}} {
		if f.v == nil {
			continue
		}
		if *f.v != math.Trunc(*f.v) || *f.v < 0 || *f.v > 1<<30 {
			return t, nil, fmt.Errorf("%s %v: want a whole number of tokens", f.name, *f.v)
		}
		*f.dst = int(*f.v)
	}
	if err := t.Check(); err != nil {
		return t, nil, fmt.Errorf("q_max_length %d, p_max_length %d, reserve_tokens_for_images %d: %w", t.QueryMax, t.PassageMax, t.ImageReserve, err)
	}
	var warnings []string
	for _, p := range []struct {
		name string
		v    *string
		want string
	}{{"query_prefix", pc.QPrefix, "query:"}, {"passage_prefix", pc.PPrefix, "passage:"}} {
		if p.v != nil && *p.v != p.want {
			warnings = append(warnings, fmt.Sprintf("processor_config.json's %s is %q; the %s recipe's prompts use the published %q", p.name, *p.v, recipe.NemotronName, p.want))
		}
	}
	return t, warnings, nil
}
