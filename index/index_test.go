package index

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vembed/vembed/engine"
)

// hashEmbedder embeds an input as four floats of its bytes' SHA-256: a
// fast stand-in for the engine where the pipeline, not the vectors, is
// under test.
type hashEmbedder struct {
	mu    sync.Mutex
	calls int
}

func (h *hashEmbedder) Embed(_ context.Context, req engine.Request) (*engine.Response, error) {
	h.mu.Lock()
	h.calls++
	h.mu.Unlock()
	s := sha256.New()
	for _, in := range req.Inputs {
		for _, p := range in.Parts {
			s.Write([]byte(p.Text))
			s.Write(p.Image)
		}
	}
	fmt.Fprint(s, req.Dimensions, req.Task)
	sum := s.Sum(nil)
	v := make([]float32, 4)
	for i := range v {
		v[i] = float32(binary.LittleEndian.Uint32(sum[4*i:])) / math.MaxUint32
	}
	if req.Multivector {
		return &engine.Response{Embeddings: []engine.Embedding{{Multi: [][]float32{v}, Tokens: 3}}, PromptTokens: 3}, nil
	}
	return &engine.Response{Embeddings: []engine.Embedding{{Vector: v, Tokens: 3}}, PromptTokens: 3}, nil
}

func (h *hashEmbedder) Info() engine.Info {
	return engine.Info{Name: "hash", Hidden: 4, ContextLength: 100}
}

func wordCount(s string) int { return len(strings.Fields(s)) }

func testOptions(out string, paths ...string) Options {
	return Options{Out: out, Paths: paths, ModelID: "m", ModelName: "hash", ChunkTokens: 5, Count: wordCount, PartRows: 2, InFlight: 3}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, s := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// textCorpus writes n small text files into a folder and returns it and
// an index folder beside it.
func textCorpus(t *testing.T, n int) (corpus, out string) {
	dir := t.TempDir()
	corpus, out = filepath.Join(dir, "c"), filepath.Join(dir, "idx")
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("f%02d.txt", i)] = fmt.Sprintf("text number %d", i)
	}
	writeFiles(t, corpus, files)
	return corpus, out
}

func ids(t *testing.T, dir string) []string {
	t.Helper()
	rows, err := ReadDataset(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%s:%d", filepath.Base(r.Path), r.Page))
	}
	sort.Strings(out)
	return out
}

