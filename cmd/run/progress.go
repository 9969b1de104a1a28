package run

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

// startProgress shows the phase in flight on stderr, with the event rate
// since the last tick.
func startProgress(io *cmdutil.IOStreams, p *bench.Progress, every time.Duration) func() {
	var lastEv int64
	last := time.Now()
	return cmdutil.StartProgress(io, every, func(now time.Time, bar bool) string {
		ev := p.Events.Load()
		rate := float64(ev-lastEv) / now.Sub(last).Seconds()
		lastEv, last = ev, now
		return progressLine(p, rate, bar)
	})
}

func progressLine(p *bench.Progress, eventRate float64, bar bool) string {
	spec, start := p.Phase()
	done := p.Done.Load()
	var b strings.Builder
	fmt.Fprintf(&b, "%s ", spec.Name)
	if bar {
		b.WriteString(cmdutil.Bar(done, int64(spec.N)))
	}
	fmt.Fprintf(&b, "%d/%d done, %d in flight", done, spec.N, p.Sent.Load()-done)
	errs := p.Errors()
	if len(errs) > 0 {
		var parts []string
		for c, n := range errs {
			parts = append(parts, fmt.Sprintf("%s %d", c, n))
		}
		sort.Strings(parts)
		fmt.Fprintf(&b, ", errors: %s", strings.Join(parts, ", "))
	}
	fmt.Fprintf(&b, ", %.0f events/s, %s", eventRate, time.Since(start).Truncate(100*time.Millisecond))
	return b.String()
}

// phaseLine is the one line said when a phase ends.
func phaseLine(r *schema.PhaseResult) string {
	s := fmt.Sprintf("glmbench: %s %s: %d/%d completed in %.1fs, %.1f out tok/s", r.Phase, r.Status, r.Completed, r.BatchSize, r.WallSec, r.OutTput)
	if r.TTFTMed != nil {
		s += fmt.Sprintf(", TTFT med %.3fs", *r.TTFTMed)
	}
	if r.TPOTMed != nil {
		s += fmt.Sprintf(", TPOT med %.2fms", *r.TPOTMed*1e3)
	}
	if c := r.Cache; c != nil && r.Workload != "" {
		switch {
		case c.HitRate == nil:
			s += ", cache hits not reported"
		case c.ExpectedHitRate != nil:
			s += fmt.Sprintf(", cache hit rate %.1f%% (built for %.1f%%)", *c.HitRate*100, *c.ExpectedHitRate*100)
		default:
			s += fmt.Sprintf(", cache hit rate %.1f%%", *c.HitRate*100)
		}
	}
	if r.Errors > 0 {
		var parts []string
		for c, n := range r.ByClass {
			parts = append(parts, fmt.Sprintf("%s %d", c, n))
		}
		sort.Strings(parts)
		s += ", errors: " + strings.Join(parts, ", ")
	}
	if r.Short > 0 {
		s += fmt.Sprintf(", %d short of their max_tokens (short_output)", r.Short)
	}
	if r.Cancelled > 0 || r.NotSent > 0 {
		s += fmt.Sprintf(", cancelled %d, not sent %d", r.Cancelled, r.NotSent)
	}
	// What the endpoint sent that could not be used: a phase can be
	// complete and still say so.
	if r.MalformedEvents > 0 {
		s += fmt.Sprintf(", %d malformed data lines in %d requests", r.MalformedEvents, r.MalformedRequests)
	}
	if r.BadUsage > 0 {
		s += fmt.Sprintf(", usage unusable in %d (n counted from events)", r.BadUsage)
	}
	return s
}

