package run

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports"
)

// profileLoad is the load of the profile tests: one phase of 4 requests.
const profileLoad = 4

// checkProfiled checks the truth of a profiled run on p: exactly one
// start and one stop; the start after every calibration probe and before
// the first load request (all but the last profileLoad generation
// requests are probes), the stop after the last load request.
func checkProfiled(t *testing.T, p *endpointstest.Personality, starts string) {
	t.Helper()
	calls, gens := p.ProfileCalls(), p.Generations()
	if len(calls) != 2 || calls[0].Route != starts || calls[1].Route != "POST /stop_profile" {
		t.Fatalf("profile calls %+v, want one %s then one POST /stop_profile", calls, starts)
	}
	if probes := gens - profileLoad; probes < 1 || calls[0].Generations != probes {
		t.Errorf("start after %d generation requests, want after the %d probes (of %d in all)", calls[0].Generations, probes, gens)
	}
	if calls[1].Generations != gens {
		t.Errorf("stop after %d generation requests, want after all %d", calls[1].Generations, gens)
	}
}

// On SGLang's fake and on vLLM's with its profiler configured, --profile
// starts the profiler between calibration and the load and stops it after
// the load, and the report says the run was profiled.
func TestProfileWrapsTheMeasuredLoad(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind string
		opts endpointstest.Options
	}{
		{endpointstest.SGLang, endpointstest.Options{}},
		{endpointstest.VLLM, endpointstest.Options{VLLMProfiler: true}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			p := endpointstest.Start(t, tc.kind, tc.opts)
			dir := t.TempDir()
			code, stderr := execute(t, context.Background(), "--endpoint", p.BaseURL(), "--phase", "p=4/32/4", "--no-metrics", "--profile", "--out", dir)
			if code != 0 || !strings.Contains(stderr, "glmbench: --profile: the server's profiler started") {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			checkProfiled(t, p, "POST /start_profile")
			in := cmdtest.Load(t, dir)
			if !in.Report.Options.Profile || !strings.Contains(cmdtest.ReadFile(t, dir, reports.ReportMD), "- profiled:") {
				t.Errorf("report: options.profile %v, or report.md has no profiled line", in.Report.Options.Profile)
			}
		})
	}
}

// Without --profile no report carries options.profile, and no profiler
// call is made: report.json stays as it was before the option.
func TestNoProfileNoCallAndNoField(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.SGLang, endpointstest.Options{})
	dir := t.TempDir()
	runOK(t, dir, "--endpoint", p.BaseURL(), "--phase", "p=2/32/4", "--no-metrics")
	if calls := p.ProfileCalls(); len(calls) != 0 {
		t.Errorf("%d profile calls without --profile", len(calls))
	}
	if js := cmdtest.ReadFile(t, dir, reports.ReportJSON); strings.Contains(js, `"profile"`) {
		t.Errorf("report.json has a profile field without --profile")
	}
}

// vLLM without its profiler configured answers 404: exit 2, one line that
// names the 404 and the flag that turns the routes on, and no load request
// sent (the start comes after calibration, so only its probes arrived).
func TestProfileOnAServerWithoutTheRoutesExitsTwoBeforeAnyLoad(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{})
	dir := t.TempDir()
	code, stderr := execute(t, context.Background(), "--endpoint", p.BaseURL(), "--phase", "p=4/32/4", "--no-metrics", "--profile", "--out", dir)
	last := stderr[strings.LastIndex(strings.TrimSuffix(stderr, "\n"), "\n")+1:]
	if code != 2 || !strings.HasPrefix(last, "glmbench: --profile: POST "+p.URL+"/start_profile: HTTP 404") ||
		!strings.Contains(last, "--profiler-config") || !strings.Contains(last, "VLLM_TORCH_PROFILER_DIR") {
		t.Fatalf("exit %d, last line %q\n%s", code, last, stderr)
	}
	if probes := p.Generations(); probes < 1 {
		t.Errorf("%d generation requests: the start comes after calibration, whose probes should have arrived", probes)
	}
	// The probes alone: a second run with the profiler on sends the same
	// probes and then the load, so the first run's count is the second's
	// minus the load.
	q := endpointstest.Start(t, endpointstest.VLLM, endpointstest.Options{VLLMProfiler: true})
	runOK(t, t.TempDir(), "--endpoint", q.BaseURL(), "--phase", "p=4/32/4", "--no-metrics", "--profile")
	if got, want := p.Generations(), q.Generations()-profileLoad; got != want {
		t.Errorf("the refused run sent %d generation requests, want the %d probes only", got, want)
	}
	noReport(t, dir)
}

// Ctrl-C in the middle of a phase still stops the profiler.
func TestProfileIsStoppedOnInterrupt(t *testing.T) {
	t.Parallel()
	// Load requests hang until the client leaves; probes answer.
	p := endpointstest.Start(t, endpointstest.SGLang, endpointstest.Options{})
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	hang := hangOnceProfiled(t, p, func() { cancel(cmdutil.ErrInterrupted) })
	code, stderr := execute(t, ctx, "--endpoint", hang.URL+"/v1", "--model", p.Opts.Model, "--phase", "p=4/32/4", "--no-metrics", "--profile", "--out", t.TempDir())
	if code != 130 {
		t.Fatalf("exit %d, want 130\n%s", code, stderr)
	}
	calls := p.ProfileCalls()
	if len(calls) != 2 || calls[1].Route != "POST /stop_profile" {
		t.Fatalf("profile calls %+v, want a start and a stop", calls)
	}
}

