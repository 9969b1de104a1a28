package endpoints

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/glmbench/glmbench/internal/text"
	"github.com/glmbench/glmbench/reports/summary"
)

// Health asks the server's readiness route, GET /health beside the /v1 API
// base, and returns its status and, for an answer other than 200, the
// server's message in one line (the error object's message, else the body's
// first 120 bytes; secrets redacted). status 0 with a nil error means the
// endpoint has no known readiness route: its base does not end in /v1 (a
// gateway's own path, Azure's), so /health would be somebody else's. Most
// hosted APIs' bases do end in /v1 (api.openai.com/v1, openrouter.ai/api/v1):
// they are asked too, and answer 404, which is no verdict.
//
// What the servers answer there, and why 503 alone means "not yet":
//   - llama.cpp: 503 {"error": {"code": 503, "message": "Loading model",
//     "type": "unavailable_error"}} while it loads the model (every route but
//     /models, which answers at once: tools/server/server.cpp
//     middleware_server_state), then 200 {"status": "ok"};
//   - SGLang: 503 with no body while its server_status is Starting (until
//     the warm-up request has run) or it is shutting down, then 200 once a
//     one-token generation got through (srt/entrypoints/http_server.py
//     health_generate);
//   - vLLM: its API server does not listen until the engine is up; then 200,
//     or 503 once the engine has died (entrypoints/openai/api_server.py);
//   - sgl-router (the SGLang Model Gateway): 503 "Unhealthy servers: [...]"
//     as soon as one worker is down, while it routes to the others, so
//     that answer is settled by its GET /readiness: 200 while a worker is
//     healthy, else 503 {"status": "not_ready", "reason": ...}
//     (sgl-router/src/routers/http/router.rs health and readiness). Any
//     other answer there (a build or proxy without the route: sgl-router's
//     sink handler's bare 404) settles nothing: /health's 503 stands.
//     Where /readiness is 503 too, the message holds both answers.
//
// It sends the extra headers (a gateway in front may route or admit by
// them) but not the API key: every server above serves /health without one
// (SGLang's and vLLM's key guard it not, llama.cpp lists it public), and
// where a /health takes the key it is not that server's readiness: a LiteLLM
// proxy's /health, given a key it accepts, sends a real request to every
// model behind it, each time.
//
// A redirect is never followed: its status is returned as it is.
func (c *Client) Health(ctx context.Context) (status int, msg string, err error) {
	if !strings.HasSuffix(c.ep.BaseURL, "/v1") {
		return 0, "", nil
	}
	status, msg, err = c.ready(ctx, "/health")
	if err == nil && status == http.StatusServiceUnavailable && strings.HasPrefix(msg, "Unhealthy servers: ") {
		rs, rmsg, rerr := c.ready(ctx, "/readiness")
		switch {
		case rerr == nil && rs == http.StatusOK:
			return rs, "", nil
		case rerr == nil && rs == http.StatusServiceUnavailable:
			// Both: which workers are down, and why it is not ready.
			return rs, msg + "; GET /readiness: " + readinessReason(rmsg), nil
		}
	}
	return status, msg, err
}

// readinessReason is the reason of sgl-router's /readiness 503 body
// ({"status": "not_ready", "reason": ...}), else msg as it is.
func readinessReason(msg string) string {
	var v struct {
		Reason string `json:"reason"`
	}
	if json.Unmarshal([]byte(msg), &v) == nil && v.Reason != "" {
		return v.Reason
	}
	return msg
}

// ready asks the readiness route path beside the API base, as Health says.
func (c *Client) ready(ctx context.Context, path string) (status int, msg string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.root()+path, nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Accept-Encoding", "identity")
	c.ep.applyHeaders(req.Header)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return resp.StatusCode, "", nil
	}
	msg = c.ep.Redact(summary.ErrorMessage(c.ReadRedacted(resp, healthBody)))
	return resp.StatusCode, text.Shown(msg, 120), nil
}

// ReadRedacted reads at most limit bytes of resp's body with every secret
// of the endpoint redacted, before anything can cut it (a message cut
// inside a secret keeps its start, which no redaction finds afterwards);
// with the body past limit, a tail that spells a secret's start goes too.
// For a body that is only ever shown, never parsed as a 2xx answer.
func (c *Client) ReadRedacted(resp *http.Response, limit int) []byte {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	more := len(b) > limit
	if more {
		b = b[:limit]
	}
	if ss := c.ep.secretsToFind().all; len(ss.secrets) > 0 {
		b, _ = ss.redact(b, more)
	}
	return b
}

// healthBody is how much of a /health answer other than 200 is read.
const healthBody = 4 << 10
