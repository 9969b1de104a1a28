package conform

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

// The probe checks: one burst of Config.ProbeLimits streams at once, read
// by two checks, how an endpoint past its capacity says so.

// burstTokens is each burst request's max_tokens: long enough that the
// burst's requests overlap on the server. They are asked with ignore_eos
// where max-tokens established it, so that a served request streams them
// all.
const burstTokens = 128

// burst is the outcome of the probe burst.
type burst struct {
	results []endpoints.StreamResult
	// note says the burst went without ignore_eos, and why; "" with it.
	note string
}

// burst sends the probe burst once per run and returns it.
func (s *suite) burst(ctx context.Context) *burst {
	s.burstOnce.Do(func() { s.burstRes = s.sendBurst(ctx) })
	return s.burstRes
}

func (s *suite) sendBurst(ctx context.Context) *burst {
	n := s.cfg.ProbeLimits
	pool := endpoints.NewPool(s.cfg.Endpoint, endpoints.TransportOptions{Conns: n, ConnectTimeout: s.cfg.ConnectTimeout})
	defer pool.Close()
	bodies := make([][]byte, n)
	eos, note := s.ignoreEOS()
	var ignoreEOS *bool
	if eos {
		ignoreEOS = &eos
	}
	for i := range bodies {
		b, err := json.Marshal(endpoints.ChatRequest{
			Model:         s.cfg.Endpoint.Model,
			Messages:      []endpoints.Message{{Role: "user", Content: fmt.Sprintf("%s-%06d %s", s.nonce, i, storyPrompt)}},
			MaxTokens:     burstTokens,
			IgnoreEOS:     ignoreEOS,
			Stream:        true,
			StreamOptions: &endpoints.StreamOptions{IncludeUsage: true},
		})
		if err != nil {
			panic(err) // strings, ints and bools always marshal
		}
		bodies[i] = b
	}
	// A request waiting in a queue is not hung until the time limit; once
	// streaming, a silence of the stall limit is a hang; and no request
	// lives past twice the time limit. MaxTokens bounds a stream that does
	// not end as glmbench run bounds it (endpoints.EventBound events,
	// endpoints.BodyBound bytes): without it a request's event stamps alone
	// could grow to endpoints.MaxEvents.
	lim := endpoints.StreamLimits{TTFT: s.cfg.Timeout, Stall: s.cfg.StallTimeout, Total: 2 * s.cfg.Timeout, MaxTokens: burstTokens}
	b := &burst{results: make([]endpoints.StreamResult, n), note: note}
	streams := make([]*endpoints.Stream, n)
	for i := range streams {
		streams[i] = pool.Client(i).PrepareChat(ctx, bodies[i], lim)
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			streams[i].Run(nil, &b.results[i])
		}()
	}
	close(start)
	wg.Wait()
	return b
}

// say adds to a probe check's detail that the burst went without
// ignore_eos, and why.
func (b *burst) say(o outcome) outcome {
	if b.note != "" {
		o.detail += " (the burst went " + b.note + ")"
	}
	return o
}

// classes counts the burst's results by error class; "" is completed.
func (b *burst) classes() map[schema.Class]int {
	out := map[schema.Class]int{}
	for _, r := range b.results {
		if r.Cancelled == nil {
			out[r.Class]++
		}
	}
	return out
}

// validRetryAfter reports whether v is a Retry-After: seconds, or an HTTP date.
func validRetryAfter(v string) bool {
	v = strings.TrimSpace(v)
	if n, err := strconv.Atoi(v); err == nil {
		return n >= 0
	}
	_, err := http.ParseTime(v)
	return err == nil
}

func checkRateLimit(ctx context.Context, s *suite) outcome {
	b := s.burst(ctx)
	limited, missing, example := 0, 0, ""
	for _, r := range b.results {
		if r.Class != schema.RateLimited {
			continue
		}
		limited++
		if !validRetryAfter(r.RetryAfter) {
			missing++
			continue
		}
		example = r.RetryAfter
	}
	switch {
	case limited == 0:
		return b.say(skip("none of %d requests at once was rate-limited (HTTP 429): nothing to check at this load", len(b.results)))
	case missing > 0:
		return b.say(fail("%d of %d HTTP 429 answers carry no valid Retry-After", missing, limited))
	}
	return b.say(pass("%d of %d requests got HTTP 429, each with Retry-After (e.g. %s)", limited, len(b.results), example))
}

func checkQueueOverflow(ctx context.Context, s *suite) outcome {
	b := s.burst(ctx)
	n := len(b.results)
	counts := b.classes()
	refused := counts[schema.RateLimited] + counts[schema.QueueFull]
	var wrong []string
	var classes []string
	for c := range counts {
		classes = append(classes, string(c))
	}
	sort.Strings(classes)
	for _, c := range classes {
		switch schema.Class(c) {
		case "", schema.RateLimited, schema.QueueFull:
		case schema.TTFTTimeout, schema.Stalled, schema.TotalTimeout:
			wrong = append(wrong, fmt.Sprintf("%d hung (%s)", counts[schema.Class(c)], c))
		default:
			wrong = append(wrong, fmt.Sprintf("%d %s", counts[schema.Class(c)], c))
		}
	}
	if len(wrong) > 0 {
		example := ""
		for _, r := range b.results {
			if r.Class != "" && r.Class != schema.RateLimited && r.Class != schema.QueueFull {
				example = s.redact()(r.Detail)
				if len(r.Body) > 0 {
					example += ": " + s.redact().clip(summary.ErrorMessage(r.Body), 120)
				}
				break
			}
		}
		return b.say(fail("of %d requests at once, %s; e.g. %s", n, strings.Join(wrong, ", "), example))
	}
	if refused == 0 {
		return b.say(skip("all %d requests at once were served: the burst did not overflow the endpoint (a larger --probe-limits may)", n))
	}
	statuses, limited := b.refusedStatuses()
	note := ""
	if !limited {
		note = " (no rate limit)"
	}
	return b.say(pass("of %d requests at once, %d served, %d refused with a status (%s)%s, none hung",
		n, counts[""], refused, statuses, note))
}

// refusedStatuses counts the burst's refusals (rate_limited, queue_full)
// by the status each got, as "N × 429, M × 503" (one refused inside its
// 200 stream by the error event's code: "K × 503 error event in a 200
// stream"), and whether any was rate_limited: a Z.ai 429 of business
// code 1305 is an overload, queue_full, not a rate limit, and SGLang's
// 503 event comes inside a 200.
func (b *burst) refusedStatuses() (statuses string, limited bool) {
	by := map[string]int{}
	for _, r := range b.results {
		if r.Cancelled != nil || (r.Class != schema.RateLimited && r.Class != schema.QueueFull) {
			continue
		}
		label := strconv.Itoa(r.Status)
		if r.Status == http.StatusOK {
			var c endpoints.Chunk
			_ = endpoints.ParseChunk(r.Body, &c)
			label = "error event in a 200 stream"
			if c.ErrorCode != 0 {
				label = strconv.Itoa(c.ErrorCode) + " " + label
			}
		}
		by[label]++
		limited = limited || r.Class == schema.RateLimited
	}
	labels := make([]string, 0, len(by))
	for l := range by {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	parts := make([]string, len(labels))
	for i, l := range labels {
		parts[i] = fmt.Sprintf("%d × %s", by[l], l)
	}
	return strings.Join(parts, ", "), limited
}
