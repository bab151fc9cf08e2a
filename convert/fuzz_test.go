package convert

import (
	"math"
	"testing"

	"github.com/vembed/vembed/qwenlayout"
)

// FuzzCheckpointJSON feeds arbitrary config.json, tokenizer.json and
// tokenizer_config.json to the readers: an error or a configuration,
// never a panic.
func FuzzCheckpointJSON(f *testing.F) {
	f.Add([]byte(`{"model_type":"qwen2_5_vl","hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"vocab_size":300,"rope_scaling":{"mrope_section":[2,3,3]},"vision_config":{"depth":4,"hidden_size":32,"intermediate_size":64,"num_heads":2,"patch_size":14,"fullatt_block_indexes":[3]}}`),
		[]byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":["a b",["a","b"]]},"added_tokens":[{"id":2,"content":"<|endoftext|>","special":true}]}`),
		[]byte(`{"eos_token":"<|endoftext|>","pad_token":{"content":"<|endoftext|>"},"chat_template":"x"}`))
	f.Add([]byte(`{"model_type":"qwen2_vl","text_config":{"hidden_size":8},"vision_config":{"embed_dim":8,"mlp_ratio":1e308}}`),
		[]byte(`{"model":{"type":"BPE","vocab":{"a":-1}}}`), []byte(`{"eos_token":5}`))
	f.Add([]byte(`{"model_type":"qwen3_vl","tie_word_embeddings":true,"text_config":{"model_type":"qwen3_vl_text","hidden_size":64,"intermediate_size":128,"num_hidden_layers":3,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":32,"vocab_size":300,"rope_parameters":{"rope_theta":5000000,"mrope_section":[6,5,5]}},"vision_config":{"depth":4,"hidden_size":32,"intermediate_size":64,"num_heads":2,"patch_size":16,"out_hidden_size":64,"num_position_embeddings":2304,"deepstack_visual_indexes":[0,2,3]}}`),
		[]byte(`{"model":{"type":"BPE","vocab":{"yes":0,"no":1}},"added_tokens":[{"id":2,"content":"<|endoftext|>","special":true}]}`),
		[]byte(`{"eos_token":"<|endoftext|>"}`))
	f.Add([]byte(`{"model_type":"colqwen3","architectures":["ColQwen3"],"embed_dim":12,"dims":-3,"text_config":{"hidden_size":16,"intermediate_size":40,"num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":1,"head_dim":16},"vision_config":{"depth":3,"hidden_size":32,"num_heads":2,"patch_size":16,"num_position_embeddings":64,"deepstack_visual_indexes":[0,2]}}`),
		[]byte(`{"model":{"type":"BPE","vocab":{"a":0}}}`), []byte(`{}`))
	f.Add([]byte(`{"model_type":"qwen3_5","architectures":["ColQwen3_5"],"head_dims":[16,32],"mrl_prefix":true,"text_config":{"model_type":"qwen3_5_text","hidden_size":64,"intermediate_size":128,"num_hidden_layers":4,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":32,"full_attention_interval":4,"layer_types":["linear_attention","linear_attention","linear_attention","full_attention"],"linear_num_key_heads":2,"linear_num_value_heads":4,"linear_key_head_dim":16,"linear_value_head_dim":16,"linear_conv_kernel_dim":4,"rope_parameters":{"rope_theta":1e7,"mrope_section":[2,1,1],"partial_rotary_factor":0.25}},"vision_config":{"depth":4,"hidden_size":32,"intermediate_size":64,"num_heads":2,"patch_size":16,"out_hidden_size":64,"num_position_embeddings":2304}}`),
		[]byte(`{"model":{"type":"BPE","vocab":{"a":0}}}`), []byte(`{}`))
	f.Add([]byte(`{"model_type":"qwen3_5","text_config":{"hidden_size":8,"num_hidden_layers":3,"num_attention_heads":2,"intermediate_size":8,"linear_num_value_heads":3,"linear_num_key_heads":2,"partial_rotary_factor":7,"layer_types":["x"]},"vision_config":{"deepstack_visual_indexes":[1]}}`),
		[]byte(`{"model":{"type":"BPE","vocab":{"a":0}}}`), []byte(`{}`))
	defer func(n int) { maxTokens = n }(maxTokens)
	maxTokens = 1 << 12 // keeps each run small; what the bound guards is the same
	dir := f.TempDir()  // no preprocessor_config.json: the defaults
	f.Fuzz(func(t *testing.T, cfgJSON, tokJSON, tokCfgJSON []byte) {
		cfg, err := parseConfig(cfgJSON)
		if err != nil {
			return
		}
		cfg.retriever()
		v, _, err := parseTokenizer(tokJSON, tokCfgJSON, cfg)
		if err != nil {
			return
		}
		if int(v.EOS) >= len(v.Tokens) || int(v.BOS) >= len(v.Tokens) || int(v.PAD) >= len(v.Tokens) {
			t.Fatalf("special ids %d/%d/%d beyond %d tokens", v.BOS, v.EOS, v.PAD, len(v.Tokens))
		}
		cfg.layoutConfig(dir, len(v.Tokens))
	})
}

