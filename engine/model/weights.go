package model

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/glmbench/glmbench/kernels"
)

// MLP is a SiLU-gated MLP: a dense layer's, one routed expert's or the shared
// expert's. Gate and Up are I×H, Down is H×I (Hugging Face Linear layout).
type MLP struct {
	Gate, Up, Down kernels.Mat
}

// Indexer is DSA's lightning indexer: it scores every visible key for a
// query and keeps the top index_topk, shared by all attention heads.
type Indexer struct {
	WqB         kernels.Mat // wq_b: [index_n_heads·index_head_dim × q_lora_rank], input is the q latent
	Wk          kernels.Mat // wk: [index_head_dim × hidden]
	KNormW      []float32   // k_norm.weight [index_head_dim] (LayerNorm)
	KNormB      []float32   // k_norm.bias [index_head_dim]
	WeightsProj kernels.Mat // weights_proj: [index_n_heads × hidden]
}

// Attention is MLA: queries through a low-rank latent, keys and values
// through a compressed latent c (kv_lora_rank) plus one rope key shared by
// all heads.
type Attention struct {
	QAProj  kernels.Mat // q_a_proj: [q_lora_rank × hidden]
	QANorm  []float32   // q_a_layernorm [q_lora_rank]
	QBProj  kernels.Mat // q_b_proj: [heads·(nope+rope) × q_lora_rank]; per head [nope | rope]
	KVAProj kernels.Mat // kv_a_proj_with_mqa: [(kv_lora_rank+rope) × hidden]; [latent | k_rope]
	KVANorm []float32   // kv_a_layernorm [kv_lora_rank]
	KVBProj kernels.Mat // kv_b_proj: [heads·(nope+v) × kv_lora_rank]; per head [W_UK (nope rows) ; W_UV (v rows)]
	OProj   kernels.Mat // o_proj: [hidden × heads·v]
	Indexer Indexer

	// Absorbed-form matrices, derived from KVBProj at load: per head h,
	// uk[h] is W_UK_h (nope × r) used as q̃ = q_nope · W_UK_h, and uv[h] is
	// W_UV_h (v × r) used as v = W_UV_h · o.
	uk, uv []kernels.Mat
}

// MoE is the sigmoid-routed mixture of experts with a shared expert.
type MoE struct {
	Gate    kernels.Mat // gate.weight: [experts × hidden]
	Bias    []float32   // gate.e_score_correction_bias [experts]: used to choose, never to weigh
	Experts []MLP
	Shared  MLP
}

// Layer is one pre-norm decoder layer: MLA+DSA, then a dense MLP or the MoE.
type Layer struct {
	InputNorm []float32 // input_layernorm [hidden]
	Attn      Attention
	PostNorm  []float32 // post_attention_layernorm [hidden]
	MLP       *MLP      // dense layers (l < first_k_dense_replace)
	MoE       *MoE
}

// MTP is the next-token-prediction layer used as speculative drafter:
// h' = eh_proj([enorm(embed(next)) ; hnorm(h)]), one decoder layer, then
// shared_head.norm and the main lm_head.
type MTP struct {
	EHProj   kernels.Mat // eh_proj: [hidden × 2·hidden]; embedding half first
	ENorm    []float32   // enorm [hidden]
	HNorm    []float32   // hnorm [hidden]
	HeadNorm []float32   // shared_head.norm [hidden]
	Layer    Layer
}

// Weights are every parameter of the model, named as GLM-5's checkpoint.
type Weights struct {
	Embed  kernels.Mat // model.embed_tokens: [vocab × hidden]
	Layers []Layer
	Norm   []float32   // model.norm [hidden]
	LMHead kernels.Mat // lm_head: [vocab × hidden]
	MTP    *MTP

	byName map[string]Tensor
}

// TensorSpec is one tensor a checkpoint must hold.
type TensorSpec struct {
	Name  string
	Shape []int
}

