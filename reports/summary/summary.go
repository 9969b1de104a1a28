// Package summary computes a phase's metrics from its records alone: the pure
// functions the load runner uses while it measures and the report reader uses
// to re-make a report offline from requests.jsonl.
//
// It is a leaf beside reports/schema: it imports no other glmbench package, so
// the report writers can recompute phases without linking the load runner,
// the client or the engine.
package summary

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/montanaflynn/stats"

	"github.com/glmbench/glmbench/internal/text"
	"github.com/glmbench/glmbench/reports/schema"
)

// Phase computes the metrics of the phase name, whose requests asked for in
// prompt tokens and out output tokens (max_tokens), from its records alone,
// so any report can be recomputed offline from requests.jsonl. status is the
// phase's ending (schema.StatusComplete, …), which records cannot tell; so
// is the workload kind, which the caller sets. A record's own max_tokens,
// when it has one, is what its n is short or long of, instead of out.
func Phase(name string, in, out int, records []schema.Record, status string) schema.PhaseResult {
	r := schema.PhaseResult{
		Phase: name, BatchSize: len(records), InputLen: in, OutputLen: out,
		ErrorKinds: map[string]int{}, ByClass: map[schema.Class]int{}, NSources: map[schema.NSource]int{},
		Status: status,
	}
	var lat, ttft, tpot, itl []float64
	var inTok, outTok, events, prompted int
	firstSend, lastDone := math.Inf(1), math.Inf(-1)
	lastEnd := math.Inf(-1)
	for i := range records {
		rec := &records[i]
		if !rec.NotSent {
			r.MalformedEvents += rec.MalformedEvents
			if rec.MalformedEvents > 0 {
				r.MalformedRequests++
			}
			if rec.BadUsage != "" {
				r.BadUsage++
			}
			firstSend = math.Min(firstSend, rec.SendOffset)
			r.MaxSendLag = math.Max(r.MaxSendLag, rec.SendLag)
			if rec.TEnd != nil {
				lastEnd = math.Max(lastEnd, rec.SendOffset+*rec.TEnd)
			}
		}
		switch {
		case rec.NotSent:
			r.NotSent++
			continue
		case rec.Cancelled != "":
			r.Cancelled++
			r.CancelledOutTokens += len(rec.Events)
			continue
		case rec.Class != "":
			r.Errors++
			r.ByClass[rec.Class]++
			r.ErrorKinds[ErrorKind(rec)]++
			continue
		}
		countCompleted(&r, rec, out)
		inTok += rec.Prompt
		if rec.Prompt > 0 {
			prompted++
		}
		outTok += rec.N
		events += len(rec.Events)
		if rec.TEnd != nil {
			lat = append(lat, *rec.TEnd)
			lastDone = math.Max(lastDone, rec.SendOffset+*rec.TEnd)
		}
		if rec.TFirst != nil {
			ttft = append(ttft, *rec.TFirst)
		}
		if v, ok := rec.TPOT(); ok {
			tpot = append(tpot, v)
		}
		for k := 1; k < len(rec.Events); k++ {
			itl = append(itl, rec.Events[k]-rec.Events[k-1])
		}
	}
	switch {
	case r.Completed > 0:
		r.WallSec = lastDone - firstSend
	case !math.IsInf(lastEnd, -1):
		r.WallSec = lastEnd - firstSend
	}
	if r.WallSec > 0 {
		r.OutTput = float64(outTok) / r.WallSec
	}
	r.InTput = InTput(inTok, prompted, r.Completed, r.WallSec)
	if r.BatchSize > 0 {
		r.ErrorRate = float64(r.Errors) / float64(r.BatchSize)
	}
	if events > 0 {
		r.TokensPerEvent = ptr(float64(outTok) / float64(events))
	}
	if prompted > 0 {
		r.PromptTokensMean = ptr(float64(inTok) / float64(prompted))
	}
	d := dist(lat)
	r.LatMean, r.LatMed, r.LatP90, r.LatP99, r.LatP999 = d.mean, d.p50, d.p90, d.p99, d.p999
	d = dist(ttft)
	r.TTFTMean, r.TTFTMed, r.TTFTP90, r.TTFTP99, r.TTFTP999 = d.mean, d.p50, d.p90, d.p99, d.p999
	d = dist(tpot)
	r.TPOTMean, r.TPOTMed, r.TPOTP90, r.TPOTP99, r.TPOTP999 = d.mean, d.p50, d.p90, d.p99, d.p999
	d = dist(itl)
	r.ITLMean, r.ITLMed, r.ITLP90, r.ITLP99, r.ITLP999 = d.mean, d.p50, d.p90, d.p99, d.p999
	r.Cache, r.PromptDrift = CacheStats(records), PromptDrift(records)
	return r
}

