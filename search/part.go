package search

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/parquet-go/parquet-go"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/index"
	"github.com/vembed/vembed/kernels"
)

// Meta is what a hit says of its row.
type Meta struct {
	ID     string `parquet:"id"`
	Path   string `parquet:"path"`
	Page   int32  `parquet:"page"`
	SHA256 string `parquet:"sha256"`
	Model  string `parquet:"model"`
	Width  int32  `parquet:"width"`
	Height int32  `parquet:"height"`
	Text   string `parquet:"text"`
}

// singleRow reads a part's single vectors with the row's fields.
type singleRow struct {
	Meta
	Embedding []float32 `parquet:"embedding,list"`
}

// multiRow reads a part's multi-vectors (parts without a sidecar).
type multiRow struct {
	Meta
	Multivector [][]float32 `parquet:"multivector,list"`
}

// part is one Parquet part of the dataset, loaded for search.
type part struct {
	name  string
	stamp fileStamp
	meta  []Meta
	multi bool
	dims  int

	// Single vectors: one L2-normalized F32 row per item (zeros where
	// an item has none, empty[i] set).
	single *kernels.Matrix
	empty  []bool
	// q8 is the same rows in Q8_0 (a quarter of the bytes), which the
	// first stage scans; nil when the width is not a multiple of 32.
	q8 *kernels.Matrix

	// Multi-vectors: row i's tokens are off[i]..off[i+1]; codes holds
	// words uint64 a token (sign bits); vecs the token vectors,
	// little-endian, of type elem (float32 or float16), from the mapped
	// sidecar or read into memory (float32).
	off   []uint64
	codes []uint64
	words int
	// blocks holds the codes of 128-dimension tokens in blocks of 8
	// (planar) instead of codes, row i's from block blockOff[i].
	blocks   []uint64
	blockOff []int
	vecs     []byte
	elem     index.SidecarType
	// parquet reads a row's vectors from the part itself when it has no
	// sidecar (vecs nil).
	parquet *parquetRows
	// drop lets the kernel reclaim the pages of a mapped range once
	// read (nil for vectors in memory); unmap ends the mapping, once.
	drop  func(b []byte)
	unmap func()
	// broken: a read of the mapped sidecar faulted (tokens).
	broken atomic.Bool
}

// close ends the part's mapping at once: only when no search can run
// (Index.Close). A part a refresh drops is unmapped when it is no longer
// reachable (a search still running on an older snapshot holds it).
func (p *part) close() {
	if p.unmap != nil {
		p.unmap()
	}
}

// tokenBuf is a search worker's scratch for part.tokens.
type tokenBuf struct {
	raw []byte
}

// tokens returns row i's token vectors as a matrix of the sidecar's type
// (F32 or F16), over buf's memory unless they are in memory. A mapped
// sidecar's row is copied by a read that turns a fault
// into errCut: a sidecar cut short under its mapping (a file truncated in
// place; index runs rename whole files in) raises SIGBUS on the pages
// past its new end, which in the kernels' worker goroutines would end the
// process. The part is then marked broken, so that the next Refresh reads
// it again (and reports it).
func (p *part) tokens(i int, buf *tokenBuf) (*kernels.Matrix, error) {
	a, b := int(p.off[i]), int(p.off[i+1])
	if p.parquet != nil {
		m, err := p.parquet.tokens(i, b-a, p.dims, buf)
		if err != nil {
			p.broken.Store(true) // read again, and reported, at the next Refresh
		}
		return m, err
	}
	es := p.elem.Size()
	src := p.vecs[a*p.dims*es : b*p.dims*es]
	typ := gguf.TypeF32
	if p.elem == index.SidecarFloat16 {
		// The kernels widen float16 rows as they pack them (F16C,
		// NEON's FCVTL), exactly: the same products as converting the
		// rows to float32 first, without a pass over them in Go.
		typ = gguf.TypeF16
	}
	data := src
	if p.drop != nil {
		if cap(buf.raw) < len(src) {
			buf.raw = make([]byte, len(src))
		}
		data = buf.raw[:len(src)]
		if err := readMapped(func() { copy(data, src) }); err != nil {
			p.broken.Store(true)
			return nil, fmt.Errorf("sidecar %s: %w", index.SidecarName(p.name), err)
		}
		p.drop(src)
		runtime.KeepAlive(p) // src is its mapping
	}
	return kernels.NewMatrix(typ, b-a, p.dims, data)
}

