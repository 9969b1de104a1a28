package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glmbench/glmbench/bench/workload"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/schema"
)

// bodyMessages is a request body's messages.
func bodyMessages(t *testing.T, body []byte) []endpoints.Message {
	t.Helper()
	var req endpoints.ChatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("body is not JSON: %v", err)
	}
	return req.Messages
}

// inflight wraps a fake server's handler to count the chat requests of one
// nonce in flight (the load's, not the probes': the shape probe leaves at
// its first token, and its handler may still run): from arrival until the
// server writes the stream's [DONE] (or its handler returns), before the
// client can have read the end and sent its next.
type inflight struct {
	nonce    string
	mu       sync.Mutex
	now, top int
}

func (f *inflight) wrap(s *endpointstest.Server) {
	h := s.Config.Handler
	s.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte(`"`+f.nonce+`-`)) {
			h.ServeHTTP(w, r)
			return
		}
		f.mu.Lock()
		f.now++
		f.top = max(f.top, f.now)
		f.mu.Unlock()
		var once sync.Once
		done := func() {
			once.Do(func() {
				f.mu.Lock()
				f.now--
				f.mu.Unlock()
			})
		}
		defer done()
		h.ServeHTTP(&endWriter{ResponseWriter: w, done: done}, r)
	})
}

// endWriter calls done just before it writes a stream's [DONE].
type endWriter struct {
	http.ResponseWriter
	done func()
}

func (e *endWriter) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("[DONE]")) {
		e.done()
	}
	return e.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController flush through it.
func (e *endWriter) Unwrap() http.ResponseWriter { return e.ResponseWriter }

func (f *inflight) reset() {
	f.mu.Lock()
	f.top = 0
	f.mu.Unlock()
}

func (f *inflight) peak() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.top
}

// multiTurnReqs is S sessions of T turns of U user tokens and A answer
// tokens each, as Expand makes them, all sessions starting at once.
func multiTurnReqs(sessions, turns, user, answer int, think time.Duration) []workload.Request {
	var reqs []workload.Request
	for s := 1; s <= sessions; s++ {
		for k := 1; k <= turns; k++ {
			r := workload.Request{I: len(reqs), Session: s, Turn: k, UserTokens: user, Output: answer, Input: (k-1)*(user+answer) + user}
			if k > 1 {
				r.Think = think
			}
			reqs = append(reqs, r)
		}
	}
	return reqs
}

