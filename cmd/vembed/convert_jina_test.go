package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vembed/vembed/engine"
	"github.com/vembed/vembed/gguf"
	"github.com/vembed/vembed/hub/hubtest"
	"github.com/vembed/vembed/imageproc"
	"github.com/vembed/vembed/internal/ref64"
	"github.com/vembed/vembed/safetensors"
	"github.com/vembed/vembed/tokenizer"
)

// jinaRef is the test's own float64 forward pass of a jina-embeddings-v4
// checkpoint (Qwen2.5-VL tower and decoder, the multi-vector projector)
// with one task's LoRA pairs applied at run time, y = W·x + b +
// s·B·(A·x), as PEFT's layers run them: nothing is merged, and it shares
// no code with the converter or the engine.
type jinaRef struct {
	t     *testing.T
	ck    *safetensors.Checkpoint
	lora  *safetensors.File
	task  string
	scale float64
	// tower: apply the tower's pairs (false gives the base tower, which
	// the test uses to show that they matter).
	tower bool
	used  map[string]bool // adapter modules applied
	w     map[string][]float64
	cfg   struct {
		Hidden  int     `json:"hidden_size"`
		Heads   int     `json:"num_attention_heads"`
		KVHeads int     `json:"num_key_value_heads"`
		Layers  int     `json:"num_hidden_layers"`
		Eps     float64 `json:"rms_norm_eps"`
		Theta   float64 `json:"rope_theta"`
		Rope    struct {
			Section []int `json:"mrope_section"`
		} `json:"rope_scaling"`
		Vision struct {
			Depth  int   `json:"depth"`
			Width  int   `json:"hidden_size"`
			Heads  int   `json:"num_heads"`
			Patch  int   `json:"patch_size"`
			Full   []int `json:"fullatt_block_indexes"`
			Window int   `json:"window_size"`
		} `json:"vision_config"`
	}
}

func openJinaRef(t *testing.T, dir, task string) *jinaRef {
	t.Helper()
	m := &jinaRef{t: t, task: task, tower: true, used: map[string]bool{}, w: map[string][]float64{}}
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil || json.Unmarshal(b, &m.cfg) != nil {
		t.Fatal("config.json", err)
	}
	var ac struct {
		R     int     `json:"r"`
		Alpha float64 `json:"lora_alpha"`
	}
	if b, err = os.ReadFile(filepath.Join(dir, "adapters", "adapter_config.json")); err != nil || json.Unmarshal(b, &ac) != nil {
		t.Fatal("adapter_config.json", err)
	}
	m.scale = ac.Alpha / float64(ac.R)
	if m.ck, err = safetensors.OpenCheckpoint(dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.ck.Close() })
	if m.lora, err = safetensors.Open(filepath.Join(dir, "adapters", "adapter_model.safetensors")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.lora.Close() })
	return m
}

// get reads a checkpoint tensor (nil when absent).
func (m *jinaRef) get(name string) []float64 {
	if v, ok := m.w[name]; ok {
		return v
	}
	_, f, ok := m.ck.Tensor(name)
	if !ok {
		return nil
	}
	v, err := f.Float64(name)
	if err != nil {
		m.t.Fatal(err)
	}
	m.w[name] = v
	return v
}

// adapterModule is a checkpoint module's name in the adapter, which names
// modules as transformers 4.52+ does.
func adapterModule(module string) string {
	if rest, ok := strings.CutPrefix(module, "model."); ok {
		return "model.language_model." + rest
	}
	if rest, ok := strings.CutPrefix(module, "visual."); ok {
		return "model.visual." + rest
	}
	return module
}

