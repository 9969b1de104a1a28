package conform

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/reports/summary"
)

// The stream-incremental check asks for incrementalTokens tokens and hangs
// up once incrementalEvents content events have come: 64 chat chunks are
// about 14 KiB, more than three of nginx's 4 KiB proxy buffers, and a
// trained model streams them in a second or two. It asks for many more
// because a random-weight model (the built-in engine's) answers with bytes
// that are seldom whole UTF-8, which a server holds back until they are,
// and a server whose detokenizer falls behind packs many tokens into one
// event: the built-in engine, alone, streamed 200 to 330 content events
// for 1024 tokens, and under the load of a parallel test run as few as 5.
const (
	incrementalTokens = 1024
	incrementalEvents = 64
)

// fewEvents is the fewest content events the check judges when there are
// fewer than summary.BufferedMinEvents: then each must have come in a read
// of its own.
const fewEvents = 4

// incrementalPrompt asks for a long answer.
const incrementalPrompt = "Tell a long story about a lighthouse keeper, a storm and a ship."

// errEnough is the cause of the check's hang-up once it has the events it
// judges.
var errEnough = errors.New("enough content events")

// checkStreamIncremental streams through the client glmbench run measures
// with (its events dated by the kernel's receive time of the read that
// delivered them) and judges the arrivals by run's rule
// (summary.BufferedEvents): a stream whose events came in blocks of many,
// or whole, was buffered between the server and glmbench, and run would
// report that buffering as the server's TTFT and ITL.
func checkStreamIncremental(ctx context.Context, s *suite) outcome {
	eos, note := s.ignoreEOS()
	extra := map[string]any{"temperature": 0}
	if eos {
		extra["ignore_eos"] = true
	}
	body, err := json.Marshal(s.streamBody(incrementalPrompt, incrementalTokens, extra))
	if err != nil {
		return fail("%v", err)
	}
	res := s.firstEvents(ctx, endpoints.APIChat, body)
	if res.Class != "" {
		return fail("the stream: %s (%s)", res.Detail, res.Class)
	}
	// Only the first incrementalEvents are judged: more may have come
	// before the hang-up, and a fast server's later ones would only add
	// time for the client to fall behind in.
	ev := make([]float64, min(len(res.Events), incrementalEvents))
	for k := range ev {
		ev[k] = res.Events[k].Seconds()
	}
	n, reads := len(ev), summary.Arrivals(ev)
	switch {
	case n >= summary.BufferedMinEvents && summary.BufferedEvents(ev):
		return fail("%d content events arrived in %s (%s), the first %s and the last %s after the request: something between glmbench and the server buffers the stream, so glmbench run would report its buffering as the server's TTFT and ITL; nginx: proxy_buffering off, or X-Accel-Buffering: no from upstream",
			n, readsText(reads), arrivalPattern(ev), msText(ev[0]), msText(ev[n-1]))
	case n >= summary.BufferedMinEvents && ev[n-1] < summary.BufferedMinSpan:
		return pass("%d content events in %s, all within %s of the request: too soon for a buffer to hide anything", n, readsText(reads), msText(ev[n-1]))
	case n >= summary.BufferedMinEvents:
		return pass("%d content events in %s from %s to %s after the request, %.2f events a read", n, readsText(reads), msText(ev[0]), msText(ev[n-1]), float64(n)/float64(reads))
	case n >= fewEvents && reads == n:
		// A server that packs many tokens into each event (SGLang and the
		// built-in engine do when their detokenizer falls behind) sends
		// few, but a proxy holding a block of bytes would have joined some
		// of them into one read.
		return pass("%d content events (%d tokens), each in a read of its own, from %s to %s after the request", n, res.CompletionTokens, msText(ev[0]), msText(ev[n-1]))
	}
	return skip("only %d content events in %s (finish_reason %q, %d bytes; %s): too few to tell a buffered stream, which needs %d, or %d each in a read of its own",
		n, readsText(reads), res.Finish, res.Bytes, cmp.Or(note, "ignore_eos sent"), summary.BufferedMinEvents, fewEvents)
}

// firstEvents streams body on api's route as glmbench run does and hangs up
// once incrementalEvents content events have come (or the stream ended):
// its result holds every content event read by then.
func (s *suite) firstEvents(ctx context.Context, api endpoints.API, body []byte) *endpoints.StreamResult {
	hctx, hangUp := context.WithCancelCause(ctx)
	defer hangUp(nil)
	var live atomic.Int64
	done := make(chan struct{})
	defer close(done)
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if live.Load() >= incrementalEvents {
					hangUp(errEnough)
					return
				}
			}
		}
	}()
	var res endpoints.StreamResult
	lim := endpoints.StreamLimits{TTFT: s.cfg.Timeout, Stall: s.cfg.StallTimeout, Total: s.cfg.Timeout, MaxTokens: incrementalTokens}
	s.client.StreamAPI(hctx, api, body, lim, &live, &res)
	return &res
}

// arrivalPattern is the events of each read of ev (distinct times), as
// "16 at 210 ms, 16 at 226 ms, …", at most eight reads named.
func arrivalPattern(ev []float64) string {
	var parts []string
	for k := 0; k < len(ev); {
		j := k
		for j < len(ev) && ev[j] == ev[k] {
			j++
		}
		if len(parts) == 8 {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprintf("%d at %s", j-k, msText(ev[k])))
		k = j
	}
	return strings.Join(parts, ", ")
}

// readsText is n reads, in words.
func readsText(n int) string {
	if n == 1 {
		return "1 read"
	}
	return fmt.Sprintf("%d reads", n)
}

// msText is sec in milliseconds, for a detail.
func msText(sec float64) string { return fmt.Sprintf("%.0f ms", sec*1e3) }
