package eval

import (
	"bufio"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Item is a query or a document: text, an image (encoded file bytes), or
// both (a title or caption beside a page image).
type Item struct {
	ID    string
	Text  string
	Image []byte
}

// Dataset is a retrieval dataset: the corpus, the queries and their
// judgments for one split.
type Dataset struct {
	Name    string
	Corpus  []Item
	Queries []Item
	Qrels   Qrels
	// Bad lists the rows that could not be read, when reading skipped them.
	Bad []error
}

// maxLine bounds one JSONL line (a page image in base64 fits).
const maxLine = 64 << 20

// LoadBEIR reads a dataset in the BEIR layout: DIR/corpus.jsonl
// ({"_id", "title", "text", "image"}), DIR/queries.jsonl ({"_id", "text",
// "image"}) and DIR/qrels/SPLIT.tsv (query-id, corpus-id, score, with a
// header line). An image is base64 or a data URI, an object {"bytes":
// base64, "path": …} as Hugging Face datasets export them, or a path
// relative to DIR. Errors name the file and line; with skipBad a bad row
// is left out and recorded in Dataset.Bad instead.
func LoadBEIR(dir, split string, skipBad bool) (*Dataset, error) {
	d := &Dataset{Name: filepath.Base(filepath.Clean(dir)), Qrels: Qrels{}}
	var err error
	if d.Corpus, err = readItems(dir, "corpus.jsonl", skipBad, &d.Bad); err != nil {
		return nil, err
	}
	if d.Queries, err = readItems(dir, "queries.jsonl", skipBad, &d.Bad); err != nil {
		return nil, err
	}
	if err := readQrels(filepath.Join(dir, "qrels", split+".tsv"), d.Qrels, skipBad, &d.Bad); err != nil {
		return nil, err
	}
	if len(d.Corpus) == 0 || len(d.Queries) == 0 || len(d.Qrels) == 0 {
		return nil, fmt.Errorf("eval: %s: empty corpus, queries or qrels (%d, %d, %d)", dir, len(d.Corpus), len(d.Queries), len(d.Qrels))
	}
	return d, nil
}

type row struct {
	ID    json.RawMessage `json:"_id"`
	Title string          `json:"title"`
	Text  string          `json:"text"`
	Image json.RawMessage `json:"image"`
}

func readItems(dir, name string, skipBad bool, bad *[]error) ([]Item, error) {
	path := filepath.Join(dir, name)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), maxLine)
	var items []Item
	seen := map[string]bool{}
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		it, err := parseRow(dir, sc.Bytes())
		if err == nil && seen[it.ID] {
			err = fmt.Errorf("duplicate _id %q", it.ID)
		}
		if err != nil {
			err = fmt.Errorf("eval: %s line %d: %w", path, line, err)
			if !skipBad {
				return nil, err
			}
			*bad = append(*bad, err)
			continue
		}
		seen[it.ID] = true
		items = append(items, it)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("eval: %s: %w", path, err)
	}
	return items, nil
}

func parseRow(dir string, line []byte) (Item, error) {
	var r row
	if err := json.Unmarshal(line, &r); err != nil {
		return Item{}, fmt.Errorf("not a JSON object: %w", err)
	}
	var it Item
	var err error
	if it.ID, err = idString(r.ID); err != nil {
		return Item{}, err
	}
	it.Text = strings.TrimSpace(strings.TrimSpace(r.Title) + " " + r.Text)
	if len(r.Image) > 0 && string(r.Image) != "null" {
		if it.Image, err = imageBytes(dir, r.Image); err != nil {
			return Item{}, fmt.Errorf("image: %w", err)
		}
	}
	if it.Text == "" && it.Image == nil {
		return Item{}, errors.New("neither text nor image")
	}
	return it, nil
}

// idString accepts string and integer ids, as BEIR files have both.
func idString(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return s, nil
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil && n != "" {
		return n.String(), nil
	}
	return "", errors.New(`missing or empty "_id"`)
}

func imageBytes(dir string, raw json.RawMessage) ([]byte, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return imageString(dir, s)
	}
	var o struct {
		Bytes *string `json:"bytes"`
		Path  string  `json:"path"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, errors.New(`want a string or {"bytes", "path"}`)
	}
	if o.Bytes != nil && *o.Bytes != "" {
		return decodeB64(*o.Bytes)
	}
	if o.Path != "" {
		return readLocal(dir, o.Path)
	}
	return nil, errors.New("image object without bytes or path")
}

func imageString(dir, s string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(s, "data:"); ok {
		_, payload, found := strings.Cut(rest, ",")
		if !found {
			return nil, errors.New("malformed data URI")
		}
		return decodeB64(payload)
	}
	if b, err := decodeB64(s); err == nil && len(b) > 0 {
		return b, nil
	}
	return readLocal(dir, s)
}

func decodeB64(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not valid base64")
}

// readLocal reads an image file named relative to the dataset directory;
// paths may not leave it.
func readLocal(dir, p string) ([]byte, error) {
	if filepath.IsAbs(p) || strings.HasPrefix(filepath.Clean(p), "..") {
		return nil, fmt.Errorf("image path %q is outside the dataset", p)
	}
	b, err := os.ReadFile(filepath.Join(dir, p))
	if err != nil {
		return nil, err
	}
	return b, nil
}

func readQrels(path string, q Qrels, skipBad bool, bad *[]error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comma = '\t'
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	for line := 1; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			return nil
		}
		if err == nil && line == 1 && len(rec) >= 3 {
			if _, perr := strconv.Atoi(rec[len(rec)-1]); perr != nil {
				continue // the header
			}
		}
		if err == nil && len(rec) != 3 && len(rec) != 4 {
			err = fmt.Errorf("%d fields, want query-id, corpus-id, score", len(rec))
		}
		var grade int
		if err == nil {
			if grade, err = strconv.Atoi(strings.TrimSpace(rec[len(rec)-1])); err != nil {
				err = fmt.Errorf("score %q is not an integer", rec[len(rec)-1])
			}
		}
		if err != nil {
			err = fmt.Errorf("eval: %s line %d: %w", path, line, err)
			if !skipBad {
				return err
			}
			*bad = append(*bad, err)
			continue
		}
		qid, did := rec[0], rec[len(rec)-2] // TREC's four columns carry an iteration field
		if q[qid] == nil {
			q[qid] = map[string]int{}
		}
		q[qid][did] = grade
	}
}