// countCompleted counts the completed record rec into r: Completed, its n
// source, short or long of the out tokens asked (its own max_tokens when
// it has one), a proxy's retries and fallbacks, answers named by another
// model than the one asked, and whether it arrived buffered.
func countCompleted(r *schema.PhaseResult, rec *schema.Record, out int) {
	r.Completed++
	r.NSources[rec.NSource]++
	asked := Asked(rec, out)
	switch {
	case rec.N < asked:
		r.Short++
	case rec.N > asked:
		r.Long++
	}
	if rec.ProxyRetries > 0 {
		r.ProxyRetried++
	}
	if rec.ProxyFallbacks > 0 {
		r.ProxyFallback++
	}
	if rec.ModelAnswered != "" {
		r.OtherModel++
	}
	if Buffered(rec) {
		r.Buffered++
	}
}

// Asked is the out tokens rec asked for: its own max_tokens where it has
// one (a workload whose requests differ in max_tokens), else the phase's
// out.
func Asked(rec *schema.Record, out int) int {
	if rec.MaxTokens > 0 {
		return rec.MaxTokens
	}
	return out
}

// InTput is the prompt tokens per second of a phase's completed requests:
// inTok of them over wall seconds, prompted of completed having a prompt
// count. With requests completed and none counted (a stream without
// usage: n is counted from its events, a prompt cannot be) it is nil, not
// 0; with none completed it is 0, as out_tput is.
func InTput(inTok, prompted, completed int, wall float64) *float64 {
	switch {
	case completed > 0 && prompted == 0:
		return nil
	case wall > 0:
		return ptr(float64(inTok) / wall)
	}
	return ptr(0.0)
}

type summary struct{ mean, p50, p90, p99, p999 *float64 }

// dist summarises a sample; every value is nil for an empty one.
func dist(xs []float64) summary {
	if len(xs) == 0 {
		return summary{}
	}
	slices.Sort(xs)
	mean, err := stats.Mean(xs)
	s := summary{p50: sortedPercentile(xs, 50), p90: sortedPercentile(xs, 90), p99: sortedPercentile(xs, 99), p999: sortedPercentile(xs, 99.9)}
	if err == nil {
		s.mean = &mean
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// ErrorKind is a failed record's key in error_kinds, in the older harness's
// style: "HTTP 429: " and the first 60 characters of the server's message,
// or the class and the harness's own account.
func ErrorKind(rec *schema.Record) string {
	switch {
	case rec.Class == schema.Redirect:
		return fmt.Sprintf("HTTP %d: %s", rec.Status, first(strings.TrimPrefix(rec.Detail, "a "), 60))
	case rec.Status != 0 && rec.Status != 200:
		return fmt.Sprintf("HTTP %d: %s", rec.Status, first(noControl(statusMessage(rec)), 60))
	case (rec.Class == schema.QueueFull || rec.Class == schema.StreamError) && FromErrorEvent(rec.Detail):
		return fmt.Sprintf("stream error event: %s", first(noControl(ErrorMessage([]byte(rec.Body))), 60))
	}
	return fmt.Sprintf("%s: %s", rec.Class, first(rec.Detail, 60))
}

// statusMessage is the message of rec's refusal: ErrorMessage of its
// body, or, for an HTML page whose title lies past the bytes the record
// keeps, the page's words the client put in its detail ("HTTP 502: … (an
// HTML page)").
func statusMessage(rec *schema.Record) string {
	msg := ErrorMessage([]byte(rec.Body))
	if msg == htmlNoText {
		if d, ok := strings.CutPrefix(rec.Detail, fmt.Sprintf("HTTP %d: ", rec.Status)); ok && strings.HasSuffix(d, HTMLSuffix) {
			return d
		}
	}
	return msg
}

// FromErrorEvent tells a failure the endpoint stated in an error event
// from one the client found in the stream (a runaway, a huge line), by the
// client's detail; a failure without one (imported) is taken as an event.
// Only an event's body is the endpoint's message to quote.
func FromErrorEvent(detail string) bool {
	return detail == "" || strings.HasPrefix(detail, "error event")
}

func first(s string, n int) string { return text.Clip(s, n, "") }

// noControl is s with each control character shown as "?": a server's
// message goes into the report's markdown, where an ESC (decoded from its
// JSON's \u001b) would start a terminal escape sequence when shown.
func noControl(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, s)
}

// ErrorMessage extracts the human message from an error body, on one line:
// the "message" of an OpenAI-shaped error (or a top-level "message"/"detail"),
// of Anthropic's {"type": "error", "error": {...}}, or of the first element
// of Google's array ([{"error": {...}}], Gemini's OpenAI-compatible route);
// of a body cut short (a record keeps its first 200 bytes: recordCut), the
// first "message" string, to where the cut fell; of an HTML page (a
// proxy's error page), HTMLPage's words for it; else the text.
func ErrorMessage(body []byte) string {
	return text.OneLine(errorText(body))
}

func errorText(body []byte) string {
	if msg, ok := HTMLPage(body); ok {
		return msg
	}
	var list []json.RawMessage
	// Google's shape is one array of objects: an array in an array is not
	// read again, level by level (a hostile body nested thousands deep
	// would be parsed once per level).
	if json.Unmarshal(body, &list) == nil && len(list) > 0 && list[0][0] == '{' {
		if msg := errorText(list[0]); msg != string(list[0]) {
			return msg
		}
		return strings.ToValidUTF8(string(body), "?")
	}
	if len(body) <= recordCut && !json.Valid(body) {
		if msg, ok := cutMessage(body); ok {
			return msg
		}
	}
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  any             `json:"detail"`
	}
	if json.Unmarshal(body, &v) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		if len(v.Error) > 0 && json.Unmarshal(v.Error, &inner) == nil && inner.Message != "" {
			return inner.Message
		}
		var s string
		if len(v.Error) > 0 && json.Unmarshal(v.Error, &s) == nil && s != "" {
			return s
		}
		if v.Message != "" {
			return v.Message
		}
		if d, ok := v.Detail.(string); ok && d != "" {
			return d
		}
	}
	return strings.ToValidUTF8(string(body), "?")
}

