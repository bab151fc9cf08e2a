// Package modeltest holds the checks every model family's tests share: the
// serving invariances the engine builds on. Batching images in one vision
// pass, stepping a pass a stage at a time, packing sequences in one
// decoder pass and cutting them into chunks spread over passes shared with
// other sequences must all give, bit for bit, what each image or sequence
// gives alone; the engine's caches and scheduler assume it.
package modeltest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/imageproc"
	"github.com/vembed/vembed/kernels"
	"github.com/vembed/vembed/model"
	"github.com/vembed/vembed/synth"
)

// SameBits fails unless got and want are equal bit for bit.
func SameBits(t testing.TB, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: value %d is %v, want %v", what, i, got[i], want[i])
		}
	}
}

// Weights names the weight encodings of an LM and its mmproj.
type Weights struct{ LM, MMProj string }

// InvarianceWeights are the encodings the invariance tests run on: float32,
// llama.cpp's usual K mix beside an F16 tower, and Q8_0 throughout (integer
// products on the int8 tier).
var InvarianceWeights = []Weights{{"F32", "F32"}, {"Q4_K_M", "F16"}, {"Q8_0", "Q8_0"}}

// EachWeightsAndTier loads a model per encoding and runs f on it as a
// subtest under every kernel tier of this machine, restoring the active
// tier after; the slow reference tier runs on float32 weights only.
func EachWeightsAndTier[M any](t *testing.T, ws []Weights, load func(Weights) M, f func(t *testing.T, m M)) {
	saved := kernels.Active()
	defer kernels.Use(saved)
	for _, w := range ws {
		m := load(w)
		t.Run(w.LM+"+"+w.MMProj, func(t *testing.T) {
			for _, tier := range kernels.Available() {
				if err := kernels.Use(tier); err != nil {
					t.Fatal(err)
				}
				t.Run(string(tier), func(t *testing.T) {
					if tier == kernels.TierReference && w.LM != "F32" {
						t.Skip("the reference tier is exercised on the float32 model")
					}
					f(t, m)
				})
			}
		})
	}
}

// SynthPair writes a pair of a synth preset, in the given weight types
// (empty: the preset's) and edited by edit when not nil, into a temporary
// directory and returns its paths.
func SynthPair(t testing.TB, preset, lmType, mmType string, edit func(*synth.Config)) (lm, mm string) {
	t.Helper()
	cfg, err := synth.Preset(preset)
	if err != nil {
		t.Fatal(err)
	}
	if lmType != "" {
		cfg.LMType = lmType
	}
	if mmType != "" {
		cfg.MMProjType = mmType
	}
	if edit != nil {
		edit(&cfg)
	}
	if lm, mm, err = synth.WritePair(t.TempDir(), cfg); err != nil {
		t.Fatal(err)
	}
	return lm, mm
}

// RandomImage returns an image of the grid (in patches) with values like
// normalized pixels, for a model taking patchValues values per patch.
func RandomImage(r *rand.Rand, patchValues, gt, gh, gw int) model.ImageInput {
	p := make([]float32, gt*gh*gw*patchValues)
	for i := range p {
		p[i] = float32(r.NormFloat64())
	}
	return model.ImageInput{Patches: p, GridT: gt, GridH: gh, GridW: gw}
}

// Place returns the embedding of an encoded image at token first.
func Place(e model.EncodedImage, im model.ImageInput, first int) model.ImageEmbedding {
	return model.ImageEmbedding{Rows: e.Rows, Deep: e.Deep, First: first, GridT: im.GridT, GridH: im.GridH, GridW: im.GridW}
}

// Sequence returns n random text ids (below 256, never pad) with the runs
// of pad each image needs (one per merged unit of mergeSize² patches).
func Sequence(r *rand.Rand, n int, pad int32, mergeSize int, imgs []model.ImageEmbedding) model.Sequence {
	ids := make([]int32, n)
	for i := range ids {
		if ids[i] = int32(r.IntN(256)); ids[i] == pad {
			ids[i] = 0
		}
	}
	for _, im := range imgs {
		for j := range im.GridT * im.GridH * im.GridW / (mergeSize * mergeSize) {
			ids[im.First+j] = pad
		}
	}
	return model.Sequence{IDs: ids, Images: imgs}
}