func TestAWorkloadAgainstAnEndpointWithoutUsageWarnsAndKeepsItsLengthsByTheGuess(t *testing.T) {
	t.Parallel()
	srv := endpointstest.New(func(endpointstest.Request) endpointstest.Behavior {
		return endpointstest.Behavior{Usage: endpointstest.UsageNone}
	})
	defer srv.Close()
	o := testOptions(t, srv, "cafe0101")
	const p, q, u, a = 200, 30, 40, 6
	sp := workload.Phase{Name: "chat", Kind: workload.SharedPrefix, Groups: 2, PrefixTokens: p, QuestionTokens: q}
	mt := workload.Phase{Name: "talk", Kind: workload.MultiTurn, Sessions: 1, Turns: 3, UserTokens: u, OutputTokens: a}
	plans, warns, err := PrepareWorkload(context.Background(), o, []WorkPhase{
		{Phase: sp, Reqs: sharedPrefixReqs(2, 2, p, q, 3)},
		{Phase: mt, Reqs: multiTurnReqs(1, 3, u, a, 0)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "no usage") {
		t.Fatalf("warnings %q: want one saying the endpoint reports no usage", warns)
	}
	// Uncounted, a token is charsPerTokenGuess bytes: a question of Q
	// tokens and a new user message of U tokens are that many bytes after
	// the prefix (within a filler word), not the whole prompt's.
	near := func(what string, got, want int) {
		t.Helper()
		if abs(got-want) > 12 {
			t.Errorf("%s: %d bytes of filler, want about %d", what, got, want)
		}
	}
	for i, it := range plans[0].items {
		msgs := bodyMessages(t, plans[0].body(i))
		if len(msgs) != 2 || msgs[0].Role != "system" {
			t.Fatalf("request %d: messages %+v", i, msgs)
		}
		near("system message", len(msgs[0].Content)-len(groupPrefix(o.Nonce, 1)), p*charsPerTokenGuess)
		near("question", len(msgs[1].Content)-len(Prefix(o.Nonce, i)), q*charsPerTokenGuess)
		if i >= 2 && it.expected != p {
			t.Errorf("request %d expects %d cached; uncounted, its group's system message is its target %d", i, it.expected, p)
		}
	}
	for i := range plans[1].items {
		msgs := bodyMessages(t, plans[1].body(i))
		last := msgs[len(msgs)-1]
		near("turn's user message", len(last.Content)-len(Prefix(o.Nonce, i)), u*charsPerTokenGuess)
	}
	// And the phases run: every request completes, with n from events.
	run := RunWorkPhase(context.Background(), o, plans[1])
	for _, r := range run.Records {
		if !r.Completed() || r.NSource != schema.NFromEvents {
			t.Errorf("request %d: %+v", r.I, r)
		}
	}
}

func TestAWorkloadFailsBeforeAnyLoadAtAnEndpointThatTruncatesOrRefusesItsPrompts(t *testing.T) {
	t.Parallel()
	ph := workload.Phase{Name: "big", Kind: workload.Random}
	reqs := []workload.Request{{I: 0, Input: 3000, Output: 4}, {I: 1, Input: 200, Output: 4}}
	for _, tc := range []struct {
		name  string
		mode  llamaMode
		parts []string
	}{
		{"truncating", llamaTruncate, []string{"phase big: the endpoint's prompt count stops following the prompt", "below the 3,0", "the workload needs"}},
		{"refusing", llamaRefuse, []string{"phase big: the endpoint refuses a prompt of about", "exceeds the available context size (1024 tokens)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newLlama(t, tc.mode, 1024, false)
			o := llamaOptions(t, srv)
			o.Nonce = "cafe0102"
			_, _, err := PrepareWorkload(context.Background(), o, []WorkPhase{{Phase: ph, Reqs: reqs}})
			wantBadInput(t, err, tc.parts...)
			// Only probes were sent: none much past the context (at the
			// fake's 4 bytes a token), let alone the 3,000 tokens.
			if _, biggest := srv.stats(); biggest > 2*1024*4+1024 {
				t.Errorf("largest body %d bytes", biggest)
			}
		})
	}
}

func TestTheCurveStopsAtTheWorkloadsLongestPromptBelowTheContext(t *testing.T) {
	t.Parallel()
	// The context is 1,100 tokens and the workload's longest prompt 1,000:
	// the curve must not probe past about what the workload needs, where
	// an eighth more (its step there) would be refused.
	srv := newLlama(t, llamaRefuse, 1100, false)
	o := llamaOptions(t, srv)
	o.Nonce = "cafe0103"
	reqs := []workload.Request{{I: 0, Input: 1000, Output: 4}}
	plans, _, err := PrepareWorkload(context.Background(), o, []WorkPhase{{Phase: workload.Phase{Name: "edge", Kind: workload.Random}, Reqs: reqs}})
	if err != nil {
		t.Fatalf("a workload that fits the context was refused: %v", err)
	}
	run := RunWorkPhase(context.Background(), o, plans[0])
	if r := run.Records[0]; !r.Completed() || abs(r.Prompt-1000) > Tolerance(1000) {
		t.Errorf("record %+v: want 1,000 prompt tokens within tolerance", r)
	}
}

func TestAPlanBuiltWithoutARunNonceStillHasOne(t *testing.T) {
	t.Parallel()
	o := fakeOptions(t, "")
	plans, _, err := PrepareWorkload(context.Background(), o, []WorkPhase{{Phase: workload.Phase{Name: "r", Kind: workload.Random}, Reqs: []workload.Request{{Input: 40, Output: 2}, {I: 1, Input: 60, Output: 2}}}})
	if err != nil {
		t.Fatalf("a run without a nonce: %v", err)
	}
	pl := plans[0]
	head, _, _ := strings.Cut(bodyMessages(t, pl.body(0))[0].Content, " ")
	if nonce, idx, _ := strings.Cut(head, "-"); len(nonce) != 8 || idx != "000000" {
		t.Fatalf("request 0 starts %q: want a drawn nonce of 8 hex characters, then -000000", head)
	}
	// A sweep's cycle swaps that nonce, and only it, for one of the same
	// length per cycle: the body stays JSON, and its prompt keeps its length.
	body, _, _ := pl.cycle("", "ptx")
	seen := map[string]bool{}
	for i := range 4 {
		msgs := bodyMessages(t, body(i))
		nonce := cycleNonce("ptx", i/2, 8)
		if want := Prefix(nonce, i%2); !strings.HasPrefix(msgs[0].Content, want) || len(msgs[0].Content) != len(bodyMessages(t, pl.body(i%2))[0].Content) {
			t.Errorf("cycle request %d starts %q, want %q, as long as the plan's", i, msgs[0].Content[:20], want)
		}
		seen[nonce] = true
	}
	if len(seen) != 2 {
		t.Errorf("two cycles drew %d nonces, want 2", len(seen))
	}
}

func TestADataSetItemWithoutAUserMessageIsRefused(t *testing.T) {
	t.Parallel()
	o := fakeOptions(t, "cafe0104")
	wp := jsonlPhase(t, `{"prompt": "hello there", "max_tokens": 3}`+"\n"+`{"messages": [{"role": "system", "content": "only a system prompt"}], "max_tokens": 3}`+"\n")
	_, _, err := PrepareWorkload(context.Background(), o, []WorkPhase{wp})
	wantBadInput(t, err, "phase d: "+wp.Phase.Path+":2: no user message")
}

func TestADataSetPhaseSendsItsItemsUnderTheNonceWithAnswersSizedByTheCurve(t *testing.T) {
	t.Parallel()
	o := workOptions(t)
	ph := workload.Phase{Name: "chat", Kind: workload.Dataset, Path: "embedded:sharegpt", Requests: 8}
	reqs, err := ph.Expand(1)
	if err != nil {
		t.Fatal(err)
	}
	plan, run := runWork(t, o, ph, reqs)
	// The truth of the ratio: the engine's own tokens of 4,000 bytes of
	// filler, past a prefix.
	fill := newFiller().Words(4000)
	bare := engineTokens(t, o.Shape.messagesBody([]endpoints.Message{{Role: "user", Content: Prefix(o.Nonce, 0)}}, 1, true))
	full := engineTokens(t, o.Shape.messagesBody([]endpoints.Message{{Role: "user", Content: Prefix(o.Nonce, 0) + fill}}, 1, true))
	ratio := float64(len(full)-len(bare)) / float64(len(fill))
	t.Logf("engine: %.4f tokens a byte of filler", ratio)
	sawSystem := false
	for i, r := range run.Records {
		q := reqs[i]
		if r.TargetPrompt != nil || r.ExpectedCached != nil {
			t.Errorf("item %d: target %v, expected %v: a data set's item has neither", i, r.TargetPrompt, r.ExpectedCached)
		}
		want := max(1, int(float64(q.AnswerChars)*ratio+0.5))
		if q.AnswerChars == 0 || abs(r.MaxTokens-want) > max(1, want/50) {
			t.Errorf("item %d: max_tokens %d for a %d-byte answer; the engine's ratio makes it %d", i, r.MaxTokens, q.AnswerChars, want)
		}
		msgs := bodyMessages(t, plan.body(i))
		if len(msgs) != len(q.Messages) {
			t.Fatalf("item %d: %d messages, the item has %d", i, len(msgs), len(q.Messages))
		}
		firstUser := -1
		for k, m := range msgs {
			if m.Role == "user" && firstUser < 0 {
				firstUser = k
			}
		}
		if firstUser < 0 || msgs[firstUser].Content != Prefix(o.Nonce, i)+q.Messages[firstUser].Content {
			t.Errorf("item %d: first user message %q does not start with %q then the item's", i, msgs[max(firstUser, 0)].Content, Prefix(o.Nonce, i))
		}
		if q.Messages[0].Role == "system" {
			sawSystem = true
			if msgs[0].Role != "system" || msgs[0].Content != q.Messages[0].Content {
				t.Errorf("item %d: system message %+v moved or changed", i, msgs[0])
			}
		}
	}
	if !sawSystem {
		t.Fatal("no item with a system message: the test shows nothing of it")
	}
}

func TestATracePhaseSendsEachRequestAtItsScaledTimestamp(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("send timing under the race detector says nothing")
	}
	o := fakeOptions(t, "cafe0105")
	path := filepath.Join(t.TempDir(), "t.jsonl")
	ms := []int{1000, 1040, 1041, 1100, 1230, 1231, 1300, 1450}
	var lines []string
	for k, at := range ms {
		lines = append(lines, `{"timestamp": `+strconv.Itoa(at)+`, "input_length": `+strconv.Itoa(30+10*k)+`, "output_length": 2}`)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ph := workload.Phase{Name: "replay", Kind: workload.Trace, Path: path, TimeScale: 0.5, Arrival: workload.Arrival{Kind: workload.OwnTimes}}
	reqs, err := ph.Expand(1)
	if err != nil {
		t.Fatal(err)
	}
	plans := mustPrepare(t, o, []WorkPhase{{Phase: ph, Reqs: reqs}})
	// The reference, measured in the same run: how late a plain timer
	// fires on this machine while the phase runs. A send may be that late
	// too; more would be the harness's own fault.
	stop := make(chan struct{})
	slack := make(chan time.Duration)
	go func() { slack <- timerSlack(stop) }()
	run := RunWorkPhase(context.Background(), o, plans[0])
	close(stop)
	tol := 0.002 + (<-slack).Seconds()
	late := 0
	for i, r := range run.Records {
		// The truth: (timestamp − the first) ms × 0.5. The plan holds it
		// exactly; the send itself within 2 ms plus the machine's timer
		// slack (tol), the lag it then records.
		want := float64(ms[i]-ms[0]) * 0.5e-3
		planned := r.SendOffset - r.SendLag
		if !r.Completed() || math.Abs(planned-want) > 1e-4 {
			t.Errorf("request %d: planned at %.4f s, its scaled timestamp is %.4f s (%+v)", i, planned, want, r)
		}
		if r.SendOffset < want-0.002 || r.SendOffset > want+tol {
			late++
			t.Logf("request %d: sent at %.4f s, %.1f ms from its scaled timestamp %.4f s (send lag %.1f ms, tolerance %.1f ms)", i, r.SendOffset, (r.SendOffset-want)*1e3, want, r.SendLag*1e3, tol*1e3)
			if r.SendOffset > want+tol+0.020 {
				t.Errorf("request %d: sent %.1f ms after its scaled timestamp", i, (r.SendOffset-want)*1e3)
			}
		}
	}
	if late > len(ms)/4 {
		t.Errorf("%d of %d requests sent more than %.1f ms (2 ms and this machine's timer slack) from their scaled timestamps", late, len(ms), tol*1e3)
	}
}

// timerSlack sets 1 ms timers one after another until stop closes, and
// returns the most any fired late: the machine's own scheduling delay
// while the phase ran, the reference a timed send is judged beside.
func timerSlack(stop <-chan struct{}) time.Duration {
	var late []time.Duration
	for {
		t0 := time.Now()
		select {
		case <-stop:
			if len(late) == 0 {
				return 0
			}
			return slices.Max(late)
		case <-time.After(time.Millisecond):
			late = append(late, time.Since(t0)-time.Millisecond)
		}
	}
}

// behaviorTTFT answers every request after ttft.
func behaviorTTFT(ttft time.Duration) func(endpointstest.Request) endpointstest.Behavior {
	return func(endpointstest.Request) endpointstest.Behavior { return endpointstest.Behavior{TTFT: ttft} }
}

func TestACappedOrInterruptedMultiTurnPhaseRecordsItsLaterTurnsNotSent(t *testing.T) {
	t.Parallel()
	for _, interrupt := range []bool{false, true} {
		name := map[bool]string{false: "phase cap", true: "interrupt"}[interrupt]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := endpointstest.New(behaviorTTFT(40 * time.Millisecond))
			defer srv.Close()
			o := testOptions(t, srv, "cafe0106")
			const sessions, turns = 3, 6
			reqs := multiTurnReqs(sessions, turns, 20, 2, 0)
			ph := workload.Phase{Name: "talk", Kind: workload.MultiTurn, Sessions: sessions, Turns: turns, UserTokens: 20, OutputTokens: 2}
			plans := mustPrepare(t, o, []WorkPhase{{Phase: ph, Reqs: reqs}})
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			// Each turn takes 40 ms: the phase ends within its third.
			if interrupt {
				time.AfterFunc(100*time.Millisecond, func() { cancel(errInterrupted) })
			} else {
				o.PhaseCap = 100 * time.Millisecond
			}
			run := RunWorkPhase(ctx, o, plans[0])
			if len(run.Records) != len(reqs) {
				t.Fatalf("%d records for %d requests", len(run.Records), len(reqs))
			}
			notSent, done := 0, 0
			for i, r := range run.Records {
				q := reqs[i]
				if r.I != i || r.Session != q.Session || r.Turn != q.Turn || r.Phase != "talk" {
					t.Fatalf("record %d: %+v: want index %d, session %d, turn %d", i, r, i, q.Session, q.Turn)
				}
				if r.Completed() {
					done++
				}
				if r.NotSent {
					notSent++
				}
				// Once a turn was cut or not sent, so is every later turn.
				if q.Turn > 1 {
					prev := run.Records[i-1]
					if !prev.Completed() && !r.NotSent {
						t.Errorf("session %d turn %d was sent after turn %d ended %+v", q.Session, q.Turn, prev.Turn, prev)
					}
				}
			}
			want := map[bool]string{false: schema.StatusCapped, true: schema.StatusInterrupted}[interrupt]
			if run.Result.Status != want || notSent == 0 || done == 0 {
				t.Errorf("status %q, %d not sent, %d completed: want %q, some of each", run.Result.Status, notSent, done, want)
			}
		})
	}
}

