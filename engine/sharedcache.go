package engine

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/redis/go-redis/v9"
)

// sharedCache is the second level of the embedding and encoder caches,
// shared by every replica that points at the same Valkey or Redis server
// (Config.CacheURL): an image or text one replica computed is a hit on the
// others. Keys are the engine's content keys, which already hold the model
// files' and vision tower's identity, under a versioned prefix; values
// carry a format byte and a CRC-32 and are zstd-compressed.
//
// It never makes a request fail or wait long: reads run on the request's
// goroutine with a short timeout, writes are queued (dropped when the
// queue is full) and sent by a goroutine of their own, and after an error
// the server is left alone for a growing pause (a circuit breaker), so a
// dead cache costs nothing but misses.
type sharedCache struct {
	rdb      *redis.Client
	prefix   string
	ttl      time.Duration
	maxValue int
	timeout  time.Duration
	enc      *zstd.Encoder
	dec      *zstd.Decoder
	writes   chan sharedWrite
	done     chan struct{}
	wg       sync.WaitGroup

	hits, misses, errs, dropped atomic.Int64 // misses: results; errors, drops: both kinds
	encHits, encMisses          atomic.Int64
	written                     atomic.Int64 // values stored
	mu                          sync.Mutex
	openAt                      time.Time     // zero: breaker closed; else open until then
	pause                       time.Duration // the next pause after an error
	probing                     bool          // a request is testing an open breaker
}

type sharedWrite struct {
	key  string
	kind byte
	val  func() []byte // encodes the value, on the writer's goroutine
}

// sharedFormat is the version byte of shared values; a change of the
// encoding changes it, and the key prefix with it.
const sharedFormat = 1

func openSharedCache(url string, ttl time.Duration, maxValue int) (*sharedCache, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("engine: cache URL: %w", err)
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	opt.MaxRetries = 0 // the breaker decides when to try again
	enc, dec, err := zstdPair()
	if err != nil {
		return nil, err
	}
	c := &sharedCache{rdb: redis.NewClient(opt), prefix: "vembed:1:", ttl: ttl, maxValue: maxValue, timeout: 200 * time.Millisecond,
		enc: enc, dec: dec, writes: make(chan sharedWrite, 256), done: make(chan struct{}), pause: time.Second}
	c.wg.Add(1)
	go c.writer()
	return c, nil
}

// zstdPair returns the compressor and the decompressor of shared values;
// decompression is bounded, so a hostile entry cannot claim unbounded
// memory.
func zstdPair() (*zstd.Encoder, *zstd.Decoder, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		return nil, nil, fmt.Errorf("engine: shared cache: %w", err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(256<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("engine: shared cache: %w", err)
	}
	return enc, dec, nil
}

func (c *sharedCache) name(kind byte, k Key) string {
	return c.prefix + string(kind) + ":" + hex.EncodeToString(k[:])
}

// allowed reports whether the breaker lets a request through: always
// when closed; once its pause is over, one request at a time (a probe)
// until one succeeds, so that a dead server costs one timeout per pause,
// not one per request.
func (c *sharedCache) allowed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.openAt.IsZero() {
		return true
	}
	if time.Now().Before(c.openAt) || c.probing {
		return false
	}
	c.probing = true
	return true
}

// failed counts an error and opens the breaker for the current pause,
// doubling it up to a minute.
func (c *sharedCache) failed(err error) {
	c.errs.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.openAt.IsZero() {
		slog.Warn("shared cache unreachable; serving from local caches", "err", err, "retry_in", c.pause)
	}
	c.openAt = time.Now().Add(c.pause)
	c.pause = min(2*c.pause, time.Minute)
	c.probing = false
}

// ok closes the breaker.
func (c *sharedCache) ok() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.openAt.IsZero() {
		slog.Info("shared cache reachable again")
	}
	c.openAt, c.pause, c.probing = time.Time{}, time.Second, false
}

// abandon ends a request the breaker let through that neither succeeded nor
// failed (its caller gave up): a probe may go out again.
func (c *sharedCache) abandon() {
	c.mu.Lock()
	c.probing = false
	c.mu.Unlock()
}

