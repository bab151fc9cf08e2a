package hub

import (
	"bytes"
	"context"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vembed/vembed/hub/hubtest"
)

type fakeHub struct {
	*hubtest.Server
	files map[string][]byte
}

func newFakeHub(t *testing.T) *fakeHub {
	r := rand.New(rand.NewPCG(1, 2))
	big := make([]byte, 300_000)
	for i := range big {
		big[i] = byte(r.Uint32())
	}
	files := map[string][]byte{
		"model-Q8_0.gguf":       big,
		"config.json":           []byte(`{"model_type": "qwen2_5_vl"}`),
		"adapters/adapter.json": []byte(`{"r": 32}`),
		"model.safetensors":     big[:1000],
		"pytorch_model.bin":     []byte("pickle"),
	}
	h := &fakeHub{Server: hubtest.New("org/model", maps.Clone(files)), files: files}
	t.Cleanup(h.Close)
	return h
}

func (h *fakeHub) client(t *testing.T) *Client {
	return &Client{Endpoint: h.URL, CacheDir: filepath.Join(t.TempDir(), "hub"), Log: slog.New(slog.DiscardHandler)}
}

// hash is the blob name of a test file.
func (h *fakeHub) hash(name string) string {
	if hubtest.IsLFS(name) {
		return hubtest.SHA256(h.files[name])
	}
	return hubtest.GitSHA1(h.files[name])
}

func readLink(t *testing.T, p string) string {
	t.Helper()
	l, err := os.Readlink(p)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestCacheLayout checks the files against huggingface_hub's layout:
// blobs named by hash, relative symlinks from the snapshot, refs/main
// holding the commit without a newline, nested paths.
func TestCacheLayout(t *testing.T) {
	h := newFakeHub(t)
	c := h.client(t)
	ctx := context.Background()
	repoDir := filepath.Join(c.CacheDir, "models--org--model")
	for _, file := range []string{"model-Q8_0.gguf", "config.json", "adapters/adapter.json"} {
		p, err := c.Download(ctx, "org/model", "", file)
		if err != nil {
			t.Fatal(err)
		}
		want := filepath.Join(repoDir, "snapshots", h.Commit, filepath.FromSlash(file))
		if p != want {
			t.Errorf("%s: path %s, want %s", file, p, want)
		}
		sum := h.hash(file)
		wantLink := strings.Repeat("../", strings.Count(file, "/")+2) + "blobs/" + sum
		if l := readLink(t, p); l != filepath.FromSlash(wantLink) {
			t.Errorf("%s: link %s, want %s", file, l, wantLink)
		}
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, h.files[file]) {
			t.Errorf("%s: content differs (%v)", file, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(repoDir, "refs", "main")); err != nil || string(b) != h.Commit {
		t.Errorf("refs/main = %q, %v; want %q", b, err, h.Commit)
	}
	if _, err := os.Stat(filepath.Join(c.CacheDir, ".locks", "models--org--model", h.hash("model-Q8_0.gguf")+".lock")); err != nil {
		t.Errorf("lock file: %v", err)
	}
	ents, _ := os.ReadDir(filepath.Join(repoDir, "blobs"))
	if len(ents) != 3 {
		t.Errorf("blobs: %d files, want 3", len(ents))
	}

	// A hub answering 503 leaves the cached revision usable; what is not
	// cached gets the error.
	h.FailHub(http.StatusServiceUnavailable)
	if _, err := c.Download(ctx, "org/model", "main", "config.json"); err != nil {
		t.Errorf("hub failing, cached file: %v", err)
	}
	if _, err := c.Download(ctx, "org/model", "main", "model.safetensors"); err == nil || !strings.Contains(err.Error(), "HTTP 503") {
		t.Errorf("hub failing, file not cached: %v", err)
	}
	h.FailHub(0)

	// A second pull transfers nothing; by commit it asks nothing at all.
	gets, _, _ := h.Stats()
	if _, err := c.Download(ctx, "org/model", "main", "model-Q8_0.gguf"); err != nil {
		t.Fatal(err)
	}
	h.CloseHub()
	if _, err := c.Download(ctx, "org/model", h.Commit, "model-Q8_0.gguf"); err != nil {
		t.Fatalf("by commit with the hub down: %v", err)
	}
	if g, _, _ := h.Stats(); g != gets {
		t.Errorf("second pull made %d GET requests", g-gets)
	}
	// With the hub unreachable a cached branch is used; offline mode
	// answers from the cache and refuses what is not there.
	if _, err := c.Download(ctx, "org/model", "main", "config.json"); err != nil {
		t.Errorf("hub unreachable, cached file: %v", err)
	}
	c.Offline = true
	if _, err := c.Download(ctx, "org/model", "main", "config.json"); err != nil {
		t.Errorf("offline, cached file: %v", err)
	}
	if _, err := c.Download(ctx, "org/model", "main", "model.safetensors"); err == nil || !strings.Contains(err.Error(), "offline") {
		t.Errorf("offline, missing file: %v", err)
	}
}

// TestResume cuts the transfer: the partial file is kept, the next pull
// asks for the rest with Range and the result is whole; with retries one
// pull recovers by itself.
func TestResume(t *testing.T) {
	h := newFakeHub(t)
	c := h.client(t)
	ctx := context.Background()
	const file = "model-Q8_0.gguf"
	sum := h.hash(file)
	part := filepath.Join(c.RepoDir("org/model"), "blobs", sum+".incomplete")

	h.CutNext(100_000)
	_, err := c.Download(ctx, "org/model", "main", file)
	if err == nil || !strings.Contains(err.Error(), "kept for resuming") {
		t.Fatalf("cut transfer: err = %v", err)
	}
	if st, err := os.Stat(part); err != nil || st.Size() != 100_000 {
		t.Fatalf("partial file: %v %v", st, err)
	}
	p, err := c.Download(ctx, "org/model", "main", file)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, h.files[file]) {
		t.Error("resumed file differs")
	}
	if _, ranges, _ := h.Stats(); len(ranges) != 2 || ranges[1] != "bytes=100000-" {
		t.Errorf("storage saw ranges %q, want a resume from 100000", ranges)
	}
	if _, err := os.Stat(part); !os.IsNotExist(err) {
		t.Errorf("partial file left: %v", err)
	}

	// Automatic resume within one pull.
	defer func(f func(int) time.Duration) { retryDelay = f }(retryDelay)
	retryDelay = func(int) time.Duration { return 0 }
	c2 := h.client(t)
	c2.Retries = 2
	h.CutNext(50_000)
	if p, err = c2.Download(ctx, "org/model", "main", file); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, h.files[file]) {
		t.Error("file resumed by retry differs")
	}
	// A partial file longer than the file is not a prefix: started over.
	c3 := h.client(t)
	part3 := filepath.Join(c3.RepoDir("org/model"), "blobs", sum+".incomplete")
	os.MkdirAll(filepath.Dir(part3), 0o755)
	os.WriteFile(part3, make([]byte, 400_000), 0o644)
	if _, err = c3.Download(ctx, "org/model", "main", file); err != nil {
		t.Fatalf("overlong partial file: %v", err)
	}
}