// encode runs one vision pass over imgs, steps stages at a time.
func encode(t testing.TB, m model.Model, imgs []model.ImageInput, steps int) []model.EncodedImage {
	t.Helper()
	p, err := m.NewVisionPass(imgs, false)
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; !p.Done(); n++ {
		if n > p.Stages() {
			t.Fatal("vision pass does not finish")
		}
		if err := p.Step(steps); err != nil {
			t.Fatal(err)
		}
	}
	return p.Result()
}

func sameImage(t testing.TB, what string, got, want model.EncodedImage) {
	t.Helper()
	SameBits(t, what+": rows", got.Rows, want.Rows)
	if len(got.Deep) != len(want.Deep) {
		t.Fatalf("%s: %d DeepStack sets, want %d", what, len(got.Deep), len(want.Deep))
	}
	for k := range got.Deep {
		SameBits(t, fmt.Sprintf("%s: DeepStack set %d", what, k), got.Deep[k], want.Deep[k])
	}
}

// VisionInvariance encodes imgs in one pass run whole, each image alone,
// and the images after the first in a pass stepped one stage at a time,
// and fails unless every image's rows (DeepStack sets included) agree bit
// for bit. It returns the encodings of the whole pass.
func VisionInvariance(t testing.TB, m model.Model, imgs []model.ImageInput) []model.EncodedImage {
	t.Helper()
	all := encode(t, m, imgs, 1<<20)
	if len(all) != len(imgs) {
		t.Fatalf("%d encodings for %d images", len(all), len(imgs))
	}
	for i, im := range imgs {
		one := encode(t, m, []model.ImageInput{im}, 1<<20)
		sameImage(t, fmt.Sprintf("image %d batched vs alone", i), all[i], one[0])
	}
	for i, e := range encode(t, m, imgs[1:], 1) {
		sameImage(t, fmt.Sprintf("image %d stepped pass", i+1), e, all[i+1])
	}
	return all
}

