package bench

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints/scrape"
	"github.com/glmbench/glmbench/engine"
	"github.com/glmbench/glmbench/engine/enginetest"
	"github.com/glmbench/glmbench/engine/sched"
	"github.com/glmbench/glmbench/engine/sim"
)

// serverBuckets are the engine's TTFT bucket bounds (engine/server).
var serverBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10}

// bucketWidth is the width of the TTFT bucket that holds v.
func bucketWidth(v float64) float64 {
	lo := 0.0
	for _, b := range serverBuckets {
		if v <= b {
			return b - lo
		}
		lo = b
	}
	return math.Inf(1)
}

func TestTheScrapedServerBlockAgreesWithThePhasesOwnCounts(t *testing.T) {
	t.Parallel()
	// The simulated executor at 15 ms a step: TTFTs of tens of ms, in the
	// engine's 25–50 ms and 50–100 ms buckets.
	cost := sim.CostModel{StepOverhead: 15 * time.Millisecond, PrefillToken: 10 * time.Microsecond, DecodeSeq: 100 * time.Microsecond}
	o := workOptions(t, enginetest.Sim(cost))
	o.Metrics = scrape.New(scrape.DefaultURL(o.Endpoint.BaseURL), nil, nil)
	o.MetricsInterval = 50 * time.Millisecond
	plans, _, err := Prepare(context.Background(), o, []Spec{{Name: "p", N: 8, In: 64, Out: 16}})
	if err != nil {
		t.Fatal(err)
	}
	run := RunPhase(context.Background(), o, plans[0])
	srv := run.Result.Server
	if srv == nil {
		t.Fatal("no server block")
	}
	if srv.Source != "glmbench" || srv.Scrapes < 3 || srv.Failed != 0 {
		t.Fatalf("source %q, %d scrapes, %d failed: want glmbench, a before, some during and an after", srv.Source, srv.Scrapes, srv.Failed)
	}
	// The counters' deltas are the phase's own requests, exactly: the
	// calibration's probes came before the first scrape.
	var prompt, gen int
	for _, r := range run.Records {
		if !r.Completed() {
			t.Fatalf("request %d did not complete", r.I)
		}
		prompt += r.Prompt
		gen += r.N
	}
	for _, c := range []struct {
		name string
		got  *float64
		want int
	}{{"requests", srv.Requests, 8}, {"prompt_tokens", srv.PromptTokens, prompt}, {"generation_tokens", srv.GenerationTokens, gen}} {
		if c.got == nil || *c.got != float64(c.want) {
			t.Errorf("server %s = %v, want exactly %d", c.name, c.got, c.want)
		}
	}
	if srv.RunningMax == nil || *srv.RunningMax < 1 || *srv.RunningMax > 8 {
		t.Errorf("running max %v: some of the 8 requests were running at a scrape during the phase", srv.RunningMax)
	}
	// The server's TTFT median, read off its histogram, is the client's
	// within the width of the bucket it falls in.
	client := *run.Result.TTFTMed
	if srv.TTFTP50 == nil {
		t.Fatal("no server TTFT p50")
	}
	if d, w := math.Abs(client-*srv.TTFTP50), bucketWidth(*srv.TTFTP50); d > w {
		t.Errorf("TTFT p50: client %.4f s, server %.4f s: %.4f apart, more than the bucket's %.4f", client, *srv.TTFTP50, d, w)
	}
	t.Logf("TTFT p50 client %.2f ms, server %.2f ms; %d scrapes", client*1e3, *srv.TTFTP50*1e3, srv.Scrapes)
	for _, s := range run.Samples {
		if s.Phase != "p" || (s.When != "before" && s.When != "during" && s.When != "after") || s.Error != "" {
			t.Errorf("sample %+v", s)
		}
	}
	if first, last := run.Samples[0], run.Samples[len(run.Samples)-1]; first.When != "before" || last.When != "after" || first.T > 0 || last.T <= 0 {
		t.Errorf("first sample %s at %.3f s, last %s at %.3f s: want before at or before the start, after past it", first.When, first.T, last.When, last.T)
	}
}

func TestAPhaseWithoutMetricsHasNoServerBlock(t *testing.T) {
	t.Parallel()
	o := workOptions(t, enginetest.Sim(sim.DefaultCost))
	plans, _, err := Prepare(context.Background(), o, []Spec{{Name: "p", N: 2, In: 32, Out: 2}})
	if err != nil {
		t.Fatal(err)
	}
	run := RunPhase(context.Background(), o, plans[0])
	if run.Result.Server != nil || run.Samples != nil {
		t.Fatalf("server %+v, %d samples, with no scraper", run.Result.Server, len(run.Samples))
	}
}

func TestTheScrapedAcceptLengthIsTheOneTheSimulatedDrafterWasSet(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		accept float64
		steps  int
	}{{"drafts accepted", 3, 3}, {"drafts refused", 1, 3}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			o := workOptions(t, enginetest.Sim(sim.DefaultCost), enginetest.With(func(e *engine.Options) { e.SimAcceptLength = c.accept }),
				enginetest.Sched(func(s *sched.Config) { s.SpeculativeAlgorithm, s.SpeculativeNumSteps = "EAGLE", c.steps }))
			o.Metrics = scrape.New(scrape.DefaultURL(o.Endpoint.BaseURL), nil, nil)
			plans, _, err := Prepare(context.Background(), o, []Spec{{Name: "p", N: 4, In: 32, Out: 97}})
			if err != nil {
				t.Fatal(err)
			}
			srv := RunPhase(context.Background(), o, plans[0]).Result.Server
			if srv == nil || srv.AcceptLength == nil {
				t.Fatalf("server block %+v: no accept length", srv)
			}
			// 96 tokens after the first, in steps of accept: exact up to the
			// last step, which max_tokens may cut short.
			if d := math.Abs(*srv.AcceptLength - c.accept); d > 0.05 {
				t.Errorf("scraped accept length %.3f, set %g", *srv.AcceptLength, c.accept)
			}
		})
	}
}