// visit walks every tensor of cfg's architecture in checkpoint order,
// asking get for each one's data; the same walk lists the manifest, loads a
// checkpoint and synthesises one, so the three cannot drift apart.
func visit(cfg *Config, w *Weights, fetch func(name string, shape ...int) []float32) {
	H, V := cfg.HiddenSize, cfg.VocabSize
	w.byName = map[string]Tensor{}
	get := func(name string, shape ...int) []float32 {
		d := fetch(name, shape...)
		w.byName[name] = Tensor{Shape: append([]int(nil), shape...), Data: d}
		return d
	}
	mat := func(name string, rows, cols int) kernels.Mat {
		return kernels.Mat{Data: get(name, rows, cols), Rows: rows, Cols: cols, Stride: cols}
	}
	vec := func(name string, n int) []float32 { return get(name, n) }
	mlp := func(prefix string, inter int) MLP {
		return MLP{
			Gate: mat(prefix+".gate_proj.weight", inter, H),
			Up:   mat(prefix+".up_proj.weight", inter, H),
			Down: mat(prefix+".down_proj.weight", H, inter),
		}
	}
	layer := func(l int) Layer {
		p := fmt.Sprintf("model.layers.%d.", l)
		heads, dn, dr, dv, r := cfg.NumAttentionHeads, cfg.QKNopeHeadDim, cfg.QKRopeHeadDim, cfg.VHeadDim, cfg.KVLoraRank
		ly := Layer{InputNorm: vec(p+"input_layernorm.weight", H)}
		a := &ly.Attn
		a.QAProj = mat(p+"self_attn.q_a_proj.weight", cfg.QLoraRank, H)
		a.QANorm = vec(p+"self_attn.q_a_layernorm.weight", cfg.QLoraRank)
		a.QBProj = mat(p+"self_attn.q_b_proj.weight", heads*cfg.QKHeadDim(), cfg.QLoraRank)
		a.KVAProj = mat(p+"self_attn.kv_a_proj_with_mqa.weight", r+dr, H)
		a.KVANorm = vec(p+"self_attn.kv_a_layernorm.weight", r)
		a.KVBProj = mat(p+"self_attn.kv_b_proj.weight", heads*(dn+dv), r)
		a.OProj = mat(p+"self_attn.o_proj.weight", H, heads*dv)
		a.Indexer = Indexer{
			WqB:         mat(p+"self_attn.indexer.wq_b.weight", cfg.IndexNHeads*cfg.IndexHeadDim, cfg.QLoraRank),
			Wk:          mat(p+"self_attn.indexer.wk.weight", cfg.IndexHeadDim, H),
			KNormW:      vec(p+"self_attn.indexer.k_norm.weight", cfg.IndexHeadDim),
			KNormB:      vec(p+"self_attn.indexer.k_norm.bias", cfg.IndexHeadDim),
			WeightsProj: mat(p+"self_attn.indexer.weights_proj.weight", cfg.IndexNHeads, H),
		}
		ly.PostNorm = vec(p+"post_attention_layernorm.weight", H)
		if cfg.IsMoE(l) {
			m := &MoE{
				Gate: mat(p+"mlp.gate.weight", cfg.NRoutedExperts, H),
				Bias: vec(p+"mlp.gate.e_score_correction_bias", cfg.NRoutedExperts),
			}
			for e := range cfg.NRoutedExperts {
				m.Experts = append(m.Experts, mlp(fmt.Sprintf("%smlp.experts.%d", p, e), cfg.MoEIntermediateSize))
			}
			m.Shared = mlp(p+"mlp.shared_experts", cfg.MoEIntermediateSize*max(cfg.NSharedExperts, 1))
			ly.MoE = m
		} else {
			d := mlp(p+"mlp", cfg.IntermediateSize)
			ly.MLP = &d
		}
		return ly
	}
	w.Embed = mat("model.embed_tokens.weight", V, H)
	w.Layers = w.Layers[:0]
	for l := range cfg.NumHiddenLayers {
		w.Layers = append(w.Layers, layer(l))
	}
	w.Norm = vec("model.norm.weight", H)
	w.LMHead = mat("lm_head.weight", V, H)
	if cfg.NumNextNPredictLayers > 0 {
		l := cfg.NumHiddenLayers
		p := fmt.Sprintf("model.layers.%d.", l)
		w.MTP = &MTP{
			EHProj:   mat(p+"eh_proj.weight", H, 2*H),
			ENorm:    vec(p+"enorm.weight", H),
			HNorm:    vec(p+"hnorm.weight", H),
			HeadNorm: vec(p+"shared_head.norm.weight", H),
			Layer:    layer(l),
		}
	}
}

