package summary

import (
	"math"
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
)

func ip(v int) *int { return &v }

// done is a completed record with prompt tokens, cached tokens (nil: not
// reported) and a TTFT.
func done(prompt int, cached *int, ttft float64) schema.Record {
	return schema.Record{Prompt: prompt, CachedTokens: cached, TFirst: fp(ttft), TLast: fp(ttft + 0.1), TEnd: fp(ttft + 0.2),
		Events: []float64{ttft, ttft + 0.1}, N: 2, NSource: schema.NFromUsage}
}

func TestCacheStatsSumsWhatTheServerReported(t *testing.T) {
	t.Parallel()
	recs := []schema.Record{
		done(100, nil, 0.9),     // said nothing: not in the hit rate
		done(100, ip(50), 0.2),  // 50%: a hit
		done(200, ip(150), 0.3), // 75%: a hit
		done(200, ip(0), 0.8),   // a miss
		{Prompt: 400, CachedTokens: ip(400), Class: schema.Stalled},       // failed: not counted
		{Prompt: 400, CachedTokens: ip(400), Cancelled: schema.CancelCap}, // cancelled: not counted
	}
	c := CacheStats(recs)
	if c == nil {
		t.Fatal("cache block is nil for a phase with completed requests")
	}
	// Reported 3 of 4; the silent one counts as 0 cached (SGLang's miss):
	// (50+150+0+0)/(100+100+200+200).
	if c.Reported != 3 || c.Requests != 4 || c.PromptTokens != 600 || c.CachedTokens == nil || *c.CachedTokens != 200 {
		t.Fatalf("reported %d requests %d prompt %d cached %v, want 3, 4, 600, 200", c.Reported, c.Requests, c.PromptTokens, c.CachedTokens)
	}
	near(t, "hit_rate", c.HitRate, 200.0/600)
	if c.Hits != 2 || c.Misses != 2 {
		t.Fatalf("hits %d misses %d, want 2 and 2", c.Hits, c.Misses)
	}
	near(t, "ttft_med_hit", c.TTFTMedHit, 0.25)               // of 0.2 and 0.3
	near(t, "ttft_p99_hit", c.TTFTP99Hit, 0.2+0.99*(0.3-0.2)) // type 7 between the two
	near(t, "ttft_med_miss", c.TTFTMedMiss, 0.85)             // of 0.8 and 0.9
	near(t, "ttft_p99_miss", c.TTFTP99Miss, 0.8+0.99*(0.9-0.8))
	if c.ExpectedHitRate != nil {
		t.Errorf("expected_hit_rate = %v for records without expectations, want nil", *c.ExpectedHitRate)
	}
	if c.Note != "3 of 4 requests reported cached tokens; the others count as 0 cached (SGLang leaves prompt_tokens_details out when none were)" {
		t.Errorf("note %q", c.Note)
	}
}

func TestCacheStatsOfAServerThatReportsNothingSaysSoInsteadOfZero(t *testing.T) {
	t.Parallel()
	c := CacheStats([]schema.Record{done(100, nil, 0.1), done(300, nil, 0.2), {Class: schema.Connect}})
	if c == nil {
		t.Fatal("cache block is nil for a phase with completed requests")
	}
	if c.CachedTokens != nil || c.HitRate != nil {
		t.Fatalf("cached %v hit rate %v, want both nil: the server said nothing", c.CachedTokens, c.HitRate)
	}
	if c.Note != NoCachedTokens || c.Reported != 0 || c.Requests != 2 || c.PromptTokens != 400 || c.Hits != 0 || c.Misses != 0 {
		t.Fatalf("got %+v", *c)
	}
	if c.TTFTMedHit != nil || c.TTFTMedMiss != nil {
		t.Fatal("hit/miss TTFT without any report")
	}
	if CacheStats([]schema.Record{{Class: schema.Connect}, {NotSent: true}}) != nil {
		t.Fatal("cache block for a phase with no completed request, want nil")
	}
	if CacheStats(nil) != nil {
		t.Fatal("cache block for no records, want nil")
	}
}

func TestCacheStatsExpectedHitRateIsOverTheRecordsWithAnExpectation(t *testing.T) {
	t.Parallel()
	a, b, c := done(1000, ip(1024), 0.1), done(1000, ip(0), 0.5), done(2000, ip(512), 0.1)
	a.ExpectedCached, b.ExpectedCached = ip(900), ip(0)
	st := CacheStats([]schema.Record{a, b, c})
	near(t, "expected_hit_rate", st.ExpectedHitRate, 900.0/2000) // c has no expectation
	near(t, "hit_rate", st.HitRate, (1024.0+512)/4000)           // a server may count past its own prompt: shown, not clipped
	if st.Note != "" {
		t.Errorf("note %q when every request reported", st.Note)
	}
}

