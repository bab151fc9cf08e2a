package eval

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// LoadViDoRe reads a dataset in ViDoRe v1's layout: one table (a Parquet
// file, or a directory of them, as Hugging Face shards it) whose rows hold
// a "query" (null on rows that only add a page) and the page "image"
// ({"bytes", "path"}) it was asked about, with "image_filename" naming the
// page. It builds what the ViDoRe benchmark's evaluator builds: every
// distinct page (by image_filename, else by content) is a document; every
// distinct query text is one query, its id the text, judged relevant (1)
// to the page of the last row that asks it. Errors name the file and row;
// with skipBad bad rows are counted instead.
func LoadViDoRe(path string, skipBad bool) (*Dataset, error) {
	files, err := parquetFiles(path, "")
	if err != nil {
		return nil, err
	}
	d := &Dataset{Name: strings.TrimSuffix(filepath.Base(filepath.Clean(path)), ".parquet"), Qrels: Qrels{}}
	pages := map[string]bool{}
	for _, f := range files {
		if err := readViDoRe(f, d, pages, skipBad); err != nil {
			return nil, err
		}
	}
	if len(d.Corpus) == 0 || len(d.Queries) == 0 {
		return nil, fmt.Errorf("eval: %s: no pages or no queries (%d, %d)", path, len(d.Corpus), len(d.Queries))
	}
	return d, nil
}

// maxParquetExpansion bounds how much larger than its file a column
// chunk may say it decodes to: Parquet's codecs on real tables stay far
// below, and a corrupt size cannot then make the decoder allocate without
// limit.
const maxParquetExpansion = 64

// openParquet opens a Parquet file once its framing and declared sizes
// are plausible: the magic at both ends, a footer inside the file, column
// chunks no larger than the file (compressed) or maxParquetExpansion
// times it (decoded). The decoder would otherwise allocate what a
// corrupt length says before finding out.
func openParquet(path string) (*os.File, *parquet.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("eval: %w", err)
	}
	pf, err := checkParquet(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("eval: %s: not a readable Parquet file: %w", path, err)
	}
	return f, pf, nil
}

func checkParquet(f *os.File) (*parquet.File, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	var head, tail [8]byte
	if size < 12 {
		return nil, errors.New("too short")
	}
	if _, err := f.ReadAt(head[:4], 0); err != nil {
		return nil, err
	}
	if _, err := f.ReadAt(tail[:], size-8); err != nil {
		return nil, err
	}
	if string(head[:4]) != "PAR1" || string(tail[4:]) != "PAR1" {
		return nil, errors.New("no PAR1 magic at both ends")
	}
	if footer := int64(binary.LittleEndian.Uint32(tail[:4])); footer > size-12 {
		return nil, fmt.Errorf("footer of %d bytes in a file of %d", footer, size)
	}
	pf, err := parquet.OpenFile(f, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, err
	}
	for _, rg := range pf.Metadata().RowGroups {
		for _, c := range rg.Columns {
			m := c.MetaData
			if m.TotalCompressedSize < 0 || m.TotalCompressedSize > size || m.TotalUncompressedSize < 0 || m.TotalUncompressedSize > maxParquetExpansion*size {
				return nil, fmt.Errorf("column %s declares %d bytes (%d compressed) in a file of %d", strings.Join(m.PathInSchema, "."), m.TotalUncompressedSize, m.TotalCompressedSize, size)
			}
		}
	}
	return pf, nil
}