// lin applies the linear module to every row: W·x + b, plus the task's
// LoRA update s·B·(A·x) when the adapter has a pair for it.
func (m *jinaRef) lin(module string, x [][]float64) [][]float64 {
	W, b := m.get(module+".weight"), m.get(module+".bias")
	if W == nil {
		m.t.Fatalf("the checkpoint has no %s.weight", module)
	}
	in := len(x[0])
	out := len(W) / in
	p := "base_model.model." + adapterModule(module)
	var A, B []float64
	if _, ok := m.lora.Tensors[p+".lora_A."+m.task+".weight"]; ok && (m.tower || !strings.HasPrefix(module, "visual.")) {
		A, B = m.loraFactor(p+".lora_A."+m.task+".weight"), m.loraFactor(p+".lora_B."+m.task+".weight")
		m.used[module] = true
	}
	r := len(A) / in
	y := make([][]float64, len(x))
	for i, xi := range x {
		yi := make([]float64, out)
		for o := range yi {
			var s float64
			for j, v := range xi {
				s += W[o*in+j] * v
			}
			if b != nil {
				s += b[o]
			}
			yi[o] = s
		}
		if A != nil {
			ax := make([]float64, r)
			for k := range ax {
				for j, v := range xi {
					ax[k] += A[k*in+j] * v
				}
			}
			for o := range yi {
				var s float64
				for k, v := range ax {
					s += B[o*r+k] * v
				}
				yi[o] += m.scale * s
			}
		}
		y[i] = yi
	}
	return y
}

func (m *jinaRef) loraFactor(name string) []float64 {
	v, err := m.lora.Float64(name)
	if err != nil {
		m.t.Fatal(err)
	}
	return v
}

func (m *jinaRef) norm(x [][]float64, name string, eps float64) [][]float64 {
	out := make([][]float64, len(x))
	for i, r := range x {
		out[i] = ref64.RMSNorm(r, m.get(name), eps)
	}
	return out
}

func add(x, y [][]float64) {
	for i := range x {
		for j := range x[i] {
			x[i][j] += y[i][j]
		}
	}
}

// vision runs the tower on an image's patches (gh×gw patches in the
// processor's order: merge units in raster order, the unit's 2×2 patches
// within) and returns the merger's rows, one per merge unit.
func (m *jinaRef) vision(p []float32, gh, gw int) [][]float64 {
	vc := m.cfg.Vision
	W, L, uw := vc.Width, gh*gw, gw/2
	row := 3 * 2 * vc.Patch * vc.Patch
	conv := m.get("visual.patch_embed.proj.weight") // [W, 3, 2, p, p], the patch rows' order
	x := make([][]float64, L)
	hpos, wpos, win := make([]int, L), make([]int, L), make([]int, L)
	units := vc.Window / vc.Patch / 2 // merge units a window side
	for r := range x {
		x[r] = make([]float64, W)
		for o := range W {
			for k := range row {
				x[r][o] += float64(p[r*row+k]) * conv[o*row+k]
			}
		}
		u, s := r/4, r%4
		hpos[r], wpos[r] = 2*(u/uw)+s/2, 2*(u%uw)+s%2
		win[r] = (u/uw/units)*1000 + (u%uw)/units
	}
	hd := W / vc.Heads
	for l := range vc.Depth {
		b := fmt.Sprintf("visual.blocks.%d.", l)
		h := m.norm(x, b+"norm1.weight", 1e-6)
		qkv := m.lin(b+"attn.qkv", h)
		q, k, v := make([][]float64, L), make([][]float64, L), make([][]float64, L)
		for r := range L {
			q[r], k[r], v[r] = qkv[r][:W], qkv[r][W:2*W], qkv[r][2*W:]
			angle := ref64.VisionAngle(hpos[r], wpos[r], hd)
			ref64.Rotate(q[r], vc.Heads, angle)
			ref64.Rotate(k[r], vc.Heads, angle)
		}
		full := slices.Contains(vc.Full, l)
		att := ref64.Attend(q, k, v, vc.Heads, vc.Heads, func(i, j int) bool { return full || win[i] == win[j] })
		add(x, m.lin(b+"attn.proj", att))
		h = m.norm(x, b+"norm2.weight", 1e-6)
		g, up := m.lin(b+"mlp.gate_proj", h), m.lin(b+"mlp.up_proj", h)
		for r := range g {
			for i, gv := range g[r] {
				g[r][i] = ref64.SiLU(gv) * up[r][i]
			}
		}
		add(x, m.lin(b+"mlp.down_proj", g))
	}
	xn := m.norm(x, "visual.merger.ln_q.weight", 1e-6)
	merged := make([][]float64, L/4)
	for u := range merged {
		for s := range 4 {
			merged[u] = append(merged[u], xn[4*u+s]...)
		}
	}
	hid := m.lin("visual.merger.mlp.0", merged)
	for _, r := range hid {
		for i, v := range r {
			r[i] = 0.5 * v * (1 + math.Erf(v/math.Sqrt2))
		}
	}
	return m.lin("visual.merger.mlp.2", hid)
}

