package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vembed/vembed/engine"
)

// StatsSource is implemented by an Embedder that reports its engine's
// counters (*engine.Engine does); /metrics then exports them.
type StatsSource interface {
	Stats() engine.Stats
}

// metrics holds the server's Prometheus collectors, in a registry of its
// own so that several handlers (tests, replicas in one process) never
// collide.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	inflight prometheus.Gauge
	handler  http.Handler
}

func newMetrics(emb Embedder, held *byteBudget) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vembed_http_requests_total",
		Help: "HTTP requests answered, by route pattern and status code.",
	}, []string{"route", "code"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "vembed_http_request_duration_seconds",
		Help:    "Time from request start to the end of the response, by route pattern.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
	}, []string{"route"})
	m.inflight = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "vembed_http_requests_in_flight",
		Help: "HTTP requests being served.",
	})
	heldBytes := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "vembed_http_inflight_bytes",
		Help: "Request bytes held: bodies being read or served and images fetched from URLs.",
	}, func() float64 { return float64(held.used.Load()) })
	m.reg.MustRegister(m.requests, m.latency, m.inflight, heldBytes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if src, ok := emb.(StatsSource); ok {
		m.reg.MustRegister(engineCollector{src})
	}
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	return m
}

// begin counts a request in flight; m may be nil (metrics off).
func (m *metrics) begin() {
	if m != nil {
		m.inflight.Inc()
	}
}

// end records an answered request by its route pattern ("" when no route
// matched); m may be nil.
func (m *metrics) end(route string, status int, d time.Duration) {
	if m == nil {
		return
	}
	if route == "" {
		route = "unmatched"
	}
	m.inflight.Dec()
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

// engineCollector exports engine.Stats at scrape time, so the engine keeps
// one set of counters and /metrics never disagrees with it.
type engineCollector struct{ src StatsSource }

var (
	descQueued    = prometheus.NewDesc("vembed_engine_queued_requests", "Requests admitted with no work scheduled yet (the queue depth).", nil, nil)
	descRunning   = prometheus.NewDesc("vembed_engine_running_requests", "Requests with some work done and not finished.", nil, nil)
	descInflight  = prometheus.NewDesc("vembed_engine_inflight_bytes", "Image bytes and preprocessed pixels held by admitted requests.", nil, nil)
	descRequests  = prometheus.NewDesc("vembed_engine_requests_total", "Requests the engine finished, successful or not.", nil, nil)
	descCancelled = prometheus.NewDesc("vembed_engine_cancelled_total", "Requests that left because their context ended.", nil, nil)
	descSteps     = prometheus.NewDesc("vembed_engine_steps_total", "Scheduler steps run.", nil, nil)
	descTokens    = prometheus.NewDesc("vembed_engine_lm_tokens_total", "Language-model tokens computed (cache hits excluded).", nil, nil)
	descImages    = prometheus.NewDesc("vembed_engine_images_total", "Images encoded by the vision tower (cache hits excluded).", nil, nil)
	descPatches   = prometheus.NewDesc("vembed_engine_image_patches_total", "Vision patches encoded.", nil, nil)
	descStepTok   = prometheus.NewDesc("vembed_engine_step_lm_tokens", "Language-model tokens per scheduler step.", nil, nil)
	descStepPat   = prometheus.NewDesc("vembed_engine_step_patches", "Vision patches per scheduler step.", nil, nil)
	descStepSec   = prometheus.NewDesc("vembed_engine_step_seconds", "Duration of scheduler steps.", nil, nil)
	descQueueSec  = prometheus.NewDesc("vembed_engine_queue_seconds", "Time from admission to a request's first scheduled work.", nil, nil)
	descHits      = prometheus.NewDesc("vembed_cache_hits_total", "Content cache hits, by cache.", []string{"cache"}, nil)
	descMisses    = prometheus.NewDesc("vembed_cache_misses_total", "Content cache misses, by cache.", []string{"cache"}, nil)
	descEvictions = prometheus.NewDesc("vembed_cache_evictions_total", "Content cache evictions, by cache (shared: writes dropped under load).", []string{"cache"}, nil)
	descErrors    = prometheus.NewDesc("vembed_cache_errors_total", "Errors by cache: failed reads and writes (disk, shared); for encoder-service, images encoded locally after the encoder replicas failed.", []string{"cache"}, nil)
	descEntries   = prometheus.NewDesc("vembed_cache_entries", "Entries held, by cache.", []string{"cache"}, nil)
	descBytes     = prometheus.NewDesc("vembed_cache_bytes", "Bytes held, by cache.", []string{"cache"}, nil)
	descCapacity  = prometheus.NewDesc("vembed_cache_capacity_bytes", "Byte budget, by cache (0: disabled).", []string{"cache"}, nil)
)

func (engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descQueued, descRunning, descInflight, descRequests, descCancelled, descSteps,
		descTokens, descImages, descPatches, descStepTok, descStepPat, descStepSec, descQueueSec,
		descHits, descMisses, descEvictions, descErrors, descEntries, descBytes, descCapacity} {
		ch <- d
	}
}

func (c engineCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Stats()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(descQueued, float64(s.QueuedRequests))
	gauge(descRunning, float64(s.RunningRequests))
	gauge(descInflight, float64(s.InflightBytes))
	counter(descRequests, s.Requests)
	counter(descCancelled, s.Cancelled)
	counter(descSteps, s.Steps)
	counter(descTokens, s.LMTokens)
	counter(descImages, s.Images)
	counter(descPatches, s.ImagePatches)
	for _, h := range []struct {
		d *prometheus.Desc
		h engine.Histogram
	}{{descStepTok, s.StepLMTokens}, {descStepPat, s.StepPatches}, {descStepSec, s.StepSeconds}, {descQueueSec, s.QueueSeconds}} {
		if m, err := constHistogram(h.d, h.h); err == nil {
			ch <- m
		}
	}
	for _, cs := range s.Caches {
		counter(descHits, cs.Hits, cs.Name)
		counter(descMisses, cs.Misses, cs.Name)
		counter(descEvictions, cs.Evictions, cs.Name)
		counter(descErrors, cs.Errors, cs.Name)
		gauge(descEntries, float64(cs.Entries), cs.Name)
		gauge(descBytes, float64(cs.Bytes), cs.Name)
		gauge(descCapacity, float64(cs.Capacity), cs.Name)
	}
}

// constHistogram turns an engine histogram (cumulative counts per bound,
// the last bucket +Inf) into Prometheus's form.
func constHistogram(d *prometheus.Desc, h engine.Histogram) (prometheus.Metric, error) {
	buckets := make(map[float64]uint64, len(h.Bounds))
	for i, b := range h.Bounds {
		if i < len(h.Counts) {
			buckets[b] = h.Counts[i]
		}
	}
	return prometheus.NewConstHistogram(d, h.Count, h.Sum, buckets)
}
