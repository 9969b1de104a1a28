package summary

import (
	"fmt"
	"math"

	"github.com/glmbench/glmbench/reports/schema"
)

// HitPercent is the least share of its prompt, in percent, that a request's
// cached tokens must be for the request to count as a prefix-cache hit. A
// chat template's few leading tokens, shared by every request, are served
// from the cache by SGLang and vLLM alike; they would make every request a
// "hit" and the TTFT split say nothing.
const HitPercent = 10

// NoCachedTokens is the cache note of a phase none of whose completed
// requests reported cached tokens: the server said nothing, which is not a
// hit rate of 0.
const NoCachedTokens = "the server reports no cached tokens"

// PartialNote is the cache note of a phase only some of whose requests
// reported cached tokens (its verbs: reported, requests).
const PartialNote = "%d of %d requests reported cached tokens; the others count as 0 cached (SGLang leaves prompt_tokens_details out when none were)"

// IsHit reports whether a request whose prompt had prompt tokens, cached of
// them served from the prefix cache, counts as a cache hit: cached is at
// least HitPercent of prompt (and more than none).
func IsHit(cached, prompt int) bool {
	return cached > 0 && 100*cached >= HitPercent*prompt
}

// CacheStats is the prefix cache's account of a phase from its records
// (schema.CacheStats), over the completed requests with a prompt count
// (usage.prompt_tokens > 0; a hit rate needs its denominator):
//
//   - hit_rate = Σ cached_tokens / Σ prompt_tokens; cached_tokens and
//     hit_rate are nil, and the note says NoCachedTokens, when no request
//     reported cached tokens; when only some did, the others count as 0
//     cached (SGLang sends no prompt_tokens_details on a miss) and the note
//     says so (PartialNote);
//   - expected_hit_rate = Σ expected_cached_tokens / Σ prompt_tokens over
//     those the workload gave an expectation, nil when it gave none;
//   - a reporting request is a hit when IsHit, else a miss; the TTFT median
//     and p99 are over each side, nil for an empty one.
//
// It is nil only when no request completed.
func CacheStats(records []schema.Record) *schema.CacheStats {
	var c schema.CacheStats
	completed := false
	var all, cached, expected, expPrompt int
	var hit, miss, silent []float64
	for i := range records {
		rec := &records[i]
		if !rec.Completed() {
			continue
		}
		completed = true
		if rec.Prompt <= 0 {
			continue
		}
		c.Requests++
		all += rec.Prompt
		if rec.ExpectedCached != nil {
			expected += *rec.ExpectedCached
			expPrompt += rec.Prompt
		}
		if rec.CachedTokens == nil {
			if rec.TFirst != nil {
				silent = append(silent, *rec.TFirst)
			}
			continue
		}
		c.Reported++
		cached += *rec.CachedTokens
		side := &miss
		if IsHit(*rec.CachedTokens, rec.Prompt) {
			c.Hits++
			side = &hit
		} else {
			c.Misses++
		}
		if rec.TFirst != nil {
			*side = append(*side, *rec.TFirst)
		}
	}
	if !completed {
		return nil
	}
	switch {
	case c.Reported == 0:
		c.PromptTokens = all
		c.Note = NoCachedTokens
	default:
		// A server that reports cached tokens, but not on every request:
		// SGLang (--enable-cache-report) leaves prompt_tokens_details out
		// when nothing was cached, so the silent ones count as misses of 0.
		c.PromptTokens = all
		c.CachedTokens = ptr(cached)
		c.HitRate = ptr(float64(cached) / float64(all))
		if c.Reported < c.Requests {
			c.Misses += c.Requests - c.Reported
			miss = append(miss, silent...)
			c.Note = fmt.Sprintf(PartialNote, c.Reported, c.Requests)
		}
	}
	if expPrompt > 0 {
		c.ExpectedHitRate = ptr(float64(expected) / float64(expPrompt))
	}
	c.TTFTMedHit, c.TTFTP99Hit = Percentile(hit, 50), Percentile(hit, 99)
	c.TTFTMedMiss, c.TTFTP99Miss = Percentile(miss, 50), Percentile(miss, 99)
	return &c
}

// PromptDrift is the distribution of usage.prompt_tokens − the workload's
// target_prompt_tokens over the completed records that have a target and a
// prompt count: its p50 and p99 signed, the p99 of its size, and the
// tolerance the calibration holds itself to, max(4, 1% of the mean target)
// (bench.Tolerance). Nil when no such record exists.
func PromptDrift(records []schema.Record) *schema.Drift {
	var signed, size []float64
	target := 0
	for i := range records {
		rec := &records[i]
		if !rec.Completed() || rec.TargetPrompt == nil || rec.Prompt <= 0 {
			continue
		}
		d := float64(rec.Prompt - *rec.TargetPrompt)
		signed, size = append(signed, d), append(size, math.Abs(d))
		target += *rec.TargetPrompt
	}
	if len(signed) == 0 {
		return nil
	}
	return &schema.Drift{
		N:         len(signed),
		P50:       *Percentile(signed, 50),
		P99:       *Percentile(signed, 99),
		AbsP99:    *Percentile(size, 99),
		Tolerance: max(4, target/len(signed)/100),
	}
}