// decoder runs the language model on ids, the image's rows standing for
// its placeholder tokens (img nil for text), with M-RoPE positions: text
// (i, i, i); the image's tokens (s, s+row, s+col) from the index s of its
// first token; the text after it on from s + the grid's longer side. It
// returns the final hidden states (after the last norm).
func (m *jinaRef) decoder(ids []int32, span *tokenizer.ImageSpan, img [][]float64, gh, gw int) [][]float64 {
	c := m.cfg
	n, H := len(ids), c.Hidden
	emb := m.get("model.embed_tokens.weight")
	x := make([][]float64, n)
	pos := make([][3]int, n)
	for i, id := range ids {
		x[i] = append([]float64(nil), emb[int(id)*H:(int(id)+1)*H]...)
		pos[i] = [3]int{i, i, i}
		if span == nil {
			continue
		}
		switch s := span.First; {
		case i >= s && i < span.End:
			u := i - s
			x[i] = append([]float64(nil), img[u]...)
			pos[i] = [3]int{s, s + u/(gw/2), s + u%(gw/2)}
		case i >= span.End:
			p := s + max(gh/2, gw/2) + i - span.End
			pos[i] = [3]int{p, p, p}
		}
	}
	d := H / c.Heads
	axis := make([]int, d/2) // the M-RoPE axis of each rotated pair
	for j := range axis {
		for a, end := 0, 0; a < 3; a++ {
			if end += c.Rope.Section[a]; j < end {
				axis[j] = a
				break
			}
		}
	}
	for l := range c.Layers {
		b := fmt.Sprintf("model.layers.%d.", l)
		h := m.norm(x, b+"input_layernorm.weight", c.Eps)
		q, k, v := m.lin(b+"self_attn.q_proj", h), m.lin(b+"self_attn.k_proj", h), m.lin(b+"self_attn.v_proj", h)
		for i := range n {
			angle := func(j int) float64 {
				return float64(pos[i][axis[j]]) * math.Pow(c.Theta, -2*float64(j)/float64(d))
			}
			ref64.Rotate(q[i], c.Heads, angle)
			ref64.Rotate(k[i], c.KVHeads, angle)
		}
		att := ref64.Attend(q, k, v, c.Heads, c.KVHeads, func(i, j int) bool { return j <= i })
		add(x, m.lin(b+"self_attn.o_proj", att))
		h = m.norm(x, b+"post_attention_layernorm.weight", c.Eps)
		g, up := m.lin(b+"mlp.gate_proj", h), m.lin(b+"mlp.up_proj", h)
		for r := range g {
			for i, gv := range g[r] {
				g[r][i] = ref64.SiLU(gv) * up[r][i]
			}
		}
		add(x, m.lin(b+"mlp.down_proj", g))
	}
	return m.norm(x, "model.norm.weight", c.Eps)
}

// pooled is the unit mean of rows [lo, hi).
func pooled(h [][]float64, lo, hi int) []float64 {
	out := make([]float64, len(h[0]))
	for _, r := range h[lo:hi] {
		for i, v := range r {
			out[i] += v
		}
	}
	return out
}