// With --agents the coordinator drives the profiler: one start before the
// load the agents send, one stop after it.
func TestProfileThroughAgentsIsTheCoordinators(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.SGLang, endpointstest.Options{})
	in := runThroughAgents(t, p, "--profile")
	calls, gens := p.ProfileCalls(), p.Generations()
	if len(calls) != 2 || calls[0].Generations != gens-6 || calls[1].Generations != gens || !in.Report.Options.Profile {
		t.Fatalf("profile calls %+v of %d generation requests (6 load), profile %v", calls, gens, in.Report.Options.Profile)
	}
}

// A server that echoes the request's Authorization and headers in its 4xx
// to /start_profile: the line printed carries none of them.
func TestProfileErrorCarriesNoSecret(t *testing.T) {
	t.Parallel()
	const key, token = "sk-profile-secret-0123456789", "tok-header-secret-9876543210"
	p := endpointstest.Start(t, endpointstest.SGLang, endpointstest.Options{})
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/start_profile" {
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"error":{"message":"forbidden for ` + r.Header.Get("Authorization") + ` and ` + r.Header.Get("X-Token") + `"}}`))
			return
		}
		p.Config.Handler.ServeHTTP(w, r)
	}))
	defer echo.Close()
	f, _, errOut := cmdutil.TestFactory(context.Background(), map[string]string{"OPENAI_API_KEY": key})
	err := cmdtest.Execute(f, NewCmdRun, "--endpoint", echo.URL+"/v1", "--model", p.Opts.Model, "--phase", "p=2/32/4",
		"--no-metrics", "--profile", "--header", "X-Token="+token, "--out", t.TempDir())
	stderr := errOut.String()
	if cmdutil.ExitCode(err) != 2 || !strings.Contains(stderr, "HTTP 403 (forbidden for Bearer ***") {
		t.Fatalf("exit %d\n%s", cmdutil.ExitCode(err), stderr)
	}
	if strings.Contains(stderr, key) || strings.Contains(stderr, token) || strings.Contains(stderr, key[:12]) {
		t.Errorf("a secret reached stderr:\n%s", stderr)
	}
}

// On the built-in engine (no --endpoint) the CPU profile of the phase is
// left in --out: a non-empty gzip-compressed pprof file, named on stderr
// as the whole process's, the client's load generation included (the
// engine runs in the client's process, and Go's CPU profiler is the
// process's).
func TestProfileOnTheBuiltinEngineLeavesACPUProfileInOut(t *testing.T) {
	// Not parallel: the profile takes the process's one CPU profiler.
	dir := t.TempDir()
	code, stderr := execute(t, context.Background(), "--phase", "tiny=1/32/4", "--no-metrics", "--profile", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "glmbench-*.pprof"))
	if len(files) != 1 {
		t.Fatalf("%d profiles in %s, want 1\n%s", len(files), dir, stderr)
	}
	data, err := os.ReadFile(files[0])
	if err != nil || len(data) < 2 || !bytes.Equal(data[:2], []byte{0x1f, 0x8b}) {
		t.Fatalf("%s: %d bytes, err %v; want a gzip pprof file", files[0], len(data), err)
	}
	if !strings.Contains(stderr, "writing a CPU profile of this glmbench process during the phases to "+files[0]) ||
		!strings.Contains(stderr, "the client's own load generation is in it too") {
		t.Errorf("stderr does not name %s:\n%s", files[0], stderr)
	}
}

// A run whose every load request fails (exit 1) still stops the profiler,
// after the last of them, and its report is written.
func TestProfileIsStoppedWhenEveryRequestFails(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.SGLang, endpointstest.Options{})
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/chat/completions" && len(p.ProfileCalls()) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		p.Config.Handler.ServeHTTP(w, r)
	}))
	defer failing.Close()
	dir := t.TempDir()
	code, stderr := execute(t, context.Background(), "--endpoint", failing.URL+"/v1", "--model", p.Opts.Model, "--phase", "p=4/32/4", "--no-metrics", "--profile", "--out", dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, stderr)
	}
	calls := p.ProfileCalls()
	if len(calls) != 2 || calls[1].Route != "POST /stop_profile" {
		t.Fatalf("profile calls %+v, want a start and a stop", calls)
	}
	if _, err := os.Stat(filepath.Join(dir, reports.ReportJSON)); err != nil {
		t.Errorf("no report: %v", err)
	}
}

// A stop that fails is a warning: the run exits 0 with its report.
func TestAFailedStopIsAWarning(t *testing.T) {
	t.Parallel()
	p, srv := profileServer(t, nil, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte("trace writer crashed"))
	})
	dir := t.TempDir()
	code, stderr := execute(t, context.Background(), "--endpoint", srv.URL+"/v1", "--model", p.Opts.Model, "--phase", "p=2/32/4", "--no-metrics", "--profile", "--out", dir)
	if code != 0 || !strings.Contains(stderr, "glmbench: warning: --profile: stopping the server's profiler: POST "+srv.URL+"/stop_profile: HTTP 500 (trace writer crashed)") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if in, err := reports.Load(dir); err != nil || !in.Report.Options.Profile {
		t.Errorf("report: %v", err)
	}
}

// hangOnceProfiled serves p's routes, but holds every chat request that
// comes once the profiler started (the load, not the probes) until its
// client goes or the test ends, calling onHang first (nil: nothing).
func hangOnceProfiled(t *testing.T, p *endpointstest.Personality, onHang func()) *httptest.Server {
	t.Helper()
	done := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/chat/completions" && len(p.ProfileCalls()) > 0 {
			if onHang != nil {
				onHang()
			}
			select {
			case <-r.Context().Done():
			case <-done:
			}
			return
		}
		p.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(done) })
	return hang
}
