package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/schema"
)

// resolve is the endpoint at the API base base serving model, read with no
// environment.
func resolve(t testing.TB, base, model string) *endpoints.Endpoint {
	t.Helper()
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: base, Model: model}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

func testOptions(t testing.TB, srv *endpointstest.Server, nonce string) *Options {
	t.Helper()
	ep := resolve(t, srv.BaseURL(), "fake-model")
	return &Options{
		Endpoint:       ep,
		Shape:          Shape{Model: "fake-model", IgnoreEOS: true},
		Limits:         endpoints.StreamLimits{TTFT: 10 * time.Second, Stall: 10 * time.Second},
		ConnectTimeout: 2 * time.Second,
		PhaseCap:       time.Minute,
		Nonce:          nonce,
	}
}

// fakeOptions is testOptions against a fake server of the default
// behaviour, closed when t ends.
func fakeOptions(t testing.TB, nonce string) *Options {
	t.Helper()
	srv := endpointstest.New(nil)
	t.Cleanup(srv.Close)
	return testOptions(t, srv, nonce)
}

// plan skips calibration: the fake server counts prompt tokens by length.
func plan(n, in, out int) Plan {
	return Plan{Spec: Spec{Name: "p", N: n, In: in, Out: out}, Cal: Calibration{Target: in, Chars: in * 4, PromptTokens: -1}}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func TestTimingsAgreeWithTheServersSendTimes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		b       endpointstest.Behavior
		nSource schema.NSource
	}{
		{"one token per event, usage in the final chunk", endpointstest.Behavior{TokensPerEvent: 1}, schema.NFromUsage},
		{"three tokens per event, usage on the finish chunk", endpointstest.Behavior{TokensPerEvent: 3, Usage: endpointstest.UsageInFinish}, schema.NFromUsage},
		{"no usage: n counted from events", endpointstest.Behavior{Usage: endpointstest.UsageNone}, schema.NFromEvents},
		{"reasoning_content streams count as content", endpointstest.Behavior{Reasoning: true}, schema.NFromUsage},
		{"vLLM's reasoning field counts as content", endpointstest.Behavior{Reasoning: true, ReasoningField: "reasoning"}, schema.NFromUsage},
	} {
		// Subtests run one at a time: each must be the only load on the
		// client, as a real run is.
		t.Run(tc.name, func(t *testing.T) {
			b := tc.b
			b.Gap, b.Jitter = 4*time.Millisecond, 2*time.Millisecond
			srv := endpointstest.New(func(r endpointstest.Request) endpointstest.Behavior {
				b := b
				b.TTFT = 30*time.Millisecond + time.Duration(r.I%6)*time.Millisecond
				return b
			})
			defer srv.Close()
			const n, out = 24, 21
			// Another process hogging both cores can delay this one's reads by
			// a scheduler slice (ms); a wrong stamp is wrong every time. So the
			// timings must agree in at least one of three attempts.
			var run PhaseRun
			var fails []string
			for attempt := range 3 {
				nonce := fmt.Sprintf("a1b2c3d%d", attempt)
				run = RunPhase(context.Background(), testOptions(t, srv, nonce), plan(n, 64, out))
				if run.Result.Completed != n || run.Result.Errors != 0 {
					t.Fatalf("completed %d, errors %v", run.Result.Completed, run.Result.ByClass)
				}
				fails = timingDisagreements(t, run, srv.Sends(nonce), out, tc.nSource)
				if len(fails) == 0 {
					break
				}
			}
			for _, f := range fails {
				t.Error(f)
			}
			r := run.Result
			// The server waits 30 ms from arrival before the first content event;
			// the role chunk it sends first must not count.
			if r.TTFTMed == nil || *r.TTFTMed < 0.030 {
				t.Errorf("ttft_med = %v s, want at least 30 ms", deref(r.TTFTMed))
			}
			perEvent := float64(max(tc.b.TokensPerEvent, 1))
			if r.TokensPerEvent == nil || math.Abs(*r.TokensPerEvent-float64(out)/math.Ceil(float64(out)/perEvent)) > 1e-9 {
				t.Errorf("tokens_per_event = %v", r.TokensPerEvent)
			}
			if r.NSources[tc.nSource] != n {
				t.Errorf("n_sources = %v", r.NSources)
			}
		})
	}
}