// errCut is a read of a mapped sidecar that faulted.
var errCut = errors.New("cut short under its mapping (the file shrank since it was opened)")

// readMapped runs read, which reads from a mapping, a fault an error.
func readMapped(read func()) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = errCut
		}
	}()
	read()
	return nil
}

// loadPart reads parts/name (and its sidecar, for multi-vectors).
func loadPart(dir, name string, stamp fileStamp) (p *part, err error) {
	// A sidecar cut short while its header and codes are read faults
	// (SIGBUS); recovered below as a corrupt part.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("corrupt part file: %v", r)
		}
	}()
	f, err := os.Open(filepath.Join(dir, index.PartsDir, name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pf, err := parquet.OpenFile(f, stamp.size)
	if err != nil {
		return nil, err
	}
	p = &part{name: name, stamp: stamp}
	if _, ok := pf.Schema().Lookup("multivector", "list", "element", "list", "element"); !ok {
		return nil, errors.New("no multivector column: not a part of a vembed index")
	}
	p.multi = multiVectorPart(pf)
	if !p.multi {
		return p, p.readSingle(pf)
	}
	sc, unmap, drop, err := openSidecar(filepath.Join(dir, index.SidecarDir, index.SidecarName(name)))
	if err == nil {
		once := sync.OnceFunc(func() { unmap() })
		p.unmap, p.drop = once, drop
		if err := p.readMeta(pf); err != nil {
			once()
			return nil, err
		}
		if err := p.useSidecar(sc); err != nil {
			once()
			return nil, fmt.Errorf("sidecar %s: %w", index.SidecarName(name), err)
		}
		runtime.AddCleanup(p, func(f func()) { f() }, once)
		return p, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("sidecar %s: %w", index.SidecarName(name), err)
	}
	// No sidecar (an index written before sidecars existed, or one
	// removed): the sign codes are made from the part's rows, read once,
	// and a candidate's vectors are read from the part when scored, so
	// that memory holds the codes only, as with a sidecar.
	if err := p.readMulti(pf); err != nil {
		return nil, err
	}
	rf, err := os.Open(filepath.Join(dir, index.PartsDir, name))
	if err != nil {
		return nil, err
	}
	rpf, err := parquet.OpenFile(rf, stamp.size)
	if err != nil {
		rf.Close()
		return nil, err
	}
	p.parquet = &parquetRows{pf: rpf}
	once := sync.OnceFunc(func() { rf.Close() })
	p.unmap = once
	runtime.AddCleanup(p, func(f func()) { f() }, once)
	return p, nil
}

// parquetRows reads single rows' vectors from a part's Parquet file.
type parquetRows struct {
	mu sync.Mutex // one reader at a time: a slow path, kept simple
	pf *parquet.File
	// r is positioned at row next: an exact search reads a part's rows
	// in order, without seeking.
	r    *parquet.GenericReader[vectorsRow]
	next int
}

// read reads row i into rows[0].
func (pr *parquetRows) read(i int, rows []vectorsRow) (int, error) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.r == nil {
		pr.r = parquet.NewGenericReader[vectorsRow](pr.pf)
	}
	if i != pr.next {
		if err := pr.r.SeekToRow(int64(i)); err != nil {
			pr.next = -1
			return 0, err
		}
	}
	n, err := pr.r.Read(rows)
	pr.next = i + n
	if n == 0 {
		pr.next = -1
	}
	return n, err
}

