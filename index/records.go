package index

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// Record is one item of a table corpus (--from-jsonl, --from-parquet): an
// id and a text, an image, or both (an interleaved item: text then image).
type Record struct {
	ID   string
	Text string
	// Image holds the image's bytes; ImagePath names an image file
	// (relative to the table's directory) when the table stores paths.
	Image     []byte
	ImagePath string
	// N is the record's 1-based position in its file, of Rows (0 when
	// the file does not say: JSON lines).
	N, Rows int
}

// MaxRecordBytes bounds one JSONL line and one Parquet record's values.
const MaxRecordBytes = 64 << 20

// ReadJSONL calls fn for each record of a JSON-lines stream: objects with
// "id" (or "_id"; a string or a number), "text", and "image" (a data URI,
// base64 or a file path) or "image_path". Blank lines are skipped. A bad
// line calls bad with its error and reading goes on; an error of r or
// of fn ends reading.
func ReadJSONL(r io.Reader, fn func(Record) error, bad func(n int, err error)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := readLine(br, MaxRecordBytes)
		if errors.Is(err, errLineTooLong) {
			bad(n, fmt.Errorf("line longer than %d bytes", MaxRecordBytes))
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if len(bytes.TrimSpace(line)) > 0 {
			rec, perr := parseJSONRecord(line)
			if perr != nil {
				bad(n, perr)
			} else {
				rec.N = n
				if ferr := fn(rec); ferr != nil {
					return ferr
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine returns the next line without its newline; a line over max
// bytes is skipped to its end and reported as errLineTooLong.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	long := false
	for {
		frag, err := br.ReadSlice('\n')
		if !long {
			if len(line)+len(frag) > max+1 {
				long = true
				line = nil
			} else {
				line = append(line, frag...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if long {
			if err == nil {
				return nil, errLineTooLong
			}
			return nil, errLineTooLong
		}
		return bytes.TrimRight(line, "\r\n"), err
	}
}

func parseJSONRecord(line []byte) (Record, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return Record{}, fmt.Errorf("not a JSON object: %w", err)
	}
	var rec Record
	id, err := jsonScalar(m, "id", "_id")
	if err != nil {
		return Record{}, err
	}
	rec.ID = id
	if rec.Text, err = jsonString(m, "text"); err != nil {
		return Record{}, err
	}
	img, err := jsonString(m, "image")
	if err != nil {
		return Record{}, err
	}
	if rec.ImagePath, err = jsonString(m, "image_path"); err != nil {
		return Record{}, err
	}
	if img != "" {
		if b, ok := decodeInlineImage(img); ok {
			rec.Image = b
		} else if rec.ImagePath == "" {
			rec.ImagePath = img
		}
	}
	return rec, checkRecord(rec)
}

// decodeInlineImage decodes a data URI or base64 text; a string that is
// neither (a file name) is not inline.
func decodeInlineImage(s string) ([]byte, bool) {
	if strings.HasPrefix(s, "data:") {
		i := strings.Index(s, ";base64,")
		if i < 0 {
			return nil, false
		}
		b, err := base64.StdEncoding.DecodeString(s[i+len(";base64,"):])
		return b, err == nil
	}
	if len(s) < 64 {
		return nil, false // a path, not an image's bytes
	}
	b, err := base64.StdEncoding.DecodeString(s)
	return b, err == nil
}

func jsonString(m map[string]json.RawMessage, key string) (string, error) {
	raw, ok := m[key]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%q is not a string", key)
	}
	return s, nil
}

func jsonScalar(m map[string]json.RawMessage, keys ...string) (string, error) {
	for _, k := range keys {
		raw, ok := m[k]
		if !ok || string(raw) == "null" {
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			return s, nil
		}
		var n json.Number
		if err := json.Unmarshal(raw, &n); err == nil {
			return n.String(), nil
		}
		return "", fmt.Errorf("%q is neither a string nor a number", k)
	}
	return "", nil
}

// checkRecord refuses records with nothing to embed or an empty id.
func checkRecord(r Record) error {
	if strings.TrimSpace(r.ID) == "" {
		return errors.New("no id")
	}
	if strings.TrimSpace(r.Text) == "" && len(r.Image) == 0 && r.ImagePath == "" {
		return errors.New("no text and no image")
	}
	if len(r.ID)+len(r.Text)+len(r.Image) > MaxRecordBytes {
		return fmt.Errorf("record larger than %d bytes", MaxRecordBytes)
	}
	return nil
}

// maxParquetExpansion bounds how much larger than its file a column chunk
// may say it decodes to, so that a corrupt size cannot make the decoder
// allocate without limit.
const maxParquetExpansion = 64

// ReadParquet calls fn for each record of a Parquet file, one row group's
// page at a time (memory is bounded by a row group's pages, not the
// file): columns id (or _id, corpus-id, corpus_id), text, image (bytes, or
// a struct with bytes and path, as Hugging Face stores images) or
// image_path. A bad row calls bad and reading goes on; a corrupt file is
// an error.
func ReadParquet(path string, fn func(Record) error, bad func(n int, err error)) (err error) {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	return readParquetFrom(f, st.Size(), fn, bad)
}

func readParquetFrom(ra io.ReaderAt, size int64, fn func(Record) error, bad func(n int, err error)) (err error) {
	var fnErr error
	defer func() {
		if r := recover(); r != nil {
			if fnErr != nil {
				panic(r)
			}
			err = fmt.Errorf("corrupt Parquet file: %v", r)
		}
	}()
	if size < 12 {
		return errors.New("not a Parquet file: too short")
	}
	var head, tail [8]byte
	if _, err := ra.ReadAt(head[:4], 0); err != nil {
		return err
	}
	if _, err := ra.ReadAt(tail[:], size-8); err != nil {
		return err
	}
	if string(head[:4]) != "PAR1" || string(tail[4:]) != "PAR1" {
		return errors.New("not a Parquet file: no PAR1 magic at both ends")
	}
	if footer := int64(binary.LittleEndian.Uint32(tail[:4])); footer > size-12 {
		return fmt.Errorf("corrupt Parquet file: footer of %d bytes in a file of %d", footer, size)
	}
	pf, err := parquet.OpenFile(ra, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return fmt.Errorf("not a readable Parquet file: %w", err)
	}
	for _, rg := range pf.Metadata().RowGroups {
		for _, c := range rg.Columns {
			m := c.MetaData
			if m.TotalCompressedSize < 0 || m.TotalCompressedSize > size || m.TotalUncompressedSize < 0 || m.TotalUncompressedSize > maxParquetExpansion*size {
				return fmt.Errorf("corrupt Parquet file: column %s declares %d bytes", strings.Join(m.PathInSchema, "."), m.TotalUncompressedSize)
			}
		}
	}
	cols := pf.Schema().Columns()
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = strings.Join(c, ".")
	}
	idx := func(options ...string) int {
		for _, o := range options {
			for i, n := range names {
				if n == o {
					return i
				}
			}
		}
		return -1
	}
	cID := idx("id", "_id", "corpus-id", "corpus_id")
	cText := idx("text", "content", "passage")
	cImg := idx("image.bytes", "image")
	cPath := idx("image.path", "image_path")
	if cID < 0 {
		return fmt.Errorf("no id column (it has %s)", strings.Join(names, ", "))
	}
	if cText < 0 && cImg < 0 && cPath < 0 {
		return fmt.Errorf("no text, image or image_path column (it has %s)", strings.Join(names, ", "))
	}
	rows := int(pf.NumRows())
	r := parquet.NewReader(pf)
	defer r.Close()
	buf := make([]parquet.Row, 16)
	for read := 0; ; {
		n, rerr := r.ReadRows(buf)
		for _, row := range buf[:n] {
			read++
			rec := Record{N: read, Rows: rows}
			for _, v := range row {
				c := v.Column()
				if v.IsNull() {
					continue
				}
				switch c {
				case cID:
					rec.ID = strings.ToValidUTF8(scalarString(v), "\uFFFD")
				case cText:
					// As JSON decoding does: invalid UTF-8 becomes U+FFFD
					// (the engine refuses text that is not UTF-8).
					rec.Text = strings.ToValidUTF8(string(v.ByteArray()), "\uFFFD")
				case cImg:
					rec.Image = append([]byte(nil), v.ByteArray()...)
				case cPath:
					rec.ImagePath = string(v.ByteArray())
				}
			}
			if cerr := checkRecord(rec); cerr != nil {
				bad(read, cerr)
				continue
			}
			if fnErr = fn(rec); fnErr != nil {
				return fnErr
			}
		}
		if errors.Is(rerr, io.EOF) {
			return nil
		}
		if rerr != nil {
			return fmt.Errorf("row %d: %w", read+1, rerr)
		}
	}
}

func scalarString(v parquet.Value) string {
	switch v.Kind() {
	case parquet.ByteArray, parquet.FixedLenByteArray:
		return string(v.ByteArray())
	case parquet.Int32:
		return fmt.Sprint(v.Int32())
	case parquet.Int64:
		return fmt.Sprint(v.Int64())
	}
	return ""
}