// timingDisagreements compares a phase's records with the server's own send
// times: TTFT, TPOT and every gap, median over requests within 2 ms.
func timingDisagreements(t *testing.T, run PhaseRun, sends map[int]*endpointstest.Send, out int, nSource schema.NSource) []string {
	t.Helper()
	var dTTFT, dTPOT, dEvent []float64
	for _, rec := range run.Records {
		snd := sends[rec.I]
		if snd == nil {
			t.Fatalf("server never saw request %d", rec.I)
		}
		if rec.N != out || rec.NSource != nSource {
			t.Fatalf("request %d: n = %d from %s, want %d from %s", rec.I, rec.N, rec.NSource, out, nSource)
		}
		if len(rec.Events) != len(snd.Events) {
			t.Fatalf("request %d: %d events, server sent %d", rec.I, len(rec.Events), len(snd.Events))
		}
		// The server's TTFT from the client's t0: both clocks are this process's.
		t0 := run.Start.Add(time.Duration(rec.SendOffset * float64(time.Second)))
		serverTTFT := snd.Events[0].Sub(t0).Seconds()
		serverTPOT := snd.Events[len(snd.Events)-1].Sub(snd.Events[0]).Seconds() / float64(snd.Tokens-1)
		clientTPOT := (*rec.TLast - *rec.TFirst) / float64(rec.N-1)
		dTTFT = append(dTTFT, math.Abs(*rec.TFirst-serverTTFT))
		dTPOT = append(dTPOT, math.Abs(clientTPOT-serverTPOT))
		for k := 1; k < len(rec.Events); k++ {
			client := rec.Events[k] - rec.Events[k-1]
			server := snd.Events[k].Sub(snd.Events[k-1]).Seconds()
			dEvent = append(dEvent, math.Abs(client-server))
		}
	}
	const within = 0.002
	var fails []string
	if m := median(dTTFT); m > within {
		fails = append(fails, fmt.Sprintf("median |TTFT − server TTFT| = %.3f ms, want ≤ 2 ms", m*1e3))
	}
	if m := median(dTPOT); m > within {
		fails = append(fails, fmt.Sprintf("median |TPOT − server TPOT| = %.3f ms, want ≤ 2 ms", m*1e3))
	}
	if m := median(dEvent); m > within {
		fails = append(fails, fmt.Sprintf("median |gap − server gap| = %.3f ms, want ≤ 2 ms", m*1e3))
	}
	return fails
}

// failing maps request index mod len to a behaviour.
var failing = []struct {
	b     endpointstest.Behavior
	class schema.Class
}{
	{endpointstest.Behavior{}, ""},
	{endpointstest.Behavior{Fail: endpointstest.Status, Status: 429, RetryAfter: "7", Body: `{"error":{"message":"Rate limit reached for requests","type":"rate_limit","code":429}}`}, schema.RateLimited},
	{endpointstest.Behavior{Fail: endpointstest.Status, Status: 503, Body: `{"object":"error","message":"The request queue is full.","type":"503","param":null,"code":503}`}, schema.QueueFull},
	{endpointstest.Behavior{Fail: endpointstest.Status, Status: 500, Body: "Internal Server Error"}, schema.HTTP5xx},
	{endpointstest.Behavior{Fail: endpointstest.Status, Status: 400, Body: `{"error":{"message":"bad field"}}`}, schema.HTTP4xx},
	{endpointstest.Behavior{Fail: endpointstest.Reset}, schema.Connect},
	{endpointstest.Behavior{Fail: endpointstest.Stall, FailAfter: 2}, schema.Stalled},
	{endpointstest.Behavior{Fail: endpointstest.ErrorEvent, FailAfter: 2, ErrorCode: 500}, schema.StreamError},
	{endpointstest.Behavior{Fail: endpointstest.ErrorEvent, FailAfter: 1, ErrorCode: 503}, schema.QueueFull},
	{endpointstest.Behavior{Fail: endpointstest.Truncate, FailAfter: 3}, schema.Truncated},
	{endpointstest.Behavior{Fail: endpointstest.Empty}, schema.Empty},
	{endpointstest.Behavior{Fail: endpointstest.Hang}, schema.TTFTTimeout},
	{endpointstest.Behavior{Fail: endpointstest.NoDone}, ""}, // a finish reason without [DONE] is complete
}

