package endpoints

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// maxInfoBody bounds a server-information answer read into memory (llama.cpp's
// /props carries the whole chat template).
const maxInfoBody = 4 << 20

// maxContext bounds a stated context length that is taken at its word.
const maxContext = 1 << 40

// ContextLength returns the longest sequence (prompt plus output, in tokens)
// one request may have on this endpoint, where the server states it, and
// where it was read. It asks, in order:
//
//   - GET /models: the served model's max_model_len (vLLM; SGLang too);
//   - GET /server_info beside the API base (or /get_server_info, its old
//     name: sglangServerInfo): context_length (SGLang; null there unless
//     --context-length was given);
//   - GET /props beside the API base: default_generation_settings.n_ctx, the
//     context of one slot (llama.cpp: -c 65536 -np 16 gives 4,096);
//   - GET /info beside the API base: max_total_tokens (Hugging Face TGI),
//     see tgiContext;
//   - GET /api/v1/models beside the API base: the loaded instance's
//     context_length (LM Studio 0.4.0+), see lmstudioContext.
//
// Ollama's num_ctx (GET /api/ps) is no such bound: its runner shifts its
// context and generates on past it, so only the prompt is held to it, and
// PromptLimit states it.
//
// A missing route, another status or an unknown shape means "not stated":
// n is 0 and err nil. err is only ctx's end.
func (c *Client) ContextLength(ctx context.Context) (n int, source string, err error) {
	var models struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen *int64 `json:"max_model_len"`
		} `json:"data"`
	}
	if c.getJSON(ctx, c.ep.BaseURL+"/models", &models) == nil {
		for _, m := range models.Data {
			// A LoRA adapter's card (vLLM) has no max_model_len; only the
			// served model's own card counts.
			if (m.ID == c.ep.Model || c.ep.Model == "") && m.MaxModelLen != nil && stated(*m.MaxModelLen) {
				return int(*m.MaxModelLen), "max_model_len in GET /models", nil
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, "", err
	}
	var info struct {
		ContextLength *int64 `json:"context_length"`
	}
	if path, err := c.sglangServerInfo(ctx, &info); err == nil && info.ContextLength != nil && stated(*info.ContextLength) {
		return int(*info.ContextLength), "context_length in GET " + path, nil
	}
	if err := ctx.Err(); err != nil {
		return 0, "", err
	}
	// llama.cpp's get_props: default_generation_settings.n_ctx is the slot's
	// context (slots[0].n_ctx: -c divided among the --parallel slots, which
	// total_slots counts). Some versions also had a top-level n_ctx, the whole
	// context, which no single request can use.
	var props struct {
		Settings *struct {
			NCtx *int64 `json:"n_ctx"`
		} `json:"default_generation_settings"`
	}
	if c.getJSON(ctx, c.root()+"/props", &props) == nil && props.Settings != nil && props.Settings.NCtx != nil && stated(*props.Settings.NCtx) {
		return int(*props.Settings.NCtx), "n_ctx per slot in GET /props", nil
	}
	if n, source := c.tgiContext(ctx); n > 0 {
		return n, source, nil
	}
	if n, source := c.lmstudioContext(ctx); n > 0 {
		return n, source, nil
	}
	return 0, "", ctx.Err()
}

// lmstudioContext reads LM Studio's GET /api/v1/models (0.4.0+,
// lmstudio-ai/docs 1_developer/2_rest/list.md): the context a model was
// loaded with is its loaded_instances[].config.context_length, the instance
// named by the model field (its id, or the model's key). max_context_length
// there and in /api/v0/models is the model's own maximum, which a request
// past the loaded context does not get ("the model is loaded with context
// length of only N tokens"), so it is not read. 0 when no loaded instance
// of the model states one (a model JIT loading has not loaded yet).
func (c *Client) lmstudioContext(ctx context.Context) (n int, source string) {
	var list struct {
		Models []struct {
			Key       string `json:"key"`
			Instances []struct {
				ID     string `json:"id"`
				Config struct {
					ContextLength *int64 `json:"context_length"`
				} `json:"config"`
			} `json:"loaded_instances"`
		} `json:"models"`
	}
	if c.getJSON(ctx, c.root()+"/api/v1/models", &list) != nil {
		return 0, ""
	}
	for _, m := range list.Models {
		for _, in := range m.Instances {
			if (in.ID == c.ep.Model || m.Key == c.ep.Model || c.ep.Model == "") && in.Config.ContextLength != nil && stated(*in.Config.ContextLength) {
				return int(*in.Config.ContextLength), "context_length of the loaded instance in GET /api/v1/models"
			}
		}
	}
	return 0, ""
}

// tgiContext reads Hugging Face TGI's GET /info: max_total_tokens bounds a
// request's prompt plus max_new_tokens, and is the n returned. TGI also
// refuses a prompt alone past max_input_tokens (PromptLimit), which by
// default is max_total_tokens-1 but may be set lower; then source names it
// too, so that a refusal quotes both (router/src/lib.rs Info,
// validation.rs). 0 when /info states no max_total_tokens.
func (c *Client) tgiContext(ctx context.Context) (n int, source string) {
	total, input := c.tgiInfo(ctx)
	if total == 0 {
		return 0, ""
	}
	source = "max_total_tokens in GET /info"
	if input > 0 {
		source += fmt.Sprintf(", which bounds the prompt alone at max_input_tokens %d", input)
	}
	return total, source
}

// PromptLimit returns the longest prompt alone (in tokens) one request may
// have on this endpoint, where the server states one that IN+OUT within
// ContextLength does not already keep, and where it was read: TGI's
// max_input_tokens in GET /info beside the API base (max_input_length
// before 2.0), when it is below max_total_tokens-1, which it refuses past;
// else a loaded Ollama model's num_ctx in GET /api/ps (ollamaContext),
// past which Ollama cuts the prompt and answers 200. 0 when not stated.
func (c *Client) PromptLimit(ctx context.Context) (n int, source string) {
	if _, input := c.tgiInfo(ctx); input > 0 {
		return input, "max_input_tokens in GET /info"
	}
	if ctx.Err() != nil {
		return 0, ""
	}
	return c.ollamaContext(ctx)
}

// tgiInfo is TGI's max_total_tokens in GET /info, and its max_input_tokens
// (max_input_length before 2.0) where that is stated below
// max_total_tokens-1; 0 for what is not stated.
func (c *Client) tgiInfo(ctx context.Context) (total, input int) {
	var info struct {
		MaxTotal    *int64 `json:"max_total_tokens"`
		MaxInput    *int64 `json:"max_input_tokens"`
		MaxInputOld *int64 `json:"max_input_length"`
	}
	if c.getJSON(ctx, c.root()+"/info", &info) != nil || info.MaxTotal == nil || !stated(*info.MaxTotal) {
		return 0, 0
	}
	in := info.MaxInput
	if in == nil {
		in = info.MaxInputOld
	}
	if in != nil && stated(*in) && *in < *info.MaxTotal-1 {
		input = int(*in)
	}
	return int(*info.MaxTotal), input
}

func stated(n int64) bool { return n > 0 && n < maxContext }

// serverInfoPaths are SGLang's server-info route, /server_info, then
// /get_server_info, its name before the rename, which current builds keep as
// a deprecated alias (sgl-project/sglang #13607 removed it and #14533 put it
// back; the model gateway's #24821 proposed removing its own).
var serverInfoPaths = [...]string{"/server_info", "/get_server_info"}

// sglangServerInfo decodes SGLang's server info into v: GET /server_info and,
// only where that is a 404 (a build before the rename, a router that
// proxies the old name alone), GET /get_server_info, so an old build gets
// one request more. path is the route that answered; err is the last
// route's error.
func (c *Client) sglangServerInfo(ctx context.Context, v any) (path string, err error) {
	for _, path = range serverInfoPaths {
		var st statusError
		if err = c.getJSON(ctx, c.root()+path, v); !errors.As(err, &st) || st != http.StatusNotFound {
			break
		}
	}
	return path, err
}

// statusError is doJSON's error for an answer whose status is not 200.
type statusError int

func (e statusError) Error() string { return "HTTP " + strconv.Itoa(int(e)) }

// getJSON GETs url and decodes a 200 JSON answer into v; an error for
// anything else (no answer, another status, no JSON).
func (c *Client) getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	return c.doJSON(req, v)
}

// doJSON sends req with the endpoint's key and headers and decodes a 200
// JSON answer into v; an error for anything else (no answer, another
// status, no JSON).
func (c *Client) doJSON(req *http.Request, v any) error {
	c.ep.Apply(req.Header)
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return statusError(resp.StatusCode)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, maxInfoBody)).Decode(v)
}

// root is the server's root, beside the /v1 API base (SGLang's
// /server_info, llama.cpp's /props live there).
func (c *Client) root() string { return strings.TrimSuffix(c.ep.BaseURL, "/v1") }