// TestRecovery puts the directory in the states a crash can leave and
// checks that the next run repairs them: a part the store holds still in
// .pending is renamed in (nothing embedded again), a part whose file is
// lost has its items embedded again, stray files of the shard are
// removed and another shard's kept.
func TestRecovery(t *testing.T) {
	dir := t.TempDir()
	corpus, out := filepath.Join(dir, "c"), filepath.Join(dir, "idx")
	writeFiles(t, corpus, map[string]string{"a.txt": "one two three four five six seven", "b.md": "alpha beta", "c.txt": "x y z"})
	emb := &hashEmbedder{}
	sum, err := Run(context.Background(), emb, testOptions(out, corpus))
	if err != nil {
		t.Fatal(err)
	}
	want := ids(t, out)
	if sum.Done != 4 || len(want) != 4 || sum.Items != 4 {
		t.Fatalf("first run: %+v %v", sum.Progress, want)
	}
	parts, _ := filepath.Glob(filepath.Join(out, PartsDir, "*.parquet"))
	sort.Strings(parts)
	if len(parts) != 2 {
		t.Fatalf("parts %v", parts)
	}
	// A crash between the store's transaction and the rename.
	if err := os.Rename(parts[0], filepath.Join(out, pendingDir, filepath.Base(parts[0]))); err != nil {
		t.Fatal(err)
	}
	// Stray files: this shard's unrecorded part, a temporary file, and
	// another shard's part.
	writeFiles(t, filepath.Join(out, PartsDir), map[string]string{"s0of1-g000009-000001.parquet": "junk", ".s0of1-x.parquet.tmp123": "junk", "s1of2-g000001-000001.parquet": "other"})
	writeFiles(t, filepath.Join(out, pendingDir), map[string]string{"s0of1-g000009-000002.parquet": "junk"})
	sum, err = Run(context.Background(), emb, testOptions(out, corpus))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != 0 || sum.Skipped != 4 {
		t.Fatalf("after the pending part: %+v", sum.Progress)
	}
	for _, gone := range []string{"parts/s0of1-g000009-000001.parquet", "parts/.s0of1-x.parquet.tmp123", ".pending/s0of1-g000009-000002.parquet"} {
		if _, err := os.Stat(filepath.Join(out, gone)); err == nil {
			t.Errorf("%s was not removed", gone)
		}
	}
	other := filepath.Join(out, PartsDir, "s1of2-g000001-000001.parquet")
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another shard's file was removed")
	}
	os.Remove(other)
	if got := ids(t, out); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	// A lost part: its items are embedded again.
	parts, _ = filepath.Glob(filepath.Join(out, PartsDir, "*.parquet"))
	sort.Strings(parts)
	lost, err := ReadPart(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(parts[0])
	sum, err = Run(context.Background(), emb, testOptions(out, corpus))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != len(lost) || sum.Skipped != 4-len(lost) {
		t.Fatalf("after a lost part of %d rows: %+v", len(lost), sum.Progress)
	}
	if got := ids(t, out); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	// A crash between removing items from the store and rewriting their
	// parts: the next run drops their rows (and embeds the file again,
	// as it is still there).
	st, err := openStore(filepath.Join(out, "state-0of1.db"))
	if err != nil {
		t.Fatal(err)
	}
	dead, _, err := st.unseen(0, nil, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for k, r := range dead {
		if r.ID != lost[0].ID {
			delete(dead, k)
		}
	}
	if len(dead) != 1 {
		t.Fatalf("%d items of id %s", len(dead), lost[0].ID)
	}
	if err := st.removeItems(dead, nil); err != nil {
		t.Fatal(err)
	}
	st.Close()
	sum, err = Run(context.Background(), emb, testOptions(out, corpus))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != 1 {
		t.Fatalf("after a removal without compaction: %+v", sum.Progress)
	}
	if got := ids(t, out); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
}

// memSink is a sink in memory that can be made to fail.
type memSink struct {
	rows    map[string]Row
	upserts int
	deletes []string
	fail    bool
}

func (m *memSink) Upsert(_ context.Context, rows []Row) error {
	if m.fail {
		return errors.New("sink down")
	}
	m.upserts++
	for _, r := range rows {
		m.rows[r.ID] = r
	}
	return nil
}

func (m *memSink) Delete(_ context.Context, ids []string) error {
	if m.fail {
		return errors.New("sink down")
	}
	for _, id := range ids {
		delete(m.rows, id)
	}
	m.deletes = append(m.deletes, ids...)
	return nil
}

func (m *memSink) Close() error { return nil }

// TestSinkAcknowledgements: a sink that fails stops the run; the next run
// sends it every part it did not acknowledge, and removals reach it.
func TestSinkAcknowledgements(t *testing.T) {
	dir := t.TempDir()
	corpus, out := filepath.Join(dir, "c"), filepath.Join(dir, "idx")
	writeFiles(t, corpus, map[string]string{"a.txt": "one two three four five six seven", "b.md": "alpha beta", "c.txt": "x y z", "d.txt": "d"})
	sink := &memSink{rows: map[string]Row{}, fail: true}
	opts := testOptions(out, corpus)
	opts.Sinks = []NamedSink{{Name: "mem", Sink: sink}}
	if _, err := Run(context.Background(), &hashEmbedder{}, opts); err == nil || !strings.Contains(err.Error(), "sink down") {
		t.Fatalf("a failing sink: %v", err)
	}
	sink.fail = false
	sum, err := Run(context.Background(), &hashEmbedder{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := ReadDataset(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(sink.rows) != len(rows) || len(rows) != sum.Items || len(rows) != 5 {
		t.Fatalf("sink holds %d rows, the dataset %d, the store %d", len(sink.rows), len(rows), sum.Items)
	}
	for _, r := range rows {
		if s, ok := sink.rows[r.ID]; !ok || fmt.Sprint(s.Embedding) != fmt.Sprint(r.Embedding) {
			t.Fatalf("sink row %s: %+v", r.ID, s)
		}
	}
	// Nothing to resend on a third run.
	n := sink.upserts
	if _, err := Run(context.Background(), &hashEmbedder{}, opts); err != nil {
		t.Fatal(err)
	}
	if sink.upserts != n {
		t.Fatalf("a run with nothing new sent %d upserts", sink.upserts-n)
	}
	// A deleted file leaves the sink.
	os.Remove(filepath.Join(corpus, "d.txt"))
	if _, err := Run(context.Background(), &hashEmbedder{}, opts); err != nil {
		t.Fatal(err)
	}
	if len(sink.rows) != 4 || len(sink.deletes) != 1 {
		t.Fatalf("after a delete: %d rows, deletes %v", len(sink.rows), sink.deletes)
	}
}

// TestShardSplit: the shards' items are disjoint and cover one run's.
func TestShardSplit(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "c")
	files := map[string]string{}
	for i := range 30 {
		files[fmt.Sprintf("f%02d.txt", i)] = fmt.Sprintf("text number %d", i)
	}
	writeFiles(t, corpus, files)
	one, three := filepath.Join(dir, "one"), filepath.Join(dir, "three")
	if _, err := Run(context.Background(), &hashEmbedder{}, testOptions(one, corpus)); err != nil {
		t.Fatal(err)
	}
	counts := make([]int, 3)
	for i := range 3 {
		o := testOptions(three, corpus)
		o.Shard, o.Shards = i, 3
		sum, err := Run(context.Background(), &hashEmbedder{}, o)
		if err != nil {
			t.Fatal(err)
		}
		counts[i] = sum.Items
	}
	if counts[0] == 0 || counts[1] == 0 || counts[2] == 0 || counts[0]+counts[1]+counts[2] != 30 {
		t.Fatalf("shard sizes %v", counts)
	}
	if a, b := ids(t, one), ids(t, three); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("three shards %v\none run %v", b, a)
	}
	// Another split into the same folder is refused.
	o := testOptions(three, corpus)
	o.Shard, o.Shards = 0, 2
	if _, err := Run(context.Background(), &hashEmbedder{}, o); err == nil || !strings.Contains(err.Error(), "3-way split") {
		t.Fatalf("a 2-way split over a 3-way one: %v", err)
	}
}

// TestCancelKeepsWork: a cancelled run keeps what it committed and removes
// nothing; the next run finishes.
func TestCancelKeepsWork(t *testing.T) {
	corpus, out := textCorpus(t, 20)
	ctx, cancel := context.WithCancel(context.Background())
	o := testOptions(out, corpus)
	o.InFlight = 1
	o.Progress = func(p Progress) {}
	emb := &cancelAfter{n: 5, cancel: cancel}
	sum, err := Run(ctx, emb, o)
	if err == nil || !sum.Interrupted {
		t.Fatalf("cancelled run: %v %+v", err, sum)
	}
	sum, err = Run(context.Background(), &hashEmbedder{}, testOptions(out, corpus))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Skipped == 0 || sum.Skipped+sum.Done != 20 || sum.Removed != 0 || len(ids(t, out)) != 20 {
		t.Fatalf("after a cancelled run: %+v", sum.Progress)
	}
}

type cancelAfter struct {
	hashEmbedder
	n      int
	cancel func()
}

func (c *cancelAfter) Embed(ctx context.Context, req engine.Request) (*engine.Response, error) {
	c.mu.Lock()
	if c.calls >= c.n {
		c.cancel()
	}
	c.mu.Unlock()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return c.hashEmbedder.Embed(ctx, req)
}

// TestRemoveInBatches removes most of a corpus in batches smaller than
// what is removed.
func TestRemoveInBatches(t *testing.T) {
	defer func(n int) { removeBatch = n }(removeBatch)
	removeBatch = 2
	dir := t.TempDir()
	corpus, out := filepath.Join(dir, "c"), filepath.Join(dir, "idx")
	files := map[string]string{}
	for i := range 9 {
		files[fmt.Sprintf("f%d.txt", i)] = fmt.Sprintf("text %d", i)
	}
	writeFiles(t, corpus, files)
	if _, err := Run(context.Background(), &hashEmbedder{}, testOptions(out, corpus)); err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		os.Remove(filepath.Join(corpus, fmt.Sprintf("f%d.txt", i)))
	}
	sum, err := Run(context.Background(), &hashEmbedder{}, testOptions(out, corpus))
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, out); sum.Removed != 7 || sum.Items != 2 || fmt.Sprint(got) != "[f7.txt:1 f8.txt:1]" {
		t.Fatalf("removed %d, %d items left, rows %v", sum.Removed, sum.Items, got)
	}
}