func TestEveryErrorClassIsCountedExactly(t *testing.T) {
	t.Parallel()
	srv := endpointstest.New(func(r endpointstest.Request) endpointstest.Behavior {
		b := failing[r.I%len(failing)].b
		b.Gap = 2 * time.Millisecond
		return b
	})
	defer srv.Close()
	o := testOptions(t, srv, "feedf00d")
	o.Limits = endpoints.StreamLimits{TTFT: 700 * time.Millisecond, Stall: 300 * time.Millisecond}
	const rounds = 3
	n := rounds * len(failing)
	run := RunPhase(context.Background(), o, plan(n, 32, 8))
	want := map[schema.Class]int{}
	for _, f := range failing {
		if f.class != "" {
			want[f.class] += rounds
		}
	}
	r := run.Result
	for _, c := range schema.Classes {
		if r.ByClass[c] != want[c] {
			t.Errorf("%s: %d, want %d", c, r.ByClass[c], want[c])
		}
	}
	if r.Completed != 2*rounds || r.Errors != n-2*rounds || r.BatchSize != n {
		t.Fatalf("completed %d errors %d batch %d", r.Completed, r.Errors, r.BatchSize)
	}
	if got := r.ErrorRate; math.Abs(got-float64(n-2*rounds)/float64(n)) > 1e-12 {
		t.Errorf("error_rate = %v", got)
	}
	// The successes of the same phase are still measured.
	if r.TTFTMed == nil || r.TPOTMed == nil || r.LatMed == nil || r.OutTput <= 0 || r.InTput == nil || *r.InTput <= 0 {
		t.Errorf("completed requests not measured: %+v", r)
	}
	for _, rec := range run.Records {
		f := failing[rec.I%len(failing)]
		if rec.Class != f.class {
			t.Errorf("request %d: class %q, want %q (%s)", rec.I, rec.Class, f.class, rec.Detail)
		}
		switch f.class {
		case schema.RateLimited:
			if rec.RetryAfter != "7" || rec.Status != 429 || !strings.Contains(rec.Body, "Rate limit reached") {
				t.Errorf("429 record lost its details: %+v", rec)
			}
		case schema.HTTP5xx:
			if rec.Status != 500 || rec.Body != "Internal Server Error" {
				t.Errorf("500 record: %+v", rec)
			}
		case schema.StreamError:
			if rec.Status != 200 || !strings.Contains(rec.Body, "injected failure") || len(rec.Events) != 2 {
				t.Errorf("stream error record: %+v", rec)
			}
		}
		if len(rec.Body) > endpoints.BodyLimit {
			t.Errorf("request %d keeps %d bytes of body", rec.I, len(rec.Body))
		}
	}
	if got := r.ErrorKinds["HTTP 429: Rate limit reached for requests"]; got != rounds {
		t.Errorf("error_kinds = %v", r.ErrorKinds)
	}
}

func TestRequestTimeoutIsItsOwnClass(t *testing.T) {
	t.Parallel()
	srv := endpointstest.New(func(endpointstest.Request) endpointstest.Behavior {
		return endpointstest.Behavior{Gap: 50 * time.Millisecond}
	})
	defer srv.Close()
	o := testOptions(t, srv, "0000aaaa")
	o.Limits.Total = 200 * time.Millisecond
	run := RunPhase(context.Background(), o, plan(3, 16, 50))
	if run.Result.ByClass[schema.TotalTimeout] != 3 {
		t.Fatalf("by class %v", run.Result.ByClass)
	}
}

