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
// policy (Options.ImageFetcher; without one they are refused). The inputs
// are parsed once to find the URLs, which are then fetched concurrently,
// and parsed again with the downloaded bytes; requests without URLs are
// parsed once.
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
	got := make(map[string][]byte, len(urls))
	errs := make(map[string]error)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, u := range urls {
		wg.Go(func() {
			data, err := h.opts.ImageFetcher.Fetch(ctx, u)
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
