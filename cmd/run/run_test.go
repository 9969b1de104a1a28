package run

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports/schema"
)

func parse(t *testing.T, args ...string) *Options { return cmdtest.MustParse(t, NewCmdRun, args...) }

func TestFlagsParseIntoOptions(t *testing.T) {
	t.Parallel()
	o := parse(t, "--endpoint", "http://h/v1", "--phase", "a=1/2/3", "--phase", "b=4/5/6", "--max-concurrency", "8",
		"--request-rate", "2.5", "--stall-timeout", "5s", "--ignore-eos=false", "--header", "X-A=1", "--header", "X-B=2", "--api-key-env", "K")
	if o.Endpoint.Endpoint != "http://h/v1" || strings.Join(o.Custom, " ") != "a=1/2/3 b=4/5/6" || o.MaxConcurrency != 8 ||
		o.RequestRate != 2.5 || o.StallTimeout != 5*time.Second || o.IgnoreEOS || len(o.Endpoint.Headers) != 2 ||
		!o.Endpoint.APIKeyEnvSet || o.PhasesGiven {
		t.Fatalf("%+v", o)
	}
	def := parse(t)
	if def.Phases != "all" || !def.IgnoreEOS || def.PhaseCap != 30*time.Minute || def.TTFTTimeout != 10*time.Minute ||
		def.StallTimeout != time.Minute || def.ConnectTimeout != 10*time.Second || def.RequestTimeout != 0 || def.ProbeTimeout != 0 || def.Endpoint.APIKeyEnvSet {
		t.Fatalf("defaults: %+v", def)
	}
	if o := parse(t, "--phases", "single"); !o.PhasesGiven {
		t.Fatal("--phases not noticed")
	}
}

func TestProgressLineSaysWhereThePhaseIs(t *testing.T) {
	t.Parallel()
	p := &bench.Progress{}
	line := progressLine(p, 1234.4, false)
	if !strings.Contains(line, "0/0 done") || !strings.Contains(line, "1234 events/s") {
		t.Fatalf("%q", line)
	}
	r := &schema.PhaseResult{Phase: "x", Status: "complete", Completed: 3, BatchSize: 4, Errors: 1, ByClass: map[schema.Class]int{schema.Stalled: 1}}
	if got := phaseLine(r); !strings.Contains(got, "3/4 completed") || !strings.Contains(got, "stalled 1") {
		t.Fatalf("%q", got)
	}
	// A complete phase whose endpoint sent lines that were not JSON, or
	// usage that was no count, says so on its line too.
	r = &schema.PhaseResult{Phase: "x", Status: "complete", Completed: 4, BatchSize: 4, MalformedEvents: 7, MalformedRequests: 2, BadUsage: 3}
	if got := phaseLine(r); !strings.Contains(got, "7 malformed data lines in 2 requests") || !strings.Contains(got, "usage unusable in 3") {
		t.Fatalf("%q", got)
	}
}

// execute runs `glmbench run ARGS` as the CLI does, and returns its exit code
// and what it printed on stderr, the error's line included.
func execute(t *testing.T, ctx context.Context, args ...string) (code int, stderr string) {
	f, _, errOut := cmdutil.TestFactory(ctx, nil)
	err := cmdtest.Execute(f, NewCmdRun, args...)
	return cmdutil.ExitCode(err), errOut.String()
}

// llamaMode is how the fake llama-server answers chat requests.
type llamaMode int

const (
	// truncating is llama-server with context shift: a prompt of n_ctx
	// tokens or more is cut as its slot cuts it (n_keep 0: whole blocks of
	// n_ctx/2 tokens erased after the start) and answered 200, usage
	// counting what was kept.
	truncating llamaMode = iota
	// endless streams content events forever, whatever max_tokens says.
	endless
	// silent accepts every chat request and never answers.
	silent
)

// llama is a fake llama-server with one slot context of nCtx tokens: 12
// tokens of chat template, then one per 4 bytes of the message; streams
// without a role chunk and with usage on the finish chunk.
type llama struct {
	url     string
	maxBody atomic.Int64 // the largest chat request body received, in bytes
	chats   atomic.Int64
	started chan struct{}
}

