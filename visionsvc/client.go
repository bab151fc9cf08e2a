package visionsvc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
)

// ErrUnavailable is returned when no encoder replica may be called now:
// every one failed recently and waits out its backoff.
var ErrUnavailable = errors.New("visionsvc: no encoder replica available")

// ClientOptions configures a Client. Zero fields take the defaults below.
type ClientOptions struct {
	// URLs of the encoder replicas (http://host:port).
	URLs []string
	// Timeout bounds one call, from sending to the last byte of the
	// answer (default 60s): an encoder slower than this is treated as
	// failed, and the caller encodes the images itself.
	Timeout time.Duration
	// APIKey, when set, is sent as "Authorization: Bearer KEY".
	APIKey string
	// MaxFrameBytes bounds the patch bytes of one call (default 32 MiB);
	// more images are split into several calls, spread over the
	// replicas.
	MaxFrameBytes int
	// Logger receives a line when a replica goes down or comes back
	// (default slog.Default()).
	Logger *slog.Logger
	// ProbeInterval is how often replicas waiting out a backoff are
	// asked GET /health (default 2s; negative: never). One that answers
	// 200 is called again at once instead of after the rest of its
	// backoff, which grows to thirty seconds for a replica that kept
	// failing (a restart, say). Replicas serving another vision tower
	// are not probed: their health says nothing about that.
	ProbeInterval time.Duration
}

// Client calls encoder replicas. It sends each call to the healthy replica
// with the fewest calls in flight; a replica that fails (refused
// connection, timeout, 5xx, overload) is left alone for a backoff that
// doubles from one second up to thirty while it keeps failing, and one
// serving another vision tower (409) for five minutes; replicas in a
// backoff are probed (ClientOptions.ProbeInterval) so that one that is
// back is used again soon. Its methods are safe for concurrent use.
type Client struct {
	opts  ClientOptions
	eps   []*endpoint
	http  *http.Client
	zenc  *zstd.Encoder
	next  atomic.Uint64
	calls atomic.Int64
	fails atomic.Int64

	// closing ends with Close: the probe loop and a probe in flight.
	closing   context.Context
	stop      context.CancelFunc
	probing   sync.WaitGroup
	closeOnce sync.Once
}

type endpoint struct {
	url      string
	inflight atomic.Int64

	mu         sync.Mutex
	downUntil  time.Time
	backoff    time.Duration
	otherTower bool // paused for serving another vision tower
}

