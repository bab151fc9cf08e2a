package search

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/eval"
	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/index"
)

// clustered makes vectors with structure: each text belongs to one of a
// few clusters (a hash of it), its vectors a cluster centre plus noise, as
// real embeddings group by topic.
type clustered struct {
	single, multi int // widths
	clusters      int
}

func (c clustered) rng(s string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(s))
	return rand.New(rand.NewPCG(h.Sum64(), 7))
}

func (c clustered) centre(k, dims, j int) []float32 {
	r := rand.New(rand.NewPCG(uint64(k), uint64(j+1)))
	v := make([]float32, dims)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// vectors returns text s's single vector, or its multi-vector rows (5 to
// 40 tokens, each near one of its cluster's 8 token centres).
func (c clustered) vectors(s string, multi bool) ([]float32, [][]float32) {
	r := c.rng(s)
	k := r.IntN(c.clusters)
	if !multi {
		v := c.centre(k, c.single, 0)
		for i := range v {
			v[i] += float32(r.NormFloat64() * 0.8)
		}
		return v, nil
	}
	n := 5 + r.IntN(36)
	rows := make([][]float32, n)
	for t := range rows {
		v := c.centre(k, c.multi, r.IntN(8))
		for i := range v {
			v[i] += float32(r.NormFloat64() * 0.8)
		}
		rows[t] = normalized(v)
	}
	return nil, rows
}

func (c clustered) Info() engine.Info {
	return engine.Info{Name: "clustered-test", Hidden: c.single, MultivectorDim: c.multi, ContextLength: 1 << 16}
}

func (c clustered) Embed(ctx context.Context, req engine.Request) (*engine.Response, error) {
	resp := &engine.Response{}
	for _, in := range req.Inputs {
		var text strings.Builder
		for _, p := range in.Parts {
			text.WriteString(p.Text)
		}
		v, m := c.vectors(text.String(), req.Multivector)
		resp.Embeddings = append(resp.Embeddings, engine.Embedding{Vector: v, Multi: m, Tokens: 1})
		resp.PromptTokens++
	}
	return resp, nil
}

var testModel = clustered{single: 96, multi: 128, clusters: 12}

// writeCorpus writes n text files and indexes them into out.
func writeCorpus(t testing.TB, n int, multi bool) (src, out string) {
	t.Helper()
	return writeCorpusAs(t, n, multi, index.SidecarFloat32)
}

// writeCorpusAs is writeCorpus with sidecars of the given type.
func writeCorpusAs(t testing.TB, n int, multi bool, sidecar index.SidecarType) (src, out string) {
	t.Helper()
	dir := t.TempDir()
	src, out = filepath.Join(dir, "src"), filepath.Join(dir, "idx")
	for i := range n {
		sub := filepath.Join(src, fmt.Sprintf("d%d", i%3))
		os.MkdirAll(sub, 0o755)
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("doc%04d.txt", i)), []byte(fmt.Sprintf("document %d about topic %d", i, i*7%13)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	indexIntoAs(t, testModel, src, out, multi, sidecar)
	return src, out
}

func indexInto(t testing.TB, emb index.Embedder, src, out string, multi bool) *index.Summary {
	t.Helper()
	return indexIntoAs(t, emb, src, out, multi, index.SidecarFloat32)
}

func indexIntoAs(t testing.TB, emb index.Embedder, src, out string, multi bool, sidecar index.SidecarType) *index.Summary {
	t.Helper()
	sum, err := index.Run(context.Background(), emb, index.Options{
		Out: out, Paths: []string{src}, Request: engine.Request{Multivector: multi}, Sidecar: sidecar,
		ChunkTokens: 1000, Count: func(s string) int { return len(strings.Fields(s)) },
		ModelID: "test-model", ModelName: "clustered-test", Arithmetic: "test", PartRows: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func queries(n int, multi bool) []eval.Vectors {
	out := make([]eval.Vectors, n)
	for i := range out {
		v, m := testModel.vectors(fmt.Sprintf("query %d", i), multi)
		out[i] = eval.Vectors{Single: v, Multi: m}
	}
	return out
}

// exactTop is eval.Score's ranking of the dataset's rows for each query:
// ids, best first, ties by id descending.
func exactTop(t *testing.T, out string, qs []eval.Vectors, multi bool, k int) [][]string {
	tops, _ := exactTopScores(t, out, qs, multi, k, nil)
	return tops
}

// exactTopScores is exactTop with the scores, the rows' multi-vectors
// first passed through round (nil: as the dataset holds them).
func exactTopScores(t *testing.T, out string, qs []eval.Vectors, multi bool, k int, round func(float32) float32) ([][]string, [][]float64) {
	rows, err := index.ReadDataset(out)
	if err != nil {
		t.Fatal(err)
	}
	docs := make([]eval.Vectors, len(rows))
	for i, r := range rows {
		docs[i] = eval.Vectors{Single: r.Embedding, Multi: r.Vectors}
		if round != nil {
			for _, v := range r.Vectors {
				for j := range v {
					v[j] = round(v[j])
				}
			}
		}
	}
	scores, err := eval.Score(qs, docs, multi)
	if err != nil {
		t.Fatal(err)
	}
	tops := make([][]string, len(qs))
	tscores := make([][]float64, len(qs))
	for q, sc := range scores {
		order := make([]int, len(rows))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int {
			if sc[a] != sc[b] {
				if sc[a] > sc[b] {
					return -1
				}
				return 1
			}
			return strings.Compare(rows[b].ID, rows[a].ID)
		})
		for _, i := range order[:k] {
			tops[q] = append(tops[q], rows[i].ID)
			tscores[q] = append(tscores[q], sc[i])
		}
	}
	return tops, tscores
}

func ids(hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.ID)
	}
	return out
}

// TestSingleAsEval: on 300 items and 100 queries, the single-vector top-10
// is eval.Score's, in order.
func TestSingleAsEval(t *testing.T) {
	_, out := writeCorpus(t, 300, false)
	x, err := Open(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if in := x.Info(); in.Items != 300 || in.Multivector || in.Dims != 96 {
		t.Fatalf("info %+v", in)
	}
	qs := queries(100, false)
	want := exactTop(t, out, qs, false, 10)
	for i, q := range qs {
		// Exact (float32 over every row), and two stages (the Q8_0 copy,
		// then float32 over 40 candidates of 300).
		for _, o := range []Options{{TopK: 10, Exact: true}, {TopK: 10, Candidates: 40}, {TopK: 10}} {
			res, err := x.Search(Query{Single: q.Single}, o)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(res.Hits); !slices.Equal(got, want[i]) {
				t.Fatalf("query %d, %+v: top-10\n%v\nwant\n%v", i, o, got, want[i])
			}
		}
	}
}

// TestMultiAsEval: on 300 items and 100 queries, the two-stage top-10
// recalls at least 0.99 of exact float32 MaxSim's (eval.Score over the
// dataset's vectors), with float32 and with float16 sidecars; --exact's
// top-10 is eval.Score's, ids and scores bit for bit, over the vectors
// the sidecar holds: the dataset's for float32, each value rounded to the
// nearest float16 for float16 (a float16 is exact in float32, so the
// same products and sums give the same bits).
//
// Without sidecars (removed), the parts' vectors are read from the
// Parquet parts for the candidates only: the same results as float32
// sidecars, and no part holds its float vectors in memory.
func TestMultiAsEval(t *testing.T) {
	for _, typ := range []index.SidecarType{index.SidecarFloat32, index.SidecarFloat16} {
		t.Run(typ.String(), func(t *testing.T) { testMultiAsEval(t, typ, false) })
	}
	t.Run("no-sidecar", func(t *testing.T) { testMultiAsEval(t, index.SidecarFloat32, true) })
}

func testMultiAsEval(t *testing.T, typ index.SidecarType, noSidecar bool) {
	_, out := writeCorpusAs(t, 300, true, typ)
	if m, _ := filepath.Glob(filepath.Join(out, index.SidecarDir, "*.mv")); len(m) == 0 {
		t.Fatal("no sidecar written")
	}
	if noSidecar {
		if err := os.RemoveAll(filepath.Join(out, index.SidecarDir)); err != nil {
			t.Fatal(err)
		}
	}
	x, err := Open(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for _, p := range x.snap.Load().parts {
		if noSidecar && (p.parquet == nil || p.vecs != nil || len(p.off) != len(p.meta)+1) {
			t.Fatalf("part %s without a sidecar: parquet reader %v, %d vector bytes in memory", p.name, p.parquet != nil, len(p.vecs))
		}
	}
	if in := x.Info(); in.Items != 300 || len(in.Problems) != 0 {
		t.Fatalf("info %+v", in)
	}
	qs := queries(100, true)
	want := exactTop(t, out, qs, true, 10)
	var round func(float32) float32
	if typ == index.SidecarFloat16 {
		round = func(v float32) float32 { return gguf.F16ToF32(gguf.F32ToF16(v)) }
	}
	wantExact, wantScores := exactTopScores(t, out, qs, true, 10, round)
	found, total, differ := 0, 0, 0
	for i, q := range qs {
		res, err := x.Search(Query{Multi: q.Multi}, Options{TopK: 10, Exact: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(res.Hits); !slices.Equal(got, wantExact[i]) {
			t.Fatalf("query %d: exact top-10\n%v\nwant\n%v", i, got, wantExact[i])
		}
		for k, h := range res.Hits {
			if h.Score != wantScores[i][k] {
				t.Fatalf("query %d hit %d: exact score %v, eval.Score's %v", i, k, h.Score, wantScores[i][k])
			}
		}
		if !slices.Equal(wantExact[i], want[i]) {
			differ++
		}
		res, err = x.Search(Query{Multi: q.Multi}, Options{TopK: 10, Candidates: 30})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids(res.Hits) {
			if slices.Contains(want[i], id) {
				found++
			}
		}
		total += 10
	}
	recall := float64(found) / float64(total)
	name := typ.String()
	if noSidecar {
		name = "no sidecar"
	}
	t.Logf("%s: two-stage recall@10 with 30 candidates of 300, against float32 eval.Score: %.4f; %d of 100 exact top-10s differ from float32's", name, recall, differ)
	if recall < 0.99 {
		t.Errorf("recall@10 %.4f < 0.99", recall)
	}
}

// TestHammingKernels: the assembly kernel (AVX-512 where the CPU has it,
// NEON on arm64) and the generic one give the minima of a plain scan, on random codes of odd
// sizes (rows whose token count is not a multiple of 8 included).
func TestHammingKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 200 {
		nq, nt := 1+r.IntN(25), 1+r.IntN(70)
		q := make([]uint64, 2*nq)
		codes := make([]uint64, 2*nt)
		for i := range q {
			q[i] = r.Uint64()
		}
		for i := range codes {
			codes[i] = r.Uint64()
			if trial%3 == 0 {
				codes[i] &= 0xff00ff00ff00ff00 // closer codes, more ties
			}
		}
		want := 0
		for i := range nq {
			m := 129
			for k := range nt {
				m = min(m, bits.OnesCount64(q[2*i]^codes[2*k])+bits.OnesCount64(q[2*i+1]^codes[2*k+1]))
			}
			want += m
		}
		blocks := planar(nil, codes)
		lanes := make([]uint64, nq*blockTokens)
		if got := hammingSum(q, blocks, lanes); got != want {
			t.Fatalf("trial %d (%d query codes, %d tokens): hammingSum %d, want %d (assembly kernel: %q)", trial, nq, nt, got, want, hammingAsm())
		}
		hammingMinGeneric(q, blocks, lanes)
		got := 0
		for i := 0; i < len(lanes); i += blockTokens {
			got += int(slices.Min(lanes[i : i+blockTokens]))
		}
		if got != want {
			t.Fatalf("trial %d: generic %d, want %d", trial, got, want)
		}
	}
	if hammingAsm() == "" {
		t.Log("no assembly Hamming kernel here: only the generic one was checked")
	}
}

// TestBadIndexes: a folder that is not an index, an empty one, a part or
// a sidecar that fails to read (reported, the rest served), shards of
// different models, a bad filter and top_k.
func TestBadIndexes(t *testing.T) {
	if _, err := Open(t.TempDir(), nil); !errors.Is(err, ErrNotIndex) {
		t.Errorf("an empty folder: %v", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "nope"), nil); err == nil {
		t.Error("a missing folder opened")
	}
	empty := t.TempDir()
	os.Mkdir(filepath.Join(empty, index.PartsDir), 0o755)
	x, err := Open(empty, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := x.Search(Query{Single: []float32{1}}, Options{}); err != nil || len(res.Hits) != 0 {
		t.Errorf("an empty index: %v %v", res, err)
	}

	_, out := writeCorpus(t, 150, true)
	parts, _ := filepath.Glob(filepath.Join(out, index.PartsDir, "*.parquet"))
	if len(parts) < 2 {
		t.Fatalf("%d parts", len(parts))
	}
	// A corrupt part beside the others, and a part whose sidecar is cut.
	os.WriteFile(filepath.Join(out, index.PartsDir, "s0of1-g000009-000001.parquet"), []byte("PAR1 not really"), 0o644)
	sc := filepath.Join(out, index.SidecarDir, index.SidecarName(filepath.Base(parts[0])))
	b, _ := os.ReadFile(sc)
	os.WriteFile(sc, b[:len(b)-3], 0o644)
	// A temporary file of a write in progress is not read.
	os.WriteFile(filepath.Join(out, index.PartsDir, ".s0of1-g000009-000002.parquet.tmp123"), []byte("half"), 0o644)
	x, err = Open(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := x.Info()
	if len(in.Problems) != 2 {
		t.Fatalf("problems %+v", in.Problems)
	}
	rows, _ := index.ReadPart(parts[0])
	if in.Items != 150-len(rows) {
		t.Errorf("%d items served, want %d", in.Items, 150-len(rows))
	}
	q := queries(1, true)[0]
	if res, err := x.Search(Query{Multi: q.Multi}, Options{TopK: 5}); err != nil || len(res.Hits) != 5 {
		t.Errorf("search beside bad parts: %v", err)
	}
	for _, o := range []Options{{TopK: MaxTopK + 1}, {TopK: -1}, {Filter: "["}} {
		if _, err := x.Search(Query{Multi: q.Multi}, o); !errors.Is(err, ErrBadQuery) {
			t.Errorf("%+v: %v", o, err)
		}
	}
	if _, err := x.Search(Query{Multi: [][]float32{{1, 2}}}, Options{}); !errors.Is(err, ErrBadQuery) {
		t.Errorf("a query of another width: %v", err)
	}

	// A second shard's manifest of another model.
	m, _ := os.ReadFile(filepath.Join(out, "manifest-0of1.json"))
	other := strings.Replace(string(m), `"model_identity": "test-model"`, `"model_identity": "another-model"`, 1)
	os.WriteFile(filepath.Join(out, "manifest-1of2.json"), []byte(other), 0o644)
	if _, err := Open(out, nil); err == nil || !strings.Contains(err.Error(), "different models") {
		t.Errorf("shards of two models: %v", err)
	}
}

// TestSidecarRewriteFollowed: a run that rewrites the sidecars in another
// element type (vembed index --sidecar, the parts unchanged) is followed
// by Refresh: the parts load again from the new sidecars.
func TestSidecarRewriteFollowed(t *testing.T) {
	src, out := writeCorpusAs(t, 100, true, index.SidecarFloat32)
	x, err := Open(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	indexIntoAs(t, testModel, src, out, true, index.SidecarFloat16)
	if err := x.Refresh(); err != nil {
		t.Fatal(err)
	}
	s := x.snap.Load()
	if len(s.parts) == 0 || s.rows != 100 {
		t.Fatalf("%d parts, %d rows", len(s.parts), s.rows)
	}
	for _, p := range s.parts {
		if p.elem != index.SidecarFloat16 {
			t.Fatalf("part %s still searched from a %s sidecar", p.name, p.elem)
		}
	}
}

// TestCandidatesGrowWithIndex pins the first stage's count: the floor,
// TopK's share, and one page in CandidateShare on large indexes (the
// 100,000-page bench needed 2,000 for recall@10 1.0).
func TestCandidatesGrowWithIndex(t *testing.T) {
	for _, c := range []struct {
		rows int
		o    Options
		want int
	}{
		{300, Options{TopK: 10}, 200},
		{10000, Options{TopK: 10}, 200},
		{10000, Options{TopK: 100}, 400},
		{100000, Options{TopK: 10}, 2000},
		{100000, Options{TopK: 10, Candidates: 300}, 300},
		{1000000, Options{TopK: 1000}, 20000},
	} {
		if got := Candidates(c.rows, c.o); got != c.want {
			t.Errorf("Candidates(%d, %+v) = %d, want %d", c.rows, c.o, got, c.want)
		}
	}
}