func TestDecodeText(t *testing.T) {
	le := []byte{0xFF, 0xFE, 'h', 0, 'i', 0, 0xAC, 0x20} // "hi€"
	be := []byte{0xFE, 0xFF, 0, 'h', 0, 'i', 0x20, 0xAC}
	for _, c := range []struct {
		in   []byte
		want string
		bad  bool
	}{
		{le, "hi€", false}, {be, "hi€", false}, {[]byte("\xEF\xBB\xBFplain"), "plain", false},
		{[]byte("a\x00b"), "", true}, {[]byte{0xFF, 0xFE, 'h'}, "", true}, {[]byte{0xFF, 0xFE, 0, 0}, "", true},
		{[]byte("\xfd\xfc\xfb\xfa" + "xx"), "", true},
	} {
		got, err := decodeText(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("decodeText(%q) = %q, %v", c.in, got, err)
		}
	}
}

// TestWalkOrder: folders in name order, depth first, hidden folders and
// other extensions skipped, a symbolic link to a folder given as a root
// walked.
func TestWalkOrder(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"b/2.txt": "x", "b/1.png": "x", "a.md": "x", "c.pdf": "x", ".git/x.txt": "x", "d/.hidden/y.txt": "x", "e.doc": "x", "b/sub/3.txt": "x"})
	if err := os.Symlink(filepath.Join(dir, "b"), filepath.Join(dir, "link")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	var got []string
	walk := func(root string) {
		if _, err := walkFiles([]string{root}, false, func(p string, _ kind) error {
			rel, _ := filepath.Rel(dir, p)
			got = append(got, rel)
			return nil
		}, func(p string, err error) { t.Errorf("%s: %v", p, err) }); err != nil {
			t.Fatal(err)
		}
	}
	walk(dir)
	walk(filepath.Join(dir, "link"))
	want := "[a.md b/1.png b/2.txt b/sub/3.txt c.pdf link/1.png link/2.txt link/sub/3.txt]"
	if fmt.Sprint(got) != want {
		t.Fatalf("walk order %v\nwant %s", got, want)
	}
}

