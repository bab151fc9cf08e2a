package index

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/vembed/vembed/internal/atomicfile"
)

// SidecarDir is the folder of an index directory that holds, for each
// part of a multi-vector dataset, a sidecar file of its token vectors laid
// out for search (package search maps it instead of decoding the Parquet
// lists): vectors/NAME.mv for parts/NAME.parquet. A sidecar is written
// (durably) before its part is committed and removed after its part, so a
// reader that sees a part finds its sidecar.
const SidecarDir = "vectors"

// SidecarName is the sidecar file name of a part file name.
func SidecarName(part string) string { return strings.TrimSuffix(part, ".parquet") + ".mv" }

// The sidecar format, little-endian:
//
//	magic "VEMBMV01"
//	u32 element type (1: float32), u32 dimensions D
//	u64 rows N, u64 tokens T, u64 FNV-1a hash of the rows' ids
//	(N+1) u64 token offsets: row i's vectors are tokens off[i]..off[i+1]
//	T*W u64 sign codes, W = ceil(D/64): bit j%64 of word j/64 is set
//	      when dimension j is > 0
//	zero padding to a multiple of 64 bytes
//	T*D float32 vectors, the rows' as the Parquet part holds them
const (
	sidecarMagic  = "VEMBMV01"
	sidecarF32    = 1
	sidecarHeader = 8 + 4 + 4 + 8 + 8 + 8
	// maxSidecarDims bounds the width a sidecar may declare.
	maxSidecarDims = 1 << 16
)

// Sidecar is a parsed sidecar: views into data (a file mapping or its
// bytes read into memory).
type Sidecar struct {
	Dims    int
	Rows    int
	IDsHash uint64
	// Offsets has Rows+1 entries.
	Offsets []uint64
	// Codes holds Words() uint64 a token.
	Codes []byte
	// Vectors holds Dims float32 a token, little-endian.
	Vectors []byte
	// VectorsAt is the offset of Vectors in the file.
	VectorsAt int64
}

// Words is the number of 64-bit code words of a token.
func (s *Sidecar) Words() int { return (s.Dims + 63) / 64 }

// IDsHash is the hash a sidecar records of its part's ids, in row order.
func IDsHash(ids func(yield func(string) bool)) uint64 {
	h := fnv.New64a()
	for id := range ids {
		io.WriteString(h, id)
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// writeSidecar writes the sidecar of rows (multi-vector rows of dims
// values a token) durably to path.
func writeSidecar(path string, rows []Row, dims int) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("index: %w", err)
	}
	tokens := 0
	for i := range rows {
		tokens += len(rows[i].Vectors)
	}
	words := (dims + 63) / 64
	err := atomicfile.WriteDurable(path, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		var b [8]byte
		put64 := func(v uint64) { binary.LittleEndian.PutUint64(b[:], v); bw.Write(b[:]) }
		put32 := func(v uint32) { binary.LittleEndian.PutUint32(b[:4], v); bw.Write(b[:4]) }
		bw.WriteString(sidecarMagic)
		put32(sidecarF32)
		put32(uint32(dims))
		put64(uint64(len(rows)))
		put64(uint64(tokens))
		put64(IDsHash(func(yield func(string) bool) {
			for i := range rows {
				if !yield(rows[i].ID) {
					return
				}
			}
		}))
		off := uint64(0)
		put64(0)
		for i := range rows {
			off += uint64(len(rows[i].Vectors))
			put64(off)
		}
		code := make([]uint64, words)
		for i := range rows {
			for _, v := range rows[i].Vectors {
				if len(v) != dims {
					return fmt.Errorf("row %d: a token vector of %d values, want %d", i, len(v), dims)
				}
				clear(code)
				for j, x := range v {
					if x > 0 {
						code[j/64] |= 1 << (j % 64)
					}
				}
				for _, c := range code {
					put64(c)
				}
			}
		}
		pos := sidecarHeader + 8*(len(rows)+1) + 8*words*tokens
		bw.Write(make([]byte, pad64(pos)))
		for i := range rows {
			for _, v := range rows[i].Vectors {
				for _, x := range v {
					put32(math.Float32bits(x))
				}
			}
		}
		return bw.Flush()
	})
	if err != nil {
		return fmt.Errorf("index: writing %s: %w", path, err)
	}
	return nil
}

func pad64(n int) int { return (64 - n%64) % 64 }

