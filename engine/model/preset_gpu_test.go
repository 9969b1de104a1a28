package model

import "testing"

// paramCount is the parameters of cfg's checkpoint, from the config's
// fields alone (no weights built): per layer the attention (MLA's q_a,
// q_b, kv_a, kv_b, o and their norms; the indexer's wq_b, wk, k_norm,
// weights_proj) and either the dense MLP or the MoE (router, bias, routed
// experts, shared expert), then the embeddings, the final norm, the LM
// head, and the MTP layer (eh_proj, three norms and one more layer).
func paramCount(c *Config) int {
	H, heads, r := c.HiddenSize, c.NumAttentionHeads, c.KVLoraRank
	attn := H + // input_layernorm
		c.QLoraRank*H + c.QLoraRank + // q_a_proj, q_a_layernorm
		heads*c.QKHeadDim()*c.QLoraRank + // q_b_proj
		(r+c.QKRopeHeadDim)*H + r + // kv_a_proj_with_mqa, kv_a_layernorm
		heads*(c.QKNopeHeadDim+c.VHeadDim)*r + // kv_b_proj
		H*heads*c.VHeadDim + // o_proj
		c.IndexNHeads*c.IndexHeadDim*c.QLoraRank + c.IndexHeadDim*H + 2*c.IndexHeadDim + c.IndexNHeads*H + // indexer
		H // post_attention_layernorm
	mlp := func(inter int) int { return 3 * inter * H }
	layer := func(l int) int {
		if c.IsMoE(l) {
			return attn + c.NRoutedExperts*H + c.NRoutedExperts + c.NRoutedExperts*mlp(c.MoEIntermediateSize) + mlp(c.MoEIntermediateSize*max(c.NSharedExperts, 1))
		}
		return attn + mlp(c.IntermediateSize)
	}
	n := 2*c.VocabSize*H + H // embed_tokens, lm_head, norm
	for l := range c.NumHiddenLayers {
		n += layer(l)
	}
	if c.NumNextNPredictLayers > 0 {
		n += 2*H*H + 3*H + layer(c.NumHiddenLayers)
	}
	return n
}

func TestPresetGPUValidatesAndHasBetween200MAnd1BParameters(t *testing.T) {
	t.Parallel()
	cfg, err := Preset("gpu")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if n := paramCount(cfg); n < 200e6 || n > 1e9 {
		t.Errorf("gpu has %d parameters, want 200 M to 1 B", n)
	}
	// The preset keeps what its doc comment promises of GLM-5's shape.
	if cfg.IndexTopK != 2048 || cfg.NGroup != 8 || cfg.TopKGroup != 4 || cfg.NumExpertsPerTok != 8 || cfg.NumNextNPredictLayers != 1 {
		t.Errorf("index_topk %d, groups %d keeping %d, top-%d, %d MTP layers", cfg.IndexTopK, cfg.NGroup, cfg.TopKGroup, cfg.NumExpertsPerTok, cfg.NumNextNPredictLayers)
	}
}

// The formula is the checkpoint's own count: Manifest lists the tensors'
// shapes without making any, so the two agree on every preset or the
// formula above is wrong.
func TestPresetParamCountIsTheManifestsSum(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"nano", "tiny", "gpu"} {
		cfg, _ := Preset(name)
		want := 0
		for _, s := range Manifest(cfg) {
			want += Numel(s.Shape)
		}
		if got := paramCount(cfg); got != want {
			t.Errorf("%s: the formula gives %d parameters, the manifest %d", name, got, want)
		}
	}
}