func (c *sharedCache) holds(byte) bool { return true }

// get reads a value; false on a miss, an error or an open breaker.
func (c *sharedCache) get(ctx context.Context, kind byte, k Key) ([]byte, bool) {
	hits, misses := &c.hits, &c.misses
	if kind == kindEncoded {
		hits, misses = &c.encHits, &c.encMisses
	}
	if !c.allowed() {
		misses.Add(1)
		return nil, false
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	raw, err := c.rdb.Get(ctx, c.name(kind, k)).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		c.ok()
		misses.Add(1)
		return nil, false
	case err != nil:
		if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			c.failed(err)
		} else {
			c.abandon()
		}
		misses.Add(1)
		return nil, false
	}
	c.ok()
	v, err := c.unpack(kind, raw)
	if err != nil {
		c.errs.Add(1)
		misses.Add(1)
		return nil, false
	}
	hits.Add(1)
	return v, true
}

// put queues a value for writing; it never blocks, and the encoding and
// compression happen on the writer's goroutine (the scheduler calls it).
func (c *sharedCache) put(kind byte, k Key, v func() []byte) {
	c.mu.Lock()
	open := !c.openAt.IsZero() && time.Now().Before(c.openAt)
	c.mu.Unlock()
	if open {
		return
	}
	select {
	case c.writes <- sharedWrite{c.name(kind, k), kind, v}:
	default:
		c.dropped.Add(1)
	}
}

func (c *sharedCache) writer() {
	defer c.wg.Done()
	for {
		select {
		case <-c.done:
			c.drain()
			return
		case w := <-c.writes:
			c.write(w)
		}
	}
}

// closeFlush bounds the time close spends sending the writes still queued.
const closeFlush = 5 * time.Second

// drain sends the writes still queued when the engine closes, for at most
// closeFlush: a batch job's last results (vembed index, vembed eval) are
// what the other workers would otherwise compute again. A dead server
// costs nothing here, its breaker being open.
func (c *sharedCache) drain() {
	deadline := time.Now().Add(closeFlush)
	for time.Now().Before(deadline) {
		select {
		case w := <-c.writes:
			c.write(w)
		default:
			return
		}
	}
}

// write stores one queued value, unless it is too large or the breaker is
// open.
func (c *sharedCache) write(w sharedWrite) {
	packed := c.pack(w.kind, w.val())
	if len(packed) > c.maxValue || !c.allowed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*c.timeout)
	err := c.rdb.Set(ctx, w.key, packed, c.ttl).Err()
	cancel()
	if err != nil {
		c.failed(err)
	} else {
		c.written.Add(1)
		c.ok()
	}
}

// pack is format byte, kind, CRC-32 (IEEE) of the plain value, then the
// zstd-compressed value.
func (c *sharedCache) pack(kind byte, v []byte) []byte {
	out := []byte{sharedFormat, kind}
	out = binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(v))
	return c.enc.EncodeAll(v, out)
}

func (c *sharedCache) unpack(kind byte, b []byte) ([]byte, error) {
	if len(b) < 6 || b[0] != sharedFormat || b[1] != kind {
		return nil, errBadEntry
	}
	v, err := c.dec.DecodeAll(b[6:], nil)
	if err != nil || crc32.ChecksumIEEE(v) != binary.LittleEndian.Uint32(b[2:]) {
		return nil, errBadEntry
	}
	return v, nil
}

func (c *sharedCache) close() error {
	close(c.done)
	c.wg.Wait()
	c.enc.Close()
	c.dec.Close()
	return c.rdb.Close()
}

// stats reports results (cache "shared", with the errors and dropped
// writes of both kinds) and encoder outputs ("shared-encoder") apart.
func (c *sharedCache) stats() []CacheStats {
	return []CacheStats{
		{Name: "shared", Hits: c.hits.Load(), Misses: c.misses.Load(), Errors: c.errs.Load(), Evictions: c.dropped.Load()},
		{Name: "shared-encoder", Hits: c.encHits.Load(), Misses: c.encMisses.Load()},
	}
}