// Forward runs seqs in one decoder pass, each whole, and returns their
// final hidden states.
func Forward(t testing.TB, m model.Model, seqs []model.Sequence) [][]float32 {
	t.Helper()
	chunks := make([]model.Chunk, len(seqs))
	for i, sq := range seqs {
		st, err := m.NewState(sq)
		if err != nil {
			t.Fatal(err)
		}
		chunks[i] = model.Chunk{State: st, N: st.Len()}
	}
	out, err := m.ForwardChunks(chunks)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Chunked runs seqs in chunks of about chunk tokens, each decoder pass
// taking a chunk of a varying subset of the unfinished sequences, and
// returns every sequence's final hidden states put back together.
func Chunked(t testing.TB, m model.Model, seqs []model.Sequence, chunk int) [][]float32 {
	t.Helper()
	states := make([]model.State, len(seqs))
	got := make([][]float32, len(seqs))
	for i, sq := range seqs {
		var err error
		if states[i], err = m.NewState(sq); err != nil {
			t.Fatal(err)
		}
	}
	for pass := 0; ; pass++ {
		var chunks []model.Chunk
		var which []int
		for i, st := range states {
			if st.Done() < st.Len() && (i+pass)%3 != 0 {
				n := min(chunk+(i*7+pass)%5, st.Len()-st.Done())
				chunks = append(chunks, model.Chunk{State: st, N: n})
				which = append(which, i)
			}
		}
		if len(chunks) == 0 {
			if pass > 0 && allDone(states) {
				return got
			}
			continue
		}
		out, err := m.ForwardChunks(chunks)
		if err != nil {
			t.Fatal(err)
		}
		for k, i := range which {
			got[i] = append(got[i], out[k]...)
		}
	}
}

func allDone(states []model.State) bool {
	for _, st := range states {
		if st.Done() < st.Len() {
			return false
		}
	}
	return true
}

// SequenceInvariance runs seqs each alone, all packed in one pass, and
// chunked over shared passes at several chunk sizes, and fails unless
// every sequence's hidden states agree bit for bit. It returns the rows
// of each sequence alone.
func SequenceInvariance(t testing.TB, m model.Model, seqs []model.Sequence) [][]float32 {
	t.Helper()
	D := m.Info().Hidden
	alone := make([][]float32, len(seqs))
	for i, sq := range seqs {
		alone[i] = Forward(t, m, []model.Sequence{sq})[0]
		if len(alone[i]) != len(sq.IDs)*D {
			t.Fatalf("sequence %d: %d values, want %d", i, len(alone[i]), len(sq.IDs)*D)
		}
	}
	for i, rows := range Forward(t, m, seqs) {
		SameBits(t, fmt.Sprintf("sequence %d packed vs alone", i), rows, alone[i])
	}
	for _, chunk := range []int{1, 13, 64, 100} {
		for i, rows := range Chunked(t, m, seqs, chunk) {
			SameBits(t, fmt.Sprintf("chunk %d: sequence %d chunked vs one pass", chunk, i), rows, alone[i])
		}
	}
	return alone
}

// Float32Tier is the tier of float32 products the lower-precision tiers
// are compared with: avx2, or neon on arm64 (the same bits).
func Float32Tier() kernels.Tier {
	if slices.Contains(kernels.Available(), kernels.TierAVX2) {
		return kernels.TierAVX2
	}
	return kernels.TierNEON
}

// NeedBF16 skips a test on CPUs without a tier that rounds products to
// bfloat16 (kernels.BF16Tiers: avx512-bf16, amx-bf16, neon-bf16) and
// returns those tiers; the active tier comes back when the test ends.
func NeedBF16(t testing.TB) []kernels.Tier {
	t.Helper()
	bf := kernels.BF16Tiers()
	if len(bf) == 0 {
		t.Skip("no bfloat16 tier on this CPU (avx512-bf16 needs AVX512_BF16)")
	}
	saved := kernels.Active()
	t.Cleanup(func() { kernels.Use(saved) })
	return bf
}

// UsePackingTier makes a tier that packs Q8_0 weights at load (a VNNI
// tier) active with packing on until t ends, and returns it; it skips t
// on CPUs without one.
func UsePackingTier(t testing.TB) kernels.Tier {
	t.Helper()
	for _, tier := range []kernels.Tier{kernels.TierAVX512VNNI, kernels.TierAVXVNNI} {
		if !slices.Contains(kernels.Available(), tier) {
			continue
		}
		saved, packing := kernels.Active(), kernels.SetPacking(true)
		t.Cleanup(func() {
			kernels.SetPacking(packing)
			kernels.Use(saved)
		})
		if err := kernels.Use(tier); err != nil {
			t.Fatal(err)
		}
		return tier
	}
	t.Skip("no VNNI tier on this CPU: nothing packs")
	return ""
}

// RewriteGGUF copies the GGUF at src into a new file: metadata as stored
// with meta applied on top (a nil value drops the key), every tensor passed
// through edit (nil drops it), then extra tensors.
func RewriteGGUF(t testing.TB, src string, meta map[string]any, edit func(*gguf.Tensor) *gguf.Tensor, extra ...*gguf.Tensor) string {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := gguf.NewWriter()
	for _, kv := range f.KVs {
		if v, ok := meta[kv.Key]; ok {
			if v != nil {
				w.Add(kv.Key, v)
			}
			continue
		}
		w.Add(kv.Key, kv.Value)
	}
	for k, v := range meta {
		if _, ok := f.Lookup(k); !ok && v != nil {
			w.Add(k, v)
		}
	}
	for _, tt := range f.Tensors {
		if edit != nil {
			if tt = edit(tt); tt == nil {
				continue
			}
		}
		extra = append([]*gguf.Tensor{tt}, extra...)
	}
	for i := len(extra) - 1; i >= 0; i-- { // the file's tensors first, in order
		tt := extra[i]
		if err := w.AddTensor(tt.Name, tt.Type, tt.Dims, tt.Data); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := w.WriteFile(out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Encode runs one vision pass over imgs whole.
func Encode(t testing.TB, m model.Model, imgs []model.ImageInput) []model.EncodedImage {
	t.Helper()
	return encode(t, m, imgs, 1<<20)
}

// Photo is a synthetic photo preprocessed for a model of info (between
// 64² and 128² pixels): real pixels through the real resize, for the
// tests that pin whole embeddings across architectures.
func Photo(t testing.TB, info model.Info) model.ImageInput {
	t.Helper()
	photo, err := synth.Photo(90, 4, "png")
	if err != nil {
		t.Fatal(err)
	}
	cfg := imageproc.Config{PatchSize: info.PatchSize, MergeSize: info.MergeSize, TemporalPatchSize: info.TemporalPatchSize,
		Mean: info.ImageMean, Std: info.ImageStd, MinPixels: 64 * 64, MaxPixels: 128 * 128}
	p, err := imageproc.Preprocess(photo, cfg, imageproc.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return model.ImageInput{Patches: p.Data, GridT: p.GridT, GridH: p.GridH, GridW: p.GridW}
}
