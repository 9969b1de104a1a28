// Package model is glmbench's reference model: the GLM-5 architecture
// (model_type glm_moe_dsa) at toy scale — MLA attention with a compressed
// KV latent, DSA sparse attention chosen by a lightning indexer, a
// sigmoid-routed mixture of experts with a shared expert, and an MTP layer
// for speculative decoding — running on the kernels package over a paged KV
// cache. Checkpoints use the Hugging Face layout (config.json +
// model.safetensors) and GLM-5's tensor names.
package model

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Config is the subset of a glm_moe_dsa config.json the engine reads. Field
// names are Hugging Face's.
type Config struct {
	Architectures []string `json:"architectures"`
	ModelType     string   `json:"model_type"`

	VocabSize           int `json:"vocab_size"`
	HiddenSize          int `json:"hidden_size"`
	IntermediateSize    int `json:"intermediate_size"`
	MoEIntermediateSize int `json:"moe_intermediate_size"`
	NumHiddenLayers     int `json:"num_hidden_layers"`
	FirstKDenseReplace  int `json:"first_k_dense_replace"`
	MoELayerFreq        int `json:"moe_layer_freq"`

	NumAttentionHeads int `json:"num_attention_heads"`
	NumKeyValueHeads  int `json:"num_key_value_heads"`
	QLoraRank         int `json:"q_lora_rank"`
	KVLoraRank        int `json:"kv_lora_rank"`
	QKNopeHeadDim     int `json:"qk_nope_head_dim"`
	QKRopeHeadDim     int `json:"qk_rope_head_dim"`
	VHeadDim          int `json:"v_head_dim"`

	IndexNHeads           int  `json:"index_n_heads"`
	IndexHeadDim          int  `json:"index_head_dim"`
	IndexTopK             int  `json:"index_topk"`
	IndexerRopeInterleave bool `json:"indexer_rope_interleave"`
	RopeInterleave        bool `json:"rope_interleave"`

	NRoutedExperts      int     `json:"n_routed_experts"`
	NumExpertsPerTok    int     `json:"num_experts_per_tok"`
	NSharedExperts      int     `json:"n_shared_experts"`
	NGroup              int     `json:"n_group"`
	TopKGroup           int     `json:"topk_group"`
	TopKMethod          string  `json:"topk_method"`
	ScoringFunc         string  `json:"scoring_func"`
	NormTopKProb        bool    `json:"norm_topk_prob"`
	RoutedScalingFactor float64 `json:"routed_scaling_factor"`

	NumNextNPredictLayers int     `json:"num_nextn_predict_layers"`
	HiddenAct             string  `json:"hidden_act"`
	RMSNormEps            float64 `json:"rms_norm_eps"`
	MaxPositionEmbeddings int     `json:"max_position_embeddings"`
	RopeParameters        struct {
		RopeTheta float64 `json:"rope_theta"`
		RopeType  string  `json:"rope_type"`
	} `json:"rope_parameters"`
	TieWordEmbeddings bool  `json:"tie_word_embeddings"`
	AttentionBias     bool  `json:"attention_bias"`
	EOSTokenID        []int `json:"eos_token_id,omitempty"`
}

// QKHeadDim is the query/key width per head: nope + rope.
func (c *Config) QKHeadDim() int { return c.QKNopeHeadDim + c.QKRopeHeadDim }

// IsMoE reports whether decoder layer l uses the mixture of experts.
func (c *Config) IsMoE(l int) bool {
	return c.NRoutedExperts > 0 && l >= c.FirstKDenseReplace && (c.MoELayerFreq <= 1 || l%c.MoELayerFreq == 0)
}

// Layers is the number of decoder layers with a KV cache: the main ones plus MTP.
func (c *Config) Layers() int { return c.NumHiddenLayers + c.NumNextNPredictLayers }

// KVWidth is the floats cached per token per layer: the MLA latent, the
// shared rope key and the indexer key.
func (c *Config) KVWidth() int { return c.KVLoraRank + c.QKRopeHeadDim + c.IndexHeadDim }

