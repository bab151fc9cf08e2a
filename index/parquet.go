package index

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/vembed/vembed/internal/atomicfile"
)

// PartsDir is the folder of an index directory that holds the dataset's
// Parquet files (every shard's).
const PartsDir = "parts"

// pqRow is a row of the dataset's Parquet files. Single vectors are in
// embedding (list<float>); a multi-vector run's rows are in multivector
// (list<list<float>>, one inner list per token) and embedding is empty.
type pqRow struct {
	ID          string      `parquet:"id"`
	Path        string      `parquet:"path"`
	Page        int32       `parquet:"page"`
	SHA256      string      `parquet:"sha256"`
	Model       string      `parquet:"model"`
	Width       int32       `parquet:"width"`
	Height      int32       `parquet:"height"`
	Text        string      `parquet:"text"`
	Embedding   []float32   `parquet:"embedding,list"`
	Multivector [][]float32 `parquet:"multivector,list"`
}

// toPQ makes a row's strings valid UTF-8 (invalid bytes become U+FFFD):
// Parquet's strings are UTF-8, and a reader such as DuckDB refuses a file
// holding one that is not (a file name, a table's text).
func toPQ(r *Row) pqRow {
	v := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
	return pqRow{ID: v(r.ID), Path: v(r.Path), Page: int32(r.Page), SHA256: r.SHA256, Model: r.Model,
		Width: int32(r.Width), Height: int32(r.Height), Text: v(r.Text), Embedding: r.Embedding, Multivector: r.Vectors}
}

func fromPQ(p *pqRow) Row {
	r := Row{ID: p.ID, Path: p.Path, Page: int(p.Page), SHA256: p.SHA256, Model: p.Model,
		Width: int(p.Width), Height: int(p.Height), Text: p.Text}
	if len(p.Embedding) > 0 {
		r.Embedding = p.Embedding
	}
	if len(p.Multivector) > 0 {
		r.Vectors = p.Multivector
	}
	return r
}

// writePart writes rows to path durably (atomicfile.WriteDurable).
func writePart(path string, rows []Row) error {
	err := atomicfile.WriteDurable(path, func(w io.Writer) error {
		pw := parquet.NewGenericWriter[pqRow](w, parquet.Compression(&parquet.Zstd), parquet.MaxRowsPerRowGroup(256),
			parquet.KeyValueMetadata(arrowSchemaKey, arrowSchemaValue(vectorWidths(rows))))
		batch := make([]pqRow, 0, 64)
		for i := range rows {
			batch = append(batch, toPQ(&rows[i]))
			if len(batch) == cap(batch) || i == len(rows)-1 {
				if _, err := pw.Write(batch); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
		return pw.Close()
	})
	if err != nil {
		return fmt.Errorf("index: writing %s: %w", path, err)
	}
	return nil
}

// ReadPart reads the rows of one of the dataset's Parquet files.
func ReadPart(path string) (rows []Row, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("index: %s: corrupt part file: %v", path, r)
		}
	}()
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("index: %s: %w", path, err)
	}
	r := parquet.NewGenericReader[pqRow](pf)
	defer r.Close()
	buf := make([]pqRow, 64)
	for {
		n, rerr := r.Read(buf)
		for i := range buf[:n] {
			rows = append(rows, fromPQ(&buf[i]))
		}
		if errors.Is(rerr, io.EOF) {
			return rows, nil
		}
		if rerr != nil {
			return nil, fmt.Errorf("index: %s: %w", path, rerr)
		}
		clear(buf)
	}
}

// ReadDataset reads every row of the Parquet files of an index directory
// (every shard's).
func ReadDataset(dir string) ([]Row, error) {
	files, err := filepath.Glob(filepath.Join(dir, PartsDir, "*.parquet"))
	if err != nil {
		return nil, err
	}
	var all []Row
	for _, f := range files {
		rows, err := ReadPart(f)
		if err != nil {
			return nil, err
		}
		all = append(all, rows...)
	}
	return all, nil
}

// isTemp reports a temporary file of atomicfile.WriteDurable.
func isTemp(name string) bool { return strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp") }