// recordCut is the most bytes of an error body a record keeps
// (endpoints.BodyLimit), redacted before the cut so that a secret across it
// is "***" whole. Only a body this short is read as cut (cutMessage): a
// longer one that is not whole JSON was cut elsewhere, maybe before any
// redaction (conform keeps the first 4 KiB of a refused stream), and a
// message read to that cut could end in the first bytes of a key, which no
// later redaction knows for a secret; its text is given as it is, which
// callers clip from its start.
const recordCut = 200

// cutMessage is the first "message" string of a JSON body that is not
// whole (cut short), decoded as far as it goes, else the first "error"
// that is a string (trtllm-serve's {"error": "[{'type': …}]"}, TGI's);
// false when body does not start as JSON or holds no such string.
func cutMessage(body []byte) (string, bool) {
	s := strings.TrimSpace(string(body))
	if s == "" || s[0] != '{' && s[0] != '[' {
		return "", false
	}
	for _, key := range []string{`"message"`, `"error"`} {
		if msg, ok := cutString(s, key); ok {
			return msg, true
		}
	}
	return "", false
}

// cutString is the string value of the first key in s, a JSON text that
// may be cut short, decoded as far as it goes; false when that key's value
// is not a string, or s has no such key.
func cutString(s, key string) (string, bool) {
	at := strings.Index(s, key)
	if at < 0 {
		return "", false
	}
	rest := strings.TrimLeft(s[at+len(key):], " \t\r\n")
	rest, ok := strings.CutPrefix(rest, ":")
	if !ok {
		return "", false
	}
	rest, ok = strings.CutPrefix(strings.TrimLeft(rest, " \t\r\n"), `"`)
	if !ok {
		return "", false
	}
	end := len(rest)
	for i := 0; i < len(rest); i++ {
		if rest[i] == '\\' {
			i++
			continue
		}
		if rest[i] == '"' {
			end = i
			break
		}
	}
	raw := rest[:end]
	for k := 0; end == len(rest) && k < 3 && !utf8.ValidString(raw); k++ {
		raw = raw[:len(raw)-1] // a character the cut split
	}
	var msg string
	err := json.Unmarshal([]byte(`"`+raw+`"`), &msg)
	if i := strings.LastIndexByte(raw, '\\'); err != nil && i >= 0 && i >= len(raw)-6 {
		// The cut fell inside an escape (a lone backslash, a partial
		// \uXXXX): what came before it.
		err = json.Unmarshal([]byte(`"`+raw[:i]+`"`), &msg)
	}
	if err != nil || msg == "" {
		return "", false
	}
	return msg, true
}

// Percentile is the p-th percentile of xs by PercentileMethod (the one every
// phase metric uses); nil for an empty sample. xs is sorted in place.
func Percentile(xs []float64, p float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	slices.Sort(xs)
	return sortedPercentile(xs, p)
}

// sortedPercentile is Percentile of a sorted, non-empty xs. (montanaflynn
// sorts a copy; sorted input makes that copy's sort cheap.)
func sortedPercentile(xs []float64, p float64) *float64 {
	v, err := stats.Percentile(xs, p)
	if err != nil || math.IsNaN(v) {
		return nil
	}
	return &v
}
