package engine

import (
	"context"
	"fmt"
	"time"
	"unsafe"

	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/tokenizer"
	"github.com/vembed/vembed/visionsvc"
)

// VisionID is the identity of the loaded vision tower (a digest of its
// file): replicas exchange encoder outputs only when theirs agree.
func (e *Engine) VisionID() visionsvc.Key { return e.visionID }

// contentKey is an image's encoder cache key: the vision tower, the grid
// and every patch value, so that no other input can reach its entry.
func (e *Engine) contentKey(grid [3]int, patches []float32) Key {
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(patches))), len(patches)*4)
	return newHasher("image-content").key(e.visionID).int(grid[0]).int(grid[1]).int(grid[2]).bytes(raw).sum()
}

// EncodeImages is the vision encoder as a service for other replicas
// (vembed serve --role encoder): each item's encoder output from the
// caches when one holds it (memory, then the shared cache), else, when the
// item carries its patches, from the vision tower, batched by the
// scheduler with every other image waiting, as an embedding request's
// images are. An item without patches that no cache holds comes back not
// found. Patches must hash to the item's key, so a caller cannot plant
// rows under another image's key.
func (e *Engine) EncodeImages(ctx context.Context, vision visionsvc.Key, items []visionsvc.Item) ([]visionsvc.Result, error) {
	if !e.mi.HasVision {
		return nil, invalid("images", CodeUnsupported, "this model has no vision encoder")
	}
	if vision != e.visionID {
		return nil, ErrOtherVision
	}
	if err := e.enter(); err != nil {
		return nil, err
	}
	defer e.wg.Done()
	out := make([]visionsvc.Result, len(items))
	var todo []*imageItem
	var where []int
	for i, it := range items {
		k := Key(it.Key)
		if enc, ok := e.lookupEncoded(ctx, k); ok {
			e.encoderCache.unpin(k)
			out[i] = visionsvc.Result{Found: true, Image: enc}
			continue
		}
		if it.Patches == nil {
			continue
		}
		im, err := e.remoteImage(i, it)
		if err != nil {
			return nil, err
		}
		todo = append(todo, im)
		where = append(where, i)
	}
	if len(todo) == 0 {
		return out, nil
	}
	pr := &prepared{inputs: []*input{{prompt: &tokenizer.Prompt{}, images: todo}}, results: make([]*result, 1)}
	for _, im := range todo {
		if err := e.proc.budget.Acquire(ctx, im.cost); err != nil {
			pr.release(e)
			return nil, err
		}
		im.budgetHeld = im.cost
		e.inflight.Add(im.cost)
	}
	r := &request{ctx: ctx, pr: pr, done: make(chan error, 1), arrived: time.Now()}
	r.seqs = []*seqJob{{req: r, in: pr.inputs[0], encodeOnly: true}}
	r.left = 1
	if err := e.schedule(ctx, r); err != nil {
		return nil, err
	}
	for k, im := range todo {
		out[where[k]] = visionsvc.Result{Found: true, Image: im.enc}
	}
	return out, nil
}

// ErrOtherVision is returned by EncodeImages when the caller's vision
// tower is not this engine's (HTTP 409): its rows would not be the ones
// the caller's model expects.
var ErrOtherVision = fmt.Errorf("engine: the caller's vision tower differs from this encoder's (same mmproj file needed)")

// remoteImage checks an image another replica sent and makes it an item
// for the scheduler.
func (e *Engine) remoteImage(i int, it visionsvc.Item) (*imageItem, error) {
	param := fmt.Sprintf("images[%d]", i)
	m := e.mi.MergeSize
	if m < 1 {
		m = 1
	}
	if it.GridH%m != 0 || it.GridW%m != 0 {
		return nil, invalid(param, CodeInvalid, "grid %dx%d is not a multiple of the merge size %d", it.GridH, it.GridW, m)
	}
	patches := it.GridT * it.GridH * it.GridW
	if px := int64(patches) * int64(e.mi.PatchSize*e.mi.PatchSize); px > int64(e.img.MaxPixels) {
		return nil, invalid(param, CodeImageTooLarge, "grid %dx%dx%d is %d pixels, over the model's %d", it.GridT, it.GridH, it.GridW, px, e.img.MaxPixels)
	}
	if want := patches * e.patchVals; len(it.Patches) != want {
		return nil, invalid(param, CodeInvalid, "%d patch values for a %dx%dx%d grid (want %d)", len(it.Patches), it.GridT, it.GridH, it.GridW, want)
	}
	grid := [3]int{it.GridT, it.GridH, it.GridW}
	if e.contentKey(grid, it.Patches) != Key(it.Key) {
		return nil, invalid(param, CodeInvalid, "the patches do not hash to the image's content key")
	}
	cost := int64(len(it.Patches)) * 4
	if cost > e.cfg.ImageBudgetBytes {
		return nil, invalid(param, CodeImageTooLarge, "%d MiB of patches, over the server's image budget of %d MiB", cost>>20, e.cfg.ImageBudgetBytes>>20)
	}
	return &imageItem{param: param, content: Key(it.Key), grid: grid, tokens: patches / (m * m), cost: cost, patches: it.Patches}, nil
}

// encodedFromService is what an image got from an encoder replica: kept
// in memory (the replica shared it already) and handed to the image.
func (e *Engine) encodedFromService(im *imageItem, enc model.EncodedImage) {
	e.encoderCache.put(im.content, enc, enc.Bytes(), false)
	im.enc = enc
	im.patches = nil
	e.freeBudget(im)
}

// freeBudget gives back the image budget an image holds.
func (e *Engine) freeBudget(im *imageItem) {
	if im.budgetHeld > 0 {
		e.proc.budget.Release(im.budgetHeld)
		e.inflight.Add(-im.budgetHeld)
		im.budgetHeld = 0
	}
}
