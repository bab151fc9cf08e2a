package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// diskCache keeps embedding results in a bbolt file, so that a restarted
// server serves inputs it has seen for free. bbolt commits are atomic and
// synced, so a process killed mid-write leaves the file readable with every
// committed entry. Entries are evicted oldest first when the file's
// entries exceed the byte budget. Writes go through a queue to one writer
// goroutine, batched per transaction; a full queue drops the write rather
// than slow the scheduler.
type diskCache struct {
	db       *bolt.DB
	cap      int64
	writes   chan diskWrite
	done     chan struct{}
	hits     atomic.Int64
	misses   atomic.Int64
	evicted  atomic.Int64
	size     atomic.Int64
	entries  atomic.Int64
	writeErr atomic.Int64
	readErr  atomic.Int64
}

type diskWrite struct {
	key    Key
	encode func() []byte
}

var (
	bucketValues = []byte("values") // key -> encoded result
	bucketOrder  = []byte("order")  // big-endian sequence -> key
	bucketMeta   = []byte("meta")
	metaSize     = []byte("size")
	metaSeq      = []byte("seq")
)

func openDiskCache(path string, capacity int64) (*diskCache, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("disk cache: %w", err)
	}
	db, err := bolt.Open(path, 0o644, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("disk cache %s: %w", path, err)
	}
	c := &diskCache{db: db, cap: capacity, writes: make(chan diskWrite, 1024), done: make(chan struct{})}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketValues, bucketOrder, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		c.size.Store(int64(u64(tx.Bucket(bucketMeta).Get(metaSize))))
		c.entries.Store(int64(tx.Bucket(bucketValues).Stats().KeyN))
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("disk cache %s: %w", path, err)
	}
	go c.writer()
	return c, nil
}

func u64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

func be64(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

func (c *diskCache) holds(kind byte) bool { return kind == kindResult }

func (c *diskCache) get(_ context.Context, _ byte, k Key) ([]byte, bool) {
	var val []byte
	err := c.db.View(func(tx *bolt.Tx) error {
		// The value is only valid inside the transaction.
		val = bytes.Clone(tx.Bucket(bucketValues).Get(k[:]))
		return nil
	})
	if err != nil {
		c.readErr.Add(1)
		slog.Warn("disk cache: read failed", "err", err)
	}
	if val == nil {
		c.misses.Add(1)
		return nil, false
	}
	c.hits.Add(1)
	return val, true
}

func (c *diskCache) put(_ byte, k Key, encode func() []byte) {
	select {
	case c.writes <- diskWrite{k, encode}:
	default:
	}
}

// writer commits queued writes, several per transaction.
func (c *diskCache) writer() {
	defer close(c.done)
	for w := range c.writes {
		batch := []diskWrite{w}
		for more := true; more && len(batch) < 256; {
			select {
			case w, ok := <-c.writes:
				if !ok {
					more = false
					break
				}
				batch = append(batch, w)
			default:
				more = false
			}
		}
		if err := c.commit(batch); err != nil {
			c.writeErr.Add(1)
			slog.Warn("disk cache: write failed", "err", err)
		}
	}
}

func (c *diskCache) commit(batch []diskWrite) error {
	return c.db.Update(func(tx *bolt.Tx) error {
		vals, order, meta := tx.Bucket(bucketValues), tx.Bucket(bucketOrder), tx.Bucket(bucketMeta)
		size, seq := int64(u64(meta.Get(metaSize))), u64(meta.Get(metaSeq))
		n := c.entries.Load()
		for _, w := range batch {
			if vals.Get(w.key[:]) != nil {
				continue
			}
			val := w.encode()
			if int64(len(val)) > c.cap {
				continue
			}
			seq++
			if err := vals.Put(w.key[:], val); err != nil {
				return err
			}
			if err := order.Put(be64(seq), w.key[:]); err != nil {
				return err
			}
			size += int64(len(val))
			n++
		}
		// Evict the oldest entries beyond the budget.
		cur := order.Cursor()
		for k, v := cur.First(); k != nil && size > c.cap; k, v = cur.Next() {
			if old := vals.Get(v); old != nil {
				size -= int64(len(old))
				n--
				if err := vals.Delete(v); err != nil {
					return err
				}
				c.evicted.Add(1)
			}
			if err := cur.Delete(); err != nil {
				return err
			}
		}
		if err := meta.Put(metaSize, be64(uint64(size))); err != nil {
			return err
		}
		if err := meta.Put(metaSeq, be64(seq)); err != nil {
			return err
		}
		c.size.Store(size)
		c.entries.Store(n)
		return nil
	})
}

// close flushes the queued writes and closes the file.
func (c *diskCache) close() error {
	close(c.writes)
	<-c.done
	return c.db.Close()
}

func (c *diskCache) stats() []CacheStats {
	return []CacheStats{{Name: "disk", Hits: c.hits.Load(), Misses: c.misses.Load(), Evictions: c.evicted.Load(),
		Errors: c.readErr.Load() + c.writeErr.Load(), Entries: int(c.entries.Load()), Bytes: c.size.Load(), Capacity: c.cap}}
}

// The encoding of a result: a format byte, then three float32 lists of
// lists (vector as one list or none, spans, multi), each as a count and
// per list its length and little-endian values.
const resultFormat = 1

func encodeResult(r *result) []byte {
	b := []byte{resultFormat}
	lists := func(ls [][]float32) {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(ls)))
		for _, l := range ls {
			b = binary.LittleEndian.AppendUint32(b, uint32(len(l)))
			for _, v := range l {
				b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
			}
		}
	}
	var vec [][]float32
	if r.Vector != nil {
		vec = [][]float32{r.Vector}
	}
	lists(vec)
	lists(r.Spans)
	lists(r.Multi)
	return b
}

var errBadEntry = errors.New("malformed cache entry")

func decodeResult(b []byte) (*result, error) {
	if len(b) < 1 || b[0] != resultFormat {
		return nil, errBadEntry
	}
	b = b[1:]
	u32 := func() (uint32, bool) {
		if len(b) < 4 {
			return 0, false
		}
		v := binary.LittleEndian.Uint32(b)
		b = b[4:]
		return v, true
	}
	lists := func() ([][]float32, bool) {
		n, ok := u32()
		if !ok || int64(n) > int64(len(b)/4) {
			return nil, false
		}
		var out [][]float32
		for i := uint32(0); i < n; i++ {
			m, ok := u32()
			if !ok || int64(m) > int64(len(b)/4) {
				return nil, false
			}
			l := make([]float32, m)
			for j := range l {
				l[j] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*j:]))
			}
			b = b[4*m:]
			out = append(out, l)
		}
		return out, true
	}
	vec, ok1 := lists()
	spans, ok2 := lists()
	multi, ok3 := lists()
	if !ok1 || !ok2 || !ok3 || len(vec) > 1 || len(b) != 0 {
		return nil, errBadEntry
	}
	r := &result{Spans: spans, Multi: multi}
	if len(vec) == 1 {
		r.Vector = vec[0]
	}
	return r, nil
}
