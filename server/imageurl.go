package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/vembed/vembed/engine"
)

// parseInputs is ParseInputs with image URLs fetched under the handler's
// policy (Options.ImageFetcher; without one they are refused): every image
// field of every route goes through it. The inputs are parsed once to find
// the URLs (at most Options.MaxImageURLs), which are then fetched
// concurrently, their bytes charged to the request's share of
// MaxInflightBytes, and parsed again with the downloaded bytes; requests
// without URLs are parsed once.
func (h *Handler) parseInputs(ctx context.Context, raw json.RawMessage) ([]engine.Input, error) {
	if h.opts.ImageFetcher == nil {
		return ParseInputs(raw, DecodeImageString)
	}
	var urls []string
	seen := map[string]bool{}
	placeholder := []byte{0}
	ins, err := ParseInputs(raw, func(s string) ([]byte, error) {
		s = strings.TrimSpace(s)
		if !isURL(s) {
			return DecodeImageString(s)
		}
		if !seen[s] {
			seen[s] = true
			urls = append(urls, s)
		}
		return placeholder, nil
	})
	if err != nil || len(urls) == 0 {
		return ins, err
	}
	if len(urls) > h.opts.MaxImageURLs {
		return nil, &engine.InputError{Param: "input", Code: engine.CodeInvalid,
			Err: fmt.Errorf("%d image URLs, over the limit of %d per request", len(urls), h.opts.MaxImageURLs)}
	}
	got := make(map[string][]byte, len(urls))
	errs := make(map[string]error)
	var mu sync.Mutex
	var wg sync.WaitGroup
	hd := holdOf(ctx)
	for _, u := range urls {
		wg.Go(func() {
			data, err := h.opts.ImageFetcher.Fetch(ctx, u)
			if err == nil {
				// Downloaded bytes are held until the request is answered.
				err = hd.take(int64(len(data)))
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs[u] = err
			}
			got[u] = data
		})
	}
	wg.Wait()
	return ParseInputs(raw, func(s string) ([]byte, error) {
		s = strings.TrimSpace(s)
		if !isURL(s) {
			return DecodeImageString(s)
		}
		if err := errs[s]; err != nil {
			return nil, fmt.Errorf("image URL: %w", err)
		}
		return got[s], nil
	})
}
