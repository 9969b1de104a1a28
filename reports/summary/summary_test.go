package summary

import (
	"math"
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
)

func fp(v float64) *float64 { return &v }

func near(t *testing.T, name string, got *float64, want float64) {
	t.Helper()
	if got == nil || math.Abs(*got-want) > 1e-9 {
		t.Errorf("%s = %v, want %v", name, deref(got), want)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestPhaseFollowsTheFormulas(t *testing.T) {
	t.Parallel()
	name, in, out := "p", 100, 5
	recs := []schema.Record{
		// Two completed requests: one with usage and packed events, one without usage.
		{I: 0, SendOffset: 0, TFirst: fp(0.1), TLast: fp(0.5), TEnd: fp(0.6), Events: []float64{0.1, 0.3, 0.5}, N: 5, NSource: schema.NFromUsage, Prompt: 100},
		{I: 1, SendOffset: 0.2, TFirst: fp(0.3), TLast: fp(0.7), TEnd: fp(0.8), Events: []float64{0.3, 0.4, 0.5, 0.7}, N: 4, NSource: schema.NFromEvents, Prompt: 0},
		{I: 2, SendOffset: 0.1, Class: schema.RateLimited, Status: 429, Body: `{"error":{"message":"slow down"}}`, TEnd: fp(0.01)},
		{I: 3, SendOffset: 0.1, Class: schema.Stalled, Detail: "no bytes", TFirst: fp(0.2), Events: []float64{0.2}, TEnd: fp(3)},
		{I: 4, SendOffset: 0.1, Cancelled: schema.CancelCap, Events: []float64{0.5, 0.6}, TEnd: fp(4)},
		{I: 5, NotSent: true},
	}
	r := Phase(name, in, out, recs, schema.StatusCapped)
	if r.Completed != 2 || r.Errors != 2 || r.Cancelled != 1 || r.NotSent != 1 || r.BatchSize != 6 {
		t.Fatalf("counts: %+v", r)
	}
	if r.Short != 1 || r.CancelledOutTokens != 2 || r.ByClass[schema.RateLimited] != 1 || r.ByClass[schema.Stalled] != 1 {
		t.Fatalf("short %d cancelled tokens %d by class %v", r.Short, r.CancelledOutTokens, r.ByClass)
	}
	if r.ErrorKinds["HTTP 429: slow down"] != 1 || r.ErrorKinds["stalled: no bytes"] != 1 {
		t.Fatalf("error kinds %v", r.ErrorKinds)
	}
	// A completed request past OUT (a server that ignores max_tokens but
	// stops) is long_output: counted, and its tokens are in out_tput.
	long := Phase(name, in, out, []schema.Record{{I: 0, TFirst: fp(0.1), TLast: fp(0.9), TEnd: fp(1), Events: []float64{0.1, 0.9}, N: 50, NSource: schema.NFromUsage}}, schema.StatusComplete)
	if long.Long != 1 || long.Short != 0 || long.OutTput != 50 {
		t.Fatalf("long %d short %d out_tput %v, want 1, 0, 50", long.Long, long.Short, long.OutTput)
	}
	// wall: first send (0) → last completion (0.2 + 0.8 = 1.0).
	if math.Abs(r.WallSec-1.0) > 1e-12 || math.Abs(r.OutTput-9) > 1e-9 || r.InTput == nil || math.Abs(*r.InTput-100) > 1e-9 {
		t.Fatalf("wall %v out %v in %v", r.WallSec, r.OutTput, r.InTput)
	}
	if math.Abs(r.ErrorRate-2.0/6) > 1e-12 {
		t.Fatalf("error_rate %v", r.ErrorRate)
	}
	near(t, "ttft_med", r.TTFTMed, 0.2)                  // of 0.1 and 0.3
	near(t, "tpot_med", r.TPOTMed, (0.4/4+0.4/3)/2)      // (0.5−0.1)/(5−1) and (0.7−0.3)/(4−1)
	near(t, "lat_p99", r.LatP99, 0.6+0.99*(0.8-0.6))     // linear interpolation
	near(t, "itl_med", r.ITLMed, 0.2)                    // gaps 0.2 0.2 0.1 0.1 0.2
	near(t, "tokens_per_event", r.TokensPerEvent, 9.0/7) // 9 tokens, 7 events
	if r.NSources[schema.NFromUsage] != 1 || r.NSources[schema.NFromEvents] != 1 {
		t.Fatalf("n_sources %v", r.NSources)
	}

	empty := Phase(name, in, out, []schema.Record{{I: 0, Class: schema.Connect, TEnd: fp(0.001)}}, schema.StatusComplete)
	if empty.TTFTMed != nil || empty.LatP99 != nil || empty.TokensPerEvent != nil || empty.OutTput != 0 {
		t.Fatalf("metrics over an empty sample must be null: %+v", empty)
	}
}

func TestErrorMessageReadsCommonShapes(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"error":{"message":"Rate limit\nreached","code":429}}`:      "Rate limit reached",
		`{"object":"error","message":"The request queue is full."}`:   "The request queue is full.",
		`{"error":"model not found"}`:                                 "model not found",
		`{"detail":"Not Found"}`:                                      "Not Found",
		"<html>502 Bad Gateway</html>":                                "502 Bad Gateway (an HTML page)",
		`{"error":{"message":"ValidationError.__new__() missing 1"}}`: "ValidationError.__new__() missing 1",
	} {
		if got := ErrorMessage([]byte(in)); got != want {
			t.Errorf("ErrorMessage(%s) = %q, want %q", in, got, want)
		}
	}
}

// The truth: a phase whose completed requests carry no prompt count (a
// stream without usage, as LM Studio's: n is counted from events, a prompt
// cannot be) has no in_tput and no prompt_tokens_mean (null, as any metric
// over an empty sample), not 0; one with no request completed has in_tput
// 0, as out_tput is; and the mean prompt is over the requests that
// counted one (100, not 50 with an uncounted request beside it).
func TestInTputIsNullWhenNoCompletedRequestCountedItsPrompt(t *testing.T) {
	t.Parallel()
	done := func(i int, prompt int) schema.Record {
		return schema.Record{I: i, TFirst: fp(0.1), TLast: fp(0.5), TEnd: fp(1), Events: []float64{0.1, 0.5}, N: 2, NSource: schema.NFromEvents, Prompt: prompt}
	}
	none := Phase("p", 64, 2, []schema.Record{done(0, 0), done(1, 0)}, schema.StatusComplete)
	if none.InTput != nil || none.PromptTokensMean != nil || none.OutTput != 4 {
		t.Errorf("no prompt counted: in_tput %v, prompt_tokens_mean %v, out_tput %v; want null, null, 4", none.InTput, none.PromptTokensMean, none.OutTput)
	}
	some := Phase("p", 64, 2, []schema.Record{done(0, 100), done(1, 0)}, schema.StatusComplete)
	if some.InTput == nil || *some.InTput != 100 || some.PromptTokensMean == nil || *some.PromptTokensMean != 100 {
		t.Errorf("one prompt counted: in_tput %v, prompt_tokens_mean %v; want 100, 100", some.InTput, some.PromptTokensMean)
	}
	failed := Phase("p", 64, 2, []schema.Record{{I: 0, Class: schema.HTTP5xx, Status: 500, TEnd: fp(0.1)}}, schema.StatusComplete)
	if failed.InTput == nil || *failed.InTput != 0 {
		t.Errorf("none completed: in_tput %v; want 0", failed.InTput)
	}
}
