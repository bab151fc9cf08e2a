package convert

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	pngenc "image/png"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/internal/ref64"
	"github.com/vembed/vembed/qwenlayout"
	"github.com/vembed/vembed/safetensors"
	"github.com/vembed/vembed/synth"
	"github.com/vembed/vembed/tokenizer"
)

// The tests below check the converter against the test's own reading of
// the synthetic checkpoints: its own name table, its own LoRA merge and
// its own float64 forward pass, sharing none of the converter's code.

// layoutCase is a synthetic checkpoint of one layout.
type layoutCase struct {
	layout, preset     string
	lmPrefix, vPrefix  string // the layout's tensor-name prefixes
	adapter            string // adapter directory relative to the checkpoint
	tasks              []string
	head               string
	recipe             string
	pooling            uint32
	hasPooling, qwen25 bool
	qwen3              bool
	rank               bool // a reranker: rank pooling, the head's yes/no rows
}

var cases = []layoutCase{
	{layout: qwenlayout.LayoutJinaV4, preset: "tiny", lmPrefix: "model.", vPrefix: "visual.", adapter: "adapters", tasks: qwenlayout.JinaTasks, head: "multi_vector_projector", recipe: "jina-embeddings-v4", pooling: 1, hasPooling: true, qwen25: true},
	{layout: qwenlayout.LayoutColQwen25, preset: "tiny", lmPrefix: "language_model.", vPrefix: "visual.", adapter: ".", tasks: []string{""}, head: "custom_text_proj", recipe: "colqwen2", pooling: 0, hasPooling: true, qwen25: true},
	{layout: qwenlayout.LayoutColQwen2, preset: "tiny-qwen2vl", lmPrefix: "model.", vPrefix: "visual.", adapter: ".", tasks: []string{""}, head: "custom_text_proj", recipe: "colqwen2", pooling: 0, hasPooling: true},
	{layout: qwenlayout.LayoutGME, preset: "tiny-qwen2vl", lmPrefix: "model.", vPrefix: "visual.", tasks: []string{""}, recipe: "gme", pooling: 3, hasPooling: true},
}

// qwen3Cases are Qwen3-VL checkpoints: the embedding model (no pooling
// key, as llama.cpp writes it) and the reranker (rank pooling, the head's
// "yes" and "no" rows as cls.output.weight).
var qwen3Cases = []layoutCase{
	{layout: qwenlayout.LayoutQwen3VL, preset: "tiny-qwen3vl", lmPrefix: "model.language_model.", vPrefix: "model.visual.", tasks: []string{""}, recipe: "qwen3-vl-embedding", qwen3: true},
	{layout: qwenlayout.LayoutQwen3VLReranker, preset: "tiny-qwen3vl", lmPrefix: "model.language_model.", vPrefix: "model.visual.", tasks: []string{""}, recipe: "qwen3-vl-reranker", qwen3: true, rank: true, pooling: 4, hasPooling: true},
}

func writeCase(t *testing.T, c layoutCase, dtype safetensors.DType) (string, synth.Config) {
	t.Helper()
	cfg, err := synth.Preset(c.preset)
	if err != nil {
		t.Fatal(err)
	}
	if c.qwen3 {
		cfg.LM.Pooling = map[bool]string{true: "rank"}[c.rank]
	}
	dir := filepath.Join(t.TempDir(), "hf")
	// Small shards: the checkpoint is sharded with an index, as published ones are.
	if err := synth.WriteHF(dir, cfg, synth.HFOptions{Layout: c.layout, DType: dtype, ShardBytes: 200 << 10}); err != nil {
		t.Fatal(err)
	}
	return dir, cfg
}

// ---- the test's own checkpoint reading and LoRA merge ----

type testCkpt struct {
	t       *testing.T
	ck      *safetensors.Checkpoint
	adapter *safetensors.File
	scale   float64
	r       int
	infix   string
	dir     string
}