// vectorsRow is the multi-vector column alone.
type vectorsRow struct {
	Multivector [][]float32 `parquet:"multivector,list"`
}

// tokens reads row i (n tokens of dims values, as the part held when it
// was loaded) into buf as an F32 matrix.
func (pr *parquetRows) tokens(i, n, dims int, buf *tokenBuf) (m *kernels.Matrix, err error) {
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("corrupt part file: %v", r)
		}
	}()
	if cap(buf.raw) < 4*n*dims {
		buf.raw = make([]byte, 4*n*dims)
	}
	data := buf.raw[:4*n*dims]
	if n > 0 {
		rows := make([]vectorsRow, 1)
		got, err := pr.read(i, rows)
		if got != 1 {
			return nil, fmt.Errorf("reading row %d of the part: %v", i, err)
		}
		v := rows[0].Multivector
		if len(v) != n {
			return nil, fmt.Errorf("row %d of the part holds %d token vectors, %d when it was loaded", i, len(v), n)
		}
		for t, tok := range v {
			if len(tok) != dims {
				return nil, fmt.Errorf("row %d of the part: a token vector of %d values, want %d", i, len(tok), dims)
			}
			for k, x := range tok {
				binary.LittleEndian.PutUint32(data[4*(t*dims+k):], math.Float32bits(x))
			}
		}
	}
	return kernels.NewMatrix(gguf.TypeF32, n, dims, data)
}

// multiVectorPart reports a part whose rows hold multi-vectors: its
// embedding column is empty in every row group.
func multiVectorPart(pf *parquet.File) bool {
	leaf, ok := pf.Schema().Lookup("embedding", "list", "element")
	if !ok {
		return false
	}
	mleaf, ok := pf.Schema().Lookup("multivector", "list", "element", "list", "element")
	if !ok {
		return false
	}
	var single, multi int64
	for _, rg := range pf.RowGroups() {
		cc := rg.ColumnChunks()
		single += cc[leaf.ColumnIndex].NumValues() - rg.NumRows()
		multi += cc[mleaf.ColumnIndex].NumValues() - rg.NumRows()
	}
	return multi > single
}

