package server

import (
	"maps"
	"net/http"
	"strings"

	"github.com/glmbench/glmbench/engine/sched"
)

// Checkpoint is the weights a server serves, as /server_info reports
// them: a preset and the seed that drew it, or a checkpoint folder, and the
// format the weights were rounded to at load (engine/model's DType).
type Checkpoint struct {
	// Preset names a synthetic model ("nano"); empty for a folder.
	Preset string
	// Seed drew the preset's weights.
	Seed uint64
	// Path is the checkpoint folder; empty for a preset.
	Path string
	// WeightDType is the weights' format: fp32 (as loaded), bf16, fp8_e4m3
	// or nvfp4; empty is fp32.
	WeightDType string
	// Rounded counts the tensors rounded to WeightDType (0 for fp32).
	Rounded int
	// Device is what the model runs on: cpu (the default), cuda or
	// cpu-ops; DeviceName what runs its ops ("cpu-avx2", "cuda:0 NVIDIA
	// H200 sm_90").
	Device, DeviceName string
}

// SetCheckpoint records the weights s serves, for /server_info.
func (s *Server) SetCheckpoint(c Checkpoint) { s.checkpoint.Store(&c) }

// Checkpoint is the weights s serves: SetCheckpoint's, or by default the
// fp32 weights of Options.ModelPath.
func (s *Server) Checkpoint() Checkpoint {
	if c := s.checkpoint.Load(); c != nil {
		return *c
	}
	return Checkpoint{Path: s.opts.ModelPath}
}

// checkpointInfo is /server_info's account of the weights: checkpoint
// ({"preset", "seed"} or {"path"}), weight_dtype, weight_dtype_tensors (how
// many were rounded), and SGLang's own quantization key as SGLang would name
// a deployment so stored (null for fp32 and bf16, "fp8" for per-tensor FP8,
// "modelopt_fp4" for NVFP4), and device (SGLang's server argument: cuda
// on a GPU) with device_name.
func (c Checkpoint) info() map[string]any {
	ck := map[string]any{"path": c.Path}
	if c.Preset != "" {
		ck = map[string]any{"preset": c.Preset, "seed": c.Seed}
	}
	dt := c.WeightDType
	if dt == "" {
		dt = "fp32"
	}
	var quant any
	switch dt {
	case "fp8_e4m3":
		quant = "fp8"
	case "nvfp4":
		quant = "modelopt_fp4"
	}
	dev := c.Device
	if dev == "" {
		dev = "cpu"
	}
	return map[string]any{"checkpoint": ck, "weight_dtype": dt, "weight_dtype_tensors": c.Rounded, "quantization": quant,
		"device": dev, "device_name": c.DeviceName}
}

// modelCard is a /v1/models entry. max_model_len, the context length, is
// where SGLang (ModelCard in python/sglang/srt/entrypoints/openai/
// protocol.py) and vLLM (its ModelCard) report it, so a client can check a
// request's prompt + max_tokens before sending any load; /server_info
// gives the same number as context_length.
type modelCard struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	Root        string `json:"root"`
	MaxModelLen int    `json:"max_model_len"`
}

func (s *Server) card() modelCard {
	return modelCard{ID: s.opts.ModelName, Object: "model", Created: s.created, OwnedBy: "glmbench",
		Root: s.opts.ModelName, MaxModelLen: s.contextLength()}
}

// handleModels serves GET /v1/models: the one served model.
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []modelCard{s.card()}})
}

// handleModel serves GET /v1/models/{id}.
func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/v1/models/")
	if id != s.opts.ModelName {
		writeError(w, notFound("The model `%s` does not exist.", id))
		return
	}
	writeJSON(w, http.StatusOK, s.card())
}

// handleHealth serves GET /health: 200 with an empty body once ready, as
// SGLang; 503 before and from the start of shutdown.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() || s.shuttingDown() {
		writeError(w, s.unavailableErr())
		return
	}
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
}

// handleModelInfo serves GET /get_model_info as SGLang does.
func (s *Server) handleModelInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"model_path": s.opts.ModelPath, "tokenizer_path": s.opts.ModelPath, "is_generation": true,
		"served_model_name": s.opts.ModelName,
	})
}

// handleServerInfo serves GET /server_info: the effective settings
// under SGLang's server-args names (so the output can be fed back as
// --server-config), the version, and live scheduler figures in
// internal_states as SGLang reports them (the accept length and the
// prefix cache hit rate are since start, as /metrics gives them), and the
// weights served (Checkpoint.info).
func (s *Server) handleServerInfo(w http.ResponseWriter, r *http.Request) {
	cfg := s.sched.Config()
	st := s.sched.Stats()
	info := cfg.ServerArgs() // pointers into cfg, written as their values
	if cfg.MaxQueuedRequests == 0 {
		info["max_queued_requests"] = nil // SGLang's unset is null: unbounded
	}
	maps.Copy(info, s.Checkpoint().info())
	maps.Copy(info, map[string]any{
		"model_path":             s.opts.ModelPath,
		"tokenizer_path":         s.opts.ModelPath,
		"served_model_name":      s.opts.ModelName,
		"reasoning_parser":       "glm45",
		"tool_call_parser":       "glm47",
		"skip_tokenizer_init":    false,
		"rate_limit_concurrency": s.opts.RateLimitConcurrency,
		"rate_limit_rpm":         s.opts.RateLimitRPM,
		"max_total_num_tokens":   st.KVTotalTokens,
		"version":                s.opts.Version,
		"internal_states": []map[string]any{{
			"num_running_reqs":     st.Running,
			"num_queue_reqs":       st.Waiting,
			"num_used_tokens":      st.KVUsedTokens,
			"max_total_num_tokens": st.KVTotalTokens,
			"token_usage":          st.TokenUsage(),
			"cached_tokens":        st.CachedTokens,
			"num_retractions":      st.Retractions,
			"new_token_ratio":      st.NewTokenRatio,
			"cache_hit_rate":       cacheHitRate(st),
			// SGLang reports avg_spec_accept_length only while speculative
			// decoding runs; null here until a verify step has run.
			"avg_spec_accept_length": acceptLength(st),
		}},
	})
	writeJSON(w, http.StatusOK, info)
}

// acceptLength is Stats.AcceptLength for /server_info: nil (null) with
// no verify step, where SGLang has no avg_spec_accept_length either.
func acceptLength(st sched.Stats) any {
	if st.SpecSteps == 0 {
		return nil
	}
	return st.AcceptLength()
}