func openTestCkpt(t *testing.T, dir string, c layoutCase, task string) *testCkpt {
	ck, err := safetensors.OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	tc := &testCkpt{t: t, ck: ck, dir: dir}
	t.Cleanup(func() { ck.Close() })
	if c.adapter != "" {
		ad := filepath.Join(dir, c.adapter)
		var ac struct {
			R     int     `json:"r"`
			Alpha float64 `json:"lora_alpha"`
		}
		b, err := os.ReadFile(filepath.Join(ad, "adapter_config.json"))
		if err != nil || json.Unmarshal(b, &ac) != nil {
			t.Fatal("adapter_config.json", err)
		}
		if tc.adapter, err = safetensors.Open(filepath.Join(ad, "adapter_model.safetensors")); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tc.adapter.Close() })
		tc.r, tc.scale = ac.R, ac.Alpha/float64(ac.R)
		if task != "" {
			tc.infix = "." + task
		}
	}
	return tc
}

// raw reads a checkpoint tensor as stored.
func (tc *testCkpt) raw(name string) ([]float64, []int64) {
	info, f, ok := tc.ck.Tensor(name)
	if !ok {
		tc.t.Fatalf("checkpoint has no %s", name)
	}
	v, err := f.Float64(name)
	if err != nil {
		tc.t.Fatal(err)
	}
	return v, info.Shape
}

// merged reads a weight with its LoRA update W + (alpha/r)·B·A.
func (tc *testCkpt) merged(name string) ([]float64, []int64) {
	w, shape := tc.raw(name)
	if tc.adapter == nil || !strings.HasSuffix(name, ".weight") {
		return w, shape
	}
	p := "base_model.model." + strings.TrimSuffix(name, ".weight")
	an, bn := p+".lora_A"+tc.infix+".weight", p+".lora_B"+tc.infix+".weight"
	if _, ok := tc.adapter.Tensors[an]; !ok {
		return w, shape
	}
	A, _ := tc.adapter.Float64(an)
	B, _ := tc.adapter.Float64(bn)
	rows, cols := int(shape[0]), int(shape[1])
	out := append([]float64(nil), w...)
	for i := range rows {
		for j := range cols {
			var d float64
			for k := range tc.r {
				d += B[i*tc.r+k] * A[k*cols+j]
			}
			out[i*cols+j] += tc.scale * d
		}
	}
	return out, shape
}

// ---- the test's own GGUF -> checkpoint name table ----

var testNames = []struct {
	re *regexp.Regexp
	hf string
}{
	{regexp.MustCompile(`^token_embd\.weight$`), "L.embed_tokens.weight"},
	{regexp.MustCompile(`^output_norm\.weight$`), "L.norm.weight"},
	{regexp.MustCompile(`^blk\.(\d+)\.attn_norm\.weight$`), "L.layers.$1.input_layernorm.weight"},
	{regexp.MustCompile(`^blk\.(\d+)\.ffn_norm\.weight$`), "L.layers.$1.post_attention_layernorm.weight"},
	{regexp.MustCompile(`^blk\.(\d+)\.attn_(q|k|v)\.(weight|bias)$`), "L.layers.$1.self_attn.${2}_proj.$3"},
	{regexp.MustCompile(`^blk\.(\d+)\.attn_output\.weight$`), "L.layers.$1.self_attn.o_proj.weight"},
	{regexp.MustCompile(`^blk\.(\d+)\.ffn_(gate|up|down)\.weight$`), "L.layers.$1.mlp.${2}_proj.weight"},
	{regexp.MustCompile(`^v\.blk\.(\d+)\.ln(1|2)\.(weight|bias)$`), "V.blocks.$1.norm$2.$3"},
	{regexp.MustCompile(`^v\.blk\.(\d+)\.attn_out\.(weight|bias)$`), "V.blocks.$1.attn.proj.$2"},
	{regexp.MustCompile(`^v\.post_ln\.(weight|bias)$`), "V.merger.ln_q.$1"},
	{regexp.MustCompile(`^mm\.(0|2)\.(weight|bias)$`), "V.merger.mlp.$1.$2"},
	{regexp.MustCompile(`^mvproj\.(weight|bias)$`), "H.$1"},
}