func TestMaxConcurrencyBoundsTheTurnsInFlightOfMultiTurnSessions(t *testing.T) {
	t.Parallel()
	f := inflight{nonce: "cafe0107"}
	srv := endpointstest.New(behaviorTTFT(15*time.Millisecond), f.wrap)
	defer srv.Close()
	o := testOptions(t, srv, "cafe0107")
	o.MaxConcurrency = 2
	const sessions, turns = 6, 3
	reqs := multiTurnReqs(sessions, turns, 20, 2, 0)
	ph := workload.Phase{Name: "talk", Kind: workload.MultiTurn, Sessions: sessions, Turns: turns, UserTokens: 20, OutputTokens: 2}
	plans := mustPrepare(t, o, []WorkPhase{{Phase: ph, Reqs: reqs}})
	f.reset()
	run := RunWorkPhase(context.Background(), o, plans[0])
	for _, r := range run.Records {
		if !r.Completed() {
			t.Fatalf("request %d: %+v", r.I, r)
		}
	}
	// Six sessions want six turns in flight; the server saw at most two,
	// and (each holding 15 ms) two at once.
	if got := f.peak(); got != 2 {
		t.Errorf("%d requests in flight at the server at most; want 2 under --max-concurrency 2", got)
	}
}

func TestNoPhaseOfAWorkloadFindsAnotherPhasesPromptsCached(t *testing.T) {
	t.Parallel()
	o := workOptions(t)
	o.MaxConcurrency = 1
	// Two phases of the same prompts, then two of the same groups: each
	// phase's requests are built alike, from the same filler.
	rnd := workload.Phase{Name: "a", Kind: workload.Random}
	same := []workload.Request{{I: 0, Input: 300, Output: 2}, {I: 1, Input: 300, Output: 2}}
	sp := workload.Phase{Name: "c", Kind: workload.SharedPrefix, Groups: 2, PrefixTokens: 256, QuestionTokens: 32}
	phases := []WorkPhase{{Phase: rnd, Reqs: same}, {Phase: rnd, Reqs: same},
		{Phase: sp, Reqs: sharedPrefixReqs(2, 2, 256, 32, 2)}, {Phase: sp, Reqs: sharedPrefixReqs(2, 2, 256, 32, 2)}}
	plans := mustPrepare(t, o, phases)
	for k, pl := range plans {
		run := RunWorkPhase(context.Background(), o, pl)
		for _, r := range run.Records {
			// The truth: a request finds cached what the workload built to
			// be shared within its phase (a group's system prompt after the
			// group's first), in whole pages of 64, and nothing from another
			// phase: a first request of a phase or group finds 0.
			got, exp := cachedOf(t, &r), *r.ExpectedCached
			if exp == 0 && got != 0 || exp > 0 && got < exp/64*64 {
				t.Errorf("phase %d request %d: %d cached tokens; the phase built %d to be shared", k+1, r.I, got, exp)
			}
		}
	}
}