func TestAHitIsAtLeastATenthOfThePrompt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cached, prompt int
		hit            bool
	}{
		{0, 100, false},
		{9, 100, false}, // a template's few shared tokens are not a hit
		{10, 100, true},
		{1, 10, true},
		{1, 11, false},
		{2048, 2048, true},
	} {
		if got := IsHit(tc.cached, tc.prompt); got != tc.hit {
			t.Errorf("IsHit(%d, %d) = %t, want %t", tc.cached, tc.prompt, got, tc.hit)
		}
	}
	c := CacheStats([]schema.Record{done(1000, ip(16), 0.5), done(1000, ip(512), 0.1)})
	if c.Hits != 1 || c.Misses != 1 {
		t.Fatalf("hits %d misses %d, want 1 and 1 (16 of 1000 is a miss)", c.Hits, c.Misses)
	}
}

func TestPromptDriftIsActualMinusTarget(t *testing.T) {
	t.Parallel()
	var recs []schema.Record
	// Targets 1000; actual 1000+d for d = -2, 0, 1, 3, 8: signed list
	// -2 0 1 3 8, sizes 0 1 2 3 8.
	for _, d := range []int{3, -2, 8, 0, 1} {
		r := done(1000+d, nil, 0.1)
		r.TargetPrompt = ip(1000)
		recs = append(recs, r)
	}
	untargeted := done(5, nil, 0.1)
	failed := schema.Record{Prompt: 5000, TargetPrompt: ip(1000), Class: schema.HTTP5xx}
	noCount := done(0, nil, 0.1)
	noCount.TargetPrompt = ip(1000)
	recs = append(recs, untargeted, failed, noCount)
	d := PromptDrift(recs)
	if d == nil {
		t.Fatal("no drift")
	}
	// Type 7: p50 of -2 0 1 3 8 is 1; p99 is 3 + 0.96·(8−3); |d| p99 likewise 3 + 0.96·5.
	if d.N != 5 || d.P50 != 1 || math.Abs(d.P99-(3+0.96*5)) > 1e-9 || math.Abs(d.AbsP99-(3+0.96*5)) > 1e-9 {
		t.Fatalf("drift %+v, want n 5, p50 1, p99 %v, abs_p99 %v", *d, 3+0.96*5, 3+0.96*5)
	}
	if d.Tolerance != 10 {
		t.Errorf("tolerance %d, want max(4, 1000/100) = 10", d.Tolerance)
	}
	// Prompts all short of target: the signed figures are negative, the size positive.
	short := []schema.Record{done(90, nil, 0.1), done(95, nil, 0.1)}
	short[0].TargetPrompt, short[1].TargetPrompt = ip(100), ip(100)
	s := PromptDrift(short)
	if s.P50 != -7.5 || s.AbsP99 <= 0 || s.Tolerance != 4 {
		t.Fatalf("short drift %+v, want p50 -7.5, abs_p99 > 0, tolerance max(4, 1) = 4", *s)
	}
	if PromptDrift([]schema.Record{done(100, nil, 0.1)}) != nil {
		t.Fatal("drift without any target, want nil")
	}
}

func TestPhaseCountsShortAndLongAgainstEachRecordsMaxTokens(t *testing.T) {
	t.Parallel()
	rec := func(n, maxTokens int) schema.Record {
		r := done(100, nil, 0.1)
		r.N, r.MaxTokens = n, maxTokens
		return r
	}
	// OUT is 16. 32 of max 32: neither; 16 of max 64: short; 40 of max 32:
	// long; 16 without max: neither; 20 without max: long.
	r := Phase("w", 100, 16, []schema.Record{rec(32, 32), rec(16, 64), rec(40, 32), rec(16, 0), rec(20, 0)}, schema.StatusComplete)
	if r.Short != 1 || r.Long != 2 {
		t.Fatalf("short %d long %d, want 1 and 2", r.Short, r.Long)
	}
}

func TestPhaseFillsTheCacheAndDriftBlocks(t *testing.T) {
	t.Parallel()
	a, b := done(100, ip(0), 0.4), done(100, ip(90), 0.1)
	a.TargetPrompt, b.TargetPrompt = ip(98), ip(98)
	r := Phase("chat", 100, 2, []schema.Record{a, b}, schema.StatusComplete)
	if r.Cache == nil || r.Cache.Hits != 1 || r.Cache.Misses != 1 || r.PromptDrift == nil || r.PromptDrift.P50 != 2 {
		t.Fatalf("cache %+v drift %+v", r.Cache, r.PromptDrift)
	}
	near(t, "hit_rate", r.Cache.HitRate, 90.0/200)
	fixed := Phase("single", 100, 2, []schema.Record{done(100, nil, 0.1)}, schema.StatusComplete)
	if fixed.Cache == nil || fixed.Cache.Note != NoCachedTokens || fixed.PromptDrift != nil {
		t.Fatalf("fixed phase: cache %+v drift %+v, want the note and no drift", fixed.Cache, fixed.PromptDrift)
	}
}