// Validate checks that the config describes a model this engine runs.
func (c *Config) Validate() error {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if c.ModelType != "glm_moe_dsa" {
		bad("model_type %q is not glm_moe_dsa", c.ModelType)
	}
	for name, v := range map[string]int{
		"vocab_size": c.VocabSize, "hidden_size": c.HiddenSize, "num_hidden_layers": c.NumHiddenLayers,
		"num_attention_heads": c.NumAttentionHeads, "q_lora_rank": c.QLoraRank, "kv_lora_rank": c.KVLoraRank,
		"qk_nope_head_dim": c.QKNopeHeadDim, "qk_rope_head_dim": c.QKRopeHeadDim, "v_head_dim": c.VHeadDim,
		"index_n_heads": c.IndexNHeads, "index_head_dim": c.IndexHeadDim, "index_topk": c.IndexTopK,
		"max_position_embeddings": c.MaxPositionEmbeddings,
	} {
		if v <= 0 {
			bad("%s must be positive, not %d", name, v)
		}
	}
	if c.QKRopeHeadDim%2 != 0 || c.QKRopeHeadDim > c.IndexHeadDim {
		bad("qk_rope_head_dim %d must be even and at most index_head_dim %d", c.QKRopeHeadDim, c.IndexHeadDim)
	}
	if c.NumKeyValueHeads != 0 && c.NumKeyValueHeads != c.NumAttentionHeads {
		bad("num_key_value_heads %d must equal num_attention_heads %d (MLA)", c.NumKeyValueHeads, c.NumAttentionHeads)
	}
	if c.FirstKDenseReplace > 0 && c.IntermediateSize <= 0 {
		bad("intermediate_size must be positive for the dense layers")
	}
	if c.NRoutedExperts > 0 {
		if c.MoEIntermediateSize <= 0 || c.NumExpertsPerTok <= 0 || c.NumExpertsPerTok > c.NRoutedExperts {
			bad("moe_intermediate_size %d, num_experts_per_tok %d of %d experts", c.MoEIntermediateSize, c.NumExpertsPerTok, c.NRoutedExperts)
		}
		g := max(c.NGroup, 1)
		if c.NRoutedExperts%g != 0 || c.TopKGroup > g || (g > 1 && c.TopKGroup < 1) {
			bad("n_group %d, topk_group %d do not divide %d experts", c.NGroup, c.TopKGroup, c.NRoutedExperts)
		}
		if g > 1 && c.NRoutedExperts/g < 2 {
			bad("groups need at least two experts each (group scores are top-2 sums)")
		}
		if g > 1 && c.TopKGroup*(c.NRoutedExperts/g) < c.NumExpertsPerTok {
			bad("topk_group %d groups hold fewer than num_experts_per_tok %d experts", c.TopKGroup, c.NumExpertsPerTok)
		}
		if c.ScoringFunc != "" && c.ScoringFunc != "sigmoid" {
			bad("scoring_func %q: only sigmoid", c.ScoringFunc)
		}
		if c.TopKMethod != "" && c.TopKMethod != "noaux_tc" {
			bad("topk_method %q: only noaux_tc", c.TopKMethod)
		}
	}
	if c.HiddenAct != "" && c.HiddenAct != "silu" {
		bad("hidden_act %q: only silu", c.HiddenAct)
	}
	if c.NumNextNPredictLayers > 1 {
		bad("num_nextn_predict_layers %d: at most 1", c.NumNextNPredictLayers)
	}
	if c.TieWordEmbeddings {
		bad("tie_word_embeddings: GLM-5 has a separate lm_head")
	}
	if c.AttentionBias {
		bad("attention_bias: GLM-5 has none")
	}
	if c.RopeParameters.RopeTheta <= 1 {
		bad("rope_parameters.rope_theta must exceed 1")
	}
	// kernels.RoPE rotates interleaved pairs (x[2j], x[2j+1]); the half-split
	// layout (rope_interleave false) would pair other features and give
	// other q·k.
	if !c.RopeInterleave {
		bad("rope_interleave false (half-split RoPE) is not supported: only the interleaved layout")
	}
	if !c.IndexerRopeInterleave {
		bad("indexer_rope_interleave false (half-split RoPE) is not supported: only the interleaved layout")
	}
	if t := c.RopeParameters.RopeType; t != "" && t != "default" {
		bad("rope_type %q: only default", t)
	}
	if c.RMSNormEps <= 0 {
		bad("rms_norm_eps must be positive")
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		return fmt.Errorf("config: %s", strings.Join(errs, "; "))
	}
	return nil
}

// ReadConfig reads and validates dir/config.json.
func ReadConfig(dir string) (*Config, error) {
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "config.json"), err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "config.json"), err)
	}
	return &c, nil
}