func TestATurnThatFailsLeavesItsSessionGoingAndExpectingTheLastServedHistory(t *testing.T) {
	t.Parallel()
	const nonce, turns = "cafe0108", 4
	// Turn 2 of every session gets a 500: the server never took it in.
	srv := endpointstest.New(func(q endpointstest.Request) endpointstest.Behavior {
		if q.Nonce == nonce && q.I%turns == 1 {
			return endpointstest.Behavior{Fail: endpointstest.Status, Status: 500, Body: `{"error":{"message":"boom"}}`}
		}
		return endpointstest.Behavior{}
	})
	defer srv.Close()
	o := testOptions(t, srv, nonce)
	reqs := multiTurnReqs(2, turns, 20, 2, 0)
	ph := workload.Phase{Name: "talk", Kind: workload.MultiTurn, Sessions: 2, Turns: turns, UserTokens: 20, OutputTokens: 2}
	plans := mustPrepare(t, o, []WorkPhase{{Phase: ph, Reqs: reqs}})
	run := RunWorkPhase(context.Background(), o, plans[0])
	for i, r := range run.Records {
		switch r.Turn {
		case 1:
			if !r.Completed() || *r.ExpectedCached != 0 {
				t.Errorf("session %d turn 1: %+v", r.Session, r)
			}
		case 2:
			if r.Class == "" || r.Status != 500 {
				t.Errorf("session %d turn 2 should have failed with the 500: %+v", r.Session, r)
			}
		default:
			// The session goes on; turn 3's history in a cache is turn 1's
			// prompt (turn 2 was never served), turn 4's turn 3's.
			served := run.Records[i-1]
			if r.Turn == 3 {
				served = run.Records[i-2]
			}
			if !r.Completed() || *r.ExpectedCached != served.Prompt || served.Prompt <= 0 {
				t.Errorf("session %d turn %d expects %d cached (%+v); the latest served turn %d counted %d", r.Session, r.Turn, *r.ExpectedCached, r, served.Turn, served.Prompt)
			}
		}
	}
}