// testQwen3Names are the Qwen3-VL sources that differ from the above, as
// Qwen3VLForConditionalGeneration names them.
var testQwen3Names = []struct {
	re *regexp.Regexp
	hf string
}{
	{regexp.MustCompile(`^blk\.(\d+)\.attn_(q|k)_norm\.weight$`), "L.layers.$1.self_attn.${2}_norm.weight"},
	{regexp.MustCompile(`^v\.blk\.(\d+)\.attn_qkv\.(weight|bias)$`), "V.blocks.$1.attn.qkv.$2"},
	{regexp.MustCompile(`^v\.blk\.(\d+)\.ffn_up\.(weight|bias)$`), "V.blocks.$1.mlp.linear_fc1.$2"},
	{regexp.MustCompile(`^v\.blk\.(\d+)\.ffn_down\.(weight|bias)$`), "V.blocks.$1.mlp.linear_fc2.$2"},
	{regexp.MustCompile(`^v\.post_ln\.(weight|bias)$`), "V.merger.norm.$1"},
	{regexp.MustCompile(`^mm\.0\.(weight|bias)$`), "V.merger.linear_fc1.$1"},
	{regexp.MustCompile(`^mm\.2\.(weight|bias)$`), "V.merger.linear_fc2.$1"},
	{regexp.MustCompile(`^v\.patch_embd\.bias$`), "V.patch_embed.proj.bias"},
	{regexp.MustCompile(`^v\.position_embd\.weight$`), "V.pos_embed.weight"},
}

// expected returns what the converted tensor must hold, in float64,
// computed from the checkpoint by the test.
func (tc *testCkpt) expected(name string, c layoutCase) []float64 {
	if c.qwen3 {
		if v := tc.expectedQwen3(name, c); v != nil {
			return v
		}
	}
	if m := regexp.MustCompile(`^v\.blk\.(\d+)\.attn_(q|k|v)\.(weight|bias)$`).FindStringSubmatch(name); m != nil {
		all, _ := tc.raw(c.vPrefix + "blocks." + m[1] + ".attn.qkv." + m[3])
		third := len(all) / 3
		i := strings.Index("qkv", m[2])
		return all[i*third : (i+1)*third]
	}
	if m := regexp.MustCompile(`^v\.blk\.(\d+)\.ffn_(up|down|gate)\.(weight|bias)$`).FindStringSubmatch(name); m != nil {
		hf := c.vPrefix + "blocks." + m[1] + ".mlp." + m[2] + "_proj." + m[3]
		if !c.qwen25 {
			hf = c.vPrefix + "blocks." + m[1] + ".mlp." + map[string]string{"up": "fc1", "down": "fc2"}[m[2]] + "." + m[3]
		}
		v, _ := tc.raw(hf)
		return v
	}
	if name == "v.patch_embd.weight" || name == "v.patch_embd.weight.1" || name == "v.patch_embd.weight_flat" {
		all, s := tc.raw(c.vPrefix + "patch_embed.proj.weight") // [W, 3, 2, p, p]
		if name == "v.patch_embd.weight_flat" {
			return all
		}
		tt := 0
		if strings.HasSuffix(name, ".1") {
			tt = 1
		}
		pp := int(s[3] * s[4])
		var out []float64
		for o := range int(s[0]) {
			for ch := range 3 {
				at := ((o*3+ch)*2 + tt) * pp
				out = append(out, all[at:at+pp]...)
			}
		}
		return out
	}
	for _, m := range testNames {
		if m.re.MatchString(name) {
			hf := m.re.ReplaceAllString(name, m.hf)
			hf = strings.NewReplacer("L.", c.lmPrefix, "V.", c.vPrefix, "H.", c.head+".").Replace(hf)
			v, _ := tc.merged(hf)
			return v
		}
	}
	tc.t.Fatalf("the test has no source for %s", name)
	return nil
}

