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

	"github.com/vembed/vembed/gguf"
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
//	u32 element type (1: float32, 2: float16), u32 dimensions D
//	u64 rows N, u64 tokens T, u64 FNV-1a hash of the rows' ids
//	(N+1) u64 token offsets: row i's vectors are tokens off[i]..off[i+1]
//	T*W u64 sign codes, W = ceil(D/64): bit j%64 of word j/64 is set
//	      when dimension j's stored value is > 0
//	zero padding to a multiple of 64 bytes
//	T*D vectors of the element type: float32, the rows' as the Parquet
//	      part holds them, or float16, each value rounded to the
//	      nearest binary16 (gguf.F32ToF16)
const (
	sidecarMagic  = "VEMBMV01"
	sidecarHeader = 8 + 4 + 4 + 8 + 8 + 8
	// maxSidecarDims bounds the width a sidecar may declare.
	maxSidecarDims = 1 << 16
)

// SidecarType is the element type of a sidecar's vectors, chosen when
// the index is written (vembed index --sidecar).
type SidecarType uint32

const (
	// SidecarFloat32 holds the vectors as the Parquet part does: a
	// search's exact stage scores them as eval.Score does, bit for bit.
	// The zero SidecarType means it.
	SidecarFloat32 SidecarType = 1
	// SidecarFloat16 holds every value rounded to the nearest binary16,
	// ties to even: half the bytes. Values beyond float16's range
	// (|x| >= 65520 before rounding) become infinities, NaNs stay NaNs.
	SidecarFloat16 SidecarType = 2
)

// ParseSidecarType reads "float32" or "float16".
func ParseSidecarType(s string) (SidecarType, error) {
	switch s {
	case "float32":
		return SidecarFloat32, nil
	case "float16":
		return SidecarFloat16, nil
	}
	return 0, fmt.Errorf("sidecar type %q: want float32 or float16", s)
}

func (t SidecarType) String() string {
	switch t.orDefault() {
	case SidecarFloat32:
		return "float32"
	case SidecarFloat16:
		return "float16"
	}
	return fmt.Sprintf("type %d", uint32(t))
}

func (t SidecarType) orDefault() SidecarType {
	if t == 0 {
		return SidecarFloat32
	}
	return t
}

// Size is the bytes of one value (0 for an unknown type).
func (t SidecarType) Size() int {
	switch t.orDefault() {
	case SidecarFloat32:
		return 4
	case SidecarFloat16:
		return 2
	}
	return 0
}

