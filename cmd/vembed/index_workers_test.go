package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/vembed/vembed/hub/hubtest"
	"github.com/vembed/vembed/internal/redistest"
)

// TestIndexHubAndSharedCache: --model hf://org/repo/FILE pulls the LM and
// the repository's mmproj and indexes as the local files do, bit for bit;
// two workers sharing --cache-url: every item of the second is a hit on
// the results the first stored (its last ones included, sent as its engine
// closed).
func TestIndexHubAndSharedCache(t *testing.T) {
	dir := t.TempDir()
	m := writeTestModel(t, filepath.Join(dir, "model"))
	files := map[string][]byte{}
	for name, path := range map[string]string{"tiny-F32.gguf": m.model, "mmproj-tiny-F32.gguf": m.mmproj} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	srv := hubtest.New("org/tiny-GGUF", files)
	defer srv.Close()
	hubEnv(t, srv.URL)
	url, _ := redistest.Start(t)
	corpus := filepath.Join(dir, "corpus")
	testCorpus(t, corpus, 4)
	local, first, second := filepath.Join(dir, "local"), filepath.Join(dir, "first"), filepath.Join(dir, "second")
	ref := "hf://org/tiny-GGUF/tiny-F32.gguf"

	runIndexCmd(t, corpus, "--out", local, "--model", m.model, "--mmproj", m.mmproj)
	runIndexCmd(t, corpus, "--out", first, "--model", ref, "--cache-url", url)
	before := keyspaceHits(t, url)
	runIndexCmd(t, corpus, "--out", second, "--model", ref, "--cache-url", url)
	hits := keyspaceHits(t, url) - before

	want := datasetByID(t, local)
	sameIndexRows(t, "hf:// vs the local files", datasetByID(t, first), want)
	sameIndexRows(t, "the second worker, through the shared cache", datasetByID(t, second), want)
	t.Logf("%d items, %d hits", len(want), hits)
	if hits < int64(len(want)) {
		t.Errorf("the second worker's %d items made %d hits on the shared cache", len(want), hits)
	}
}

// keyspaceHits is the server's count of reads that found their key.
func keyspaceHits(t *testing.T, url string) int64 {
	t.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	defer c.Close()
	info, err := c.Info(context.Background(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "keyspace_hits:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no keyspace_hits in INFO stats")
	return 0
}
