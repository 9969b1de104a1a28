package conform

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// llamaCppStreams puts llama.cpp's chat stream format of early 2025 in
// front of the engine: the engine does the generating (so max_tokens,
// ignore_eos and the counts are an engine's), and every chat stream is
// reshaped as llama-server (tools/server, then examples/server/server.cpp)
// wrote it between the result refactor of December 2024 and May 2025:
//
//   - No role chunk. server_task_result_cmpl_partial::to_json_oaicompat_chat
//     sent the role "assistant" delta only when `first = n_decoded == 0`,
//     but a partial result is made after a token is decoded, so n_decoded
//     is at least 1 and the stream opens with {"delta": {"content": ...}}.
//     PR #13634 ("server : fix first message identification", May 2025,
//     found with the OpenAI node SDK) made it n_decoded == 1.
//   - Usage on the finish chunk. server_task_result_cmpl_final::
//     to_json_oaicompat_chat_stream was one chunk: choices [{finish_reason,
//     index 0, delta {}}] with "usage" (always, stream_options or not) and
//     "timings" (prompt_n, prompt_ms, prompt_per_token_ms,
//     prompt_per_second, predicted_n, predicted_ms, predicted_per_token_ms,
//     predicted_per_second), then data: [DONE]. PR #15444 (August 2025,
//     issue #15443) moved usage to a separate last chunk with choices [].
//     Streams of this shape are quoted in llama.cpp issues #11746 (b4667)
//     and #12137 (b4764).
//   - "system_fingerprint" ("b<build>-<commit>") on every chunk.
//
// The engine sends usage only with include_usage, so the fake asks for it
// on every stream and folds the engine's usage chunk into the finish chunk.
func llamaCppStreams(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if r.Method == http.MethodPost && json.Unmarshal(raw, &body) == nil && isStream(body) {
			body["stream_options"] = map[string]any{"include_usage": true}
			raw, _ = json.Marshal(body)
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(raw)), int64(len(raw))
		next.ServeHTTP(&llamaCppWriter{ResponseWriter: w, start: time.Now()}, r)
	})
}

// llamaCppFingerprint is the system_fingerprint of build b4667, the one of
// issue #11746.
const llamaCppFingerprint = "b4667-d2fe216f"

type llamaCppWriter struct {
	http.ResponseWriter
	start time.Time
	// finish is the finish chunk, held until the usage chunk comes.
	finish map[string]any
}

