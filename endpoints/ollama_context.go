package endpoints

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strings"
)

// ollamaContext is the longest prompt one request keeps on an Ollama
// server (past it the runner cuts the prompt; its output goes on past it,
// the runner shifting its context, so it bounds no prompt plus output): GET
// /api/ps beside the API base lists the loaded models, each with the
// context_length it was loaded with (num_ctx: OLLAMA_CONTEXT_LENGTH, a
// Modelfile's, or the default; `ollama ps` shows it as CONTEXT). It is one
// request's (server/routes.go PsHandler: the runner's num_ctx; the runner
// allocates num_ctx × OLLAMA_NUM_PARALLEL, llm/server.go). A model not
// loaded yet is not listed, and builds before the field (PR #11331, July
// 2025) leave it out: 0 then, as for any other answer. An MLX model
// (details.format "safetensors", Model.IsMLX) is skipped: its runner
// neither enforces nor truncates at that number (issue #18125), so it is no
// limit. /api/show's model_info "<arch>.context_length" is the trained
// context: not this one, but its cap (ollamaTrained).
func (c *Client) ollamaContext(ctx context.Context) (n int, source string) {
	var ps struct {
		Models []struct {
			Name    string `json:"name"`
			Model   string `json:"model"`
			Details struct {
				Format string `json:"format"`
			} `json:"details"`
			ContextLength *int64 `json:"context_length"`
		} `json:"models"`
	}
	if c.getJSON(ctx, c.root()+"/api/ps", &ps) != nil {
		return 0, ""
	}
	want := ollamaTagged(c.ep.Model)
	for _, m := range ps.Models {
		if m.Details.Format == "safetensors" {
			continue
		}
		if (c.ep.Model == "" || ollamaTagged(m.Name) == want || ollamaTagged(m.Model) == want) && m.ContextLength != nil && stated(*m.ContextLength) {
			n := int(*m.ContextLength)
			if trained := c.ollamaTrained(ctx, m.Name); trained > 0 && trained < n {
				return trained, "context_length in GET /api/ps, capped at the trained context in POST /api/show; OLLAMA_CONTEXT_LENGTH sets it"
			}
			return n, "context_length in GET /api/ps; OLLAMA_CONTEXT_LENGTH sets it"
		}
	}
	return 0, ""
}

// ollamaTrained is the model's trained context, POST /api/show's
// model_info "<general.architecture>.context_length", to which the runner
// caps num_ctx (llm/server.go NewLlamaServer); late-2025 builds' /api/ps
// stated the num_ctx asked for, uncapped. 0 when not stated.
func (c *Client) ollamaTrained(ctx context.Context, name string) int {
	body, err := json.Marshal(map[string]string{"model": name})
	if err != nil {
		return 0
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.root()+"/api/show", bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	var show struct {
		ModelInfo map[string]any `json:"model_info"`
	}
	if c.doJSON(req, &show) != nil {
		return 0
	}
	arch, _ := show.ModelInfo["general.architecture"].(string)
	n, _ := show.ModelInfo[arch+".context_length"].(float64)
	if arch == "" || n != math.Trunc(n) || !stated(int64(n)) {
		return 0
	}
	return int(n)
}

// ollamaTagged is an Ollama model name with its default tag: "llama3.2"
// names "llama3.2:latest".
func ollamaTagged(name string) string {
	if name == "" || strings.Contains(name[strings.LastIndex(name, "/")+1:], ":") {
		return name
	}
	return name + ":latest"
}