func TestTheCapEndsAPhaseWhoseServerStopsAnswering(t *testing.T) {
	t.Parallel()
	srv := endpointstest.New(func(r endpointstest.Request) endpointstest.Behavior {
		if r.I < 2 {
			return endpointstest.Behavior{Gap: time.Millisecond}
		}
		return endpointstest.Behavior{Fail: endpointstest.Stall, FailAfter: 3} // hangs mid-stream
	})
	defer srv.Close()
	o := testOptions(t, srv, "cafe0001")
	o.PhaseCap = 400 * time.Millisecond
	o.Limits = endpoints.StreamLimits{TTFT: time.Minute, Stall: time.Minute}
	start := time.Now()
	run := RunPhase(context.Background(), o, plan(10, 16, 20))
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("phase took %v despite its cap", el)
	}
	r := run.Result
	if r.Status != schema.StatusCapped || r.Cancelled != 8 || r.Completed != 2 || r.Errors != 0 {
		t.Fatalf("status %s cancelled %d completed %d errors %d", r.Status, r.Cancelled, r.Completed, r.Errors)
	}
	if r.CancelledOutTokens != 8*3 {
		t.Errorf("cancelled_out_tokens = %d, want 24", r.CancelledOutTokens)
	}
	if r.OutTput <= 0 {
		t.Errorf("completed work not counted: out_tput %v", r.OutTput)
	}
	for _, rec := range run.Records[2:] {
		if rec.Cancelled != schema.CancelCap || rec.Class != "" {
			t.Errorf("request %d: cancelled %q class %q", rec.I, rec.Cancelled, rec.Class)
		}
	}
}

func TestTheStallTimeoutEndsAPhaseWhoseServerStopsAnswering(t *testing.T) {
	t.Parallel()
	srv := endpointstest.New(func(endpointstest.Request) endpointstest.Behavior {
		// A long wait before the first token is queueing, not a stall.
		return endpointstest.Behavior{TTFT: 400 * time.Millisecond, Fail: endpointstest.Stall, FailAfter: 1}
	})
	defer srv.Close()
	o := testOptions(t, srv, "cafe0002")
	o.Limits = endpoints.StreamLimits{TTFT: time.Minute, Stall: 250 * time.Millisecond}
	start := time.Now()
	run := RunPhase(context.Background(), o, plan(6, 16, 20))
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("phase took %v", el)
	}
	if run.Result.ByClass[schema.Stalled] != 6 || run.Result.Status != schema.StatusComplete {
		t.Fatalf("by class %v, status %s", run.Result.ByClass, run.Result.Status)
	}
	for _, rec := range run.Records {
		if *rec.TFirst < 0.35 || *rec.TEnd-*rec.TFirst < 0.2 {
			t.Errorf("request %d: first %.3fs end %.3fs", rec.I, *rec.TFirst, *rec.TEnd)
		}
	}
}

func TestInterruptKeepsWhatFinished(t *testing.T) {
	t.Parallel()
	srv := endpointstest.New(func(r endpointstest.Request) endpointstest.Behavior {
		if r.I == 0 {
			return endpointstest.Behavior{}
		}
		return endpointstest.Behavior{Fail: endpointstest.Hang}
	})
	defer srv.Close()
	o := testOptions(t, srv, "cafe0003")
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(300*time.Millisecond, func() { cancel(errInterrupted) })
	run := RunPhase(ctx, o, plan(4, 16, 4))
	r := run.Result
	if r.Status != schema.StatusInterrupted || r.Completed != 1 || r.Cancelled != 3 {
		t.Fatalf("status %s completed %d cancelled %d", r.Status, r.Completed, r.Cancelled)
	}
	if run.Records[1].Cancelled != schema.CancelInterrupt {
		t.Errorf("record: %+v", run.Records[1])
	}
}