// proxyWarnings are the warnings for a phase whose answers said a proxy in
// front of the server retried the backend or fell back to another model:
// the client saw one slow success where the server failed, so the phase's
// latency is not the server's. A fallback comes first: another model
// answered, which measures the wrong model, not only a slower one.
func proxyWarnings(r *schema.PhaseResult) []string {
	var w []string
	if r.ProxyFallback > 0 {
		w = append(w, fmt.Sprintf("glmbench: warning: phase %s: %d of %d completed requests were answered by a FALLBACK inside the proxy (x-litellm-attempted-fallbacks or cf-aig-step): another model or provider than the one asked for served them, so the phase did not measure the model asked for; remove the proxy's fallbacks to measure it",
			r.Phase, r.ProxyFallback, r.Completed))
	}
	if r.ProxyRetried > 0 {
		w = append(w, fmt.Sprintf("glmbench: warning: phase %s: %d of %d completed requests were retried inside the proxy (x-litellm-attempted-retries, x-portkey-retry-attempt-count or x-envoy-attempt-count): their latency includes the retries; set the proxy's num_retries to 0 to measure the server",
			r.Phase, r.ProxyRetried, r.Completed))
	}
	return w
}

// phaseWarnings are the warnings for a finished phase, in the order they
// are shown: a proxy's fallbacks and retries, a router's retries, another
// model answering, buffered streams, answers stopped before max_tokens
// though ignore_eos was sent, and answers the server cut short.
func phaseWarnings(r *schema.PhaseResult, recs []schema.Record, model string, ignoreEOS bool) []string {
	w := proxyWarnings(r)
	for _, s := range []string{routerRetriesWarning(r), otherModelWarning(r, recs, model), bufferWarning(r)} {
		if s != "" {
			w = append(w, s)
		}
	}
	if n := stoppedEarly(r, recs); n > 0 && ignoreEOS {
		w = append(w, fmt.Sprintf("glmbench: warning: phase %s: %d of %d completed requests stopped (finish_reason stop) before their max_tokens though ignore_eos was sent: the server does not honour it, so the phase measured shorter answers than asked", r.Phase, n, r.Completed))
	}
	if n := cutEarly(r, recs); n > 0 {
		w = append(w, fmt.Sprintf("glmbench: warning: phase %s: %d of %d completed requests ended at finish_reason length before their max_tokens: the server cut max_tokens, as one does whose context the prompt and max_tokens pass (trtllm-serve cuts it to max_seq_len minus the prompt, llama.cpp stops when its slot is full), so the phase measured shorter answers than asked; a smaller IN+OUT fits", r.Phase, n, r.Completed))
	}
	return w
}

// cutEarly counts the completed requests of a phase that ended with
// finish_reason "length" before their max_tokens: a cap of the server's
// own, below the one asked. A server whose context the prompt and
// max_tokens pass cuts max_tokens to what is left (trtllm-serve, with only
// a logged warning: base_worker.py _deduce_max_tokens), or stops when its
// slot is full (llama.cpp). Only an n of the server's own (usage) counts:
// one counted from content events is short of the tokens wherever a chunk
// carries several (SGLang's --stream-interval, speculative decoding).
func cutEarly(r *schema.PhaseResult, recs []schema.Record) int {
	return endedShort(r, recs, func(rec *schema.Record) bool {
		return rec.Finish == "length" && rec.NSource == schema.NFromUsage
	})
}

// stoppedEarly counts the completed requests of a phase that ended with
// finish_reason "stop" before their max_tokens: with ignore_eos sent, each
// is a model's EOS the server let through, since it dropped the field
// (Ollama, OpenAI and most hosted APIs do). A "length" finish short of
// max_tokens is a cap of the server's own, not counted.
func stoppedEarly(r *schema.PhaseResult, recs []schema.Record) int {
	return endedShort(r, recs, func(rec *schema.Record) bool { return rec.Finish == "stop" })
}

// endedShort counts the completed records of a phase that end as ends
// says, with fewer tokens than they asked for (summary.Asked).
func endedShort(r *schema.PhaseResult, recs []schema.Record, ends func(*schema.Record) bool) int {
	n := 0
	for i := range recs {
		rec := &recs[i]
		if rec.Completed() && ends(rec) && rec.N < summary.Asked(rec, r.OutputLen) {
			n++
		}
	}
	return n
}
