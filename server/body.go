package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
)

// byteBudget bounds the request bytes the handler holds at once: bodies as
// they arrive and images fetched from URLs, each held until its request is
// answered. Bytes are charged as they come, so a client that declares a
// large body and sends it slowly holds only what it sent.
type byteBudget struct {
	limit int64
	used  atomic.Int64
}

// take charges n bytes, or reports false when they do not fit. With
// nothing held anything fits, so one request at the body limit always
// goes through.
func (b *byteBudget) take(n int64) bool {
	for {
		u := b.used.Load()
		if u > 0 && u+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// hold is one request's share of the budget, given back when the request
// has been answered.
type hold struct {
	b *byteBudget
	n atomic.Int64
}

type holdKey struct{}

// errInflightFull is returned when the request bytes held by the server
// are at their budget: the request is refused with 429.
var errInflightFull = errors.New("the server holds as much request data as it may; retry later")

// take charges n more bytes to the request.
func (h *hold) take(n int64) error {
	if h == nil {
		return nil
	}
	if !h.b.take(n) {
		return errInflightFull
	}
	h.n.Add(n)
	return nil
}

func (h *hold) release() {
	if h != nil {
		h.b.used.Add(-h.n.Swap(0))
	}
}

// holdOf returns the request's hold (nil outside ServeHTTP: no budget).
func holdOf(ctx context.Context) *hold {
	h, _ := ctx.Value(holdKey{}).(*hold)
	return h
}

// firstChunk is the buffer a body starts in; it doubles from there, up to
// the declared Content-Length, as the bytes arrive. It is small so that a
// slow sender holds little of the budget: tens of thousands of them fill
// it, not thousands.
const firstChunk = 16 << 10

// readBody reads a request body of at most MaxBodyBytes, charging the
// in-flight budget as its buffer grows. The buffer is never larger than
// what arrived (doubling) or the declared Content-Length, so a declared
// length costs nothing until its bytes come. Refusals carry their status:
// 413 past the limit, 429 (with Retry-After) when the budget is full.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *badRequest) {
	limit := h.opts.MaxBodyBytes
	tooLarge := &badRequest{http.StatusRequestEntityTooLarge, "", "request_too_large", fmt.Sprintf("request body exceeds %d bytes", limit)}
	if r.ContentLength > limit {
		return nil, tooLarge
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	// A body without a length may grow to the limit: MaxBytesReader fails
	// on the byte after it, so len(buf) never reaches limit+1.
	want := limit + 1
	if r.ContentLength >= 0 {
		// net/http ends the body at Content-Length and reports a short one.
		want = r.ContentLength
	}
	hd := holdOf(r.Context())
	var buf []byte
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) == want {
				return buf, nil
			}
			c := min(max(2*int64(cap(buf)), firstChunk), want)
			if err := hd.take(c - int64(cap(buf))); err != nil {
				w.Header().Set("Retry-After", "1")
				return nil, &badRequest{http.StatusTooManyRequests, "", "overloaded", err.Error()}
			}
			grown := make([]byte, len(buf), c)
			copy(grown, buf)
			buf = grown
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, tooLarge
			}
			return nil, &badRequest{http.StatusBadRequest, "", "", fmt.Sprintf("reading request body: %v", err)}
		}
	}
}