// concurrencyEmbedder records how many Embed calls run at once.
type concurrencyEmbedder struct {
	hashEmbedder
	mu2       sync.Mutex
	now, peak int
	release   chan struct{}
}

func (c *concurrencyEmbedder) Embed(ctx context.Context, req engine.Request) (*engine.Response, error) {
	c.mu2.Lock()
	c.now++
	c.peak = max(c.peak, c.now)
	c.mu2.Unlock()
	<-c.release
	c.mu2.Lock()
	c.now--
	c.mu2.Unlock()
	return c.hashEmbedder.Embed(ctx, req)
}

// TestInFlight: the engine is sent InFlight items at once (so it can
// batch them), never more.
func TestInFlight(t *testing.T) {
	dir := t.TempDir()
	corpus, out := filepath.Join(dir, "c"), filepath.Join(dir, "idx")
	files := map[string]string{}
	for i := range 40 {
		files[fmt.Sprintf("f%02d.txt", i)] = fmt.Sprintf("text %d", i)
	}
	writeFiles(t, corpus, files)
	emb := &concurrencyEmbedder{release: make(chan struct{})}
	o := testOptions(out, corpus)
	o.InFlight = 6
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), emb, o)
		done <- err
	}()
	// Let calls through one at a time once six are waiting: the pipeline
	// must refill what the engine finishes.
	deadline := time.Now().Add(time.Minute)
	for released := 0; released < 40; {
		if time.Now().After(deadline) {
			t.Fatalf("after %d items, fewer than 6 in the engine for a minute", released)
		}
		emb.mu2.Lock()
		n := emb.now
		emb.mu2.Unlock()
		if n == min(6, 40-released) {
			emb.release <- struct{}{}
			released++
			continue
		}
		time.Sleep(time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if emb.peak != 6 {
		t.Fatalf("at most %d items in the engine at once, want 6", emb.peak)
	}
}

// TestMergeSmallParts: runs that each add a few items leave small parts,
// which are merged once there are enough of them; the rows stay those of
// one run, and a sink is not sent them again.
func TestMergeSmallParts(t *testing.T) {
	dir := t.TempDir()
	corpus, out := filepath.Join(dir, "c"), filepath.Join(dir, "idx")
	sink := &memSink{rows: map[string]Row{}}
	for i := range 12 {
		writeFiles(t, corpus, map[string]string{fmt.Sprintf("f%02d.txt", i): fmt.Sprintf("text %d", i)})
		o := testOptions(out, corpus)
		o.PartRows = 100
		o.Sinks = []NamedSink{{Name: "mem", Sink: sink}}
		if _, err := Run(context.Background(), &hashEmbedder{}, o); err != nil {
			t.Fatal(err)
		}
	}
	parts, _ := filepath.Glob(filepath.Join(out, PartsDir, "*.parquet"))
	if len(parts) >= mergeSmallParts {
		t.Fatalf("%d parts after 12 runs of one item each", len(parts))
	}
	fresh := filepath.Join(dir, "fresh")
	if _, err := Run(context.Background(), &hashEmbedder{}, testOptions(fresh, corpus)); err != nil {
		t.Fatal(err)
	}
	if a, b := ids(t, out), ids(t, fresh); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("merged %v\nfresh %v", a, b)
	}
	if sink.upserts != 12 || len(sink.rows) != 12 {
		t.Fatalf("the sink got %d upserts, holds %d rows; want 12 and 12", sink.upserts, len(sink.rows))
	}
}