// Presets are the synthetic model sizes, by name.
var Presets = map[string]func() *Config{
	// nano has the glm5-micro widths of the reference note (§6.2) with
	// index_topk raised to 64: small enough that all four load phases run
	// in minutes on two cores, with four router groups of which two are
	// kept, so that group-limited routing runs too.
	"nano": func() *Config {
		c := base()
		c.VocabSize, c.HiddenSize, c.IntermediateSize, c.MoEIntermediateSize = 320, 64, 128, 16
		c.NumHiddenLayers, c.FirstKDenseReplace = 2, 1
		c.NumAttentionHeads, c.NumKeyValueHeads = 2, 2
		c.QLoraRank, c.KVLoraRank, c.QKNopeHeadDim, c.QKRopeHeadDim, c.VHeadDim = 32, 16, 12, 4, 16
		c.IndexNHeads, c.IndexHeadDim, c.IndexTopK = 2, 8, 64
		c.NRoutedExperts, c.NumExpertsPerTok, c.NGroup, c.TopKGroup = 16, 4, 4, 2
		return c
	},
	// tiny has the glm5-tiny widths (§6.1): about 27 M parameters, 256
	// experts with top-8 like the real router.
	"tiny": func() *Config {
		c := base()
		c.VocabSize, c.HiddenSize, c.IntermediateSize, c.MoEIntermediateSize = 512, 256, 512, 32
		c.NumHiddenLayers, c.FirstKDenseReplace = 4, 1
		c.NumAttentionHeads, c.NumKeyValueHeads = 4, 4
		c.QLoraRank, c.KVLoraRank, c.QKNopeHeadDim, c.QKRopeHeadDim, c.VHeadDim = 128, 64, 48, 16, 64
		c.IndexNHeads, c.IndexHeadDim, c.IndexTopK = 4, 32, 64
		c.NRoutedExperts, c.NumExpertsPerTok, c.NGroup, c.TopKGroup = 256, 8, 1, 1
		return c
	},
	// gpu is sized for a GPU's speed figures (about 480 M parameters,
	// random weights like the others): hidden 1024, a sixth of GLM-5's
	// 6144, with the dense MLP twice as wide as GLM-5's; the head widths
	// half GLM-5's (nope 96 + rope 32, v 128, kv_lora 256, indexer 64) over
	// 16 heads and 8 indexer heads (GLM-5: 64 and 32), q_lora a third of
	// hidden as GLM-5's; index_topk 2048 as GLM-5, so contexts past 2048
	// tokens attend sparsely; 64 experts of 256 with top-8 in 8 groups
	// keeping 4 (DeepSeek-V3's group routing). The vocabulary, 8192, is
	// the tokenizer's bytes and specials padded (the scheduler masks the
	// padding); it keeps the LM head and the logits each step copies back
	// small beside the experts.
	"gpu": func() *Config {
		c := base()
		c.VocabSize, c.HiddenSize, c.IntermediateSize, c.MoEIntermediateSize = 8192, 1024, 2048, 256
		c.NumHiddenLayers, c.FirstKDenseReplace = 8, 1
		c.NumAttentionHeads, c.NumKeyValueHeads = 16, 16
		c.QLoraRank, c.KVLoraRank, c.QKNopeHeadDim, c.QKRopeHeadDim, c.VHeadDim = 384, 256, 96, 32, 128
		c.IndexNHeads, c.IndexHeadDim, c.IndexTopK = 8, 64, 2048
		c.NRoutedExperts, c.NumExpertsPerTok, c.NGroup, c.TopKGroup = 64, 8, 8, 4
		return c
	},
}

// base holds what every preset shares with GLM-5.
func base() *Config {
	c := &Config{
		Architectures: []string{"GlmMoeDsaForCausalLM"}, ModelType: "glm_moe_dsa",
		MoELayerFreq: 1, IndexerRopeInterleave: true, RopeInterleave: true,
		NSharedExperts: 1, TopKMethod: "noaux_tc", ScoringFunc: "sigmoid", NormTopKProb: true,
		RoutedScalingFactor: 2.5, NumNextNPredictLayers: 1, HiddenAct: "silu", RMSNormEps: 1e-5,
		MaxPositionEmbeddings: 16384,
	}
	c.RopeParameters.RopeTheta, c.RopeParameters.RopeType = 1e6, "default"
	return c
}

// Preset returns a fresh copy of the named preset's config.
func Preset(name string) (*Config, error) {
	f, ok := Presets[name]
	if !ok {
		names := make([]string, 0, len(Presets))
		for n := range Presets {
			names = append(names, n)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("no model preset %q (have %s)", name, strings.Join(names, ", "))
	}
	return f(), nil
}
