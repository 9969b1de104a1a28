package conform

import (
	"context"
	"fmt"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
)

// endlessStream is endpointstest.Endless of event again and again, many
// events per write, so the fake outruns the reader.
func endlessStream(t *testing.T, event string) *httptest.Server {
	return endpointstest.Endless(t, "", []byte(strings.Repeat(event, 256)))
}

// The stream check sends max_tokens 8: its bounds are those of
// glmbench run for that request.
const streamCheckTokens = 8

// A stream that never ends is cut at the bound of its max_tokens (content
// events, chunks or bytes, as glmbench run cuts it) long before the time
// limit, and what reading it allocated is bounded by those bounds, not by
// how fast the endpoint streams. Before the bounds, the suite kept every
// chunk until the time limit: 1.37 GB in 8 s against such a fake, and the
// failure said only that the stream did not end within the limit.
func TestAStreamThatNeverEndsIsCutAtItsBoundWithBoundedMemory(t *testing.T) {
	// Not parallel: the memory counted is this test's alone.
	const chunkHead = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":`
	for _, tc := range []struct {
		name, event, want string
	}{
		{"content events", chunkHead + `{"content":"tide "},"finish_reason":null}]}` + "\n\n",
			fmt.Sprintf("the stream did not end: more than %d chunks for max_tokens %d (%d content events)", chunkBound(streamCheckTokens), streamCheckTokens, chunkBound(streamCheckTokens))},
		{"empty deltas", chunkHead + `{},"finish_reason":null}]}` + "\n\n",
			fmt.Sprintf("the stream did not end: more than %d chunks for max_tokens %d (0 content events)", chunkBound(streamCheckTokens), streamCheckTokens)},
		// A reasoner that thinks without end: its chunks counted, not
		// kept, up to run's own bound of content events.
		{"reasoning alone", thinkerChunk,
			fmt.Sprintf("the stream did not end: more than %d content events for max_tokens %d, glmbench run's bound (%d of them chunks of reasoning alone",
				endpoints.EventBound(streamCheckTokens), streamCheckTokens, endpoints.EventBound(streamCheckTokens))},
		{"comments", ": keep-alive\n\n",
			fmt.Sprintf("the stream did not end: more than %d bytes for max_tokens %d (0 content events)", endpoints.BodyBound(streamCheckTokens), streamCheckTokens)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := endlessStream(t, tc.event)
			cfg := testConfig(srv.URL, "m")
			// The time limit is what the stream would run to without its
			// bounds: long against them, which this fake reaches in well
			// under a second (64 MiB of comments the slowest), so that a
			// loaded machine under -race does not reach it first. The
			// bound ends the stream; the limit only guards a regression.
			cfg.Timeout, cfg.StallTimeout = 30*time.Second, 30*time.Second
			cfg.Only = []string{"stream"}
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			res, err := Run(context.Background(), cfg)
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			// TotalAlloc counts every byte allocated, freed or not: a bound
			// on the reader's peak, whatever the collector did meanwhile.
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("allocated %.1f MiB reading the stream (heap in use after: %.1f MiB)",
				float64(alloc)/(1<<20), float64(after.HeapInuse)/(1<<20))
			if len(res) != 1 || res[0].Status != string(Fail) || !strings.Contains(res[0].Detail, tc.want) {
				t.Errorf("%+v, want the stream check failing with %q", res, tc.want)
			}
			if alloc > 64<<20 {
				t.Errorf("reading one stream of max_tokens %d allocated %d MiB, want under 64 MiB", streamCheckTokens, alloc>>20)
			}
		})
	}
}

// Each stream's bound is that of its own max_tokens (the disconnect check
// asks for 1024 tokens, the crossing check for 4 to 35): it reads exactly
// chunkBound(max_tokens) chunks of an endless stream, then fails it; that
// is always below run's EventBound, since conform keeps these chunks whole.
func TestTheBoundsComeFromTheRequestsMaxTokens(t *testing.T) {
	t.Parallel()
	srv := endlessStream(t, `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}`+"\n\n")
	cfg := testConfig(srv.URL, "m")
	// The bound ends each stream (in well under a second); the limit only
	// guards a regression, long enough that a loaded machine under -race
	// does not reach it first.
	cfg.Timeout = 30 * time.Second
	s, done := newSuite(cfg)
	defer done()
	for _, n := range []int{1, 24, 1024} {
		st := s.stream(context.Background(), s.streamBody(storyPrompt, n, nil), nil)
		want := fmt.Sprintf("more than %d chunks for max_tokens %d", chunkBound(n), n)
		if !strings.Contains(st.problem(), want) || st.contentEvents != chunkBound(n) || chunkBound(n) >= endpoints.EventBound(n) {
			t.Errorf("max_tokens %d: %q after %d content events, want %q", n, st.problem(), st.contentEvents, want)
		}
	}
}

// The probe burst's streams are bounded as glmbench run bounds its own, by
// their max_tokens: an endless stream is ended as a stream_error naming
// the bound, and queue-overflow fails naming it. Before, the burst told
// the client no max_tokens, so each stream ran to endpoints.MaxEvents
// content events (8 MiB of stamps a request, times --probe-limits) before
// the client's last-resort bound ended it.
func TestTheProbeBurstEndsAnEndlessStreamAtItsBound(t *testing.T) {
	t.Parallel()
	srv := endlessStream(t, `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}`+"\n\n")
	cfg := testConfig(srv.URL, "m")
	// The bound ends each stream; the limit (the burst's TTFT, twice it
	// in all) only guards a regression, long enough that a loaded machine
	// under -race does not reach it first.
	cfg.Timeout, cfg.ProbeLimits = 20*time.Second, 2
	s, done := newSuite(cfg)
	defer done()
	s.provided["max-tokens"] = true // as if max-tokens had passed
	out := checkQueueOverflow(context.Background(), s)
	want := fmt.Sprintf("for max_tokens %d", burstTokens)
	if out.status != Fail || !strings.Contains(out.detail, "2 stream_error") || !strings.Contains(out.detail, want) {
		t.Errorf("queue-overflow: %s %q, want a failure of 2 stream_errors naming %q", out.status, out.detail, want)
	}
}
