// Package phasewarn is the warnings said on stderr after a measured phase of
// run, or a point of sweep: what the records show that the figures alone do
// not (a proxy's retries or fallbacks, a router's retries, another model
// answering, buffered streams, answers shorter than asked). Each is one
// line, "glmbench: warning: SUBJECT: …", SUBJECT naming the phase or point.
package phasewarn

import (
	"fmt"
	"slices"
	"strings"

	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

// Lines are the warnings for a finished phase r with its records recs, in
// the order they are shown: a proxy's fallbacks and retries, a router's
// retries, another model answering than model, buffered streams, answers
// stopped before max_tokens though ignore_eos was sent, and answers the
// server cut short. subject names what they are about ("phase NAME" for
// run; sweep names its point); recs are the records r was computed from.
func Lines(subject string, r *schema.PhaseResult, recs []schema.Record, model string, ignoreEOS bool) []string {
	w := Proxy(subject, r)
	for _, s := range []string{RouterRetries(subject, r), OtherModel(subject, r, recs, model), Buffered(subject, r)} {
		if s != "" {
			w = append(w, s)
		}
	}
	if n := StoppedEarly(r, recs); n > 0 && ignoreEOS {
		w = append(w, fmt.Sprintf("glmbench: warning: %s: %d of %d completed requests stopped (finish_reason stop) before their max_tokens though ignore_eos was sent: the server does not honour it, so the phase measured shorter answers than asked", subject, n, r.Completed))
	}
	if n := CutEarly(r, recs); n > 0 {
		w = append(w, fmt.Sprintf("glmbench: warning: %s: %d of %d completed requests ended at finish_reason length before their max_tokens: the server cut max_tokens, as one does whose context the prompt and max_tokens pass (trtllm-serve cuts it to max_seq_len minus the prompt, llama.cpp stops when its slot is full), so the phase measured shorter answers than asked; a smaller IN+OUT fits", subject, n, r.Completed))
	}
	return w
}

// Proxy are the warnings for a phase whose answers said a proxy in front
// of the server retried the backend or fell back to another model: the
// client saw one slow success where the server failed, so the phase's
// latency is not the server's. A fallback comes first: another model
// answered, which measures the wrong model, not only a slower one.
func Proxy(subject string, r *schema.PhaseResult) []string {
	var w []string
	if r.ProxyFallback > 0 {
		w = append(w, fmt.Sprintf("glmbench: warning: %s: %d of %d completed requests were answered by a FALLBACK inside the proxy (x-litellm-attempted-fallbacks or cf-aig-step): another model or provider than the one asked for served them, so the phase did not measure the model asked for; remove the proxy's fallbacks to measure it",
			subject, r.ProxyFallback, r.Completed))
	}
	if r.ProxyRetried > 0 {
		w = append(w, fmt.Sprintf("glmbench: warning: %s: %d of %d completed requests were retried inside the proxy (x-litellm-attempted-retries, x-portkey-retry-attempt-count or x-envoy-attempt-count): their latency includes the retries; set the proxy's num_retries to 0 to measure the server",
			subject, r.ProxyRetried, r.Completed))
	}
	return w
}

// RouterRetries is the warning for a phase whose server block counts
// retries: a router in front of the workers (sgl-router, the SGLang Model
// Gateway) sent attempts again after a retryable answer (408, 429, 5xx) and
// told the client nothing, so a retried request's latency includes the
// failed attempts and the backoff between them, not the workers' alone; ""
// when it counts none.
func RouterRetries(subject string, r *schema.PhaseResult) string {
	if r.Server == nil || r.Server.Retries == nil || *r.Server.Retries <= 0 {
		return ""
	}
	return fmt.Sprintf("glmbench: warning: %s: the router in front of the workers retried %g attempts inside (%s's retries counter; no answer says so): the retried requests' latency includes the failed attempts and the backoff; start it with --disable-retries (or --retry-max-retries 1) to measure the workers",
		subject, *r.Server.Retries, r.Server.Source)
}

// OtherModel is the warning for a phase whose streams named another model
// than the one asked for (other_model), a note where all named the one same
// model, "" when none did: the figures are that model's. Each name is said
// with its count, most first, at most maxNamed. Where every completed
// request named the one same model it may be the name the server serves it
// under (an Azure deployment, a LiteLLM alias) as well as a fallback for
// all; where only some did, a proxy answered those from another model
// (OpenRouter's fallbacks, named only in the body's model).
func OtherModel(subject string, r *schema.PhaseResult, recs []schema.Record, asked string) string {
	if r.OtherModel == 0 {
		return ""
	}
	counts := map[string]int{}
	for i := range recs {
		if recs[i].Completed() && recs[i].ModelAnswered != "" {
			counts[recs[i].ModelAnswered]++
		}
	}
	names := make([]string, 0, len(counts))
	for n := range counts {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		if d := counts[b] - counts[a]; d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	said := make([]string, 0, min(len(names), maxNamed))
	for _, n := range names[:min(len(names), maxNamed)] {
		said = append(said, fmt.Sprintf("%q ×%d", n, counts[n]))
	}
	if len(names) > maxNamed {
		said = append(said, fmt.Sprintf("%d more", len(names)-maxNamed))
	}
	kind, why := "warning", "a proxy answered them from another model (OpenRouter names its fallback only there), so the phase mixes models"
	if len(names) == 1 && r.OtherModel == r.Completed {
		// What some servers answer on every run: a note.
		kind, why = "note", "the name the server serves it under (an Azure deployment, a LiteLLM alias before 1.81.7, a llama-server whose --alias is not the model asked), or a fallback for all of them"
	}
	return fmt.Sprintf("glmbench: %s: %s: %d of %d completed requests were answered as another model than %q asked (%s): %s",
		kind, subject, r.OtherModel, r.Completed, asked, strings.Join(said, ", "), why)
}

// maxNamed is how many other models a warning names.
const maxNamed = 4

// Buffered is the warning for a phase whose streams arrived buffered
// (summary.Buffered): in blocks of many events, or whole, not one by one,
// so the phase's TTFT is a buffer filling and its ITL mostly 0; "" when
// none did. nginx buffers a proxied answer unless proxy_buffering is off
// for it or the upstream answers X-Accel-Buffering: no.
func Buffered(subject string, r *schema.PhaseResult) string {
	if r.Buffered == 0 {
		return ""
	}
	return fmt.Sprintf("glmbench: warning: %s: %d of %d completed streams arrived buffered, in blocks of many events rather than one by one: something between glmbench and the server buffers the stream (a reverse proxy, an ingress, a gateway), so the phase's TTFT is its buffer filling and its ITL mostly 0, not the server's; nginx: proxy_buffering off, or X-Accel-Buffering: no from upstream; or measure the server directly",
		subject, r.Buffered, r.Completed)
}

// CutEarly counts the completed requests of a phase that ended with
// finish_reason "length" before their max_tokens: a cap of the server's
// own, below the one asked. A server whose context the prompt and
// max_tokens pass cuts max_tokens to what is left (trtllm-serve, with only
// a logged warning: base_worker.py _deduce_max_tokens), or stops when its
// slot is full (llama.cpp). Only an n of the server's own (usage) counts:
// one counted from content events is short of the tokens wherever a chunk
// carries several (SGLang's --stream-interval, speculative decoding).
func CutEarly(r *schema.PhaseResult, recs []schema.Record) int {
	return endedShort(r, recs, func(rec *schema.Record) bool {
		return rec.Finish == "length" && rec.NSource == schema.NFromUsage
	})
}

// StoppedEarly counts the completed requests of a phase that ended with
// finish_reason "stop" before their max_tokens: with ignore_eos sent, each
// is a model's EOS the server let through, since it dropped the field
// (Ollama, OpenAI and most hosted APIs do). A "length" finish short of
// max_tokens is a cap of the server's own, not counted.
func StoppedEarly(r *schema.PhaseResult, recs []schema.Record) int {
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
