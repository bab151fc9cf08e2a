package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"

	"github.com/vembed/vembed/visionsvc"
)

// remoteEncoder sends images to encoder replicas (Config.EncoderURLs)
// instead of this engine's vision tower.
type remoteEncoder struct {
	c *visionsvc.Client
	// held: images a replica already held (keys sent, no pixels);
	// encoded: images sent with their patches and encoded there;
	// local: images encoded here after the replicas failed.
	held, encoded, local atomic.Int64
}

// needEncoding lists, one per content key, the images of the inputs
// without a result that still have to be encoded, and every image of each
// key.
func needEncoding(pr *prepared) (ims []*imageItem, same map[Key][]*imageItem) {
	same = map[Key][]*imageItem{}
	for _, it := range pr.inputs {
		if pr.results[it.index] != nil {
			continue
		}
		for _, im := range it.images {
			if im.patches == nil || im.enc.Rows != nil {
				continue
			}
			if same[im.content] == nil {
				ims = append(ims, im)
			}
			same[im.content] = append(same[im.content], im)
		}
	}
	return ims, same
}

// storedEncodings looks the stores up for the images still to encode,
// once the embedding cache has had its say: a stored result makes its
// images' encoder outputs unnecessary.
func (e *Engine) storedEncodings(ctx context.Context, pr *prepared) {
	if len(e.stores) == 0 {
		return
	}
	ims, same := needEncoding(pr)
	for _, im := range ims {
		enc, ok := e.lookupEncoded(ctx, im.content)
		if !ok {
			continue
		}
		for k, x := range same[im.content] {
			if k > 0 {
				// Each image holds a pin of its own.
				e.encoderCache.get(x.content, true)
			}
			x.enc, x.cached, x.patches = enc, true, nil
			e.freeBudget(x)
		}
	}
}

// remoteEncode runs on the caller's goroutine after the cache lookups:
// the images a request still needs go to the encoder replicas, content
// keys first and patches only for the keys no replica holds. Whatever the
// replicas do not answer (down, slow, overloaded) stays with its patches
// for this engine's own vision tower, so a request never fails because of
// them.
func (p *processor) remoteEncode(ctx context.Context, pr *prepared) {
	e := p.e
	ims, same := needEncoding(pr)
	if len(ims) == 0 {
		return
	}
	items := make([]visionsvc.Item, len(ims))
	for i, im := range ims {
		items[i] = visionsvc.Item{Key: im.content, GridT: im.grid[0], GridH: im.grid[1], GridW: im.grid[2], Patches: im.patches}
	}
	take := func(res []visionsvc.Result, n *atomic.Int64) (missing []int) {
		for i, r := range res {
			if !r.Found || len(r.Image.Rows) == 0 {
				missing = append(missing, i)
				continue
			}
			n.Add(1)
			for _, im := range same[ims[i].content] {
				e.encodedFromService(im, r.Image)
			}
		}
		return missing
	}
	res, err := e.remote.c.Lookup(ctx, e.visionID, items)
	if err != nil {
		e.remote.local.Add(int64(len(ims)))
		if !errors.Is(err, visionsvc.ErrUnavailable) && ctx.Err() == nil {
			slog.Debug("vision encoder replicas: key lookup failed", "err", err)
		}
		return
	}
	missing := take(res, &e.remote.held)
	if len(missing) == 0 {
		return
	}
	left := make([]visionsvc.Item, len(missing))
	for k, i := range missing {
		left[k] = items[i]
	}
	kept := ims
	ims = make([]*imageItem, len(missing))
	for k, i := range missing {
		ims[k] = kept[i]
	}
	res, err = e.remote.c.Encode(ctx, e.visionID, left)
	failed := take(res, &e.remote.encoded)
	e.remote.local.Add(int64(len(failed)))
	if err != nil && ctx.Err() == nil {
		slog.Debug("vision encoder replicas: encoding failed", "err", err, "images_encoded_here", len(failed))
	}
}

func (r *remoteEncoder) stats() CacheStats {
	return CacheStats{Name: "encoder-service", Hits: r.held.Load(), Misses: r.encoded.Load(), Errors: r.local.Load()}
}