// Write gets one whole event per call, as the engine writes them.
func (l *llamaCppWriter) Write(b []byte) (int, error) {
	data, ok := bytes.CutPrefix(b, []byte("data: "))
	if !ok || l.Header().Get("Content-Type") != "text/event-stream" {
		return l.ResponseWriter.Write(b)
	}
	data = bytes.TrimSpace(data)
	var ev map[string]any
	if string(data) == "[DONE]" || json.Unmarshal(data, &ev) != nil || ev["error"] != nil {
		if l.finish != nil { // never without the usage chunk; kept for an error's sake
			l.send(l.finish)
			l.finish = nil
		}
		return l.pass(b)
	}
	ev["system_fingerprint"] = llamaCppFingerprint
	choices, _ := ev["choices"].([]any)
	switch {
	case len(choices) == 0 && ev["usage"] != nil && l.finish != nil:
		// The usage chunk: its usage and the timings go on the finish chunk.
		u := ev["usage"].(map[string]any)
		l.finish["usage"] = u
		l.finish["timings"] = l.timings(u)
		ev, l.finish = l.finish, nil
	case len(choices) == 1:
		c := choices[0].(map[string]any)
		d, _ := c["delta"].(map[string]any)
		if f, _ := c["finish_reason"].(string); f != "" {
			l.finish = ev
			return len(b), nil
		}
		delete(d, "role")
		if s, _ := d["content"].(string); s == "" && d["reasoning_content"] == nil && d["tool_calls"] == nil {
			return len(b), nil // the role chunk, which these builds never sent
		}
	}
	if err := l.send(ev); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (l *llamaCppWriter) send(ev map[string]any) error {
	b, _ := json.Marshal(ev)
	_, err := l.pass(append(append([]byte("data: "), b...), "\n\n"...))
	return err
}

func (l *llamaCppWriter) pass(b []byte) (int, error) {
	n, err := l.ResponseWriter.Write(b)
	http.NewResponseController(l.ResponseWriter).Flush()
	return n, err
}

// timings is llama.cpp's result_timings for usage u, in milliseconds; the
// fake cannot tell prompt time from generation time, so it halves the wall
// time between them.
func (l *llamaCppWriter) timings(u map[string]any) map[string]any {
	ms := float64(time.Since(l.start).Microseconds())/1e3/2 + 1e-3
	p, _ := u["prompt_tokens"].(float64)
	n, _ := u["completion_tokens"].(float64)
	return map[string]any{
		"prompt_n": p, "prompt_ms": ms, "prompt_per_token_ms": ms / max(p, 1), "prompt_per_second": 1e3 / ms * p,
		"predicted_n": n, "predicted_ms": ms, "predicted_per_token_ms": ms / max(n, 1), "predicted_per_second": 1e3 / ms * n,
	}
}

func (l *llamaCppWriter) Flush() { http.NewResponseController(l.ResponseWriter).Flush() }

// The stream check fails against llama.cpp's early-2025 streams, naming the
// missing role chunk, and stream-usage fails naming usage on the finish
// chunk; but both streams yield content and end, with usage on a chunk, so
// every check that says whether glmbench run's own request shape works
// there runs, none skipped as "needs stream". Each passes on its own
// assertion, since the engine behind the fake generates right and each
// reads usage from whichever chunk carries it, as run does: max-tokens
// (usage.completion_tokens = max_tokens with ignore_eos), concurrent-streams
// (each stream's own id, prompt count and max_tokens), disconnect (streams
// and a chat answered in full after hang-ups; a stream "in full" is content
// and an end, not the role chunk) and go-openai (the library reads usage from
// any chunk and needs no role chunk).
func TestLlamaCppStreamsFailOnlyTheirShapeAndTheChecksOfRunsShapeStillRun(t *testing.T) {
	t.Parallel()
	e := startEngine(t, nil)
	srv := httptest.NewServer(llamaCppStreams(e.Server.Handler()))
	defer srv.Close()
	cfg := testConfig(srv.URL+"/v1", e.ModelName())
	cfg.Only = []string{"stream", "stream-usage", "max-tokens", "concurrent-streams", "disconnect", "go-openai"}
	res := run(t, cfg)
	for id, want := range map[string]struct {
		status Status
		detail []string
	}{
		"stream": {Fail, []string{`stream 1 of 4: the first chunk's delta has no role "assistant": the stream opens with text`,
			"the checks built on streams run"}},
		"stream-usage": {Fail, []string{`usage came on the finish chunk (with finish_reason "`,
			"not on a separate last chunk with choices []", "clients that read usage only from a choices-[] chunk",
			"glmbench run reads usage from any chunk", "the counts are right: prompt"}},
		"max-tokens":         {Pass, []string{"24 tokens, finish_reason length"}},
		"concurrent-streams": {Pass, []string{"32 streams at once"}},
		"disconnect":         {Pass, []string{"answered in full"}},
		"go-openai":          {Pass, []string{"usage"}},
		// chat and usage run because concurrent-streams needs them; the
		// fake leaves non-streamed answers as the engine gives them.
		"chat":  {Pass, nil},
		"usage": {Pass, nil},
	} {
		r := res[id]
		ok := r.Status == string(want.status)
		for _, d := range want.detail {
			ok = ok && strings.Contains(r.Detail, d)
		}
		if !ok {
			t.Errorf("%s: %s %q, want %s saying %q", id, r.Status, r.Detail, want.status, want.detail)
		}
		if strings.Contains(r.Detail, "needs stream") {
			t.Errorf("%s is skipped behind stream: %q", id, r.Detail)
		}
	}
	if len(res) != 8 {
		t.Errorf("%d checks ran, want the 6 asked for and the 2 they need:%s", len(res), describe(res))
	}
	if t.Failed() {
		t.Log(describe(res))
	}
}

// The fake is what llama.cpp sent, event by event: no role chunk, content
// chunks, one finish chunk (delta {}) carrying usage and timings, then
// [DONE]; no chunk with choices []; a system_fingerprint on every chunk.
func TestTheLlamaCppFakeStreamsAsLlamaCppDid(t *testing.T) {
	t.Parallel()
	e := startEngine(t, nil)
	srv := httptest.NewServer(llamaCppStreams(e.Server.Handler()))
	defer srv.Close()
	// No stream_options: these builds sent usage all the same.
	req, _ := json.Marshal(map[string]any{"model": e.ModelName(), "max_tokens": 8, "stream": true, "ignore_eos": true,
		"messages": []map[string]string{{"role": "user", "content": storyPrompt}}})
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", bytes.NewReader(req))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	events := strings.Split(strings.TrimSpace(string(raw)), "\n\n")
	if len(events) < 3 || events[len(events)-1] != "data: [DONE]" {
		t.Fatalf("events %q: want content chunks, the finish chunk and data: [DONE]", events)
	}
	type llamaChunk struct {
		Choices []struct {
			Delta        map[string]any `json:"delta"`
			FinishReason *string        `json:"finish_reason"`
		} `json:"choices"`
		Usage       map[string]any `json:"usage"`
		Timings     map[string]any `json:"timings"`
		Fingerprint string         `json:"system_fingerprint"`
	}
	var chunks []llamaChunk
	for _, ev := range events[:len(events)-1] {
		var c llamaChunk
		if err := json.Unmarshal([]byte(strings.TrimPrefix(ev, "data: ")), &c); err != nil {
			t.Fatalf("event %q: %v", ev, err)
		}
		chunks = append(chunks, c)
	}
	for i, c := range chunks {
		last := i == len(chunks)-1
		switch {
		case len(c.Choices) != 1:
			t.Errorf("chunk %d has %d choices, want one on every chunk", i, len(c.Choices))
		case c.Choices[0].Delta["role"] != nil:
			t.Errorf("chunk %d has a role: these builds sent none", i)
		// Text is content, or reasoning_content as these builds sent it
		// for a reasoning model (--reasoning-format deepseek).
		case !last && (c.Choices[0].Delta["content"] == nil && c.Choices[0].Delta["reasoning_content"] == nil ||
			c.Usage != nil || c.Choices[0].FinishReason != nil):
			t.Errorf("chunk %d is not a content chunk without usage: %+v", i, c)
		case last && (deref(c.Choices[0].FinishReason) != "length" || len(c.Choices[0].Delta) != 0):
			t.Errorf("the last chunk is not the finish chunk with delta {}: %+v", c)
		case last && (c.Usage["completion_tokens"] != 8.0 || c.Timings["predicted_n"] != 8.0 || c.Timings["prompt_n"] != c.Usage["prompt_tokens"]):
			t.Errorf("the finish chunk's usage %v and timings %v: want 8 tokens in both", c.Usage, c.Timings)
		case c.Fingerprint != llamaCppFingerprint:
			t.Errorf("chunk %d has system_fingerprint %q", i, c.Fingerprint)
		}
	}
}