// convertJinaTowerLoRA writes a synthetic jina-v4 checkpoint with adapters
// under transformers 4.52+ names and tower LoRA pairs into dir/hf, converts
// every task to F32 GGUFs in dir/gguf and returns the checkpoint's folder
// and the files convert printed (per task: LM, mvproj, mmproj).
func convertJinaTowerLoRA(t *testing.T, dir string) (hf string, files []string) {
	t.Helper()
	hf, out := filepath.Join(dir, "hf"), filepath.Join(dir, "gguf")
	var o, e bytes.Buffer
	if code := run([]string{"synth", "--format", "hf", "--layout", "jina-v4", "--adapter-new-names", "--adapter-vision", "--out", hf}, &o, &e); code != 0 {
		t.Fatalf("synth: exit %d: %s", code, e.String())
	}
	o.Reset()
	if code := run([]string{"convert", hf, "--out", out, "--task", "all", "--type", "F32", "--mmproj-type", "F32"}, &o, &e); code != 0 {
		t.Fatalf("convert: exit %d: %s", code, e.String())
	}
	return hf, strings.Fields(o.String())
}

// TestJinaTowerLoRA: vembed synth writes a jina-embeddings-v4 checkpoint
// whose task adapter is saved under transformers 4.52+ module names with
// LoRA pairs on the vision tower (the fused qkv, the output projection,
// the MLP) for every task; vembed convert --task all writes each task's
// LM, mvproj and mmproj (the tower's pairs merged, qkv by thirds). Each
// task's files embed a text and an image, single vectors and multi-vector
// rows, as the test's float64 forward pass with every pair of the task
// applied at run time: single vectors at cosine >= 0.99999, every row at
// >= 0.9999. The reference without the tower's pairs fails the same
// bound (they matter), and a task's LM refuses another task's mmproj.
func TestJinaTowerLoRA(t *testing.T) {
	dir := t.TempDir()
	hf, files := convertJinaTowerLoRA(t, dir)
	tasks := []string{"code", "retrieval", "text-matching"}
	if len(files) != 3*len(tasks) {
		t.Fatalf("convert printed %v, want an LM, mvproj and mmproj per task", files)
	}
	png := writePNG(t, filepath.Join(dir, "page.png"), 196, 140, 3) // no resize: 14x10 patches, 7x5 merge units, windows of 4x4 units
	img, err := imageproc.Decode(png, imageproc.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	patches, err := imageproc.Patchify(img, imageproc.JinaV4Config())
	if err != nil {
		t.Fatal(err)
	}
	gh, gw := patches.GridH, patches.GridW
	const text = "the quick brown fox jumps"
	ctx := context.Background()
	for i, task := range tasks {
		lm, mv, mm := files[3*i], files[3*i+1], files[3*i+2]
		for _, f := range []string{lm, mv, mm} {
			if !strings.Contains(filepath.Base(f), "-"+task+"-") {
				t.Fatalf("%s: not task %s's file", f, task)
			}
		}
		eng, err := engine.New(engine.Config{Model: lm, MMProj: mm, MVProj: mv})
		if err != nil {
			t.Fatal(err)
		}
		f, err := gguf.Open(lm)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := tokenizer.FromGGUF(f, tokenizer.Options{})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		ref := openJinaRef(t, hf, task)
		textIDs := tok.Encode("Query: "+text, true) // every task's text prompt
		imgPrompt, err := tok.RawPrompt("<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Describe the image.<|im_end|>\n", []int{patches.MergedTokens()})
		if err != nil {
			t.Fatal(err)
		}
		span := imgPrompt.Images[0]
		rows := ref.vision(patches.Data, gh, gw)
		for _, c := range []struct {
			name   string
			in     engine.Input
			ids    []int32
			span   *tokenizer.ImageSpan
			lo, hi int
		}{
			{"text", engine.TextInput(text), textIDs, nil, 0, len(textIDs)},
			{"image", engine.ImageInput(png), imgPrompt.IDs, &span, span.VisionStart, span.VisionEnd + 1},
		} {
			hs := ref.decoder(c.ids, c.span, rows, gh, gw)
			single, err := eng.Embed(ctx, engine.Request{Inputs: []engine.Input{c.in}, Task: task})
			if err != nil {
				t.Fatal(err)
			}
			if got := single.Embeddings[0].Tokens; got != len(c.ids) {
				t.Fatalf("%s %s: the engine's prompt has %d tokens, the test's %d", task, c.name, got, len(c.ids))
			}
			cs := ref64.Cosine(single.Embeddings[0].Vector, pooled(hs, c.lo, c.hi))
			if cs < 0.99999 {
				t.Errorf("%s %s: single vector at cosine %.7f to the float64 reference", task, c.name, cs)
			}
			multi, err := eng.Embed(ctx, engine.Request{Inputs: []engine.Input{c.in}, Task: task, Multivector: true})
			if err != nil {
				t.Fatal(err)
			}
			want := ref.lin("multi_vector_projector", hs)
			got := multi.Embeddings[0].Multi
			if len(got) != len(want) {
				t.Fatalf("%s %s: %d rows, want %d", task, c.name, len(got), len(want))
			}
			worst := 1.0
			for r := range got {
				worst = min(worst, ref64.Cosine(got[r], want[r]))
			}
			if worst < 0.9999 {
				t.Errorf("%s %s: a multi-vector row at cosine %.7f to the float64 reference", task, c.name, worst)
			}
			t.Logf("%s %s: single vector cosine %.9f, worst of %d rows %.9f", task, c.name, cs, len(got), worst)
			if c.span != nil {
				base := openJinaRef(t, hf, task)
				base.tower = false
				without := ref64.Cosine(single.Embeddings[0].Vector, pooled(base.decoder(c.ids, c.span, base.vision(patches.Data, gh, gw), gh, gw), c.lo, c.hi))
				t.Logf("%s image: cosine %.7f to the reference without the tower's pairs", task, without)
				if without >= 0.99999 {
					t.Errorf("%s image: the reference without the tower's LoRA passes too (cosine %.7f): the pairs do not matter", task, without)
				}
			}
		}
		// Every pair of the task's adapter was applied: the tower's, the
		// decoder's and the projector's.
		n := 0
		for name := range ref.lora.Tensors {
			if strings.HasSuffix(name, ".lora_A."+task+".weight") {
				n++
			}
		}
		if len(ref.used) != n {
			t.Errorf("%s: the reference applied %d of the adapter's %d pairs", task, len(ref.used), n)
		}
		eng.Close()
		// Another task's tower with this task's LM is refused.
		other := files[3*((i+1)%len(tasks))+2]
		if _, err := engine.New(engine.Config{Model: lm, MMProj: other}); err == nil || !strings.Contains(err.Error(), "tower LoRA") {
			t.Errorf("%s's LM with %s: %v, want a refusal naming the tower LoRA", task, filepath.Base(other), err)
		}
	}
}

// TestJinaTaskFilesFromHub: a GGUF repository holding every task's LM,
// mvproj and mmproj (tower LoRA merged per task): embed --model
// hf://…/<name>-<task>-F32.gguf pulls that task's mmproj and mvproj beside
// it (another task's mmproj would be refused at load), giving the same
// multi-vector rows as the local files named by hand.
func TestJinaTaskFilesFromHub(t *testing.T) {
	dir := t.TempDir()
	_, paths := convertJinaTowerLoRA(t, dir)
	var e bytes.Buffer
	files := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(p)] = b
	}
	srv := hubtest.New("org/jina-GGUF", files)
	defer srv.Close()
	hubEnv(t, srv.URL)
	img := filepath.Join(dir, "page.png")
	writePNG(t, img, 84, 56, 5)
	lm, mv, mm := paths[3], paths[4], paths[5] // retrieval's
	if !strings.Contains(lm, "-retrieval-") {
		t.Fatalf("files %v", paths)
	}
	var local, remote bytes.Buffer
	if code := run([]string{"embed", "--model", lm, "--mmproj", mm, "--mvproj", mv, "--image", img, "--multivector", "--json"}, &local, &e); code != 0 {
		t.Fatalf("embed with the local files: exit %d: %s", code, e.String())
	}
	e.Reset()
	if code := run([]string{"embed", "--model", "hf://org/jina-GGUF/" + filepath.Base(lm), "--image", img, "--multivector", "--json"}, &remote, &e); code != 0 {
		t.Fatalf("embed hf://: exit %d: %s", code, e.String())
	}
	if local.String() != remote.String() {
		t.Errorf("hf:// rows differ from the task's own files' (stderr %s)", e.String())
	}
}
