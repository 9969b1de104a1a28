package endpoints

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/glmbench/glmbench/internal/text"
	"github.com/glmbench/glmbench/reports/summary"
)

// The server's own profiler, as the peer benchmarks drive it around their
// measured load: `vllm bench serve --profile` (vllm/benchmarks/serve.py)
// and SGLang's bench_serving.py --profile POST /start_profile before the
// load and /stop_profile after it, at the server's root (beside /v1).
//
//   - vLLM (vllm/entrypoints/serve/profile/api_router.py, formerly in
//     entrypoints/openai/api_server.py): POST only, answered 200 with an
//     empty body; the routes exist only when the server runs with its
//     profiler configured (--profiler-config from v0.13,
//     VLLM_TORCH_PROFILER_DIR before), else 404. stop_profile answers once
//     the trace is flushed, which can take minutes.
//   - SGLang (python/sglang/srt/entrypoints/http_server.py): GET or POST,
//     always there, an optional JSON body ProfileReqInput (output_dir,
//     start_step, num_steps, activities, with_stack, record_shapes, …);
//     it answers "Start profiling." and "Stop profiling. This will take
//     some time."; the trace goes to output_dir, else
//     SGLANG_TORCH_PROFILER_DIR (default /tmp), on the server's machine.
//   - glmbench serve --profile-dir DIR: GET or POST, a Go CPU profile in
//     DIR whose file the JSON answer names; 404 without a directory.
//
// glmbench sends {} (every server above takes it: vLLM reads no body,
// SGLang's defaults are its own configuration) with the endpoint's key
// and headers, as every request to the endpoint carries them, or with its
// admin key in the key's place where one was given (run
// --admin-api-key-env: SGLang's --admin-api-key).

// ProfileAnswer is a profiler route's 2xx answer.
type ProfileAnswer struct {
	// Message is the server's answer in one line ("" for vLLM's empty body).
	Message string
	// File is the trace file the server names in a JSON answer's "file"
	// (glmbench serve's CPU profile), "" when it names none.
	File string
}

// profileNotFound says what turns the profiler routes on, for a 404.
const profileNotFound = "the server has no profiler routes: vLLM serves them only when started with its profiler configured " +
	`(--profiler-config '{"profiler": "torch", "torch_profiler_dir": DIR}' from v0.13, VLLM_TORCH_PROFILER_DIR=DIR before); ` +
	"SGLang always has them; glmbench serve needs --profile-dir DIR; llama.cpp and hosted APIs have none"

// profileUnauthorized says why a key that the API takes can be refused on
// the profiler routes, for a 401 or 403.
const profileUnauthorized = "the profiler routes refused the key sent: SGLang started with --admin-api-key takes only that key on them " +
	"(its --api-key is refused there): give it with --admin-api-key-env VAR"

// profileAdminRefused is profileUnauthorized where the admin key was sent.
const profileAdminRefused = "the profiler routes refused the admin key sent (--admin-api-key-env): " +
	"it is not the server's --admin-api-key (SGLang), or what stands in front of the server takes another key there"

// maxProfileBody bounds a profiler route's answer read into memory.
const maxProfileBody = 64 << 10

// StartProfile asks the server to start its profiler: POST /start_profile
// at its root. An error says the status and the server's message (a 404:
// that the server has no such route, and what turns it on), redacted.
func (c *Client) StartProfile(ctx context.Context) (ProfileAnswer, error) {
	return c.profileCall(ctx, "/start_profile")
}

// StopProfile asks the server to stop its profiler and write the trace:
// POST /stop_profile at its root. Errors are StartProfile's.
func (c *Client) StopProfile(ctx context.Context) (ProfileAnswer, error) {
	return c.profileCall(ctx, "/stop_profile")
}

// profileCall POSTs {} to path at the server's root, as Post does (sendJSON:
// a redirect is never followed), and no error text carries a secret.
func (c *Client) profileCall(ctx context.Context, path string) (ProfileAnswer, error) {
	where := "POST " + RedactURL(c.root()) + path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.root()+path, strings.NewReader("{}"))
	if err != nil {
		return ProfileAnswer{}, fmt.Errorf("%s: %s", where, c.ep.Redact(err.Error()))
	}
	resp, err := c.sendJSONWith(req, c.ep.ApplyAdmin)
	if err != nil {
		return ProfileAnswer{}, fmt.Errorf("%s: %w", where, err)
	}
	defer resp.Body.Close()
	// Every secret, whatever the status: the text is only ever shown.
	ans := profileAnswer(c.ReadRedacted(resp, maxProfileBody))
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return ProfileAnswer{}, &ProfileError{Status: resp.StatusCode, Where: where, Message: ans.Message, admin: c.ep.adminKey != ""}
	}
	return ans, nil
}

// ProfileError is a profiler route's answer of another status than 2xx.
type ProfileError struct {
	Status int
	// Where is the request, "POST <root>/start_profile".
	Where string
	// Message is the server's one-line message, redacted ("" for none).
	Message string
	// admin is true when the admin key was sent in the API key's place.
	admin bool
}

func (e *ProfileError) Error() string {
	s := fmt.Sprintf("%s: HTTP %d", e.Where, e.Status)
	if e.Message != "" {
		s += " (" + e.Message + ")"
	}
	switch e.Status {
	case http.StatusNotFound:
		s += ": " + profileNotFound
	case http.StatusUnauthorized, http.StatusForbidden:
		if e.admin {
			return s + ": " + profileAdminRefused
		}
		s += ": " + profileUnauthorized
	}
	return s
}

// IsProfileNotFound reports whether err is a profiler route's 404: the
// server has no such route (vLLM without its profiler configured).
func IsProfileNotFound(err error) bool {
	var pe *ProfileError
	return errors.As(err, &pe) && pe.Status == http.StatusNotFound
}

// profileAnswer reads a profiler route's body: the message of an
// OpenAI-shaped error ({"error": {"message"}}), a flat one ({"message"},
// {"error": "…"}, FastAPI's {"detail"}), glmbench serve's {"message",
// "file"}, or else the text itself, in one line of at most 200 bytes.
func profileAnswer(b []byte) ProfileAnswer {
	var v struct {
		File string `json:"file"`
	}
	_ = json.Unmarshal(b, &v)
	return ProfileAnswer{Message: text.Shown(summary.ErrorMessage(b), BodyLimit), File: text.Shown(v.File, maxProfileFile)}
}

// maxProfileFile bounds the file a profiler's answer names: PATH_MAX.
const maxProfileFile = 4096
