package bench

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/schema"
	"github.com/glmbench/glmbench/reports/summary"
)

// tpotGap is the fakes' fixed delay between tokens, the TPOT they serve.
const tpotGap = 20 * time.Millisecond

// checkTPOT holds a phase's records to the truth of a server that streams
// every counted token from its first event on but hides reasoning first:
// each record has n 40 from usage, reasoning tokens r, events events of
// which revents carried reasoning, and its TPOT is its mean gap between
// events (so the phase's tpot_mean is its pooled itl_mean), at least the
// fake's gap (it sleeps Gap between tokens; the events' span is
// (events − 1) × Gap at the least, less at most one delivery delay).
func checkTPOT(t *testing.T, records []schema.Record, r, events, revents int) {
	t.Helper()
	if len(records) == 0 {
		t.Fatal("no records")
	}
	for _, rec := range records {
		if !rec.Completed() || rec.N != 40 || rec.NSource != schema.NFromUsage || rec.ReasoningTokens != r ||
			len(rec.Events) != events || rec.ReasoningEvents != revents {
			t.Fatalf("request %d: %+v; want completed, n 40 from usage, %d reasoning tokens, %d events (%d reasoning)", rec.I, rec, r, events, revents)
		}
		tpot, ok := rec.TPOT()
		meanGap := (*rec.TLast - *rec.TFirst) / float64(events-1)
		if !ok || math.Abs(tpot-meanGap) > 1e-12 {
			t.Errorf("request %d: TPOT %g (%v), want its mean gap %g", rec.I, tpot, ok, meanGap)
		}
		if tpot < 0.9*tpotGap.Seconds() {
			t.Errorf("request %d: TPOT %g s, want about the fake's gap %g s", rec.I, tpot, tpotGap.Seconds())
		}
	}
	ph := summary.Phase("x", 64, 40, records, "")
	if ph.TPOTMean == nil || ph.ITLMean == nil || math.Abs(*ph.TPOTMean-*ph.ITLMean) > 1e-9 {
		t.Errorf("tpot_mean %v, itl_mean %v: want them equal", ph.TPOTMean, ph.ITLMean)
	}
}

// An OpenAI reasoning model counts 16 hidden reasoning tokens in its 40
// completion tokens and streams only the 24 visible ones, Gap apart: TPOT
// is Gap (23 gaps over 24 tokens), not Gap·23/39 as dividing by n − 1
// would make it. n stays 40: those tokens were generated.
func TestTPOTOfAModelThatHidesItsReasoningIsItsVisibleGap(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.OpenAI, endpointstest.Options{ReasoningModel: true, HiddenReasoning: 16, Gap: tpotGap})
	ep := resolve(t, p.BaseURL(), p.Opts.Model)
	// --ignore-eos=false --max-completion-tokens, as OpenAI needs.
	o := &Options{Endpoint: ep, Shape: Shape{Model: p.Opts.Model, MaxCompletionTokens: true},
		Limits: endpoints.StreamLimits{TTFT: 10 * time.Second, Stall: 10 * time.Second}, ConnectTimeout: 2 * time.Second,
		PhaseCap: time.Minute, Nonce: "7e0e0a11"}
	plans, _, err := Prepare(context.Background(), o, []Spec{{Name: "x", N: 3, In: 64, Out: 40}})
	if err != nil {
		t.Fatal(err)
	}
	checkTPOT(t, RunPhase(context.Background(), o, plans[0]).Records, 16, 24, 0)
}

// A server that streams its reasoning (vLLM's delta.reasoning, SGLang's
// reasoning_content) and counts it in reasoning_tokens keeps TPOT over all
// n: its 16 reasoning and 24 content tokens are 40 events, 39 gaps.
func TestTPOTOfAServerThatStreamsItsReasoningCountsEveryToken(t *testing.T) {
	t.Parallel()
	for _, field := range []string{"reasoning", "reasoning_content"} {
		t.Run(field, func(t *testing.T) {
			t.Parallel()
			srv := endpointstest.New(func(endpointstest.Request) endpointstest.Behavior {
				return endpointstest.Behavior{Gap: tpotGap, ReasoningTokens: 16, ReasoningField: field}
			})
			defer srv.Close()
			run := RunPhase(context.Background(), testOptions(t, srv, "7e0e0a12"), plan(3, 64, 40))
			checkTPOT(t, run.Records, 16, 40, 16)
		})
	}
}
