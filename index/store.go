package index

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Key identifies an item's embedding: the item's id and content, the model
// files and arithmetic, and the options (Keys.Item).
type Key [32]byte

// store is the state of one shard's index in a bbolt file: the truth for
// which items are finished and in which part file their rows are. bbolt
// commits are atomic and fsynced, so a killed run keeps every item it
// committed and nothing half-committed.
//
// Buckets:
//   - items: Key -> itemRec (finished items)
//   - ids:   id -> Key of the live item with that id (an id changes key
//     when the model or the options change)
//   - parts: part name -> partRec (the keys of its rows, in row order)
//   - acks/NAME: part name -> "" once sink NAME acknowledged its rows
//   - dels/NAME: id -> "" for removals sink NAME has not acknowledged
//   - meta: "gen" -> run counter (uint64)
//   - pdfpages: a PDF's SHA-256 -> its page count (uint32), so that an
//     unchanged PDF whose pages are finished need not be opened
//   - moved: Key -> "" for finished items whose first path in this run's
//     walk is not their row's (the row is rewritten with it)
type store struct {
	db *bolt.DB
}

type itemRec struct {
	ID   string `json:"id"`
	Part string `json:"part"`
	Gen  uint64 `json:"gen"` // the last run whose walk saw the item
	// Path is the row's path (empty in stores written before it was
	// kept: such rows are read to compare).
	Path string `json:"path,omitempty"`
}

// partRec is a part's record: the keys of its rows in row order, stored
// as their concatenated bytes.
type partRec struct {
	Keys []Key
}

func (p partRec) encode() []byte {
	b := make([]byte, 0, 32*len(p.Keys))
	for _, k := range p.Keys {
		b = append(b, k[:]...)
	}
	return b
}

func decodePart(name, v []byte) (partRec, error) {
	if len(v)%32 != 0 {
		return partRec{}, fmt.Errorf("index: the store's record of part %s is %d bytes, not whole keys", name, len(v))
	}
	keys := make([]Key, len(v)/32)
	for i := range keys {
		copy(keys[i][:], v[32*i:])
	}
	return partRec{Keys: keys}, nil
}

var (
	bItems = []byte("items")
	bIDs   = []byte("ids")
	bParts = []byte("parts")
	bMeta  = []byte("meta")
	bPages = []byte("pdfpages")
	bMoved = []byte("moved")
)

func ackBucket(sink string) []byte { return []byte("acks/" + sink) }
func delBucket(sink string) []byte { return []byte("dels/" + sink) }

func openStore(path string) (*store, error) {
	db, err := bolt.Open(path, 0o644, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("index: %s is in use by another run of this shard", path)
		}
		return nil, fmt.Errorf("index: opening the state store %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bItems, bIDs, bParts, bMeta, bPages, bMoved} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("index: %s: %w", path, err)
	}
	return &store{db: db}, nil
}

func (s *store) Close() error { return s.db.Close() }

// nextGen starts a run: its generation marks the items its walk sees.
func (s *store) nextGen() (uint64, error) {
	var gen uint64
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bMeta)
		if v := b.Get([]byte("gen")); len(v) == 8 {
			gen = binary.BigEndian.Uint64(v)
		}
		gen++
		return b.Put([]byte("gen"), binary.BigEndian.AppendUint64(nil, gen))
	})
	return gen, err
}

// has reports whether the item is finished.
func (s *store) has(k Key) (bool, error) {
	var ok bool
	err := s.db.View(func(tx *bolt.Tx) error {
		ok = tx.Bucket(bItems).Get(k[:]) != nil
		return nil
	})
	return ok, err
}

// item returns a finished item's record; ok is false when it is not
// finished.
func (s *store) item(k Key) (r itemRec, ok bool, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		r, ok, err = getItem(tx.Bucket(bItems), k)
		return err
	})
	return r, ok, err
}

// seenItem is a finished item the walk met first at path.
type seenItem struct {
	key  Key
	path string
}

// markSeen sets the generation of finished items the walk met, and queues
// in the moved bucket those met first at another path than their row's.
func (s *store) markSeen(seen []seenItem, gen uint64) error {
	if len(seen) == 0 {
		return nil
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		b, moved := tx.Bucket(bItems), tx.Bucket(bMoved)
		for _, it := range seen {
			k := it.key
			r, ok, err := getItem(b, k)
			if err != nil {
				return err
			}
			if !ok || r.Gen == gen {
				continue
			}
			r.Gen = gen
			if r.Path != it.path {
				r.Path = it.path
				if err := moved.Put(k[:], nil); err != nil {
					return err
				}
			}
			if err := putJSON(b, k[:], r); err != nil {
				return err
			}
		}
		return nil
	})
}

