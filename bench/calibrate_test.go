package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/internal/badinput"
	"github.com/glmbench/glmbench/reports/schema"
)

// llamaMode is how the fake llama-server answers a chat request.
type llamaMode int

const (
	// llamaTruncate is llama-server with context shift on (its default in
	// the versions that truncate): a prompt of n_ctx tokens or more is cut
	// as get_props' slot would cut it (n_keep 0: whole blocks of n_ctx/2
	// tokens erased after the kept start) and answered 200, usage counting
	// what was kept.
	llamaTruncate llamaMode = iota
	// llamaRefuse is llama-server without context shift: such a prompt is
	// answered 400, exceed_context_size_error.
	llamaRefuse
	// llamaEndless streams content events forever, whatever max_tokens says.
	llamaEndless
	// llamaSilent accepts the request and never answers.
	llamaSilent
)

// llamaServer is a fake llama-server (tools/server) with one slot context
// of nCtx tokens. It counts tokens deterministically: 12 for the chat
// template, then one per 4 bytes of the user message. Its streams are
// llama.cpp's: no role chunk, usage on the finish chunk.
type llamaServer struct {
	*httptest.Server
	mode llamaMode
	nCtx int
	// props serves GET /props (404 otherwise, as behind a gateway that
	// passes /v1 only).
	props bool
	// delay holds every chat answer this long (a slow server).
	delay time.Duration
	// count counts a message's tokens, before the template's 12; nil: one
	// per 4 bytes.
	count func(content string) int

	mu       sync.Mutex
	requests int
	maxBody  int // the largest chat request body received, in bytes
	cuts     int // prompts truncated
	started  chan struct{}
}

func newLlama(t *testing.T, mode llamaMode, nCtx int, props bool, opts ...func(*llamaServer)) *llamaServer {
	t.Helper()
	s := &llamaServer{mode: mode, nCtx: nCtx, props: props, started: make(chan struct{}, 1)}
	for _, o := range opts {
		o(s)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", s.chat)
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"object":"list","data":[{"id":"tiny.gguf","object":"model","created":1735000000,"owned_by":"llamacpp","meta":{"n_ctx_train":131072}}]}`)
	})
	mux.HandleFunc("/props", func(w http.ResponseWriter, r *http.Request) {
		if !s.props {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, `{"default_generation_settings":{"id":0,"id_task":-1,"n_ctx":%d,"speculative":false,"is_processing":false,"params":{}},"total_slots":16,"model_path":"/models/tiny.gguf","build_info":"b6000-0000000"}`, s.nCtx)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *llamaServer) stats() (requests, maxBody int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests, s.maxBody
}

func (s *llamaServer) chat(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests++
	s.maxBody = max(s.maxBody, len(b))
	s.mu.Unlock()
	select {
	case s.started <- struct{}{}:
	default:
	}
	time.Sleep(s.delay)
	var req endpoints.ChatRequest
	if json.Unmarshal(b, &req) != nil || len(req.Messages) == 0 {
		w.WriteHeader(400)
		io.WriteString(w, `{"error":{"code":400,"message":"bad json","type":"invalid_request_error"}}`)
		return
	}
	n := 12 + (len(req.Messages[0].Content)+3)/4
	if s.count != nil {
		n = 12 + s.count(req.Messages[0].Content)
	}
	switch {
	case s.mode == llamaSilent:
		<-r.Context().Done()
		return
	case n >= s.nCtx && s.mode == llamaRefuse:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"error":{"code":400,"message":"request (%d tokens) exceeds the available context size (%d tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":%d,"n_ctx":%d}}`, n, s.nCtx, n, s.nCtx)
		return
	case n >= s.nCtx:
		block := s.nCtx / 2
		n -= (n - block) / block * block
		s.mu.Lock()
		s.cuts++
		s.mu.Unlock()
	}
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	chunk := `data: {"choices":[{"finish_reason":null,"index":0,"delta":{"content":"a"}}],"created":1735000000,"id":"chatcmpl-1","model":"tiny.gguf","object":"chat.completion.chunk"}` + "\n\n"
	if s.mode == llamaEndless {
		for r.Context().Err() == nil {
			io.WriteString(w, chunk)
			_ = rc.Flush()
			time.Sleep(time.Millisecond)
		}
		return
	}
	out := max(req.MaxTokens, 1)
	for range out {
		io.WriteString(w, chunk)
	}
	fmt.Fprintf(w, `data: {"choices":[{"finish_reason":"length","index":0,"delta":{}}],"created":1735000000,"id":"chatcmpl-1","model":"tiny.gguf","object":"chat.completion.chunk","usage":{"completion_tokens":%d,"prompt_tokens":%d,"total_tokens":%d},"timings":{"prompt_n":%d,"predicted_n":%d}}`+"\n\ndata: [DONE]\n\n", out, n, n+out, n, out)
	_ = rc.Flush()
}