func readAll[T any](pf *parquet.File, each func(*T) error) error {
	r := parquet.NewGenericReader[T](pf)
	defer r.Close()
	buf := make([]T, 64)
	for {
		n, err := r.Read(buf)
		for i := range buf[:n] {
			if e := each(&buf[i]); e != nil {
				return e
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		clear(buf)
	}
}

func (p *part) readMeta(pf *parquet.File) error {
	return readAll(pf, func(m *Meta) error {
		p.meta = append(p.meta, *m)
		return nil
	})
}

func (p *part) readSingle(pf *parquet.File) error {
	var raw []byte
	var rows [][]float32
	err := readAll(pf, func(r *singleRow) error {
		p.meta = append(p.meta, r.Meta)
		rows = append(rows, r.Embedding)
		if p.dims == 0 {
			p.dims = len(r.Embedding)
		}
		return nil
	})
	if err != nil {
		return err
	}
	p.empty = make([]bool, len(rows))
	raw = make([]byte, 4*p.dims*len(rows))
	for i, v := range rows {
		if len(v) == 0 {
			p.empty[i] = true
			continue
		}
		if len(v) != p.dims {
			return fmt.Errorf("row %d: a vector of %d values, the part's others %d", i, len(v), p.dims)
		}
		putNormalized(raw[4*i*p.dims:], v)
	}
	if len(rows) == 0 || p.dims == 0 {
		return nil
	}
	if p.single, err = kernels.NewMatrix(gguf.TypeF32, len(rows), p.dims, raw); err != nil {
		return err
	}
	if p.dims%32 == 0 {
		flat := make([]float32, len(rows)*p.dims)
		for i := range flat {
			flat[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		q, err := gguf.Quantize(gguf.TypeQ8_0, flat)
		if err != nil {
			return err
		}
		p.q8, err = kernels.NewMatrix(gguf.TypeQ8_0, len(rows), p.dims, q)
		if err != nil {
			return err
		}
		// The VNNI tiers pack it once (1.06x its bytes) instead of
		// decoding it at every query: 7x faster scans on Zen 4.
		kernels.Prepare(p.q8)
	}
	return nil
}

// putNormalized writes v scaled to unit length (as eval.Score scores) as
// little-endian float32.
func putNormalized(dst []byte, v []float32) {
	var ss float64
	for _, x := range v {
		// A product is converted before it is added to (float64(a*b) + c): that
		// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
		// every build computes the same bits (kernels.TestNoFusedMultiplyAdd).
		ss += float64(float64(x) * float64(x))
	}
	inv := 1.0
	if ss > 0 {
		inv = 1 / math.Sqrt(ss)
	}
	for k, x := range v {
		binary.LittleEndian.PutUint32(dst[4*k:], math.Float32bits(float32(float64(x)*inv)))
	}
}

// readMulti reads a part's rows without a sidecar: their metadata and
// sign codes, the vectors dropped as read (a page of rows at a time).
func (p *part) readMulti(pf *parquet.File) error {
	p.off = []uint64{0}
	var code []uint64
	err := readAll(pf, func(r *multiRow) error {
		p.meta = append(p.meta, r.Meta)
		for _, v := range r.Multivector {
			if p.dims == 0 {
				p.dims = len(v)
				p.words = (p.dims + 63) / 64
				code = make([]uint64, p.words)
			}
			if len(v) != p.dims {
				return fmt.Errorf("row %d: a token vector of %d values, the part's others %d", len(p.meta)-1, len(v), p.dims)
			}
			signCode(code, v)
			p.codes = append(p.codes, code...)
		}
		p.off = append(p.off, p.off[len(p.off)-1]+uint64(len(r.Multivector)))
		return nil
	})
	if err != nil {
		return err
	}
	p.elem = index.SidecarFloat32
	p.buildBlocks()
	return nil
}

// signCode sets bit j of code when v[j] > 0 (the sidecar's rule).
func signCode(code []uint64, v []float32) {
	clear(code)
	for j, x := range v {
		if x > 0 {
			code[j/64] |= 1 << (j % 64)
		}
	}
}

// useSidecar takes the vectors from a sidecar that matches the part's
// rows.
func (p *part) useSidecar(sc *index.Sidecar) error {
	if sc.Rows != len(p.meta) {
		return fmt.Errorf("holds %d rows, the part %d", sc.Rows, len(p.meta))
	}
	h := index.IDsHash(func(yield func(string) bool) {
		for i := range p.meta {
			if !yield(p.meta[i].ID) {
				return
			}
		}
	})
	if h != sc.IDsHash {
		return errors.New("its ids are not the part's")
	}
	p.dims, p.words, p.off, p.vecs, p.elem = sc.Dims, sc.Words(), sc.Offsets, sc.Vectors, sc.Type
	// The codes are read once into memory (1/32 of the float32 vectors),
	// since every search reads all of them.
	p.codes = make([]uint64, len(sc.Codes)/8)
	for i := range p.codes {
		p.codes[i] = binary.LittleEndian.Uint64(sc.Codes[8*i:])
	}
	if p.drop != nil {
		p.drop(sc.Codes)
	}
	p.buildBlocks()
	return nil
}

// buildBlocks lays 2-word codes out in blocks (hamming.go) for the
// vector units.
func (p *part) buildBlocks() {
	if p.words != 2 {
		return
	}
	p.blockOff = make([]int, len(p.off))
	blocks := make([]uint64, 0, len(p.codes)+len(p.meta)*2*blockTokens)
	for i := range len(p.off) - 1 {
		blocks = planar(blocks, p.codes[2*p.off[i]:2*p.off[i+1]])
		p.blockOff[i+1] = len(blocks) / (2 * blockTokens)
	}
	p.blocks, p.codes = blocks, nil
}