// NewClient returns a client of the replicas at opts.URLs.
func NewClient(opts ClientOptions) (*Client, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = time.Minute
	}
	if opts.MaxFrameBytes <= 0 {
		opts.MaxFrameBytes = 32 << 20
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	c := &Client{opts: opts}
	for _, u := range opts.URLs {
		u = strings.TrimSuffix(strings.TrimSpace(u), "/")
		if u == "" {
			continue
		}
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return nil, fmt.Errorf("visionsvc: encoder URL %q: want http:// or https://", u)
		}
		c.eps = append(c.eps, &endpoint{url: u})
	}
	if len(c.eps) == 0 {
		return nil, errors.New("visionsvc: no encoder URL")
	}
	var err error
	if c.zenc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest)); err != nil {
		return nil, fmt.Errorf("visionsvc: %w", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// A replica that is gone must cost little: a short dial, and the
	// whole call bounded by Timeout through the request's context.
	tr.DialContext = (&net.Dialer{Timeout: time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr.MaxIdleConnsPerHost = 16
	c.http = &http.Client{Transport: tr}
	c.closing, c.stop = context.WithCancel(context.Background())
	if opts.ProbeInterval == 0 {
		c.opts.ProbeInterval = 2 * time.Second
	}
	if c.opts.ProbeInterval > 0 {
		c.probing.Add(1)
		go c.probeLoop()
	}
	return c, nil
}

// Close stops the probes and releases idle connections.
func (c *Client) Close() {
	c.closeOnce.Do(func() {
		c.stop()
		c.probing.Wait()
		c.http.CloseIdleConnections()
		c.zenc.Close()
	})
}

// probeLoop asks the replicas in a backoff for their health every
// ProbeInterval until Close.
func (c *Client) probeLoop() {
	defer c.probing.Done()
	t := time.NewTicker(c.opts.ProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-c.closing.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		for _, ep := range c.eps {
			ep.mu.Lock()
			down := ep.backoff > 0 && now.Before(ep.downUntil) && !ep.otherTower
			ep.mu.Unlock()
			if down && c.healthy(ep) {
				c.succeeded(ep)
			}
		}
	}
}

// healthy reports whether the replica answers GET /health with 200
// within a second.
func (c *Client) healthy(ep *endpoint) bool {
	ctx, cancel := context.WithTimeout(c.closing, time.Second)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, ep.url+"/health", nil)
	if err != nil {
		return false
	}
	if c.opts.APIKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.opts.APIKey)
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		return false
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Stats reports the calls made and those that failed.
func (c *Client) Stats() (calls, failures int64) { return c.calls.Load(), c.fails.Load() }

// pick returns the available replica with the fewest calls in flight,
// skipping those in tried; ties go round robin.
func (c *Client) pick(tried map[*endpoint]bool) *endpoint {
	now := time.Now()
	start := int(c.next.Add(1))
	var best *endpoint
	for i := range c.eps {
		ep := c.eps[(start+i)%len(c.eps)]
		if tried[ep] || !ep.available(now) {
			continue
		}
		if best == nil || ep.inflight.Load() < best.inflight.Load() {
			best = ep
		}
	}
	return best
}

func (ep *endpoint) available(now time.Time) bool {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return !now.Before(ep.downUntil)
}

// failed starts or lengthens the replica's backoff; pause, when positive,
// sets it outright (a replica serving another vision tower).
func (c *Client) failed(ep *endpoint, err error, pause time.Duration) {
	c.fails.Add(1)
	ep.mu.Lock()
	wasUp := ep.backoff == 0
	ep.otherTower = pause > 0
	if pause <= 0 {
		ep.backoff = min(max(2*ep.backoff, time.Second), 30*time.Second)
		pause = ep.backoff
	} else {
		ep.backoff = max(ep.backoff, time.Second)
	}
	ep.downUntil = time.Now().Add(pause)
	ep.mu.Unlock()
	if wasUp {
		c.opts.Logger.Warn("vision encoder replica failed; encoding locally meanwhile", "url", ep.url, "err", err, "retry_in", pause)
	}
}

func (c *Client) succeeded(ep *endpoint) {
	ep.mu.Lock()
	wasDown := ep.backoff > 0
	ep.backoff, ep.downUntil, ep.otherTower = 0, time.Time{}, false
	ep.mu.Unlock()
	if wasDown {
		c.opts.Logger.Info("vision encoder replica is back", "url", ep.url)
	}
}

// statusError is a replica's non-200 answer.
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.status, e.msg) }

// Lookup asks for the encoder outputs of keys alone (the Items' patches are
// not sent); an image no replica holds comes back with Found false.
func (c *Client) Lookup(ctx context.Context, vision Key, items []Item) ([]Result, error) {
	keys := make([]Item, len(items))
	for i, it := range items {
		keys[i] = Item{Key: it.Key, GridT: it.GridT, GridH: it.GridH, GridW: it.GridW}
	}
	out := make([]Result, len(items))
	for lo := 0; lo < len(keys); lo += MaxItems {
		hi := min(lo+MaxItems, len(keys))
		res, err := c.call(ctx, Request{Kind: KindKeys, Vision: vision, Items: keys[lo:hi]}, min(c.opts.Timeout, lookupTimeout))
		if err != nil {
			return out, err
		}
		copy(out[lo:], res)
	}
	return out, nil
}