func newLlama(t *testing.T, mode llamaMode, nCtx int, props bool) *llama {
	t.Helper()
	l := &llama{started: make(chan struct{}, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"object":"list","data":[{"id":"tiny.gguf","object":"model","created":1735000000,"owned_by":"llamacpp","meta":{"n_ctx_train":131072}}]}`)
	})
	mux.HandleFunc("/props", func(w http.ResponseWriter, r *http.Request) {
		if !props {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, `{"default_generation_settings":{"id":0,"id_task":-1,"n_ctx":%d,"params":{}},"total_slots":16,"model_path":"/models/tiny.gguf"}`, nCtx)
	})
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		l.chats.Add(1)
		for m := l.maxBody.Load(); int64(len(b)) > m && !l.maxBody.CompareAndSwap(m, int64(len(b))); m = l.maxBody.Load() {
		}
		select {
		case l.started <- struct{}{}:
		default:
		}
		var req struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
			MaxTokens int `json:"max_tokens"`
		}
		_ = json.Unmarshal(b, &req)
		if mode == silent || len(req.Messages) == 0 {
			<-r.Context().Done()
			return
		}
		n := 12 + (len(req.Messages[0].Content)+3)/4
		if n >= nCtx {
			n -= (n - nCtx/2) / (nCtx / 2) * (nCtx / 2)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		chunk := `data: {"choices":[{"finish_reason":null,"index":0,"delta":{"content":"a"}}],"object":"chat.completion.chunk"}` + "\n\n"
		for k := 0; mode == endless || k < max(req.MaxTokens, 1); k++ {
			if r.Context().Err() != nil {
				return
			}
			io.WriteString(w, chunk)
			_ = rc.Flush()
			if mode == endless {
				time.Sleep(time.Millisecond)
			}
		}
		fmt.Fprintf(w, `data: {"choices":[{"finish_reason":"length","index":0,"delta":{}}],"object":"chat.completion.chunk","usage":{"completion_tokens":%d,"prompt_tokens":%d,"total_tokens":%d}}`+"\n\ndata: [DONE]\n\n", req.MaxTokens, n, n+req.MaxTokens)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	l.url = srv.URL + "/v1"
	return l
}

func noReport(t *testing.T, dir string) {
	t.Helper()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("%s holds %d files, want none", dir, len(entries))
	}
}

// runLong runs `glmbench run --phase long=2/8192/16` with extra args
// against srv, a run that calibration ends: it fails t unless the run ends
// within 20 s and leaves no report, and returns the exit code and stderr.
func runLong(t *testing.T, ctx context.Context, srv *llama, extra ...string) (code int, stderr string) {
	t.Helper()
	dir := t.TempDir()
	start := time.Now()
	code, stderr = execute(t, ctx, append([]string{"--endpoint", srv.url, "--phase", "long=2/8192/16", "--out", dir}, extra...)...)
	if el := time.Since(start); el > 20*time.Second {
		t.Fatalf("run took %v", el)
	}
	noReport(t, dir)
	return code, stderr
}

func TestATruncatingServerEndsTheRunInSecondsWithExitTwo(t *testing.T) {
	t.Parallel()
	// llama.cpp -c 65536 -np 16 behind a gateway that passes /v1 only, so
	// the context is not stated and calibration must find it out.
	srv := newLlama(t, truncating, 4096, false)
	code, stderr := runLong(t, context.Background(), srv)
	if code != 2 || !strings.Contains(stderr, "glmbench: phase long: the endpoint truncates prompts at about 4,0") ||
		!strings.Contains(stderr, "below this phase's 8,192") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	// 8,192 tokens at the server's 4 bytes a token need 32 KiB of prompt;
	// the run sent 9.3 million tokens before.
	if got, limit := srv.maxBody.Load(), int64(2*8192*4+1024); got > limit {
		t.Errorf("largest request body %d bytes, want at most %d", got, limit)
	}
}

func TestAPhaseLongerThanTheStatedContextExitsTwoBeforeAnyChat(t *testing.T) {
	t.Parallel()
	srv := newLlama(t, truncating, 4096, true)
	code, stderr := runLong(t, context.Background(), srv)
	want := "glmbench: phase long: IN+OUT is 8,192+16 = 8,208 tokens, more than the endpoint's context of 4,096 tokens (n_ctx per slot in GET /props); keep each phase's IN+OUT within 4,096\n"
	if code != 2 || !strings.HasSuffix(stderr, want) || srv.chats.Load() != 0 {
		t.Fatalf("exit %d, %d chat requests\n%s", code, srv.chats.Load(), stderr)
	}
}

func TestAProbeCannotHoldTheRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		mode llamaMode
		want string
	}{
		// The client may end an endless stream as the endpoint's fault
		// before the probe's limit does.
		{"a server that streams content forever to a probe", endless, "calibration probe (max_tokens 1)"},
		{"a chat endpoint that never answers", silent, "within its limit of 300ms (total_timeout: no content event;"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newLlama(t, tc.mode, 4096, false)
			code, stderr := runLong(t, context.Background(), srv, "--probe-timeout", "300ms")
			if code != 2 || !strings.Contains(stderr, "glmbench: phase long: the endpoint") || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
		})
	}
}

func TestInterruptDuringCalibrationExits130WithOneLine(t *testing.T) {
	t.Parallel()
	srv := newLlama(t, silent, 4096, false)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		<-srv.started
		cancel(cmdutil.ErrInterrupted)
	}()
	code, stderr := runLong(t, ctx, srv)
	last := stderr[strings.LastIndex(strings.TrimSuffix(stderr, "\n"), "\n")+1:]
	if code != 130 || last != "glmbench: interrupted during calibration, before any load was sent: nothing was measured, so no report was written\n" {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
}

func TestNoCompletedRequestSaysWhy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		load endpointstest.Behavior
		args []string
		want string
	}{
		{"every request failed", endpointstest.Behavior{Fail: endpointstest.Status, Status: 503, Body: `{"object":"error","message":"The request queue is full.","type":"503","param":null,"code":503}`},
			nil, "glmbench: every request failed (see the failures in the report)\n"},
		{"the cap cut off every request, none failed", endpointstest.Behavior{Fail: endpointstest.Stall, FailAfter: 1},
			[]string{"--phase-cap", "300ms"}, "glmbench: none of the 4 requests completed: 4 cancelled at the phase cap (see the report)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := endpointstest.New(func(r endpointstest.Request) endpointstest.Behavior {
				if r.I == bench.ProbeIndex {
					return endpointstest.Behavior{}
				}
				return tc.load
			})
			defer srv.Close()
			dir := t.TempDir()
			args := append([]string{"--endpoint", srv.BaseURL(), "--model", "m", "--phase", "x=4/40/4", "--out", dir}, tc.args...)
			code, stderr := execute(t, context.Background(), args...)
			if code != 1 || !strings.HasSuffix(stderr, tc.want) {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "report.json")); err != nil {
				t.Errorf("no report: %v", err)
			}
		})
	}
}