// TestDuplicatesAndPaths: in a first run, a content met again after its
// first copy was committed counts as a duplicate, never as unchanged, and
// so in every later run; the row names the first copy in walk order, and
// once that file is deleted the next run moves the row (in the dataset and
// in the sink) to the first copy left, as a fresh run would name it.
func TestDuplicatesAndPaths(t *testing.T) {
	t.Run("single", func(t *testing.T) { testDuplicatesAndPaths(t, false) })
	t.Run("multivector", func(t *testing.T) { testDuplicatesAndPaths(t, true) })
}

// sidecarsMatchParts checks that every part has its sidecar, holding its
// rows, and that no other sidecar is left; each (if not nil) is then
// called with every part, its rows and its sidecar.
func sidecarsMatchParts(t *testing.T, out string, each func(part string, rows []Row, sc *Sidecar)) {
	t.Helper()
	parts, _ := filepath.Glob(filepath.Join(out, PartsDir, "*.parquet"))
	cars, _ := filepath.Glob(filepath.Join(out, SidecarDir, "*.mv"))
	if len(cars) != len(parts) {
		t.Fatalf("%d parts, %d sidecars", len(parts), len(cars))
	}
	for _, p := range parts {
		rows, err := ReadPart(p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(out, SidecarDir, SidecarName(filepath.Base(p))))
		if err != nil {
			t.Fatal(err)
		}
		sc, err := ParseSidecar(b)
		if err != nil || sc.Rows != len(rows) {
			t.Fatalf("sidecar of %s: %v rows %d, the part %d", p, err, sc.Rows, len(rows))
		}
		if each != nil {
			each(p, rows, sc)
		}
	}
}