// Encode has the replicas encode items from their patches, in calls of at
// most MaxFrameBytes of patches sent at once to different replicas. The
// results of calls that failed have Found false, and the error joins
// their errors: the caller encodes those images itself.
func (c *Client) Encode(ctx context.Context, vision Key, items []Item) ([]Result, error) {
	out := make([]Result, len(items))
	var batches [][2]int
	size := 0
	for i, it := range items {
		n := 4 * len(it.Patches)
		if len(batches) == 0 || size+n > c.opts.MaxFrameBytes || i-batches[len(batches)-1][0] >= MaxItems {
			batches = append(batches, [2]int{i, i})
			size = 0
		}
		batches[len(batches)-1][1] = i + 1
		size += n
	}
	errs := make([]error, len(batches))
	var wg sync.WaitGroup
	for k, bt := range batches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.call(ctx, Request{Kind: KindPatches, Vision: vision, Items: items[bt[0]:bt[1]]}, c.opts.Timeout)
			if err != nil {
				errs[k] = err
				return
			}
			copy(out[bt[0]:], res)
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// lookupTimeout bounds a keys-only call: the encoder only reads its
// caches for it, so a slow answer means a sick replica.
const lookupTimeout = 5 * time.Second

// call sends one frame, trying a second replica when the first fails;
// each attempt may take timeout.
func (c *Client) call(ctx context.Context, req Request, timeout time.Duration) ([]Result, error) {
	body := AppendRequest(nil, req)
	compressed := req.Kind == KindPatches
	if compressed {
		body = c.zenc.EncodeAll(body, make([]byte, 0, len(body)/2))
	}
	tried := map[*endpoint]bool{}
	var errs []error
	for attempt := 0; attempt < 2; attempt++ {
		ep := c.pick(tried)
		if ep == nil {
			break
		}
		tried[ep] = true
		res, err := c.send(ctx, ep, body, compressed, len(req.Items), timeout)
		if err == nil {
			c.succeeded(ep)
			return res, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", ep.url, err))
		if ctx.Err() != nil {
			// The caller gave up; the replica is not to blame.
			return nil, errors.Join(errs...)
		}
		var se *statusError
		switch {
		case errors.As(err, &se) && se.status == http.StatusConflict:
			c.failed(ep, err, 5*time.Minute)
		case errors.As(err, &se) && se.status < 500 && se.status != http.StatusTooManyRequests:
			// The frame itself was refused: another replica would refuse
			// it too.
			c.fails.Add(1)
			return nil, errors.Join(errs...)
		default:
			c.failed(ep, err, 0)
		}
	}
	if len(errs) == 0 {
		return nil, ErrUnavailable
	}
	return nil, errors.Join(errs...)
}

// maxResponse bounds an answer: every result is at most a few merged
// rows per patch, far below this for any frame the client sends.
const maxResponse = 1 << 30

func (c *Client) send(ctx context.Context, ep *endpoint, body []byte, compressed bool, items int, timeout time.Duration) ([]Result, error) {
	c.calls.Add(1)
	ep.inflight.Add(1)
	defer ep.inflight.Add(-1)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.url+Path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", MediaType)
	if compressed {
		hr.Header.Set("Content-Encoding", "zstd")
	}
	if c.opts.APIKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.opts.APIKey)
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &statusError{resp.StatusCode, string(bytes.TrimSpace(raw[:min(len(raw), 512)]))}
	}
	if len(raw) > maxResponse {
		return nil, fmt.Errorf("answer over %d bytes", maxResponse)
	}
	return DecodeResponse(raw, items)
}

// ReadRequest reads a request body of at most limit bytes, decompressed
// when contentEncoding is zstd (the decompressed frame is bounded by limit
// too), and decodes it.
func ReadRequest(body io.Reader, contentEncoding string, limit int64) (Request, error) {
	raw, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return Request{}, fmt.Errorf("visionsvc: reading the body: %w", err)
	}
	if int64(len(raw)) > limit {
		return Request{}, &TooLargeError{Limit: limit}
	}
	switch strings.ToLower(strings.TrimSpace(contentEncoding)) {
	case "", "identity":
	case "zstd":
		dec, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(uint64(limit)), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return Request{}, fmt.Errorf("visionsvc: %w", err)
		}
		defer dec.Close()
		if raw, err = dec.DecodeAll(raw, nil); err != nil {
			if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
				return Request{}, &TooLargeError{Limit: limit}
			}
			return Request{}, fmt.Errorf("%w: zstd: %v", ErrFormat, err)
		}
		if int64(len(raw)) > limit {
			return Request{}, &TooLargeError{Limit: limit}
		}
	default:
		return Request{}, fmt.Errorf("%w: content encoding %q (want zstd or none)", ErrFormat, contentEncoding)
	}
	return DecodeRequest(raw)
}

// TooLargeError says a request body, or its decompressed frame, is over
// the server's limit.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("visionsvc: request frame over %d bytes", e.Limit)
}