// encode rounds float64 values once to typ and encodes them as ggml does.
func encode(t *testing.T, typ gguf.Type, v []float64) []byte {
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	if typ == gguf.TypeF32 {
		b := make([]byte, 0, 4*len(f))
		for _, x := range f {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
		return b
	}
	b, err := gguf.Quantize(typ, f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkFile compares every tensor of a converted GGUF with the checkpoint.
func checkFile(t *testing.T, path string, tc *testCkpt, c layoutCase) *gguf.File {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	for _, tt := range f.Tensors {
		want := encode(t, tt.Type, tc.expected(tt.Name, c))
		if string(want) != string(tt.Data) {
			t.Errorf("%s: %s %s differs from the checkpoint's merged weight rounded once", filepath.Base(path), tt.Name, tt.Type)
		}
	}
	return f
}

// TestTensorsAndMetadata converts each layout and checks every tensor
// against the checkpoint's merged weights rounded once to its type, and
// the metadata against synth's files of the same configuration.
func TestTensorsAndMetadata(t *testing.T) {
	for _, c := range append(cases[:len(cases):len(cases)], qwen3Cases...) {
		for _, typ := range []string{"F16", "Q8_0"} {
			t.Run(c.layout+"/"+typ, func(t *testing.T) {
				dir, cfg := writeCase(t, c, safetensors.BF16)
				out := t.TempDir()
				res, err := Convert(context.Background(), dir, out, Options{Type: typ, MMProjType: typ, Task: map[bool]string{true: "all"}[len(c.tasks) > 1]})
				if err != nil {
					t.Fatal(err)
				}
				if res.Layout != c.layout || len(res.LMs) != len(c.tasks) {
					t.Fatalf("layout %q, %d LMs; want %s, %d", res.Layout, len(res.LMs), c.layout, len(c.tasks))
				}
				for i, task := range res.Tasks {
					tc := openTestCkpt(t, dir, c, task)
					lm := checkFile(t, res.LMs[i], tc, c)
					if r, _ := lm.String("vembed.recipe"); r != c.recipe {
						t.Errorf("vembed.recipe %q, want %q", r, c.recipe)
					}
					arch := map[bool]string{false: "qwen2vl", true: "qwen3vl"}[c.qwen3]
					if p, err := lm.Uint(arch + ".pooling_type"); c.hasPooling && (err != nil || uint32(p) != c.pooling) {
						t.Errorf("pooling_type %d (%v), want %d", p, err, c.pooling)
					} else if !c.hasPooling && err == nil {
						t.Errorf("pooling_type %d written, want none (as llama.cpp)", p)
					}
					if c.head != "" {
						mv := checkFile(t, res.MVProjs[i], tc, c)
						if got, _ := mv.String("mvproj.task"); got != task {
							t.Errorf("mvproj.task %q, want %q", got, task)
						}
					}
				}
				checkFile(t, res.MMProj, openTestCkpt(t, dir, c, ""), c)

				// The same configuration written by synth has the same keys and
				// values (tokenizer included) and the same tensors in the same
				// order, types and shapes; the converter only adds its recipe
				// keys and the flat patch weight.
				cfg.LMType, cfg.MMProjType = typ, typ
				syn := t.TempDir()
				lmPath, mmPath, err := synth.WritePair(syn, cfg)
				if err != nil {
					t.Fatal(err)
				}
				sameLayout(t, lmPath, res.LMs[0], "vembed.recipe", "vembed.query_prefix", "qwen2vl.pooling_type", "general.name", "general.basename")
				if c.qwen3 {
					runConverted(t, res, c.rank)
				}
				if typ == "F16" { // block types keep quantize.DefaultKeep's groups, which synth quantizes
					sameLayout(t, mmPath, res.MMProj, "v.patch_embd.weight_flat", "general.name", "general.basename", "clip.vision.image_min_pixels", "clip.vision.image_max_pixels")
				}
			})
		}
	}
}

// sameLayout compares two GGUFs' keys and tensors, but for the names given.
func sameLayout(t *testing.T, want, got string, except ...string) {
	t.Helper()
	a, err := gguf.Open(want)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := gguf.Open(got)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	skip := func(n string) bool {
		for _, e := range except {
			if n == e {
				return true
			}
		}
		return false
	}
	var ka, kb []string
	for _, kv := range a.KVs {
		if !skip(kv.Key) {
			ka = append(ka, fmt.Sprintf("%s=%v", kv.Key, kv.Value.Interface()))
		}
	}
	for _, kv := range b.KVs {
		if !skip(kv.Key) {
			kb = append(kb, fmt.Sprintf("%s=%v", kv.Key, kv.Value.Interface()))
		}
	}
	if strings.Join(ka, "\n") != strings.Join(kb, "\n") {
		for i := range max(len(ka), len(kb)) {
			x, y := "", ""
			if i < len(ka) {
				x = ka[i]
			}
			if i < len(kb) {
				y = kb[i]
			}
			if x != y {
				t.Errorf("%s: key %d: synth %.120q, converted %.120q", filepath.Base(got), i, x, y)
				break
			}
		}
	}
	var ta, tb []string
	for _, tt := range a.Tensors {
		ta = append(ta, fmt.Sprintf("%s %s %v", tt.Name, tt.Type, tt.Dims))
	}
	for _, tt := range b.Tensors {
		if !skip(tt.Name) {
			tb = append(tb, fmt.Sprintf("%s %s %v", tt.Name, tt.Type, tt.Dims))
		}
	}
	if strings.Join(ta, "\n") != strings.Join(tb, "\n") {
		t.Errorf("%s: tensors differ from synth's:\n%v\n%v", filepath.Base(got), ta, tb)
	}
}

// ---- the test's own float64 forward pass ----

type refModel struct {
	tc                    *testCkpt
	p                     string
	hidden, heads, kv, nL int
	theta, eps            float64
	w                     map[string][]float64
}

func (m *refModel) get(name string) []float64 {
	if v, ok := m.w[name]; ok {
		return v
	}
	v, _ := m.tc.merged(m.p + name)
	m.w[name] = v
	return v
}

// linear: y = W·x + b for W [out, in].
func linear(w, b, x []float64) []float64 {
	in := len(x)
	out := make([]float64, len(w)/in)
	for o := range out {
		var s float64
		for i, xi := range x {
			s += w[o*in+i] * xi
		}
		if b != nil {
			s += b[o]
		}
		out[o] = s
	}
	return out
}

// forward returns the final hidden states (after the last norm).
func (m *refModel) forward(ids []int32) [][]float64 {
	H, n := m.hidden, len(ids)
	d := H / m.heads
	emb := m.get("embed_tokens.weight")
	x := make([][]float64, n)
	for i, id := range ids {
		x[i] = append([]float64(nil), emb[int(id)*H:(int(id)+1)*H]...)
	}
	for l := range m.nL {
		p := fmt.Sprintf("layers.%d.", l)
		q, k, v := make([][]float64, n), make([][]float64, n), make([][]float64, n)
		for i := range n {
			h := ref64.RMSNorm(x[i], m.get(p+"input_layernorm.weight"), m.eps)
			q[i] = linear(m.get(p+"self_attn.q_proj.weight"), m.get(p+"self_attn.q_proj.bias"), h)
			k[i] = linear(m.get(p+"self_attn.k_proj.weight"), m.get(p+"self_attn.k_proj.bias"), h)
			v[i] = linear(m.get(p+"self_attn.v_proj.weight"), m.get(p+"self_attn.v_proj.bias"), h)
			// Text positions are equal on M-RoPE's three axes: plain
			// RoPE on halves.
			angle := func(j int) float64 { return float64(i) * math.Pow(m.theta, -2*float64(j)/float64(d)) }
			ref64.Rotate(q[i], m.heads, angle)
			ref64.Rotate(k[i], m.kv, angle)
		}
		att := ref64.Attend(q, k, v, m.heads, m.kv, func(i, j int) bool { return j <= i })
		for i := range n {
			o := linear(m.get(p+"self_attn.o_proj.weight"), nil, att[i])
			for e := range H {
				x[i][e] += o[e]
			}
			h := ref64.RMSNorm(x[i], m.get(p+"post_attention_layernorm.weight"), m.eps)
			g := linear(m.get(p+"mlp.gate_proj.weight"), nil, h)
			u := linear(m.get(p+"mlp.up_proj.weight"), nil, h)
			for e := range g {
				g[e] = ref64.SiLU(g[e]) * u[e]
			}
			dn := linear(m.get(p+"mlp.down_proj.weight"), nil, g)
			for e := range H {
				x[i][e] += dn[e]
			}
		}
	}
	for i := range x {
		x[i] = ref64.RMSNorm(x[i], m.get("norm.weight"), m.eps)
	}
	return x
}

// TestEmbeddingAgainstFloat64 converts a bf16 checkpoint of each layout
// to F32 and embeds a text with the engine (as vembed embed does): the
// pooled vector, and for layouts with a multi-vector head every token's
// vector, match the test's float64 forward pass on the checkpoint's
// weights with the LoRA merged by the test, within cosine 0.99999.
func TestEmbeddingAgainstFloat64(t *testing.T) {
	for _, c := range cases {
		t.Run(c.layout, func(t *testing.T) {
			dir, cfg := writeCase(t, c, safetensors.BF16)
			task := c.tasks[len(c.tasks)-1] // code for jina-v4: not the default adapter
			res, err := Convert(context.Background(), dir, t.TempDir(), Options{Type: "F32", MMProjType: "F32", Task: task})
			if err != nil {
				t.Fatal(err)
			}
			cfgMV := engine.Config{Model: res.LMs[0], MMProj: res.MMProj}
			if len(res.MVProjs) > 0 {
				cfgMV.MVProj = res.MVProjs[0]
			}
			e, err := engine.New(cfgMV)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			// The recipe's prompt, which the test rebuilds: "Query: " and the
			// text, for ColQwen with the ten augmentation tokens, for GME in
			// its chat form with the default instruction.
			const text = "the quick brown fox"
			in := engine.Input{Parts: []engine.Part{engine.Text(text)}}
			prompt := "Query: " + text
			switch c.recipe {
			case "colqwen2":
				prompt += strings.Repeat("<|endoftext|>", 10)
			case "gme":
				prompt = "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n" + text +
					"<|im_end|>\n<|im_start|>assistant\n<|endoftext|>"
			}

			f, err := gguf.Open(res.LMs[0])
			if err != nil {
				t.Fatal(err)
			}
			tok, err := tokenizer.FromGGUF(f, tokenizer.Options{})
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			ids := tok.Encode(prompt, true)
			tc := openTestCkpt(t, dir, c, task)
			m := &refModel{tc: tc, p: c.lmPrefix, hidden: cfg.LM.Hidden, heads: cfg.LM.Heads, kv: cfg.LM.KVHeads, nL: cfg.LM.Layers,
				theta: float64(cfg.LM.RopeTheta), eps: float64(cfg.LM.RMSEps), w: map[string][]float64{}}
			hs := m.forward(ids)

			if c.head == "" || c.layout == qwenlayout.LayoutJinaV4 {
				r, err := e.Embed(context.Background(), engine.Request{Inputs: []engine.Input{in}, Task: task})
				if err != nil {
					t.Fatal(err)
				}
				if r.Embeddings[0].Tokens != len(ids) {
					t.Fatalf("engine prompt %d tokens, test %d", r.Embeddings[0].Tokens, len(ids))
				}
				want := make([]float64, cfg.LM.Hidden)
				if c.pooling == 3 { // last token
					copy(want, hs[len(hs)-1])
				} else { // mean over the text's tokens
					for _, h := range hs {
						for i, v := range h {
							want[i] += v / float64(len(hs))
						}
					}
				}
				if cs := ref64.Cosine(r.Embeddings[0].Vector, want); cs < 0.99999 {
					t.Errorf("pooled vector: cosine %.7f to the float64 reference", cs)
				}
			}
			// The converted vision encoder runs: an image embeds to a unit
			// vector (its tensors are checked against the checkpoint above).
			ri, err := e.Embed(context.Background(), engine.Request{Inputs: []engine.Input{engine.ImageInput(testPNG(t, 56, 84))}, Task: task})
			if err != nil {
				t.Fatal(err)
			}
			var norm float64
			for _, v := range ri.Embeddings[0].Vector {
				norm += float64(v) * float64(v)
			}
			if len(ri.Embeddings[0].Vector) != cfg.LM.Hidden || math.Abs(norm-1) > 1e-4 {
				t.Errorf("image embedding of %d values, norm² %v", len(ri.Embeddings[0].Vector), norm)
			}
			if c.head != "" {
				r, err := e.Embed(context.Background(), engine.Request{Inputs: []engine.Input{in}, Task: task, Multivector: true})
				if err != nil {
					t.Fatal(err)
				}
				W, _ := tc.merged(c.head + ".weight")
				b, _ := tc.raw(c.head + ".bias")
				rows := r.Embeddings[0].Multi
				if len(rows) != len(hs) {
					t.Fatalf("%d multi-vector rows, want %d", len(rows), len(hs))
				}
				worst := 1.0
				for i, h := range hs {
					worst = math.Min(worst, ref64.Cosine(rows[i], linear(W, b, h)))
				}
				if worst < 0.99999 {
					t.Errorf("multi-vector rows: worst cosine %.7f to the float64 reference", worst)
				}
			}
		})
	}
}

// TestCheckpointDTypes: F16 and F32 checkpoints (and a single unsharded
// file) convert as exactly as bf16 ones.
func TestCheckpointDTypes(t *testing.T) {
	c := cases[3] // gme: no adapter, the Qwen2-VL tower
	for _, dt := range []safetensors.DType{safetensors.F16, safetensors.F32} {
		t.Run(string(dt), func(t *testing.T) {
			cfg, _ := synth.Preset(c.preset)
			dir := t.TempDir()
			if err := synth.WriteHF(dir, cfg, synth.HFOptions{Layout: c.layout, DType: dt}); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err != nil {
				t.Fatal("want one unsharded file:", err)
			}
			res, err := Convert(context.Background(), dir, t.TempDir(), Options{Type: "BF16", MMProjType: "F32"})
			if err != nil {
				t.Fatal(err)
			}
			tc := openTestCkpt(t, dir, c, "")
			checkFile(t, res.LMs[0], tc, c)
			checkFile(t, res.MMProj, tc, c)
		})
	}
}

// expectedQwen3 is expected for the tensors whose Qwen3-VL sources differ,
// or nil.
func (tc *testCkpt) expectedQwen3(name string, c layoutCase) []float64 {
	prefix := strings.NewReplacer("L.", c.lmPrefix, "V.", c.vPrefix)
	if m := regexp.MustCompile(`^v\.deepstack\.(\d+)\.(norm|fc1|fc2)\.(weight|bias)$`).FindStringSubmatch(name); m != nil {
		// The checkpoint numbers the mergers in tap order; the tiny
		// preset's taps are blocks 0, 2 and 3.
		k := map[string]string{"0": "0", "2": "1", "3": "2"}[m[1]]
		part := map[string]string{"norm": "norm", "fc1": "linear_fc1", "fc2": "linear_fc2"}[m[2]]
		v, _ := tc.raw(c.vPrefix + "deepstack_merger_list." + k + "." + part + "." + m[3])
		return v
	}
	if name == "cls.output.weight" {
		// The tied head's rows of "yes" then "no", by the tokenizer's ids.
		var tj struct {
			Model struct {
				Vocab map[string]int `json:"vocab"`
			} `json:"model"`
		}
		b, err := os.ReadFile(filepath.Join(tc.dir, "tokenizer.json"))
		if err != nil || json.Unmarshal(b, &tj) != nil {
			tc.t.Fatal("tokenizer.json", err)
		}
		emb, shape := tc.raw(c.lmPrefix + "embed_tokens.weight")
		H := int(shape[1])
		var out []float64
		for _, tok := range []string{"yes", "no"} {
			id, ok := tj.Model.Vocab[tok]
			if !ok {
				tc.t.Fatalf("the synthetic vocabulary has no %q", tok)
			}
			out = append(out, emb[id*H:(id+1)*H]...)
		}
		return out
	}
	for _, m := range testQwen3Names {
		if m.re.MatchString(name) {
			v, _ := tc.raw(prefix.Replace(m.re.ReplaceAllString(name, m.hf)))
			return v
		}
	}
	return nil
}

// testPNG is a small w×h image for the converted towers.
func testPNG(t *testing.T, w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 7)
	}
	var png bytes.Buffer
	if err := pngenc.Encode(&png, img); err != nil {
		t.Fatal(err)
	}
	return png.Bytes()
}

// runConverted loads a converted Qwen3-VL pair in the engine, as vembed
// does from the files alone: the embedding model embeds a text and an
// image to unit vectors, the reranker scores a text and an image document
// with probabilities that differ.
func runConverted(t *testing.T, res *Result, rank bool) {
	t.Helper()
	e, err := engine.New(engine.Config{Model: res.LMs[0], MMProj: res.MMProj})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	if rank {
		scores, _, err := e.Rerank(ctx, engine.TextInput("which page shows a chart?"), []engine.Input{engine.TextInput("a page of text"), engine.ImageInput(testPNG(t, 64, 96))}, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(scores) != 2 || !(scores[0] > 0 && scores[0] < 1 && scores[1] > 0 && scores[1] < 1) || scores[0] == scores[1] {
			t.Errorf("reranker scores %v", scores)
		}
		return
	}
	if e.Info().Reranker {
		t.Fatal("the embedding model loads as a reranker")
	}
	r, err := e.Embed(ctx, engine.Request{Inputs: []engine.Input{engine.TextInput("a text"), engine.ImageInput(testPNG(t, 64, 96))}})
	if err != nil {
		t.Fatal(err)
	}
	for i, em := range r.Embeddings {
		var norm float64
		for _, v := range em.Vector {
			norm += float64(v) * float64(v)
		}
		if math.Abs(norm-1) > 1e-4 {
			t.Errorf("embedding %d: norm² %v", i, norm)
		}
	}
}