func TestMaxConcurrencyBoundsRequestsInFlight(t *testing.T) {
	t.Parallel()
	var inFlight, peak atomic.Int64
	srv := endpointstest.New(func(endpointstest.Request) endpointstest.Behavior {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		return endpointstest.Behavior{TTFT: 20 * time.Millisecond}
	})
	defer srv.Close()
	o := testOptions(t, srv, "cafe0004")
	o.MaxConcurrency = 3
	// The fake's handler decrements nothing, so track completion from records.
	run := RunPhase(context.Background(), o, plan(12, 16, 2))
	if run.Result.Completed != 12 {
		t.Fatalf("completed %d", run.Result.Completed)
	}
	// Requests in flight at once never exceed 3: check from the records' intervals.
	if n, at := peakInFlight(run.Records, 0); n > 3 {
		t.Fatalf("%d requests in flight at %.3fs", n, at)
	}
	queued := 0
	for _, rec := range run.Records {
		if rec.QueueWait > 0.005 {
			queued++
		}
	}
	if queued < 6 {
		t.Errorf("only %d requests waited for a slot", queued)
	}
}

// peakInFlight is the most records in flight at once, counted a moment
// after (seconds) each one's send, and the send offset where it is first
// reached; a record is in flight from its send to its end. Every record
// must have ended (TEnd set).
func peakInFlight(recs []schema.Record, after float64) (n int, at float64) {
	for _, r := range recs {
		t := r.SendOffset + after
		in := 0
		for _, u := range recs {
			if u.SendOffset <= t && t < u.SendOffset+*u.TEnd {
				in++
			}
		}
		if in > n {
			n, at = in, r.SendOffset
		}
	}
	return n, at
}

// A rate so small its gaps pass time.Duration's range (pflag takes
// --request-rate 1e-300) plans the later sends at the end of time, never
// before the phase's start: a float64 past int64's range converted as it
// is gave math.MinInt64 on amd64, every request sent at once, and a send
// lag of 292 years.
func TestATinyRequestRatePlansNoSendBeforeTheStart(t *testing.T) {
	t.Parallel()
	offs := arrivalOffsets(3, 1e-300, 1)
	if offs[0] != 0 || offs[1] != math.MaxInt64 || offs[2] != math.MaxInt64 {
		t.Errorf("offsets %v, want 0 then the longest duration twice", offs)
	}
}

func TestRequestRateSpreadsSendsAsAPoissonProcess(t *testing.T) {
	t.Parallel()
	offs := arrivalOffsets(4000, 200, 1)
	mean := offs[len(offs)-1].Seconds() / float64(len(offs)-1)
	if math.Abs(mean-1.0/200) > 0.0004 {
		t.Fatalf("mean gap %.5fs, want 0.005s", mean)
	}
	if !slices.IsSorted(offs) || offs[0] != 0 {
		t.Fatal("offsets not increasing from zero")
	}
	if burst := arrivalOffsets(5, 0, 1); slices.Max(burst) != 0 {
		t.Fatal("burst mode planned a delay")
	}

	o := fakeOptions(t, "cafe0005")
	o.RequestRate = 50
	run := RunPhase(context.Background(), o, plan(10, 16, 2))
	last := 0.0
	for _, rec := range run.Records {
		last = math.Max(last, rec.SendOffset)
	}
	if run.Result.Completed != 10 || last < 0.05 {
		t.Fatalf("completed %d, last send at %.3fs", run.Result.Completed, last)
	}
}

func TestRequestsNeverSentAreCounted(t *testing.T) {
	t.Parallel()
	o := fakeOptions(t, "cafe0006")
	o.RequestRate = 5 // one every 200 ms on average
	o.PhaseCap = 300 * time.Millisecond
	run := RunPhase(context.Background(), o, plan(40, 16, 2))
	r := run.Result
	if r.NotSent == 0 || r.Completed+r.Errors+r.Cancelled+r.NotSent != r.BatchSize || r.Status != schema.StatusCapped {
		t.Fatalf("not_sent %d completed %d errors %d cancelled %d status %s", r.NotSent, r.Completed, r.Errors, r.Cancelled, r.Status)
	}
}