// parquetFiles lists the Parquet files of path: the file itself, or the
// .parquet files under a directory, in name order; with a split, only the
// shards of that split when the directory has any (Hugging Face names
// them SPLIT-00000-of-00001.parquet, or puts them under SPLIT/).
func parquetFiles(path, split string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	var files, ofSplit []string
	err = filepath.WalkDir(path, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(p, ".parquet") {
			files = append(files, p)
			base := filepath.Base(p)
			if split != "" && (strings.HasPrefix(base, split+"-") || strings.HasPrefix(base, split+".") || filepath.Base(filepath.Dir(p)) == split) {
				ofSplit = append(ofSplit, p)
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	if len(ofSplit) > 0 {
		files = ofSplit
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("eval: %s holds no .parquet file", path)
	}
	sort.Strings(files)
	return files, nil
}

// readViDoRe adds one file's rows to d.
func readViDoRe(path string, d *Dataset, pages map[string]bool, skipBad bool) error {
	rows, err := readTable(path, "", []string{"query"}, []string{"image.bytes", "image", "image.path"})
	if err != nil {
		return err
	}
	for _, row := range rows {
		if err := addViDoRe(d, pages, row.c, filepath.Dir(path), filepath.Base(path), row.n); err != nil {
			if !skipBad {
				return err
			}
			d.Bad = append(d.Bad, err)
		}
	}
	return nil
}

// addViDoRe adds row n of a ViDoRe table: its page, and its query if it
// has one.
func addViDoRe(d *Dataset, pages map[string]bool, row map[string]cell, dir, file string, n int) error {
	img, _ := first(row, "image.bytes", "image")
	if len(img.b) == 0 {
		// An image stored beside the table, as datasets saved without
		// embedding their files are.
		p, _ := first(row, "image.path")
		if p.s == "" {
			return fmt.Errorf("eval: %s row %d: no image bytes or path", file, n)
		}
		b, err := readLocal(dir, p.s)
		if err != nil {
			return fmt.Errorf("eval: %s row %d: image: %w", file, n, err)
		}
		img = cell{b: b, valid: true}
	}
	name, _ := first(row, "image_filename")
	page := name.s
	if page == "" {
		sum := sha256.Sum256(img.b)
		page = "sha256:" + hex.EncodeToString(sum[:8])
	}
	if !pages[page] {
		pages[page] = true
		d.Corpus = append(d.Corpus, Item{ID: page, Image: img.b})
	}
	q, _ := first(row, "query")
	if strings.TrimSpace(q.s) == "" {
		return nil
	}
	if d.Qrels[q.s] == nil {
		d.Queries = append(d.Queries, Item{ID: q.s, Text: q.s})
	}
	d.Qrels[q.s] = map[string]int{page: 1}
	return nil
}

// Load reads a dataset in whichever layout path holds: a BEIR directory
// (corpus.jsonl), the BEIR layout in Parquet (corpus.parquet or corpus/),
// or a ViDoRe v1 table (a .parquet file or a directory of them).
func Load(path, split string, skipBad bool) (*Dataset, error) {
	if _, err := os.Stat(filepath.Join(path, "corpus.jsonl")); err == nil {
		return LoadBEIR(path, split, skipBad)
	}
	for _, n := range []string{"corpus.parquet", "corpus"} {
		if _, err := os.Stat(filepath.Join(path, n)); err == nil {
			return LoadBEIRParquet(path, split, skipBad)
		}
	}
	return LoadViDoRe(path, skipBad)
}

// cell is a leaf value of a Parquet row: text, bytes or a number, as
// text.
type cell struct {
	s     string
	b     []byte
	valid bool
}

// tableRow is row n (from 1) of a Parquet file, its leaf columns by
// dotted path.
type tableRow struct {
	file string
	n    int
	c    map[string]cell
}

// readTable reads every row of a Parquet file (or of a directory's shards
// of split) as its leaf columns by dotted path ("corpus-id",
// "image.bytes"), whatever their physical types. It checks that every
// file has a column from each group of want (names that serve alike, as
// "corpus-id" and "_id"), naming the file and the group when one lacks
// them. A corrupt file can make the decoder panic; that becomes an error
// naming the file.
func readTable(path, split string, want ...[]string) (rows []tableRow, err error) {
	files, err := parquetFiles(path, split)
	if err != nil {
		return nil, err
	}
	for _, file := range files {
		if err := readTableFile(file, &rows, want); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

func readTableFile(path string, rows *[]tableRow, want [][]string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("eval: %s: corrupt Parquet file: %v", path, r)
		}
	}()
	f, pf, err := openParquet(path)
	if err != nil {
		return err
	}
	defer f.Close()
	cols := pf.Schema().Columns()
	names := make([]string, len(cols))
	have := map[string]bool{}
	for i, c := range cols {
		names[i] = strings.Join(c, ".")
		have[names[i]] = true
	}
	for _, group := range want {
		if !slices.ContainsFunc(group, func(n string) bool { return have[n] }) {
			return fmt.Errorf("eval: %s: no %s column (it has %s)", path, strings.Join(group, " or "), strings.Join(names, ", "))
		}
	}
	r := parquet.NewReader(pf)
	defer r.Close()
	buf := make([]parquet.Row, 32)
	for read := 0; ; {
		n, rerr := r.ReadRows(buf)
		for _, row := range buf[:n] {
			m := make(map[string]cell, len(names))
			for _, v := range row {
				if c := v.Column(); c >= 0 && c < len(names) && !v.IsNull() {
					m[names[c]] = valueCell(v)
				}
			}
			read++
			*rows = append(*rows, tableRow{path, read, m})
		}
		if errors.Is(rerr, io.EOF) {
			return nil
		}
		if rerr != nil {
			return fmt.Errorf("eval: %s row %d: %w", path, read+1, rerr)
		}
	}
}

func valueCell(v parquet.Value) cell {
	switch v.Kind() {
	case parquet.ByteArray, parquet.FixedLenByteArray:
		b := append([]byte(nil), v.ByteArray()...)
		return cell{s: string(b), b: b, valid: true}
	case parquet.Int32:
		return cell{s: fmt.Sprint(v.Int32()), valid: true}
	case parquet.Int64:
		return cell{s: fmt.Sprint(v.Int64()), valid: true}
	case parquet.Float:
		return cell{s: fmt.Sprint(v.Float()), valid: true}
	case parquet.Double:
		return cell{s: fmt.Sprint(v.Double()), valid: true}
	case parquet.Boolean:
		return cell{s: fmt.Sprint(v.Boolean()), valid: true}
	}
	return cell{}
}

// first returns the first present column among names.
func first(row map[string]cell, names ...string) (cell, string) {
	for _, n := range names {
		if c, ok := row[n]; ok && c.valid {
			return c, n
		}
	}
	return cell{}, ""
}

// LoadBEIRParquet reads the BEIR layout stored as Parquet, as MTEB and
// ViDoRe v2 and v3 publish it: corpus, queries and qrels tables, each a
// file (corpus.parquet) or a directory of shards (corpus/, the split's
// shards only when it has several splits), qrels as qrels/SPLIT.parquet,
// qrels.parquet or qrels/. Columns by their usual names, hyphenated (v2)
// or not (v3): corpus-id, corpus_id or _id, image (bytes, or a path
// beside the table) and text or title; query-id, query_id or _id and
// query or text; query-id, corpus-id and score. Other columns (v3's
// markdown, languages, answers) are ignored. Errors name the file and
// row; with skipBad bad rows are counted instead.
func LoadBEIRParquet(dir, split string, skipBad bool) (*Dataset, error) {
	find := func(names ...string) (string, error) {
		for _, n := range names {
			if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
				return filepath.Join(dir, n), nil
			}
		}
		return "", fmt.Errorf("eval: %s: none of %v", dir, names)
	}
	d := &Dataset{Name: filepath.Base(filepath.Clean(dir)), Qrels: Qrels{}}
	bad := func(row tableRow, format string, args ...any) error {
		err := fmt.Errorf("eval: %s row %d: %s", row.file, row.n, fmt.Sprintf(format, args...))
		if !skipBad {
			return err
		}
		d.Bad = append(d.Bad, err)
		return nil
	}
	var (
		corpusIDs = []string{"corpus-id", "corpus_id", "_id", "id"}
		queryIDs  = []string{"query-id", "query_id", "_id", "id"}
	)
	cp, err := find("corpus.parquet", "corpus")
	if err != nil {
		return nil, err
	}
	corpus, err := readTable(cp, split, corpusIDs, []string{"image.bytes", "image", "image.path", "text", "title"})
	if err != nil {
		return nil, err
	}
	for _, row := range corpus {
		id, _ := first(row.c, corpusIDs...)
		img, _ := first(row.c, "image.bytes", "image")
		text, _ := first(row.c, "text", "title")
		if p, _ := first(row.c, "image.path"); len(img.b) == 0 && p.s != "" {
			b, err := readLocal(filepath.Dir(row.file), p.s)
			if err != nil {
				if err := bad(row, "image: %v", err); err != nil {
					return nil, err
				}
				continue
			}
			img = cell{b: b, valid: true}
		}
		if !id.valid || (len(img.b) == 0 && text.s == "") {
			if err := bad(row, "want an id (%s) and an image or text", strings.Join(corpusIDs, " or ")); err != nil {
				return nil, err
			}
			continue
		}
		d.Corpus = append(d.Corpus, Item{ID: id.s, Text: text.s, Image: img.b})
	}
	qp, err := find("queries.parquet", "queries")
	if err != nil {
		return nil, err
	}
	queries, err := readTable(qp, split, queryIDs, []string{"query", "text"})
	if err != nil {
		return nil, err
	}
	for _, row := range queries {
		id, _ := first(row.c, queryIDs...)
		text, _ := first(row.c, "query", "text")
		if !id.valid || text.s == "" {
			if err := bad(row, "want an id (%s) and a query or text", strings.Join(queryIDs, " or ")); err != nil {
				return nil, err
			}
			continue
		}
		d.Queries = append(d.Queries, Item{ID: id.s, Text: text.s})
	}
	rp, err := find(filepath.Join("qrels", split+".parquet"), "qrels.parquet", "qrels")
	if err != nil {
		return nil, err
	}
	qrels, err := readTable(rp, split, []string{"query-id", "query_id"}, []string{"corpus-id", "corpus_id"}, []string{"score"})
	if err != nil {
		return nil, err
	}
	for _, row := range qrels {
		q, _ := first(row.c, "query-id", "query_id")
		c, _ := first(row.c, "corpus-id", "corpus_id")
		s, _ := first(row.c, "score")
		var grade int
		if _, err := fmt.Sscan(s.s, &grade); err != nil || !q.valid || !c.valid {
			if err := bad(row, "want a query id, a corpus id and an integer score"); err != nil {
				return nil, err
			}
			continue
		}
		if d.Qrels[q.s] == nil {
			d.Qrels[q.s] = map[string]int{}
		}
		d.Qrels[q.s][c.s] = grade
	}
	if len(d.Corpus) == 0 || len(d.Queries) == 0 || len(d.Qrels) == 0 {
		return nil, fmt.Errorf("eval: %s: empty corpus, queries or qrels (%d, %d, %d)", dir, len(d.Corpus), len(d.Queries), len(d.Qrels))
	}
	return d, nil
}