func testDuplicatesAndPaths(t *testing.T, multi bool) {
	dir := t.TempDir()
	corpus, out := filepath.Join(dir, "c"), filepath.Join(dir, "idx")
	files := map[string]string{"a/x.txt": "the copied words", "z/x-copy.txt": "the copied words", "z/x-copy2.txt": "the copied words"}
	// Enough files between the copies that the first is committed (one
	// row per part, one item in flight) before the walk meets the next.
	for i := range 30 {
		files[fmt.Sprintf("m/%02d.txt", i)] = fmt.Sprintf("filler %d", i)
	}
	writeFiles(t, corpus, files)
	sink := &memSink{rows: map[string]Row{}}
	opts := testOptions(out, corpus)
	opts.PartRows, opts.InFlight = 1, 1
	opts.Request.Multivector = multi
	opts.Sinks = []NamedSink{{Name: "mem", Sink: sink}}
	pathOf := func(what string) string {
		t.Helper()
		rows, err := ReadDataset(out)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.Text == "the copied words" {
				if s := sink.rows[r.ID]; s.Path != r.Path {
					t.Fatalf("%s: the sink's row names %s, the dataset's %s", what, s.Path, r.Path)
				}
				return r.Path
			}
		}
		t.Fatalf("%s: no row of the copied file", what)
		return ""
	}
	for k, c := range []struct {
		remove                 string
		skipped, dups, removed int
		path                   string
	}{
		{"", 0, 2, 0, "a/x.txt"},
		{"", 31, 2, 0, "a/x.txt"},
		{"a/x.txt", 31, 1, 0, "z/x-copy.txt"},
		{"z/x-copy.txt", 31, 0, 0, "z/x-copy2.txt"},
	} {
		if c.remove != "" {
			if err := os.Remove(filepath.Join(corpus, c.remove)); err != nil {
				t.Fatal(err)
			}
		}
		sum, err := Run(context.Background(), &hashEmbedder{}, opts)
		if err != nil {
			t.Fatal(err)
		}
		what := fmt.Sprintf("run %d", k+1)
		if sum.Skipped != c.skipped || sum.Duplicates != c.dups || sum.Removed != c.removed || sum.Items != 31 {
			t.Errorf("%s: %d unchanged, %d duplicates, %d removed, %d items; want %d, %d, %d, 31",
				what, sum.Skipped, sum.Duplicates, sum.Removed, sum.Items, c.skipped, c.dups, c.removed)
		}
		if got, want := pathOf(what), filepath.Join(corpus, c.path); got != want {
			t.Errorf("%s: the row names %s, want %s", what, got, want)
		}
		if len(sink.rows) != 31 {
			t.Errorf("%s: the sink holds %d rows", what, len(sink.rows))
		}
		if multi {
			sidecarsMatchParts(t, out, nil)
		}
	}
	// And the dataset is what one fresh run writes.
	fresh := filepath.Join(dir, "fresh")
	fo := testOptions(fresh, corpus)
	fo.Request.Multivector = multi
	if _, err := Run(context.Background(), &hashEmbedder{}, fo); err != nil {
		t.Fatal(err)
	}
	a, b := pathsByID(t, out), pathsByID(t, fresh)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("paths %v, a fresh run's %v", a, b)
	}
}

func pathsByID(t *testing.T, dir string) map[string]string {
	t.Helper()
	rows, err := ReadDataset(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, r := range rows {
		m[r.ID] = r.Path
	}
	return m
}

// TestWalkSymlinks: a link to a file inside the folder walked is
// followed, one to a file outside it reported and passed over unless
// followOutside; so through a root that is itself a link.
func TestWalkSymlinks(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"in/a.txt": "x", "outside/secret.txt": "y"})
	if err := os.Symlink(filepath.Join(dir, "in/a.txt"), filepath.Join(dir, "in/inner.txt")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	os.Symlink(filepath.Join(dir, "outside/secret.txt"), filepath.Join(dir, "in/out.txt"))
	os.Symlink(filepath.Join(dir, "in"), filepath.Join(dir, "rootlink"))
	for _, c := range []struct {
		root   string
		follow bool
		want   string
		bad    string
	}{
		{"in", false, "[in/a.txt in/inner.txt]", "[in/out.txt]"},
		{"rootlink", false, "[rootlink/a.txt rootlink/inner.txt]", "[rootlink/out.txt]"},
		{"in", true, "[in/a.txt in/inner.txt in/out.txt]", "[]"},
	} {
		var got, bad []string
		if _, err := walkFiles([]string{filepath.Join(dir, c.root)}, c.follow, func(p string, _ kind) error {
			rel, _ := filepath.Rel(dir, p)
			got = append(got, filepath.ToSlash(rel))
			return nil
		}, func(p string, err error) {
			rel, _ := filepath.Rel(dir, p)
			bad = append(bad, filepath.ToSlash(rel))
			if !errors.Is(err, errLinkOutside) {
				t.Errorf("%s: %v", p, err)
			}
		}); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != c.want || fmt.Sprint(bad) != c.bad {
			t.Errorf("%s (follow %v): walked %v, reported %v; want %s and %s", c.root, c.follow, got, bad, c.want, c.bad)
		}
	}
}
