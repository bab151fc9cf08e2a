package index

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/imageproc"
	"github.com/vembed/vembed/internal/atomicfile"
	"github.com/vembed/vembed/internal/clip"
)

// errStop ends a walk whose run was cancelled.
var errStop = errors.New("index: stopped")

// walk produces this shard's items that are not finished, marks the
// finished ones as seen, and reports bad inputs. It reports whether the
// walk met every file (the condition for removing unseen items).
func (r *run) walk(ctx context.Context, out chan<- item) (complete bool, err error) {
	// seen holds finished items met first by this walk, until markSeen
	// records them (their generation then tells a repeat); queued is
	// the set of their keys.
	var seen []seenItem
	queued := map[Key]bool{}
	flushSeen := func() error {
		err := r.store.markSeen(seen, r.gen)
		seen = seen[:0]
		clear(queued)
		return err
	}
	emit := func(it item) error {
		if ctx.Err() != nil {
			return errStop
		}
		// Every output holds text as UTF-8 (Parquet strings, PostgreSQL
		// text): a file name that is not becomes valid here, once.
		it.row.ID = strings.ToValidUTF8(it.row.ID, "\uFFFD")
		it.row.Path = strings.ToValidUTF8(it.row.Path, "\uFFFD")
		it.key = itemKey(it.row.ID, it.row.SHA256, r.o.ModelID, r.opt)
		if it.key.shard(r.o.Shards) != r.o.Shard {
			if it.doc != nil {
				it.doc.release()
			}
			return nil
		}
		it.row.Model = r.o.ModelName
		rec, done, err := r.store.item(it.key)
		if err != nil {
			return err
		}
		r.mu.Lock()
		r.prog.Found++
		if done {
			if it.doc != nil {
				it.doc.release()
			}
			// An item this run committed or met already is a repeat of
			// content, however it was finished.
			if rec.Gen == r.gen || queued[it.key] {
				r.prog.Duplicates++
				r.mu.Unlock()
				return nil
			}
			r.prog.Skipped++
			r.mu.Unlock()
			seen = append(seen, seenItem{key: it.key, path: it.row.Path})
			queued[it.key] = true
			if len(seen) >= 1024 {
				return flushSeen()
			}
			return nil
		}
		if r.pending[it.key] {
			r.prog.Duplicates++
			r.mu.Unlock()
			if it.doc != nil {
				it.doc.release()
			}
			return nil
		}
		r.pending[it.key] = true
		r.mu.Unlock()
		select {
		case out <- it:
			return nil
		case <-ctx.Done():
			if it.doc != nil {
				it.doc.release()
			}
			return errStop
		}
	}
	complete, err = walkFiles(r.o.Paths, r.o.FollowSymlinks, func(path string, k kind) error {
		r.startFile(path)
		defer r.endFile()
		return r.file(ctx, path, k, emit)
	}, func(path string, err error) { r.problem(path, 0, err) })
	if err == nil {
		for _, p := range r.o.JSONL {
			if err = r.table(p, false, emit); err != nil {
				break
			}
		}
	}
	if err == nil {
		for _, p := range r.o.Parquet {
			if err = r.table(p, true, emit); err != nil {
				break
			}
		}
	}
	if errors.Is(err, errStop) || ctx.Err() != nil {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return complete, flushSeen()
}

// filePos is the walk's position in the file it is reading, for the
// progress: the file's size and the bytes of it counted in BytesWalked.
type filePos struct {
	size, counted int64
}

// startFile starts counting a file's bytes as walked.
func (r *run) startFile(path string) {
	r.pos = filePos{}
	if st, err := os.Stat(path); err == nil {
		r.pos.size = st.Size()
	}
}

// fileAt counts the file walked to the fraction done/total of its
// work (pages of a PDF, rows or bytes of a table), so that progress and
// its ETA move inside a large file.
func (r *run) fileAt(done, total int64) {
	if total <= 0 {
		return
	}
	at := r.pos.size * min(done, total) / total
	if at <= r.pos.counted {
		return
	}
	r.mu.Lock()
	r.prog.BytesWalked += at - r.pos.counted
	r.mu.Unlock()
	r.pos.counted = at
}

// endFile counts the rest of the file as walked.
func (r *run) endFile() { r.fileAt(1, 1) }

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// file produces the items of one file.
func (r *run) file(ctx context.Context, path string, k kind, emit func(item) error) error {
	data, err := readLimited(path, r.o.MaxFileBytes)
	if err != nil {
		r.problem(path, 0, err)
		return nil
	}
	switch k {
	case kindImage:
		it, err := imageItem(path, data)
		if err != nil {
			r.problem(path, 0, err)
			return nil
		}
		return emit(it)
	case kindText:
		text, err := decodeText(data)
		if err != nil {
			r.problem(path, 0, err)
			return nil
		}
		sha := sha256Hex(data)
		chunks := Chunk(text, r.o.ChunkTokens, r.o.Count)
		if len(chunks) == 0 {
			r.problem(path, 0, errors.New("no text"))
			return nil
		}
		for i, c := range chunks {
			it := item{row: Row{ID: ItemID(sha, i+1), Path: path, Page: i + 1, SHA256: sha, Text: c}, input: engine.Input{Parts: []engine.Part{engine.PlainText(c)}}}
			if err := emit(it); err != nil {
				return err
			}
		}
		return nil
	case kindPDF:
		if r.o.PDF == nil {
			r.problem(path, 0, errors.New("PDF pages are not rendered by this build"))
			return nil
		}
		return r.pdfFile(ctx, path, data, emit)
	}
	return nil
}

// table produces the items of a record table.
func (r *run) table(path string, isParquet bool, emit func(item) error) error {
	dir := filepath.Dir(path)
	bad := func(n int, err error) { r.problem(fmt.Sprintf("%s#%d", path, n), 0, err) }
	var jsonl *countingReader
	fn := func(rec Record) error {
		if jsonl != nil {
			r.fileAt(jsonl.n, r.pos.size)
		} else {
			r.fileAt(int64(rec.N), int64(rec.Rows))
		}
		// An id met before in this run's tables would be a second row
		// with the same id.
		h := sha256.Sum256([]byte(rec.ID))
		idHash := binary.LittleEndian.Uint64(h[:8])
		if r.recordIDs[idHash] {
			bad(rec.N, fmt.Errorf("id %s is repeated (the first record with it is indexed)", clip.Quote(rec.ID, 80)))
			return nil
		}
		r.recordIDs[idHash] = true
		it, err := r.record(path, dir, rec)
		if err != nil {
			bad(rec.N, err)
			return nil
		}
		return emit(it)
	}
	var err error
	if isParquet {
		var files []string
		if files, err = parquetShards(path); err == nil {
			for _, f := range files {
				dir = filepath.Dir(f) // image paths are relative to the shard's folder
				r.startFile(f)
				err = ReadParquet(f, fn, bad)
				r.endFile()
				if err != nil {
					if errors.Is(err, errStop) {
						return err
					}
					r.problem(f, 0, err)
					err = nil
				}
			}
		}
	} else {
		var f *os.File
		r.startFile(path)
		defer r.endFile()
		if f, err = os.Open(path); err == nil {
			jsonl = &countingReader{r: f}
			err = ReadJSONL(jsonl, fn, bad)
			f.Close()
		}
	}
	if errors.Is(err, errStop) {
		return err
	}
	if err != nil {
		// A table that cannot be read is a bad input, not the end of the run.
		r.problem(path, 0, err)
	}
	return nil
}

// record makes a record's item: text, image, or text then image.
func (r *run) record(path, dir string, rec Record) (item, error) {
	img := rec.Image
	if img == nil && rec.ImagePath != "" {
		p := rec.ImagePath
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		b, err := readLimited(p, r.o.MaxFileBytes)
		if err != nil {
			return item{}, fmt.Errorf("image: %w", err)
		}
		img = b
	}
	h := sha256.New()
	fmt.Fprintf(h, "%d:", len(rec.Text))
	io.WriteString(h, rec.Text)
	h.Write(img)
	sha := hex.EncodeToString(h.Sum(nil))
	it := item{row: Row{ID: rec.ID, Path: path, Page: 1, SHA256: sha, Text: rec.Text}}
	if rec.Text != "" {
		it.input.Parts = append(it.input.Parts, engine.PlainText(rec.Text))
	}
	if img != nil {
		_, w, hh, err := imageproc.DecodeConfig(img)
		if err != nil {
			return item{}, fmt.Errorf("unreadable image: %w", err)
		}
		it.row.Width, it.row.Height = w, hh
		it.input.Parts = append(it.input.Parts, engine.Image(img))
		it.pixels = true
	}
	return it, nil
}

// Manifest describes an index directory's shard: the model, the options,
// the counts and the part files.
type Manifest struct {
	Model      string            `json:"model"`
	ModelID    string            `json:"model_identity"`
	Arithmetic string            `json:"arithmetic"`
	Options    map[string]any    `json:"options"`
	Extra      map[string]string `json:"extra_options,omitempty"`
	Shard      int               `json:"shard"`
	Shards     int               `json:"shards"`
	Items      int               `json:"items"`
	Vectors    string            `json:"vectors"` // "embedding" or "multivector"
	Dimensions int               `json:"dimensions,omitempty"`
	// Sidecar is the element type of a multi-vector shard's sidecars
	// ("float32" or "float16"; each sidecar's header says its own).
	Sidecar string   `json:"sidecar,omitempty"`
	Parts   []string `json:"parts"`
	// ModelFiles are the model's files (absolute paths), empty for the
	// demo model (RandomWeights).
	ModelFiles    []string `json:"model_files,omitempty"`
	RandomWeights bool     `json:"random_weights,omitempty"`
	// DPI is the resolution PDF pages were rendered at; Root is the
	// folder the run's relative paths start from.
	DPI      float64   `json:"dpi,omitempty"`
	Root     string    `json:"root,omitempty"`
	LastRun  Progress  `json:"last_run"`
	Problems int       `json:"last_run_problems"`
	Written  time.Time `json:"written"`
}

func (r *run) writeManifest(sum *Summary) error {
	parts, err := r.store.partNames()
	if err != nil {
		return err
	}
	m := Manifest{Model: r.o.ModelName, ModelID: r.o.ModelID, Arithmetic: r.o.Arithmetic, Extra: r.o.ExtraOptions,
		Shard: r.o.Shard, Shards: r.o.Shards, Items: sum.Items, LastRun: sum.Progress, Problems: len(sum.Problems),
		Written: time.Now().UTC(), Vectors: "embedding", ModelFiles: r.o.ModelFiles, RandomWeights: r.emb.Info().RandomWeights, DPI: r.o.DPI}
	if wd, err := os.Getwd(); err == nil {
		m.Root = wd
	}
	q := r.o.Request
	m.Options = map[string]any{"task": q.Task, "text_task": r.o.TextTask, "instruction": q.Instruction, "dimensions": q.Dimensions,
		"multivector": q.Multivector, "min_pixels": q.MinPixels, "max_pixels": q.MaxPixels, "chunk_tokens": r.o.ChunkTokens}
	if q.Multivector {
		m.Vectors = "multivector"
		m.Dimensions = r.emb.Info().MultivectorDim
		m.Sidecar = r.o.Sidecar.String()
	} else if m.Dimensions = q.Dimensions; m.Dimensions == 0 {
		m.Dimensions = r.emb.Info().Hidden
	}
	for _, n := range parts {
		m.Parts = append(m.Parts, filepath.Join(PartsDir, n))
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(r.o.Out, fmt.Sprintf("manifest-%dof%d.json", r.o.Shard, r.o.Shards))
	return atomicfile.WriteDurable(path, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
}

// parquetShards is the file itself, or a folder's .parquet files (Hugging
// Face's shards) in name order.
func parquetShards(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(p) == ".parquet" {
			files = append(files, p)
		}
		return err
	})
	if err == nil && len(files) == 0 {
		err = errors.New("no .parquet file in the folder")
	}
	sort.Strings(files)
	return files, err
}

// inputBytes is the size of the files a walk would take (stat only), for
// the progress's fraction done.
func inputBytes(o Options) int64 {
	var n int64
	add := func(p string) {
		if st, err := os.Stat(p); err == nil {
			n += st.Size()
		}
	}
	walkFiles(o.Paths, o.FollowSymlinks, func(p string, _ kind) error { add(p); return nil }, func(string, error) {})
	for _, p := range o.JSONL {
		add(p)
	}
	for _, p := range o.Parquet {
		if files, err := parquetShards(p); err == nil {
			for _, f := range files {
				add(f)
			}
		}
	}
	return n
}