// firstMoved returns the part of a queued moved item, clearing the queued
// items whose part is gone; ok is false when none is queued.
func (s *store) firstMoved() (part string, ok bool, err error) {
	// Read first: a run with nothing queued commits nothing.
	var stale []Key
	err = s.db.View(func(tx *bolt.Tx) error {
		items, c := tx.Bucket(bItems), tx.Bucket(bMoved).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			r, found, err := getItem(items, Key(k))
			if err != nil {
				return err
			}
			if found && tx.Bucket(bParts).Get([]byte(r.Part)) != nil {
				part, ok = r.Part, true
				return nil
			}
			stale = append(stale, Key(k))
		}
		return nil
	})
	if err == nil && len(stale) > 0 {
		err = s.unqueueMoved(stale)
	}
	return part, ok, err
}

// movedPaths returns, for each row of a part, the path its item's record
// holds when the item is queued as moved and lives in the part ("" for
// the others).
func (s *store) movedPaths(name string, pr partRec) ([]string, error) {
	paths := make([]string, len(pr.Keys))
	err := s.db.View(func(tx *bolt.Tx) error {
		items, moved := tx.Bucket(bItems), tx.Bucket(bMoved)
		for i, k := range pr.Keys {
			if moved.Get(k[:]) == nil {
				continue
			}
			r, ok, err := getItem(items, k)
			if err != nil {
				return err
			}
			if ok && r.Part == name {
				paths[i] = r.Path
			}
		}
		return nil
	})
	return paths, err
}

// unqueueMoved clears keys from the moved queue.
func (s *store) unqueueMoved(keys []Key) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return clearMoved(tx, keys)
	})
}

func clearMoved(tx *bolt.Tx, keys []Key) error {
	b := tx.Bucket(bMoved)
	for _, k := range keys {
		if err := b.Delete(k[:]); err != nil {
			return err
		}
	}
	return nil
}

// addPart records a part file and its items (rows in order) in one
// transaction. Items already finished (a duplicate) keep their part.
func (s *store) addPart(name string, keys []Key, ids, paths []string, gen uint64) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bParts).Put([]byte(name), partRec{Keys: keys}.encode()); err != nil {
			return err
		}
		items, idb := tx.Bucket(bItems), tx.Bucket(bIDs)
		for i, k := range keys {
			if err := putJSON(items, k[:], itemRec{ID: ids[i], Part: name, Gen: gen, Path: paths[i]}); err != nil {
				return err
			}
			if err := idb.Put([]byte(ids[i]), k[:]); err != nil {
				return err
			}
		}
		return nil
	})
}

// partNames returns the names of the recorded parts, in order (a name per
// part file: the records' keys are read one part at a time).
func (s *store) partNames() ([]string, error) {
	var out []string
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bParts).ForEach(func(k, _ []byte) error {
			out = append(out, string(k))
			return nil
		})
	})
	return out, err
}

// part returns a part's record; ok is false when it is not recorded.
func (s *store) part(name string) (pr partRec, ok bool, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bParts).Get([]byte(name))
		if v == nil {
			return nil
		}
		ok = true
		pr, err = decodePart([]byte(name), v)
		return err
	})
	return pr, ok, err
}

// liveRows returns, for a part, which of its rows (by position) are items
// that still live in it.
func (s *store) liveRows(name string, pr partRec) ([]bool, error) {
	live := make([]bool, len(pr.Keys))
	err := s.db.View(func(tx *bolt.Tx) error {
		items := tx.Bucket(bItems)
		for i, k := range pr.Keys {
			r, ok, err := getItem(items, k)
			if err != nil {
				return err
			}
			live[i] = ok && r.Part == name
		}
		return nil
	})
	return live, err
}

// unseen returns up to max finished items whose generation is not gen
// (items of documents that this run's walk did not meet), from the first
// key after after (nil: from the start), and the last key it looked at.
func (s *store) unseen(gen uint64, after []byte, max int) (map[Key]itemRec, []byte, error) {
	out := map[Key]itemRec{}
	var last []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bItems).Cursor()
		k, v := c.First()
		if after != nil {
			k, v = c.Seek(after)
			if k != nil && string(k) == string(after) {
				k, v = c.Next()
			}
		}
		for ; k != nil && len(out) < max; k, v = c.Next() {
			var r itemRec
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			if r.Gen != gen {
				out[Key(k)] = r
			}
			last = append(last[:0], k...)
		}
		return nil
	})
	return out, last, err
}

