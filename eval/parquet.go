package eval

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// vidoreRow is a row of a ViDoRe v1 table: a query (null for a page that
// only fills the corpus) and the page it was asked about.
type vidoreRow struct {
	Query         *string  `parquet:"query,optional"`
	Image         *hfImage `parquet:"image,optional"`
	ImageFilename *string  `parquet:"image_filename,optional"`
}

// hfImage is how Hugging Face datasets store an image column.
type hfImage struct {
	Bytes []byte  `parquet:"bytes,optional"`
	Path  *string `parquet:"path,optional"`
}

// LoadViDoRe reads a dataset in ViDoRe v1's layout: one table (a Parquet
// file, or a directory of them, as Hugging Face shards it) whose rows hold
// "query" and the page "image" ({"bytes", "path"}) it was asked about,
// with "image_filename" naming the page. Every distinct page is a
// document, every non-null query a query judged relevant (1) to its page.
// Errors name the file and row; with skipBad bad rows are counted instead.
func LoadViDoRe(path string, skipBad bool) (*Dataset, error) {
	files, err := parquetFiles(path)
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

func parquetFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(p, ".parquet") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("eval: %s holds no .parquet file", path)
	}
	sort.Strings(files)
	return files, nil
}

// readViDoRe adds one file's rows to d. A corrupt file can make the
// Parquet decoder panic; that becomes an error naming the file.
func readViDoRe(path string, d *Dataset, pages map[string]bool, skipBad bool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("eval: %s: corrupt Parquet file: %v", path, r)
		}
	}()
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return fmt.Errorf("eval: %s: not a readable Parquet file: %w", path, err)
	}
	cols := map[string]bool{}
	for _, f := range pf.Schema().Fields() {
		cols[f.Name()] = true
	}
	for _, col := range []string{"query", "image"} {
		if !cols[col] {
			return fmt.Errorf("eval: %s: no %q column (ViDoRe v1 tables have query, image, image_filename)", path, col)
		}
	}
	r := parquet.NewGenericReader[vidoreRow](pf)
	defer r.Close()
	rows := make([]vidoreRow, 64)
	for n := 0; ; {
		k, rerr := r.Read(rows)
		for i := range rows[:k] {
			if err := addViDoRe(d, pages, rows[i], filepath.Base(path), n+i+1); err != nil {
				if !skipBad {
					return err
				}
				d.Bad = append(d.Bad, err)
			}
		}
		n += k
		if errors.Is(rerr, io.EOF) {
			return nil
		}
		if rerr != nil {
			return fmt.Errorf("eval: %s row %d: %w", path, n+1, rerr)
		}
	}
}

func addViDoRe(d *Dataset, pages map[string]bool, row vidoreRow, file string, n int) error {
	if row.Image == nil || len(row.Image.Bytes) == 0 {
		return fmt.Errorf("eval: %s row %d: no image bytes", file, n)
	}
	page := ""
	if row.ImageFilename != nil {
		page = *row.ImageFilename
	}
	if page == "" {
		sum := sha256.Sum256(row.Image.Bytes)
		page = "sha256:" + hex.EncodeToString(sum[:8])
	}
	if !pages[page] {
		pages[page] = true
		d.Corpus = append(d.Corpus, Item{ID: page, Image: row.Image.Bytes})
	}
	if row.Query == nil || strings.TrimSpace(*row.Query) == "" {
		return nil
	}
	qid := fmt.Sprintf("%s:%d", file, n)
	d.Queries = append(d.Queries, Item{ID: qid, Text: *row.Query})
	d.Qrels[qid] = map[string]int{page: 1}
	return nil
}

// Load reads a dataset in whichever layout path holds: a BEIR directory
// (corpus.jsonl), or a ViDoRe v1 table (a .parquet file or a directory of
// them).
func Load(path, split string, skipBad bool) (*Dataset, error) {
	if _, err := os.Stat(filepath.Join(path, "corpus.jsonl")); err == nil {
		return LoadBEIR(path, split, skipBad)
	}
	return LoadViDoRe(path, skipBad)
}