// Sidecar is a parsed sidecar: views into data (a file mapping or its
// bytes read into memory).
type Sidecar struct {
	Type    SidecarType
	Dims    int
	Rows    int
	IDsHash uint64
	// Offsets has Rows+1 entries.
	Offsets []uint64
	// Codes holds Words() uint64 a token.
	Codes []byte
	// Vectors holds Dims values of Type a token, little-endian.
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
// values a token) durably to path, its vectors of type typ. It returns
// how many finite values float16 could not hold (stored as infinities).
func writeSidecar(path string, rows []Row, dims int, typ SidecarType) (overflow int, err error) {
	typ = typ.orDefault()
	if typ.Size() == 0 {
		return 0, fmt.Errorf("index: writing %s: sidecar %s unknown", path, typ)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, fmt.Errorf("index: %w", err)
	}
	tokens := 0
	for i := range rows {
		tokens += len(rows[i].Vectors)
	}
	words := (dims + 63) / 64
	err = atomicfile.WriteDurable(path, func(w io.Writer) error {
		overflow = 0
		bw := bufio.NewWriterSize(w, 1<<20)
		var b [8]byte
		put64 := func(v uint64) { binary.LittleEndian.PutUint64(b[:], v); bw.Write(b[:]) }
		put32 := func(v uint32) { binary.LittleEndian.PutUint32(b[:4], v); bw.Write(b[:4]) }
		bw.WriteString(sidecarMagic)
		put32(uint32(typ))
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
		// The values as stored, so that the sign bits describe them (a
		// positive float32 below float16's smallest subnormal is 0).
		stored := make([]float32, dims)
		code := make([]uint64, words)
		for i := range rows {
			for _, v := range rows[i].Vectors {
				if len(v) != dims {
					return fmt.Errorf("row %d: a token vector of %d values, want %d", i, len(v), dims)
				}
				overflow += storedValues(stored, v, typ)
				clear(code)
				for j, x := range stored {
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
		tok := make([]byte, dims*typ.Size())
		for i := range rows {
			for _, v := range rows[i].Vectors {
				for j, x := range v {
					if typ == SidecarFloat16 {
						binary.LittleEndian.PutUint16(tok[2*j:], gguf.F32ToF16(x))
					} else {
						binary.LittleEndian.PutUint32(tok[4*j:], math.Float32bits(x))
					}
				}
				bw.Write(tok)
			}
		}
		return bw.Flush()
	})
	if err != nil {
		return 0, fmt.Errorf("index: writing %s: %w", path, err)
	}
	return overflow, nil
}

// storedValues sets dst to v's values as a sidecar of typ holds them, and
// returns how many finite values became infinities.
func storedValues(dst, v []float32, typ SidecarType) int {
	if typ != SidecarFloat16 {
		copy(dst, v)
		return 0
	}
	n := 0
	for j, x := range v {
		dst[j] = gguf.F16ToF32(gguf.F32ToF16(x))
		if math.IsInf(float64(dst[j]), 0) && !math.IsInf(float64(x), 0) {
			n++
		}
	}
	return n
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
	esize := uint64(SidecarType(typ).Size())
	if typ == 0 || esize == 0 {
		return nil, fmt.Errorf("sidecar element type %d: this version reads %d (float32) and %d (float16)", typ, SidecarFloat32, SidecarFloat16)
	}
	if dims == 0 || dims > maxSidecarDims {
		return nil, fmt.Errorf("sidecar of %d dimensions", dims)
	}
	size := uint64(len(data))
	if rows > size/8 || tokens > size/esize/uint64(dims) {
		return nil, fmt.Errorf("sidecar declares %d rows and %d tokens in %d bytes", rows, tokens, size)
	}
	words := (uint64(dims) + 63) / 64
	offEnd := uint64(sidecarHeader) + 8*(rows+1)
	codeEnd := offEnd + 8*words*tokens
	vecAt := codeEnd + uint64(pad64(int(codeEnd)))
	vecEnd := vecAt + esize*uint64(dims)*tokens
	if vecEnd != size {
		return nil, fmt.Errorf("sidecar of %d bytes, its header says %d", size, vecEnd)
	}
	s := &Sidecar{Type: SidecarType(typ), Dims: int(dims), Rows: int(rows), IDsHash: hash, Codes: data[offEnd:codeEnd], Vectors: data[vecAt:vecEnd], VectorsAt: int64(vecAt)}
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
	n, err := writeSidecar(filepath.Join(r.o.Out, SidecarDir, SidecarName(name)), rows, dims, r.o.Sidecar)
	if n > 0 {
		r.log.Warn("index: vector values beyond float16's range are stored as infinities in the sidecar", "part", name, "values", n)
	}
	return err
}

// sidecarTypeOf reads the element type a sidecar's header declares;
// ok is false when the file is missing, and err set when it is not a
// sidecar.
func sidecarTypeOf(path string) (typ SidecarType, ok bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	var h [12]byte
	if _, err := io.ReadFull(f, h[:]); err != nil || string(h[:8]) != sidecarMagic {
		return 0, true, errors.New("not a vembed sidecar")
	}
	return SidecarType(binary.LittleEndian.Uint32(h[8:])), true, nil
}

// matchSidecars rewrites, from their parts' rows, this shard's sidecars
// whose element type is not the run's (--sidecar changed since they were
// written) or whose header is not a sidecar's, and writes those missing
// (an index written before sidecars existed, a sidecar removed), so that
// every part has a sidecar of the type the folder's last run asked for.
func (r *run) matchSidecars() error {
	if !r.o.Request.Multivector {
		return nil
	}
	names, err := r.store.partNames()
	if err != nil {
		return err
	}
	want := r.o.Sidecar.orDefault()
	converted := 0
	for _, n := range names {
		typ, ok, err := sidecarTypeOf(filepath.Join(r.o.Out, SidecarDir, SidecarName(n)))
		if ok && err == nil && typ == want {
			continue
		}
		rows, err := ReadPart(filepath.Join(r.o.Out, PartsDir, n))
		if err != nil {
			return fmt.Errorf("index: rewriting the sidecar of %s as %s: %w", n, want, err)
		}
		if err := r.writeSidecarFor(n, rows); err != nil {
			return err
		}
		converted++
	}
	if converted > 0 {
		r.log.Info("index: sidecars written again in the run's element type", "sidecars", converted, "type", want.String())
	}
	return nil
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
// with its sidecar (of type sidecar) when they hold multi-vectors,
// outside any run: for datasets that benchmarks and tests make (a run
// commits its parts through its state store, which holds none of these).
func WritePart(dir, name string, rows []Row, sidecar SidecarType) error {
	if err := os.MkdirAll(filepath.Join(dir, PartsDir), 0o755); err != nil {
		return fmt.Errorf("index: %w", err)
	}
	for i := range rows {
		if len(rows[i].Vectors) > 0 {
			if _, err := writeSidecar(filepath.Join(dir, SidecarDir, SidecarName(name)), rows, len(rows[i].Vectors[0]), sidecar); err != nil {
				return err
			}
			break
		}
	}
	return writePart(filepath.Join(dir, PartsDir, name), rows)
}