// removeItems drops items from the store; ids that no other item holds
// are queued for removal from every sink in sinks.
func (s *store) removeItems(dead map[Key]itemRec, sinks []string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		items, idb := tx.Bucket(bItems), tx.Bucket(bIDs)
		for k, r := range dead {
			if err := items.Delete(k[:]); err != nil {
				return err
			}
			if cur := idb.Get([]byte(r.ID)); cur != nil && Key(cur) == k {
				if err := idb.Delete([]byte(r.ID)); err != nil {
					return err
				}
				for _, sn := range sinks {
					b, err := tx.CreateBucketIfNotExists(delBucket(sn))
					if err != nil {
						return err
					}
					if err := b.Put([]byte(r.ID), nil); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
}

// replaceParts records that the live rows of the parts olds now live in
// part new (keys in row order; "" when none is left) and forgets olds, in
// one transaction. A sink that acknowledged every old part has the new
// one's rows already, so the new part counts as acknowledged by it.
func (s *store) replaceParts(olds []string, new string, keys []Key) error {
	return s.replace(olds, new, keys, true)
}

// rewritePart records that part old's rows, some with another path, now
// live in part new (keys in row order), and clears those keys from the
// moved queue, in one transaction. No sink has the new paths: the new
// part is not acknowledged by any.
func (s *store) rewritePart(old, new string, keys []Key) error {
	return s.replace([]string{old}, new, keys, false)
}

func (s *store) replace(olds []string, new string, keys []Key, keepAcks bool) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		if !keepAcks {
			if err := clearMoved(tx, keys); err != nil {
				return err
			}
		}
		parts, items := tx.Bucket(bParts), tx.Bucket(bItems)
		if new != "" {
			if err := parts.Put([]byte(new), partRec{Keys: keys}.encode()); err != nil {
				return err
			}
			for _, k := range keys {
				r, ok, err := getItem(items, k)
				if err != nil {
					return err
				}
				if !ok {
					continue
				}
				r.Part = new
				if err := putJSON(items, k[:], r); err != nil {
					return err
				}
			}
		}
		for _, old := range olds {
			if err := parts.Delete([]byte(old)); err != nil {
				return err
			}
		}
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if len(name) <= 5 || string(name[:5]) != "acks/" {
				return nil
			}
			all := true
			for _, old := range olds {
				if b.Get([]byte(old)) == nil {
					all = false
				}
				if err := b.Delete([]byte(old)); err != nil {
					return err
				}
			}
			if all && new != "" && keepAcks {
				return b.Put([]byte(new), nil)
			}
			return nil
		})
	})
}

// dropPart forgets a part whose file is lost (a crash before its rename)
// and the items in it, which the run then embeds again.
func (s *store) dropPart(name string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		parts, items, idb := tx.Bucket(bParts), tx.Bucket(bItems), tx.Bucket(bIDs)
		v := parts.Get([]byte(name))
		if v == nil {
			return nil
		}
		pr, err := decodePart([]byte(name), v)
		if err != nil {
			return err
		}
		for _, k := range pr.Keys {
			iv := items.Get(k[:])
			if iv == nil {
				continue
			}
			var r itemRec
			if err := json.Unmarshal(iv, &r); err != nil {
				return err
			}
			if r.Part != name {
				continue
			}
			if err := items.Delete(k[:]); err != nil {
				return err
			}
			if cur := idb.Get([]byte(r.ID)); cur != nil && Key(cur) == k {
				if err := idb.Delete([]byte(r.ID)); err != nil {
					return err
				}
			}
		}
		return parts.Delete([]byte(name))
	})
}

// acked reports which parts sink has acknowledged.
func (s *store) acked(sink string) (map[string]bool, error) {
	out := map[string]bool{}
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(ackBucket(sink))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			out[string(k)] = true
			return nil
		})
	})
	return out, err
}

func (s *store) ack(sink, part string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(ackBucket(sink))
		if err != nil {
			return err
		}
		return b.Put([]byte(part), nil)
	})
}

// pendingDeletes returns the ids sink has yet to remove (at most max).
func (s *store) pendingDeletes(sink string, max int) ([]string, error) {
	var ids []string
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(delBucket(sink))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, _ := c.First(); k != nil && len(ids) < max; k, _ = c.Next() {
			ids = append(ids, string(k))
		}
		return nil
	})
	return ids, err
}

func (s *store) deletesDone(sink string, ids []string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(delBucket(sink))
		if b == nil {
			return nil
		}
		for _, id := range ids {
			if err := b.Delete([]byte(id)); err != nil {
				return err
			}
		}
		return nil
	})
}

// count returns the number of finished items.
func (s *store) count() (int, error) {
	var n int
	err := s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bItems).Stats().KeyN
		return nil
	})
	return n, err
}

// getItem reads item k's record from the items bucket b; ok is false
// when the store has no such item.
func getItem(b *bolt.Bucket, k Key) (r itemRec, ok bool, err error) {
	v := b.Get(k[:])
	if v == nil {
		return r, false, nil
	}
	if err := json.Unmarshal(v, &r); err != nil {
		return r, false, err
	}
	return r, true, nil
}

func putJSON(b *bolt.Bucket, k []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(k, data)
}

// pageCount returns the page count recorded for a PDF's content.
func (s *store) pageCount(sha string) (int, bool, error) {
	var n int
	var ok bool
	err := s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bPages).Get([]byte(sha)); len(v) == 4 {
			n, ok = int(binary.BigEndian.Uint32(v)), true
		}
		return nil
	})
	return n, ok, err
}

func (s *store) setPageCount(sha string, n int) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bPages).Put([]byte(sha), binary.BigEndian.AppendUint32(nil, uint32(n)))
	})
}