// TestCorruptRefused flips a byte in transit: the SHA-256 check refuses
// the file, nothing enters the cache and the error says why.
func TestCorruptRefused(t *testing.T) {
	h := newFakeHub(t)
	c := h.client(t)
	h.CorruptNext()
	_, err := c.Download(context.Background(), "org/model", "main", "model-Q8_0.gguf")
	if err == nil || !strings.Contains(err.Error(), "SHA-256") || !strings.Contains(err.Error(), "deleted") {
		t.Fatalf("corrupt download: err = %v", err)
	}
	repoDir := c.RepoDir("org/model")
	for _, dir := range []string{"blobs", "snapshots"} {
		filepath.WalkDir(filepath.Join(repoDir, dir), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				t.Errorf("left in the cache: %s", p)
			}
			return nil
		})
	}
	// The next pull gets good bytes.
	if _, err := c.Download(context.Background(), "org/model", "main", "model-Q8_0.gguf"); err != nil {
		t.Fatal(err)
	}
}

// TestErrors checks that 401 and 404 answers read clearly, and that the
// token goes to the hub but never to the storage host.
func TestErrors(t *testing.T) {
	h := newFakeHub(t)
	c := h.client(t)
	ctx := context.Background()
	for _, tc := range []struct {
		repo, rev, file string
		want            []string
	}{
		{"org/model", "main", "missing.gguf", []string{"file not found", "404", "does not exist"}},
		{"org/other", "main", "x.gguf", []string{"repository not found", "HF_TOKEN"}},
		{"org/model", "v9", "config.json", []string{"revision not found"}},
	} {
		_, err := c.Download(ctx, tc.repo, tc.rev, tc.file)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s/%s@%s: err = %v, want %q in it", tc.repo, tc.file, tc.rev, err, w)
			}
		}
	}
	h.Token = "good"
	_, err := c.Download(ctx, "org/model", "main", "config.json")
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") || !strings.Contains(err.Error(), "set HF_TOKEN") {
		t.Errorf("private repo without a token: %v", err)
	}
	c.Token = "bad"
	_, err = c.Download(ctx, "org/model", "main", "config.json")
	if err == nil || !strings.Contains(err.Error(), "the token (HF_TOKEN) has no access") {
		t.Errorf("private repo with a bad token: %v", err)
	}
	c.Token = "good"
	if _, err := c.Download(ctx, "org/model", "main", "model-Q8_0.gguf"); err != nil {
		t.Fatal(err)
	}
	_, _, auths := h.Stats()
	for _, a := range auths {
		if a != "" {
			t.Errorf("the storage host received Authorization %q", a)
		}
	}
	for _, bad := range [][3]string{
		{"org/model", "main", "../../etc/passwd"},
		{"org/model", "../x", "a.gguf"},
		{"org", "main", "a.gguf"},
		{"org/model", "main", "/abs"},
	} {
		if _, err := c.Download(ctx, bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestEnvironment checks HF_ENDPOINT, HF_TOKEN, HF_HOME and HF_HUB_CACHE.
func TestEnvironment(t *testing.T) {
	h := newFakeHub(t)
	h.Token = "good"
	home := t.TempDir()
	t.Setenv("HF_ENDPOINT", h.URL+"/")
	t.Setenv("HF_HOME", home)
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_HUB_OFFLINE", "")
	if err := os.WriteFile(filepath.Join(home, "token"), []byte("good\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := NewClient()
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Download(context.Background(), "org/model", "", "config.json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p, filepath.Join(home, "hub", "models--org--model")) {
		t.Errorf("path %s is not under HF_HOME/hub", p)
	}
	cache := t.TempDir()
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_TOKEN", "bad")
	if c, err = NewClient(); err != nil {
		t.Fatal(err)
	}
	if c.CacheDir != cache || c.Token != "bad" || c.Endpoint != h.URL {
		t.Errorf("client %+v", c)
	}
	t.Setenv("HF_HUB_OFFLINE", "1")
	if c, _ = NewClient(); !c.Offline {
		t.Error("HF_HUB_OFFLINE=1 ignored")
	}
}

// TestResolve resolves file and repository references: a checkpoint
// repository is downloaded without its non-safetensors weights, the
// listing's hashes are checked, and a renamed repository is followed.
func TestResolve(t *testing.T) {
	h := newFakeHub(t)
	c := h.client(t)
	ctx := context.Background()
	ref, err := ParseRef("hf://org/model")
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Resolve(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Checkpoint || r.Commit != h.Commit {
		t.Fatalf("resolved %+v", r)
	}
	for _, f := range []string{"config.json", "model.safetensors", "adapters/adapter.json"} {
		if _, err := os.Stat(filepath.Join(r.Path, f)); err != nil {
			t.Error(err)
		}
	}
	for _, f := range []string{"pytorch_model.bin", "model-Q8_0.gguf"} {
		if _, err := os.Stat(filepath.Join(r.Path, f)); !os.IsNotExist(err) {
			t.Errorf("%s downloaded with the checkpoint", f)
		}
	}
	gets, _, _ := h.Stats()
	if _, err := c.Resolve(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if g, _, _ := h.Stats(); g != gets {
		t.Errorf("second resolve made %d GET requests", g-gets)
	}
	ref, _ = ParseRef("hf://org/renamed/model-Q8_0.gguf")
	if r, err = c.Resolve(ctx, ref); err != nil || r.Checkpoint {
		t.Fatalf("file through a renamed repository: %+v %v", r, err)
	}
	// A repository of GGUFs alone needs a file named.
	h.SetFile("model.safetensors", nil)
	ref, _ = ParseRef("hf://org/model")
	if _, err := c.Resolve(ctx, ref); err == nil || !strings.Contains(err.Error(), "model-Q8_0.gguf") {
		t.Errorf("GGUF repository without a file: %v", err)
	}
}

func TestParseRef(t *testing.T) {
	for in, want := range map[string]Ref{
		"hf://org/name":                       {Repo: "org/name"},
		"org/name/file.gguf":                  {Repo: "org/name", File: "file.gguf"},
		"hf://org/name@v1.0/sub/f.gguf":       {Repo: "org/name", Revision: "v1.0", File: "sub/f.gguf"},
		"hf://org/name@refs%2Fpr%2F3/f.gguf":  {Repo: "org/name", Revision: "refs/pr/3", File: "f.gguf"},
		"hf://jinaai/jina-embeddings-v4-gguf": {Repo: "jinaai/jina-embeddings-v4-gguf"},
	} {
		got, err := ParseRef(in)
		if err != nil || got != want {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "hf://", "hf://org", "hf://org/../x", "hf://org/name/../../x", "hf://org/name@/f", "hf://org/na me"} {
		if r, err := ParseRef(bad); err == nil {
			t.Errorf("ParseRef(%q) = %+v, want an error", bad, r)
		}
	}
}

func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"hf://org/name@rev/a/b.gguf", "org/name", "hf://a/b@refs%2Fpr%2F1", "x/y/../z", "a/b@c/d\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s)
		if err != nil {
			return
		}
		for _, el := range strings.Split(r.File, "/") {
			if r.File != "" && (el == ".." || el == "" || el == ".") {
				t.Fatalf("%q: file %q escapes", s, r.File)
			}
		}
		if strings.Contains(r.Revision, "..") && checkRevision(r.Revision) == nil {
			for _, el := range strings.Split(r.Revision, "/") {
				if el == ".." {
					t.Fatalf("%q: revision %q escapes", s, r.Revision)
				}
			}
		}
		again, err := ParseRef(r.String())
		if err != nil && !strings.Contains(r.Revision, "/") {
			t.Fatalf("%q: %+v does not parse back: %v", s, r, err)
		}
		if err == nil && !strings.Contains(r.Revision, "/") && again != r {
			t.Fatalf("%q: %+v parses back as %+v", s, r, again)
		}
	})
}