// FuzzPixelBudget: any preprocessor_config.json gives a budget a processor
// can use, none, or an error.
func FuzzPixelBudget(f *testing.F) {
	for _, s := range []string{`{"min_pixels": 3136, "max_pixels": 12845056}`, `{"size": {"shortest_edge": 56, "longest_edge": 784}}`,
		`{"min_pixels": 9, "max_pixels": 3}`, `{"max_pixels": 1e300}`, `{"min_pixels": -1, "max_pixels": 1000}`, `{}`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		lo, hi, err := parsePixelBudget(b)
		if err == nil && (hi != 0 || lo != 0) && (lo < 0 || lo > hi || hi < 28*28 || hi > qwenlayout.MaxImagePixels) {
			t.Fatalf("accepted [%d, %d]", lo, hi)
		}
	})
}

// FuzzRetrieverBudget: any preprocessor_config.json gives the retrievers
// a budget the mmproj can hold, none, or an error.
func FuzzRetrieverBudget(f *testing.F) {
	for _, s := range []string{`{"size": {"shortest_edge": 65536, "longest_edge": 16777216}}`, `{"min_pixels": 65536, "max_pixels": 1310720}`,
		`{"size": {"shortest_edge": 2e13, "longest_edge": 3e13}}`, `{"size": {"longest_edge": 1024}}`, `{"size": {"shortest_edge": 9, "longest_edge": 3}}`,
		`{"max_pixels": 1e300}`, `{"min_pixels": -1, "max_pixels": 1000}`, `{}`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		lo, hi, lowered, err := parseRetrieverBudget(b)
		if err == nil && (hi != 0 || lo != 0) && (lo < 0 || lo > hi || hi < 32*32 || hi > qwenlayout.MaxImagePixels) {
			t.Fatalf("accepted [%d, %d] (lowered %v)", lo, hi, lowered)
		}
	})
}

// FuzzNemotronProcessor: any processor_config.json gives bounds the
// recipe accepts (and a GGUF uint32 holds), or an error.
func FuzzNemotronProcessor(f *testing.F) {
	for _, s := range []string{`{"q_max_length": 512, "p_max_length": 4096, "reserve_tokens_for_images": 100, "query_prefix": "query:", "passage_prefix": "passage:"}`,
		`{"q_max_length": 0}`, `{"p_max_length": 100}`, `{"reserve_tokens_for_images": -1}`, `{"q_max_length": 1e300}`, `{"q_max_length": 5.5}`,
		`{"query_prefix": 3}`, `{"passage_prefix": "doc:"}`, `{}`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, _, err := parseNemotronProcessor(b)
		if err == nil && (tr.Check() != nil || tr.QueryMax > math.MaxUint32 || tr.PassageMax > math.MaxUint32) {
			t.Fatalf("accepted %+v", tr)
		}
	})
}

// FuzzVisualTokens: any processor file gives the Qwen3.5 retrievers a
// token budget the mmproj can hold, none, or an error.
func FuzzVisualTokens(f *testing.F) {
	for _, s := range []string{`{"max_num_visual_tokens": 1280}`, `{"max_num_visual_tokens": 0}`, `{"max_num_visual_tokens": -4}`,
		`{"max_num_visual_tokens": 1e300}`, `{"max_num_visual_tokens": 12.5}`, `{"max_num_visual_tokens": "768"}`, `{}`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := parseVisualTokens(b)
		if err == nil && (n < 0 || n*tokenPixels > qwenlayout.MaxImagePixels) {
			t.Fatalf("accepted %d tokens", n)
		}
	})
}