// Manifest lists every tensor a checkpoint of cfg must hold, in order.
func Manifest(cfg *Config) []TensorSpec {
	var out []TensorSpec
	visit(cfg, &Weights{}, func(name string, shape ...int) []float32 {
		out = append(out, TensorSpec{name, append([]int(nil), shape...)})
		return nil // the walk only lists: no tensor data
	})
	return out
}

// FromTensors binds tensors to cfg's architecture, checking every shape. The
// error names the first tensor (in checkpoint order) that is missing or has
// the wrong shape. Tensors the architecture does not use are ignored (GLM-5
// checkpoints repeat embed_tokens and the head under the MTP layer).
func FromTensors(cfg *Config, tensors map[string]Tensor) (*Weights, error) {
	w := &Weights{}
	var first error
	visit(cfg, w, func(name string, shape ...int) []float32 {
		t, ok := tensors[name]
		switch {
		case first != nil:
		case !ok:
			first = fmt.Errorf("checkpoint lacks tensor %s (want shape %v)", name, shape)
		case !slices.Equal(t.Shape, shape):
			first = fmt.Errorf("tensor %s has shape %v, want %v", name, t.Shape, shape)
		default:
			return t.Data
		}
		return nil // w is dropped with the error
	})
	if first != nil {
		return nil, first
	}
	w.derive(cfg)
	return w, nil
}

// Synth generates deterministic random weights for cfg from seed. Every
// tensor draws from its own generator, seeded by (seed, name), so a tensor's
// values do not depend on which others exist. Linear weights are N(0, 1/in),
// norm weights 1 + N(0, 0.1²), biases N(0, 0.1²), embeddings N(0, 1).
func Synth(cfg *Config, seed uint64) *Weights {
	w := &Weights{}
	visit(cfg, w, func(name string, shape ...int) []float32 {
		h := fnv.New64a()
		h.Write([]byte(name))
		rng := mrand.New(mrand.NewPCG(seed, h.Sum64()))
		data := make([]float32, Numel(shape))
		mean, std := 0.0, 0.1
		switch {
		case strings.HasSuffix(name, "norm.weight"):
			mean = 1
		case strings.HasSuffix(name, ".bias") || strings.HasSuffix(name, "e_score_correction_bias"):
		case strings.HasSuffix(name, "embed_tokens.weight"):
			std = 1
		default:
			std = 1 / math.Sqrt(float64(shape[len(shape)-1]))
		}
		for i := range data {
			data[i] = float32(mean + std*rng.NormFloat64())
		}
		return data
	})
	w.derive(cfg)
	return w
}

// Tensors returns the weights by checkpoint name, sharing their storage.
func (w *Weights) Tensors() map[string]Tensor { return w.byName }

// derive computes the absorbed-MLA matrices from kv_b_proj.
func (w *Weights) derive(cfg *Config) {
	layers := make([]*Layer, 0, len(w.Layers)+1)
	for i := range w.Layers {
		layers = append(layers, &w.Layers[i])
	}
	if w.MTP != nil {
		layers = append(layers, &w.MTP.Layer)
	}
	dn, dv, r := cfg.QKNopeHeadDim, cfg.VHeadDim, cfg.KVLoraRank
	for _, ly := range layers {
		a := &ly.Attn
		a.uk, a.uv = nil, nil
		for h := range cfg.NumAttentionHeads {
			rows := a.KVBProj.Slice(h*(dn+dv), (h+1)*(dn+dv), 0, r)
			a.uk = append(a.uk, rows.Slice(0, dn, 0, r))
			a.uv = append(a.uv, rows.Slice(dn, dn+dv, 0, r))
		}
	}
}

// Load reads a checkpoint folder: config.json and model.safetensors.
func Load(dir string) (*Config, *Weights, error) {
	cfg, err := ReadConfig(dir)
	if err != nil {
		return nil, nil, err
	}
	tensors, err := ReadSafetensors(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		return nil, nil, err
	}
	w, err := FromTensors(cfg, tensors)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", dir, err)
	}
	return cfg, w, nil
}

// Save writes a checkpoint folder: config.json and model.safetensors (F32).
func Save(dir string, cfg *Config, w *Weights) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return WriteSafetensors(filepath.Join(dir, "model.safetensors"), w.Tensors(), map[string]string{"format": "pt", "producer": "glmbench"})
}
