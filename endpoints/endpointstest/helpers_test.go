package endpointstest

import (
	"strings"
	"testing"
	"time"
)

// withUsage is body with stream_options.include_usage set where asked.
func withUsage(body map[string]any, asked bool) map[string]any {
	if asked {
		body["stream_options"] = map[string]any{"include_usage": true}
	}
	return body
}

// streamed posts body to url and reads the answer apart, failing the test
// unless it is a 200 of text/event-stream that ends in [DONE].
func streamed(t *testing.T, url string, body any) stream {
	t.Helper()
	r := post(t, url, body)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, Content-Type %q: %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	s := readStream(t, r.body)
	if !s.done {
		t.Fatal("no [DONE]")
	}
	return s
}

// usageApart checks that the last of events is an include_usage chunk of
// its own (choices [], usage prompt+completion tokens) and returns the
// events before it.
func usageApart(t *testing.T, events []map[string]any, prompt, completion int) []map[string]any {
	t.Helper()
	if len(events) == 0 {
		t.Fatal("no events")
	}
	last := events[len(events)-1]
	u, _ := last["usage"].(map[string]any)
	if cs, ok := last["choices"].([]any); !ok || len(cs) != 0 || num(u["prompt_tokens"]) != float64(prompt) || num(u["completion_tokens"]) != float64(completion) {
		t.Errorf("last chunk %v; want choices [] and usage %d+%d", last, prompt, completion)
	}
	return events[:len(events)-1]
}

// eventually polls cond every 5ms until it holds (true) or within has
// passed (false).
func eventually(within time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(within); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// inflight is how many requests p has admitted and not yet answered.
func inflight(p *Personality) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inflight
}
