package engine

import (
	"errors"
	"sync"
	"sync/atomic"
)

// ErrOverloaded is returned by Embed when the engine's admission limits
// (queued requests, tokens or image bytes waiting) are full. The request
// did no work; the client may retry later (HTTP 429 with Retry-After).
var ErrOverloaded = errors.New("engine: overloaded, try again later")

// ErrShuttingDown is returned by Embed for requests that arrive after
// Shutdown began, and for requests still queued when it gave up waiting
// (HTTP 503).
var ErrShuttingDown = errors.New("engine: shutting down")

// Stats is a snapshot of the engine's counters and gauges, for metrics.
// Counters only grow over the engine's life; gauges are current values.
type Stats struct {
	// Gauges.
	QueuedRequests  int   // admitted, no work scheduled yet
	RunningRequests int   // some work done, not finished
	InflightBytes   int64 // image bytes and preprocessed pixels held by admitted requests

	// Counters.
	Requests     int64 // finished requests, successful or not
	Cancelled    int64 // requests that left because their context ended
	Steps        int64 // scheduler steps run
	LMTokens     int64 // language-model tokens computed (cache hits excluded)
	Images       int64 // images encoded by the vision tower (cache hits excluded)
	ImagePatches int64 // vision patches encoded
	StepLMTokens Histogram
	StepPatches  Histogram
	StepSeconds  Histogram
	QueueSeconds Histogram // admission to first scheduled work
	Caches       []CacheStats
}

// Histogram is a cumulative histogram: Counts[i] observations were at most
// Bounds[i]; Count and Sum cover every observation (the last bucket is
// +Inf).
type Histogram struct {
	Bounds []float64
	Counts []uint64
	Count  uint64
	Sum    float64
}

// CacheStats describes one content cache.
type CacheStats struct {
	// "embedding", "encoder", "image", "disk", "shared" (results),
	// "shared-encoder" (encoder outputs), "encoder-service" (the encoder
	// replicas: hits are images they held, misses images sent with their
	// pixels, errors images encoded here because they failed).
	Name      string
	Hits      int64
	Misses    int64
	Evictions int64 // for the shared cache: writes dropped under load
	Errors    int64 // failed reads or writes (disk, shared)
	Entries   int
	Bytes     int64 // bytes held
	Capacity  int64 // byte budget; 0 when disabled
}

// counters are the engine's live statistics.
type counters struct {
	queued, running                                       atomic.Int64
	requests, cancelled, steps, lmTokens, images, patches atomic.Int64
	stepTokens, stepPatches, stepSeconds, queueSeconds    *histogram
}

func (c *counters) init() {
	c.stepTokens = newHistogram(16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
	c.stepPatches = newHistogram(256, 1024, 4096, 16384, 65536, 262144, 1048576)
	c.stepSeconds = newHistogram(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
	c.queueSeconds = newHistogram(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
}

// histogram is a fixed-bucket histogram safe for concurrent use.
type histogram struct {
	mu     sync.Mutex
	bounds []float64
	counts []uint64
	count  uint64
	sum    float64
}

func newHistogram(bounds ...float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds))}
}

func (h *histogram) observe(v float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.count++
	h.sum += v
	for i, b := range h.bounds {
		if v <= b {
			h.counts[i]++
		}
	}
}

func (h *histogram) snapshot() Histogram {
	h.mu.Lock()
	defer h.mu.Unlock()
	return Histogram{Bounds: append([]float64(nil), h.bounds...), Counts: append([]uint64(nil), h.counts...), Count: h.count, Sum: h.sum}
}

// Stats returns a snapshot of the engine's statistics.
func (e *Engine) Stats() Stats {
	c := &e.stats
	s := Stats{
		QueuedRequests:  int(c.queued.Load()),
		RunningRequests: int(c.running.Load()),
		InflightBytes:   e.inflight.Load(),
		Requests:        c.requests.Load(),
		Cancelled:       c.cancelled.Load(),
		Steps:           c.steps.Load(),
		LMTokens:        c.lmTokens.Load(),
		Images:          c.images.Load(),
		ImagePatches:    c.patches.Load(),
		StepLMTokens:    c.stepTokens.snapshot(),
		StepPatches:     c.stepPatches.snapshot(),
		StepSeconds:     c.stepSeconds.snapshot(),
		QueueSeconds:    c.queueSeconds.snapshot(),
		Caches:          []CacheStats{e.embeddingCache.stats(), e.encoderCache.stats(), e.imageCache.stats()},
	}
	for _, st := range e.stores {
		s.Caches = append(s.Caches, st.stats()...)
	}
	if e.remote != nil {
		s.Caches = append(s.Caches, e.remote.stats())
	}
	return s
}