func TestRequestsPlannedOutOfIndexOrderAreSentInTimeOrderAndTheUnsentKeepTheirAnnotations(t *testing.T) {
	t.Parallel()
	o := fakeOptions(t, "cafe0109")
	o.PhaseCap = 300 * time.Millisecond
	// Planned at 200 ms, 0 and 100 ms, and one past the cap.
	reqs := []workload.Request{
		{I: 0, At: 200 * time.Millisecond, Input: 40, Output: 2},
		{I: 1, At: 0, Input: 50, Output: 3},
		{I: 2, At: 100 * time.Millisecond, Input: 60, Output: 4},
		{I: 3, At: time.Hour, Input: 70, Output: 5},
	}
	plans := mustPrepare(t, o, []WorkPhase{{Phase: workload.Phase{Name: "r", Kind: workload.Random}, Reqs: reqs}})
	run := RunWorkPhase(context.Background(), o, plans[0])
	rec := run.Records
	for i := range 3 {
		// Never early, and (the truth of the order) well before the next
		// planned send, 100 ms later.
		at := reqs[i].At.Seconds()
		if !rec[i].Completed() || rec[i].SendOffset < at || rec[i].SendOffset > at+0.09 {
			t.Errorf("request %d planned at %.3f s was sent at %.3f s (%+v)", i, at, rec[i].SendOffset, rec[i])
		}
	}
	if r := rec[3]; !r.NotSent || r.MaxTokens != 5 || r.TargetPrompt == nil || *r.TargetPrompt != 70 || r.ExpectedCached == nil {
		t.Errorf("the request past the cap: %+v; want not sent, with max_tokens 5, target 70 and an expectation", r)
	}
}

