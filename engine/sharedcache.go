package engine

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/redis/go-redis/v9"

	"github.com/vembed/vembed/model"
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

	hits, misses, errs, dropped atomic.Int64
	mu                          sync.Mutex
	openAt                      time.Time     // the breaker lets requests through again at
	pause                       time.Duration // the next pause after an error
}

type sharedWrite struct {
	key  string
	kind byte
	val  func() []byte // encodes the value, on the writer's goroutine
}

const (
	sharedFormat = 1
	kindResult   = 'e' // an input's result (embedding cache)
	kindEncoded  = 'v' // an image's encoder output
)

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

// allowed reports whether the breaker lets a request through.
func (c *sharedCache) allowed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().After(c.openAt)
}

// failed counts an error and opens the breaker for the current pause,
// doubling it up to a minute; ok closes it.
func (c *sharedCache) failed(err error) {
	c.errs.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.openAt = time.Now().Add(c.pause)
	c.pause = min(2*c.pause, time.Minute)
}

func (c *sharedCache) ok() {
	c.mu.Lock()
	c.pause = time.Second
	c.mu.Unlock()
}

// get reads a value; false on a miss, an error or an open breaker.
func (c *sharedCache) get(ctx context.Context, kind byte, k Key) ([]byte, bool) {
	if !c.allowed() {
		c.misses.Add(1)
		return nil, false
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	raw, err := c.rdb.Get(ctx, c.name(kind, k)).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		c.ok()
		c.misses.Add(1)
		return nil, false
	case err != nil:
		if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			c.failed(err)
		}
		c.misses.Add(1)
		return nil, false
	}
	c.ok()
	v, err := c.unpack(kind, raw)
	if err != nil {
		c.errs.Add(1)
		c.misses.Add(1)
		return nil, false
	}
	c.hits.Add(1)
	return v, true
}

// put queues a value for writing; it never blocks, and the encoding and
// compression happen on the writer's goroutine (the scheduler calls it).
func (c *sharedCache) put(kind byte, k Key, v func() []byte) {
	if !c.allowed() {
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
			return
		case w := <-c.writes:
			if !c.allowed() {
				continue
			}
			packed := c.pack(w.kind, w.val())
			if len(packed) > c.maxValue {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*c.timeout)
			err := c.rdb.Set(ctx, w.key, packed, c.ttl).Err()
			cancel()
			if err != nil {
				c.failed(err)
			} else {
				c.ok()
			}
		}
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

func (c *sharedCache) stats() CacheStats {
	return CacheStats{Name: "shared", Hits: c.hits.Load(), Misses: c.misses.Load(), Errors: c.errs.Load(), Evictions: c.dropped.Load()}
}

// encodeEncoded writes an image's encoder output: the rows, then the
// DeepStack rows, each as a count and little-endian float32 values.
func encodeEncoded(e model.EncodedImage) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(e.Deep)))
	put := func(v []float32) {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
	}
	put(e.Rows)
	for _, d := range e.Deep {
		put(d)
	}
	return b
}

func decodeEncoded(b []byte) (model.EncodedImage, error) {
	var e model.EncodedImage
	take := func() ([]float32, bool) {
		if len(b) < 4 {
			return nil, false
		}
		n := binary.LittleEndian.Uint32(b)
		b = b[4:]
		if int64(n) > int64(len(b)/4) {
			return nil, false
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		b = b[4*n:]
		return v, true
	}
	if len(b) < 4 {
		return e, errBadEntry
	}
	deep := binary.LittleEndian.Uint32(b)
	b = b[4:]
	if deep > 64 {
		return e, errBadEntry
	}
	var ok bool
	if e.Rows, ok = take(); !ok {
		return e, errBadEntry
	}
	for range deep {
		d, ok := take()
		if !ok {
			return e, errBadEntry
		}
		e.Deep = append(e.Deep, d)
	}
	if len(b) != 0 {
		return e, errBadEntry
	}
	return e, nil
}