// ParseSidecar checks data as a sidecar and returns its views. A file
// that is truncated or whose sizes disagree is an error, never a view
// past its end.
func ParseSidecar(data []byte) (*Sidecar, error) {
	if len(data) < sidecarHeader || string(data[:8]) != sidecarMagic {
		return nil, errors.New("not a vembed sidecar (bad magic)")
	}
	le := binary.LittleEndian
	typ, dims := le.Uint32(data[8:]), le.Uint32(data[12:])
	rows, tokens, hash := le.Uint64(data[16:]), le.Uint64(data[24:]), le.Uint64(data[32:])
	if typ != sidecarF32 {
		return nil, fmt.Errorf("sidecar element type %d (want %d, float32)", typ, sidecarF32)
	}
	if dims == 0 || dims > maxSidecarDims {
		return nil, fmt.Errorf("sidecar of %d dimensions", dims)
	}
	size := uint64(len(data))
	if rows > size/8 || tokens > size/4/uint64(dims) {
		return nil, fmt.Errorf("sidecar declares %d rows and %d tokens in %d bytes", rows, tokens, size)
	}
	words := (uint64(dims) + 63) / 64
	offEnd := uint64(sidecarHeader) + 8*(rows+1)
	codeEnd := offEnd + 8*words*tokens
	vecAt := codeEnd + uint64(pad64(int(codeEnd)))
	vecEnd := vecAt + 4*uint64(dims)*tokens
	if vecEnd != size {
		return nil, fmt.Errorf("sidecar of %d bytes, its header says %d", size, vecEnd)
	}
	s := &Sidecar{Dims: int(dims), Rows: int(rows), IDsHash: hash, Codes: data[offEnd:codeEnd], Vectors: data[vecAt:vecEnd], VectorsAt: int64(vecAt)}
	s.Offsets = make([]uint64, rows+1)
	prev := uint64(0)
	for i := range s.Offsets {
		o := le.Uint64(data[sidecarHeader+8*i:])
		if o < prev || o > tokens || (i == 0 && o != 0) {
			return nil, fmt.Errorf("sidecar offset %d of row %d out of order", o, i)
		}
		s.Offsets[i], prev = o, o
	}
	if prev != tokens {
		return nil, fmt.Errorf("sidecar offsets end at %d of %d tokens", prev, tokens)
	}
	return s, nil
}

// writeSidecarFor writes the sidecar of a part about to be committed when
// the run writes multi-vectors; it is a no-op otherwise.
func (r *run) writeSidecarFor(name string, rows []Row) error {
	if !r.o.Request.Multivector {
		return nil
	}
	dims := 0
	for i := range rows {
		if len(rows[i].Vectors) > 0 {
			dims = len(rows[i].Vectors[0])
			break
		}
	}
	if dims == 0 {
		dims = 1 // rows without vectors: a sidecar of no tokens
	}
	return writeSidecar(filepath.Join(r.o.Out, SidecarDir, SidecarName(name)), rows, dims)
}

// removeSidecar removes a part's sidecar, once the part itself is gone.
func (r *run) removeSidecar(name string) error {
	err := os.Remove(filepath.Join(r.o.Out, SidecarDir, SidecarName(name)))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("index: %w", err)
	}
	return nil
}

// removeStaleSidecars removes this shard's sidecars whose part the store
// does not hold (a run killed between a sidecar and its part's commit).
func (r *run) removeStaleSidecars(held map[string]bool) error {
	ents, err := os.ReadDir(filepath.Join(r.o.Out, SidecarDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("index: %w", err)
	}
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(strings.TrimPrefix(n, "."), r.tag+"-") {
			continue
		}
		if !isTemp(n) && held[strings.TrimSuffix(n, ".mv")+".parquet"] {
			continue
		}
		if err := os.Remove(filepath.Join(r.o.Out, SidecarDir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("index: removing a stale sidecar: %w", err)
		}
	}
	return nil
}

// WritePart writes rows as the part parts/name of the index folder dir,
// with its sidecar when they hold multi-vectors, outside any run: for
// datasets that benchmarks and tests make (a run commits its parts
// through its state store, which holds none of these).
func WritePart(dir, name string, rows []Row) error {
	if err := os.MkdirAll(filepath.Join(dir, PartsDir), 0o755); err != nil {
		return fmt.Errorf("index: %w", err)
	}
	for i := range rows {
		if len(rows[i].Vectors) > 0 {
			if err := writeSidecar(filepath.Join(dir, SidecarDir, SidecarName(name)), rows, len(rows[i].Vectors[0])); err != nil {
				return err
			}
			break
		}
	}
	return writePart(filepath.Join(dir, PartsDir, name), rows)
}