func TestASweepsCycleAnnotatesEachRequestWithItsWorkloadRequest(t *testing.T) {
	t.Parallel()
	o := fakeOptions(t, "cafe010a")
	reqs := multiTurnReqs(2, 3, 20, 2, 0)
	ph := workload.Phase{Name: "talk", Kind: workload.MultiTurn, Sessions: 2, Turns: 3, UserTokens: 20, OutputTokens: 2}
	plans := mustPrepare(t, o, []WorkPhase{{Phase: ph, Reqs: reqs}})
	_, out, annotate := plans[0].cycle(o.Nonce, "cafe010ap1")
	for i := range 2 * len(reqs) {
		// Request i of the point is the workload's request i mod N.
		var rec schema.Record
		annotate(&rec, i)
		q := reqs[i%len(reqs)]
		if rec.Session != q.Session || rec.Turn != q.Turn || rec.MaxTokens != 2 || out(i) != 2 || *rec.TargetPrompt != q.Input {
			t.Errorf("point request %d: %+v; want session %d turn %d, max_tokens 2, target %d", i, rec, q.Session, q.Turn, q.Input)
		}
	}
}

func TestAWorkloadPlanHoldsNoBodyItIsNotSending(t *testing.T) {
	// Not parallel: it reads the heap, which no other test then grows.
	o := fakeOptions(t, "cafe010b")
	// 30 sessions of 30 turns: each turn resends its history, so the
	// bodies add up to the square of the turns.
	reqs := multiTurnReqs(30, 30, 100, 8, 0)
	ph := workload.Phase{Name: "talk", Kind: workload.MultiTurn, Sessions: 30, Turns: 30, UserTokens: 100, OutputTokens: 8}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	plans := mustPrepare(t, o, []WorkPhase{{Phase: ph, Reqs: reqs}})
	runtime.GC()
	runtime.ReadMemStats(&m1)
	held := int64(m1.HeapAlloc) - int64(m0.HeapAlloc)
	total := 0
	for i := range plans[0].N() {
		total += len(plans[0].body(i))
	}
	// The truth: the plan keeps a few numbers a request, its shared text
	// and the filler, far from the bodies' own bytes.
	t.Logf("plan holds %d bytes; its bodies are %d", held, total)
	if held > int64(total/10) {
		t.Errorf("the plan holds %d bytes of heap, its %d bodies %d bytes: it keeps them", held, len(reqs), total)
	}
}