func llamaOptions(t *testing.T, s *llamaServer) *Options {
	t.Helper()
	ep := resolve(t, s.URL+"/v1", "tiny.gguf")
	return &Options{
		Endpoint:       ep,
		Shape:          Shape{Model: "tiny.gguf", IgnoreEOS: true},
		Limits:         endpoints.StreamLimits{TTFT: 10 * time.Minute, Stall: time.Minute},
		ConnectTimeout: 2 * time.Second,
		ProbeTimeout:   20 * time.Second,
	}
}

// long is the phase: --phase long=2/8192/16.
var long = []Spec{{Name: "long", N: 2, In: 8192, Out: 16}}

// guard fails a test that took far longer than its limits allow: a hang.
func guard(t *testing.T, start time.Time, limit time.Duration) {
	t.Helper()
	if el := time.Since(start); el > limit {
		t.Fatalf("took %v", el)
	}
}

// wantBadInput fails the test unless err is a bad-input error whose text
// holds each of parts.
func wantBadInput(t *testing.T, err error, parts ...string) {
	t.Helper()
	ok := badinput.Is(err)
	for _, p := range parts {
		ok = ok && strings.Contains(err.Error(), p)
	}
	if !ok {
		t.Fatalf("err = %v", err)
	}
}

func TestCalibrationStopsAtAServerThatTruncatesPrompts(t *testing.T) {
	t.Parallel()
	srv := newLlama(t, llamaTruncate, 4096, false)
	start := time.Now()
	_, _, err := Prepare(context.Background(), llamaOptions(t, srv), long)
	guard(t, start, 15*time.Second)
	wantBadInput(t, err, "phase long: the endpoint truncates prompts at about 4,0", "below this phase's 8,192")
	// No prompt was more than about twice what 8,192 tokens need at the
	// server's 4 bytes per token.
	requests, biggest := srv.stats()
	if limit := 2*8192*4 + 1024; biggest > limit {
		t.Errorf("largest request body %d bytes, want at most %d", biggest, limit)
	}
	if requests > maxProbes+narrowProbes {
		t.Errorf("%d probes", requests)
	}
	t.Logf("%d probes, largest body %d bytes: %v", requests, biggest, err)
}

func TestCalibrationStopsWhenTheFirstProbeIsAlreadyTruncated(t *testing.T) {
	t.Parallel()
	// -c 8192 -np 16: 512 tokens a slot; the first probe (one byte per
	// token of the target) is cut at once.
	srv := newLlama(t, llamaTruncate, 512, false)
	_, _, err := Prepare(context.Background(), llamaOptions(t, srv), long)
	wantBadInput(t, err, "prompt count does not follow the prompt", "far below this phase's 8,192")
	if requests, _ := srv.stats(); requests > 2 {
		t.Errorf("%d probes", requests)
	}
}

func TestCalibrationStopsAtAServerThatRefusesLongPrompts(t *testing.T) {
	t.Parallel()
	srv := newLlama(t, llamaRefuse, 4096, false)
	_, _, err := Prepare(context.Background(), llamaOptions(t, srv), long)
	wantBadInput(t, err, "below this phase's 8,192", "exceeds the available context size (4096 tokens)")
	if _, biggest := srv.stats(); biggest > 2*8192*4+1024 {
		t.Errorf("largest request body %d bytes", biggest)
	}
}