func TestEveryPromptStartsWithTheNonceAndItsIndex(t *testing.T) {
	t.Parallel()
	srv := endpointstest.New(nil)
	defer srv.Close()
	run := RunPhase(context.Background(), testOptions(t, srv, "0badcafe"), plan(12, 40, 2))
	sends := srv.Sends("0badcafe")
	if len(sends) != 12 || run.Result.Completed != 12 {
		t.Fatalf("server saw %d requests", len(sends))
	}
	for i, snd := range sends {
		if !strings.HasPrefix(snd.Req.Content, Prefix("0badcafe", i)) || !snd.Req.IgnoreEOS || !snd.Req.Usage || snd.Req.MaxTokens != 2 {
			t.Fatalf("request %d: %+v", i, snd.Req)
		}
	}
}

func TestALaterPhaseNumbersItsPromptsPastTheEarlierPhases(t *testing.T) {
	t.Parallel()
	srv := endpointstest.New(nil)
	defer srv.Close()
	o := testOptions(t, srv, "0badcafe")
	plans, _, err := Prepare(context.Background(), o, []Spec{{Name: "short", N: 3, In: 40, Out: 2}, {Name: "long", N: 4, In: 80, Out: 2}})
	if err != nil {
		t.Fatal(err)
	}
	for _, pl := range plans {
		RunPhase(context.Background(), o, pl)
	}
	// The long phase's request i starts as the short one's would, filler
	// and all: numbered from 0 again, it would find that prompt cached.
	sends := srv.Sends("0badcafe")
	if len(sends) != 7 {
		t.Fatalf("server saw %d requests, want 7", len(sends))
	}
	seen := map[string]bool{}
	for _, snd := range sends {
		head, _, _ := strings.Cut(snd.Req.Content, " ")
		seen[head] = true
	}
	for k := range 7 {
		if !seen[strings.TrimSpace(Prefix("0badcafe", k))] {
			t.Errorf("no request starts %q: the phases' prompts are not numbered 0..6 (%v)", Prefix("0badcafe", k), seen)
		}
	}
}

func TestCalibrationHitsTheTargetWithinTolerance(t *testing.T) {
	t.Parallel()
	for _, target := range []int{40, 256, 8192} {
		// An odd tokenizer: 23 tokens of template, then 2 tokens per 7 bytes.
		srv := endpointstest.New(nil, func(s *endpointstest.Server) {
			s.PromptTokens = func(s string) int { return 23 + len(s)*2/7 }
		})
		o := testOptions(t, srv, "cafe0007")
		plans, warns, err := Prepare(context.Background(), o, []Spec{{Name: "x", N: 1, In: target, Out: 3}})
		srv.Close()
		if err != nil || len(warns) != 0 {
			t.Fatalf("target %d: %v %v", target, err, warns)
		}
		cal := plans[0].Cal
		if abs(cal.PromptTokens-target) > Tolerance(target) || cal.Probes > 8 {
			t.Errorf("target %d: got %d tokens after %d probes", target, cal.PromptTokens, cal.Probes)
		}
	}
}