func TestAWorkloadPhaseWithoutRequestsIsRefusedBeforeAnyProbe(t *testing.T) {
	t.Parallel()
	srv := endpointstest.New(nil)
	defer srv.Close()
	o := testOptions(t, srv, "cafe010c")
	// A sweep draws request i from the plan's i mod N: N must be > 0.
	_, _, err := PrepareWorkload(context.Background(), o, []WorkPhase{{Phase: workload.Phase{Name: "empty", Kind: workload.Random}}})
	wantBadInput(t, err, "phase empty: no requests")
	if n := srv.Count(); n != 0 {
		t.Errorf("%d chat requests sent for a phase refused", n)
	}
}

// jsonlPhase is data set phase d of every item of data, written to a
// JSONL file of its own.
func jsonlPhase(t *testing.T, data string) WorkPhase {
	t.Helper()
	path := filepath.Join(t.TempDir(), "d.jsonl")
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	ph := workload.Phase{Name: "d", Kind: workload.Dataset, Path: path, Format: "jsonl"}
	reqs, err := ph.Expand(1)
	if err != nil {
		t.Fatal(err)
	}
	return WorkPhase{Phase: ph, Reqs: reqs}
}

// mustPrepare is PrepareWorkload of phases over o for a test whose
// workload must prepare: any error fails t.
func mustPrepare(t testing.TB, o *Options, phases []WorkPhase) []*WorkPlan {
	t.Helper()
	plans, _, err := PrepareWorkload(context.Background(), o, phases)
	if err != nil {
		t.Fatal(err)
	}
	return plans
}