func TestCalibrationStillReachesTargetsBelowATruncatingContext(t *testing.T) {
	t.Parallel()
	srv := newLlama(t, llamaTruncate, 4096, false)
	plans, warns, err := Prepare(context.Background(), llamaOptions(t, srv), []Spec{{Name: "mid", N: 1, In: 3000, Out: 16}})
	if err != nil || len(warns) != 0 {
		t.Fatalf("err %v warns %v", err, warns)
	}
	if got := plans[0].Cal.PromptTokens; abs(got-3000) > Tolerance(3000) {
		t.Fatalf("calibrated to %d tokens", got)
	}
}

func TestAProbeCutByTheContextJustAboveTheTargetIsOnlyAnOvershoot(t *testing.T) {
	t.Parallel()
	// A tokenizer whose bytes per token shrink as the text grows (the
	// ratio measured at the first probe underestimates the count), so the
	// extrapolation to 4,060 tokens lands past the 4,096 context and is cut.
	srv := newLlama(t, llamaTruncate, 4096, false, func(s *llamaServer) {
		s.count = func(c string) int { return len(c)/4 + len(c)*len(c)/(4<<20) }
	})
	plans, warns, err := Prepare(context.Background(), llamaOptions(t, srv), []Spec{{Name: "edge", N: 1, In: 4060, Out: 16}})
	if err != nil || len(warns) != 0 {
		t.Fatalf("err %v warns %v", err, warns)
	}
	if got := plans[0].Cal.PromptTokens; abs(got-4060) > Tolerance(4060) {
		t.Fatalf("calibrated to %d tokens", got)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.cuts == 0 {
		t.Fatalf("no probe went past the context: the test shows nothing")
	}
	t.Logf("%d probes, %d of them cut", srv.requests, srv.cuts)
}

// A first run's --phases all against a model served with a short context:
// the refusal names every fixed phase that does not fit and the --phases
// that runs the ones that do (the truth: 256+256 fits 4,096, 8,192+256 and
// 8,192+1,024 do not; nothing fits 256), with no request sent.
func TestPreflightSaysWhichFixedPhasesFit(t *testing.T) {
	t.Parallel()
	srv := newLlama(t, llamaTruncate, 4096, true)
	_, _, err := Prepare(context.Background(), llamaOptions(t, srv), Builtin)
	want := "phase decode_long: IN+OUT is 8,192+256 = 8,448 tokens, more than the endpoint's context of 4,096 tokens (n_ctx per slot in GET /props); so is throughput_8k; --phases single,decode_medium runs the fixed phases that fit"
	if !badinput.Is(err) || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
	tiny := newLlama(t, llamaTruncate, 256, true)
	_, _, err = Prepare(context.Background(), llamaOptions(t, tiny), Builtin[:2])
	if !badinput.Is(err) || !strings.HasSuffix(err.Error(), "; so is decode_medium; no fixed phase fits: a custom --phase NAME=N/IN/OUT with IN+OUT within 256 does") {
		t.Errorf("err = %v", err)
	}
	for _, s := range []*llamaServer{srv, tiny} {
		if requests, _ := s.stats(); requests != 0 {
			t.Errorf("%d chat requests sent before the pre-flight failed", requests)
		}
	}
}

func TestPreflightChecksEachPhaseAgainstTheStatedContext(t *testing.T) {
	t.Parallel()
	srv := newLlama(t, llamaTruncate, 4096, true)
	_, _, err := Prepare(context.Background(), llamaOptions(t, srv), []Spec{{Name: "fits", N: 1, In: 256, Out: 256}, {Name: "long", N: 2, In: 4000, Out: 128}})
	if !badinput.Is(err) || err.Error() != "phase long: IN+OUT is 4,000+128 = 4,128 tokens, more than the endpoint's context of 4,096 tokens (n_ctx per slot in GET /props); keep each phase's IN+OUT within 4,096" {
		t.Fatalf("err = %v", err)
	}
	if requests, _ := srv.stats(); requests != 0 {
		t.Errorf("%d chat requests sent before the pre-flight failed", requests)
	}
	// Phases that fit are calibrated as before.
	plans, _, err := Prepare(context.Background(), llamaOptions(t, srv), []Spec{{Name: "fits", N: 1, In: 256, Out: 256}})
	if err != nil || len(plans) != 1 {
		t.Fatalf("err %v", err)
	}
}

func TestAProbeHasATimeLimitOfItsOwn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		mode llamaMode
	}{
		{"a server that streams content forever to a max_tokens 1 probe", llamaEndless},
		{"a chat endpoint that never answers", llamaSilent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newLlama(t, tc.mode, 4096, false)
			o := llamaOptions(t, srv)
			o.ProbeTimeout = 300 * time.Millisecond
			start := time.Now()
			_, _, err := Prepare(context.Background(), o, long)
			guard(t, start, 10*time.Second)
			var pe *ProbeError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a ProbeError", err)
			}
			wantBadInput(t, err, "phase long: the endpoint", "calibration probe (max_tokens 1)")
			switch {
			case tc.mode == llamaSilent:
				if pe.Class != schema.TotalTimeout || pe.Limit != o.ProbeTimeout ||
					!strings.Contains(err.Error(), "within its limit of 300ms") || !strings.Contains(err.Error(), "no content event") {
					t.Errorf("a silent endpoint reads as %v", err)
				}
			case pe.Class == schema.TotalTimeout:
				if !strings.Contains(err.Error(), "content events for max_tokens 1, and no end") {
					t.Errorf("an endless stream reads as %v", err)
				}
			default:
				// The client itself may end a stream that runs past
				// max_tokens as the endpoint's fault, before the limit.
				t.Logf("ended by the client: %v", err)
			}
		})
	}
}