func TestCalibrationProblemsAreSaidBeforeLoad(t *testing.T) {
	t.Parallel()
	t.Run("a target below the template's own tokens is bad input", func(t *testing.T) {
		t.Parallel()
		srv := endpointstest.New(nil, func(s *endpointstest.Server) { s.PromptTokens = func(string) int { return 30 } })
		defer srv.Close()
		_, _, err := Prepare(context.Background(), testOptions(t, srv, "cafe0008"), []Spec{{Name: "x", N: 1, In: 5, Out: 3}})
		wantBadInput(t, err, "smallest prompt of 30")
	})
	t.Run("a probe the endpoint rejects is bad input naming the status", func(t *testing.T) {
		t.Parallel()
		srv := endpointstest.New(func(endpointstest.Request) endpointstest.Behavior {
			return endpointstest.Behavior{Fail: endpointstest.Status, Status: 400, Body: `{"error":{"message":"Unsupported param: ignore_eos"}}`}
		})
		defer srv.Close()
		_, _, err := Prepare(context.Background(), testOptions(t, srv, "cafe0009"), []Spec{{Name: "x", N: 1, In: 64, Out: 3}})
		var pe *ProbeError
		if !errors.As(err, &pe) {
			t.Fatalf("err = %v, want a ProbeError", err)
		}
		wantBadInput(t, err, "HTTP 400: Unsupported param: ignore_eos")
	})
	t.Run("the full-length shape is probed too", func(t *testing.T) {
		t.Parallel()
		srv := endpointstest.New(func(r endpointstest.Request) endpointstest.Behavior {
			if r.MaxTokens > 100 {
				return endpointstest.Behavior{Fail: endpointstest.Status, Status: 400, Body: `{"error":{"message":"max_tokens too large for the context"}}`}
			}
			return endpointstest.Behavior{}
		})
		defer srv.Close()
		_, _, err := Prepare(context.Background(), testOptions(t, srv, "cafe000a"), []Spec{{Name: "x", N: 1, In: 64, Out: 500}})
		wantBadInput(t, err, "request shape")
	})
	t.Run("an endpoint without usage gives a warning, not a failure", func(t *testing.T) {
		t.Parallel()
		srv := endpointstest.New(func(endpointstest.Request) endpointstest.Behavior {
			return endpointstest.Behavior{Usage: endpointstest.UsageNone}
		})
		defer srv.Close()
		plans, warns, err := Prepare(context.Background(), testOptions(t, srv, "cafe000b"), []Spec{{Name: "x", N: 1, In: 64, Out: 3}})
		if err != nil || len(warns) != 1 || !strings.Contains(warns[0], "no usage") || plans[0].Cal.PromptTokens != -1 {
			t.Fatalf("err %v warns %v plans %+v", err, warns, plans)
		}
	})
}

// errInterrupted stands for the command's cause of a Ctrl-C.
var errInterrupted = errors.New("interrupted")

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// BenchmarkBurstSendLag sends a decode_medium-sized burst (512 requests at
// once) to an in-process fake endpoint that holds every first token for a
// second, and reports how late the client's sends were against the plan
// (all at the phase start): the client's own share of TTFT.
func BenchmarkBurstSendLag(b *testing.B) {
	srv := endpointstest.New(func(endpointstest.Request) endpointstest.Behavior {
		return endpointstest.Behavior{TTFT: time.Second}
	})
	defer srv.Close()
	o := testOptions(b, srv, "b0b0b0b0")
	var lags []float64
	for b.Loop() {
		run := RunPhase(context.Background(), o, plan(512, 64, 2))
		if run.Result.Completed != 512 {
			b.Fatalf("completed %d", run.Result.Completed)
		}
		for _, r := range run.Records {
			lags = append(lags, r.SendLag)
		}
	}
	b.ReportMetric(median(lags)*1e3, "p50-lag-ms")
	b.ReportMetric(slices.Max(lags)*1e3, "max-lag-ms")
}

// BenchmarkBurstSendLagPlain is the reference for BenchmarkBurstSendLag: a
// plain Go client (one shared http.Transport, each request's context
// derived from the phase's at send time, 512 goroutines started at once)
// against the same fake endpoint, with lag measured the same way.
func BenchmarkBurstSendLagPlain(b *testing.B) {
	srv := endpointstest.New(func(endpointstest.Request) endpointstest.Behavior {
		return endpointstest.Behavior{TTFT: time.Second}
	})
	defer srv.Close()
	const n = 512
	body := Shape{Model: "m", IgnoreEOS: true}.chatBody(Prefix("b0b0b0b1", 1), newFiller().Text(256), 2, true)
	var lags []float64
	for b.Loop() {
		tr := &http.Transport{MaxIdleConnsPerHost: n}
		client := &http.Client{Transport: tr}
		phase, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var mu sync.Mutex
		start := time.Now()
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancelReq := context.WithCancel(phase)
				defer cancelReq()
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.BaseURL()+"/chat/completions", bytes.NewReader(body))
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				lags = append(lags, t0.Sub(start).Seconds())
				mu.Unlock()
			}()
		}
		wg.Wait()
		cancel()
		tr.CloseIdleConnections()
	}
	b.ReportMetric(median(lags)*1e3, "p50-lag-ms")
	b.ReportMetric(slices.Max(lags)*1e3, "max-lag-ms")
}
