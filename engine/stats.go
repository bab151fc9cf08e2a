package engine

import "errors"

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
	Name      string // "embedding", "encoder", "image", "disk"
	Hits      int64
	Misses    int64
	Evictions int64
	Entries   int
	Bytes     int64 // bytes held
	Capacity  int64 // byte budget; 0 when disabled
}