func TestTheWholeCalibrationHasABudget(t *testing.T) {
	t.Parallel()
	// Every probe answers within its limit, slowly; the budget ends it.
	srv := newLlama(t, llamaTruncate, 1<<20, false, func(s *llamaServer) { s.delay = 150 * time.Millisecond })
	o := llamaOptions(t, srv)
	o.ProbeTimeout = 2 * time.Second
	o.CalibrationBudget = 400 * time.Millisecond
	start := time.Now()
	_, _, err := Prepare(context.Background(), o, []Spec{{Name: "a", N: 1, In: 300, Out: 4}, {Name: "b", N: 1, In: 900, Out: 4}, {Name: "c", N: 1, In: 2000, Out: 4}})
	guard(t, start, 10*time.Second)
	wantBadInput(t, err, "calibration did not end within its budget of 400ms")
}

func TestInterruptDuringCalibrationReturnsItsCause(t *testing.T) {
	t.Parallel()
	srv := newLlama(t, llamaSilent, 4096, false)
	o := llamaOptions(t, srv)
	o.ProbeTimeout = time.Minute
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		<-srv.started
		cancel(errInterrupted)
	}()
	start := time.Now()
	_, _, err := Prepare(ctx, o, long)
	guard(t, start, 10*time.Second)
	if !errors.Is(err, errInterrupted) || badinput.Is(err) {
		t.Fatalf("err = %v", err)
	}
}

func TestCountWritesThousands(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 8192: "8,192", 9300000: "9,300,000", -4096: "-4,096"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
}

// A probe of a long prompt on a slow but working server (a CPU llama.cpp
// prefills some 50 tokens/s) must not be cut at the minute that suits a
// short one; a limit the user gives is kept exactly.
func TestProbeLimitGrowsWithThePromptUnlessGiven(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		given time.Duration
		in    int
		want  time.Duration
	}{
		{0, 256, time.Minute + 256*20*time.Millisecond},
		{0, 8192, time.Minute + 8192*20*time.Millisecond},
		{300 * time.Millisecond, 8192, 300 * time.Millisecond},
		{2 * time.Hour, 16, 2 * time.Hour},
	} {
		if got := ProbeLimit(tc.given, tc.in); got != tc.want {
			t.Errorf("ProbeLimit(%s, %d) = %s, want %s", tc.given, tc.in, got, tc.want)
		}
	}
}
