package eval

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"
)

// A corpus store keeps a corpus's embeddings as they are computed, so a
// run that stops (interrupted, or a bad row without --skip-bad) resumes
// where it stopped and a finished corpus is not embedded again. One file
// per key (model, dataset, options) in the cache directory:
//
//	"VEVC" uint32(version 1) uint32(corpus size)
//	records: uint32 index, uint32 n, n float32 (single vector),
//	         uint32 rows, uint32 cols, rows·cols float32 (multi-vector),
//	         uint32 CRC-32 (IEEE) of the record's bytes before it
//
// all little-endian. Records are appended a batch at a time; reading stops
// at the first torn or corrupt record and the next write starts there.

const (
	storeMagic   = "VEVC"
	storeVersion = 1
	// maxStoreValues bounds one record's values, so a corrupt length
	// cannot make the reader allocate without limit.
	maxStoreValues = 1 << 26
)

// corpusStore is an open store file.
type corpusStore struct {
	mu sync.Mutex
	f  *os.File
}

// openStore opens (or creates) the store of key in dir for a corpus of n
// items and returns the vectors it already holds (nil where it has none).
func openStore(dir, key string, n int) (*corpusStore, []*Vectors, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("eval: cache: %w", err)
	}
	path := filepath.Join(dir, key+".vec")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("eval: cache: %w", err)
	}
	have := make([]*Vectors, n)
	good, err := readStore(f, have)
	if err == nil {
		// Drop a torn tail (or write a fresh header) before appending.
		if good == 0 {
			var hdr [12]byte
			copy(hdr[:], storeMagic)
			binary.LittleEndian.PutUint32(hdr[4:], storeVersion)
			binary.LittleEndian.PutUint32(hdr[8:], uint32(n))
			if _, err = f.WriteAt(hdr[:], 0); err == nil {
				good = int64(len(hdr))
			}
		}
		if err == nil {
			err = f.Truncate(good)
		}
		if err == nil {
			_, err = f.Seek(good, io.SeekStart)
		}
	}
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("eval: cache %s: %w", path, err)
	}
	return &corpusStore{f: f}, have, nil
}

// readStore reads the records of f into have and returns the offset after
// the last good one (0 when the header is missing or another corpus's).
func readStore(f *os.File, have []*Vectors) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	r := bufio.NewReaderSize(f, 1<<20)
	var hdr [12]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil
	}
	if string(hdr[:4]) != storeMagic || binary.LittleEndian.Uint32(hdr[4:]) != storeVersion || int(binary.LittleEndian.Uint32(hdr[8:])) != len(have) {
		return 0, nil
	}
	off := int64(len(hdr))
	for {
		idx, v, size, err := readRecord(r, st.Size()-off)
		if err != nil || idx >= len(have) {
			return off, nil
		}
		have[idx] = v
		off += size
	}
}

// recordReader reads a record's fields, keeping the first error.
type recordReader struct {
	r    io.Reader
	left int64 // bytes the file has left
	err  error
}

func (rr *recordReader) u32() uint32 {
	var b [4]byte
	if rr.err == nil {
		_, rr.err = io.ReadFull(rr.r, b[:])
		rr.left -= 4
	}
	return binary.LittleEndian.Uint32(b[:])
}

func (rr *recordReader) floats(n uint64) []float32 {
	if rr.err != nil || n == 0 {
		return nil
	}
	if n > maxStoreValues || int64(4*n) > rr.left {
		rr.err = errors.New("record longer than the file")
		return nil
	}
	b := make([]byte, 4*n)
	if _, rr.err = io.ReadFull(rr.r, b); rr.err != nil {
		return nil
	}
	rr.left -= int64(len(b))
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// readRecord reads one record of at most left bytes: its index, vectors
// and size in bytes.
func readRecord(r io.Reader, left int64) (int, *Vectors, int64, error) {
	crc := crc32.NewIEEE()
	rr := &recordReader{r: io.TeeReader(r, crc), left: left}
	idx := rr.u32()
	single := rr.floats(uint64(rr.u32()))
	rows, cols := rr.u32(), rr.u32()
	if rr.err == nil && rows > 0 && cols == 0 {
		rr.err = errors.New("rows of no values")
	}
	flat := rr.floats(uint64(rows) * uint64(cols))
	sum := crc.Sum32()
	rr.r = r
	if rr.u32() != sum && rr.err == nil {
		rr.err = errors.New("checksum mismatch")
	}
	if rr.err != nil {
		return 0, nil, 0, rr.err
	}
	v := &Vectors{Single: single}
	for i := range int(rows) {
		v.Multi = append(v.Multi, flat[i*int(cols):(i+1)*int(cols)])
	}
	return int(idx), v, left - rr.left, nil
}

// appendRecord encodes item idx's vectors as a record (nothing for ragged
// multi-vectors, which no model returns: they are then not kept).
func appendRecord(buf []byte, idx int, v *Vectors) []byte {
	cols := 0
	if len(v.Multi) > 0 {
		cols = len(v.Multi[0])
	}
	for _, row := range v.Multi {
		if len(row) != cols {
			return buf
		}
	}
	start := len(buf)
	put := func(u uint32) { buf = binary.LittleEndian.AppendUint32(buf, u) }
	put(uint32(idx))
	put(uint32(len(v.Single)))
	for _, x := range v.Single {
		put(math.Float32bits(x))
	}
	put(uint32(len(v.Multi)))
	put(uint32(cols))
	for _, row := range v.Multi {
		for _, x := range row {
			put(math.Float32bits(x))
		}
	}
	put(crc32.ChecksumIEEE(buf[start:]))
	return buf
}

// add appends the vectors of items first, first+1, ... (nil ones skipped)
// in one write.
func (s *corpusStore) add(first int, vs []*Vectors) error {
	var buf []byte
	for i, v := range vs {
		if v != nil {
			buf = appendRecord(buf, first+i, v)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.f.Write(buf); err != nil {
		return fmt.Errorf("eval: cache: %w", err)
	}
	return nil
}

func (s *corpusStore) close() error { return s.f.Close() }
