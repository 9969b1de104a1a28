package run

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/cmd/target"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
)

// A run cut by Ctrl-C mid-phase has its report whole on disk, saying it
// was interrupted, by the time /stop_profile arrives: the stop may wait
// minutes on the server's trace, and a second Ctrl-C then quits at once,
// so nothing is left to write after it.
func TestTheReportIsWrittenBeforeTheStop(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.SGLang, endpointstest.Options{})
	dir := t.TempDir()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan struct{})
	var mu sync.Mutex
	var atStop *schema.Report
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/chat/completions" && len(p.ProfileCalls()) > 0:
			cancel(cmdutil.ErrInterrupted)
			select {
			case <-r.Context().Done():
			case <-done:
			}
			return
		case r.URL.Path == "/stop_profile":
			if in, err := reports.Load(dir); err == nil {
				mu.Lock()
				atStop = in.Report
				mu.Unlock()
			}
		}
		p.Config.Handler.ServeHTTP(w, r)
	}))
	defer hang.Close()
	defer close(done)
	code, stderr := execute(t, ctx, "--endpoint", hang.URL+"/v1", "--model", p.Opts.Model, "--phase", "p=4/32/4", "--no-metrics", "--profile", "--out", dir)
	if code != 130 {
		t.Fatalf("exit %d, want 130\n%s", code, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if atStop == nil {
		t.Fatal("no report on disk when the stop arrived")
	}
	if !atStop.Interrupted || len(atStop.Phases) != 1 {
		t.Errorf("report on disk when the stop arrived: interrupted %v, %d phases; want interrupted, 1", atStop.Interrupted, len(atStop.Phases))
	}
}

// profileServer is an SGLang fake whose profiler routes answer as start
// and stop say: nil passes the call to SGLang's own answer.
func profileServer(t *testing.T, start, stop http.HandlerFunc) (*endpointstest.Personality, *httptest.Server) {
	t.Helper()
	p := endpointstest.Start(t, endpointstest.SGLang, endpointstest.Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/start_profile" && start != nil:
			p.Config.Handler.ServeHTTP(httptest.NewRecorder(), r) // recorded
			start(w, r)
		case r.URL.Path == "/stop_profile" && stop != nil:
			p.Config.Handler.ServeHTTP(httptest.NewRecorder(), r)
			stop(w, r)
		default:
			p.Config.Handler.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return p, srv
}

// profileOptions are the Options of a --profile run on srv with a
// connect timeout of 1 s and the profiler's waits shortened (0: the
// defaults), and the target they profile.
func profileOptions(t *testing.T, srv *httptest.Server, startWait, stopWait time.Duration) (*Options, *target.Target) {
	t.Helper()
	f, _, _ := cmdutil.TestFactory(context.Background(), nil)
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: srv.URL + "/v1", Model: "m"}, f.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	o := &Options{F: f, Profile: true, profileStartWait: startWait, profileStopWait: stopWait}
	o.ConnectTimeout = time.Second
	return o, &target.Target{Endpoint: ep, Out: t.TempDir()}
}

// blockUntilGone answers nothing until the client leaves.
func blockUntilGone(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

// A stop the server has not answered when the wait ends (vLLM flushing a
// big trace) is a warning that says so: the server may still be writing
// its trace, not that the stop failed.
func TestAStopThatOutlastsTheWaitSaysTheServerMayStillBeWriting(t *testing.T) {
	t.Parallel()
	p, srv := profileServer(t, nil, blockUntilGone)
	o, tg := profileOptions(t, srv, 0, 50*time.Millisecond)
	stop, err := o.startProfile(context.Background(), tg, &schema.Report{})
	if err != nil {
		t.Fatal(err)
	}
	stop()
	stop() // once: no second call
	stderr := errOutOf(o)
	if !strings.Contains(stderr, "did not answer POST /stop_profile within 1.05s; it may still be writing its trace") {
		t.Errorf("stderr:\n%s", stderr)
	}
	if calls := p.ProfileCalls(); len(calls) != 2 {
		t.Errorf("profile calls %+v, want one start and one stop", calls)
	}
}

// A stop answered after longer than the connect timeout is, under the
// default wait, a success, and the line says what the server answered.
func TestASlowStopIsASuccessQuotingTheServer(t *testing.T) {
	t.Parallel()
	slow := func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(1200 * time.Millisecond) // past ConnectTimeout (1 s)
		w.Write([]byte("Stop profiling. This will take some time.\n"))
	}
	_, srv := profileServer(t, nil, slow)
	o, tg := profileOptions(t, srv, 0, 0)
	stop, err := o.startProfile(context.Background(), tg, &schema.Report{})
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if stderr := errOutOf(o); !strings.Contains(stderr, `the server's profiler stopped ("Stop profiling. This will take some time.")`) || strings.Contains(stderr, "warning") {
		t.Errorf("stderr:\n%s", stderr)
	}
}

// A start that got no answer (it timed out) may have started the
// profiler: a stop follows it before the run exits 2. A start the server
// refused (an HTTP 500) started nothing: no stop is sent.
func TestAStartWithoutAnAnswerIsStoppedAndARefusedOneIsNot(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		start http.HandlerFunc
		calls int
	}{
		{"timed out", blockUntilGone, 2},
		{"refused", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte("Internal Server Error"))
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, srv := profileServer(t, tc.start, nil)
			o, tg := profileOptions(t, srv, 50*time.Millisecond, 0)
			_, err := o.startProfile(context.Background(), tg, &schema.Report{})
			if cmdutil.ExitCode(err) != 2 {
				t.Fatalf("exit %d (%v), want 2", cmdutil.ExitCode(err), err)
			}
			calls := p.ProfileCalls()
			if len(calls) != tc.calls || tc.calls == 2 && calls[1].Route != "POST /stop_profile" {
				t.Errorf("profile calls %+v, want %d", calls, tc.calls)
			}
			if said := strings.Contains(err.Error(), "no answer within 1.05s; POST /stop_profile was sent in case the profiler started"); said != (tc.calls == 2) {
				t.Errorf("error %q: says the start got no answer and was stopped: %v, want %v", err, said, tc.calls == 2)
			}
		})
	}
}

// errOutOf is what the command wrote to its stderr.
func errOutOf(o *Options) string { return o.F.IO.ErrOut.(interface{ String() string }).String() }

// A Ctrl-C while the stop waits on the server ends the wait (the run was
// not interrupted before, so this is the first), and the warning says the
// server may still be writing its trace.
func TestACtrlCDuringTheStopEndsTheWait(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	interrupt := func(w http.ResponseWriter, r *http.Request) {
		cancel(cmdutil.ErrInterrupted)
		<-r.Context().Done()
	}
	_, srv := profileServer(t, nil, interrupt)
	o, tg := profileOptions(t, srv, 0, 0)
	stop, err := o.startProfile(ctx, tg, &schema.Report{})
	if err != nil {
		t.Fatal(err)
	}
	stop() // would wait the default 10 minutes without the Ctrl-C
	if stderr := errOutOf(o); !strings.Contains(stderr, "interrupted while waiting for the server's profiler to stop; it may still be writing its trace") {
		t.Errorf("stderr:\n%s", stderr)
	}
}

// A server's answer naming a "file" is shown quoted and clipped: a hostile
// one can put no terminal escape on stderr, nor a line of 64 KiB.
func TestAServersFileIsShownQuotedAndClipped(t *testing.T) {
	t.Parallel()
	hostile := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"message":"Start profiling.","file":"\u001b[2J/tmp/` + strings.Repeat("x", 60000) + `"}`))
	}
	_, srv := profileServer(t, hostile, nil)
	o, tg := profileOptions(t, srv, 0, 0)
	if _, err := o.startProfile(context.Background(), tg, &schema.Report{}); err != nil {
		t.Fatal(err)
	}
	stderr := errOutOf(o)
	if strings.ContainsRune(stderr, 0x1b) || len(stderr) > 6000 {
		t.Errorf("stderr of %d bytes, escape %v:\n%.300s", len(stderr), strings.ContainsRune(stderr, 0x1b), stderr)
	}
}

// A report that cannot be written (its folder turned into a file once
// the profiler started) ends the run with an error, and the profiler is
// stopped all the same.
func TestAFailedReportWriteStillStopsTheProfiler(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	breakOut := func(w http.ResponseWriter, r *http.Request) {
		os.RemoveAll(out)
		os.WriteFile(out, []byte("not a folder"), 0o644)
		w.Write([]byte("Start profiling.\n"))
	}
	p, srv := profileServer(t, breakOut, nil)
	code, stderr := execute(t, context.Background(), "--endpoint", srv.URL+"/v1", "--model", p.Opts.Model, "--phase", "p=2/32/4", "--no-metrics", "--profile", "--out", out)
	if code == 0 || !strings.Contains(stderr, "writing the report") {
		t.Fatalf("exit %d, want a failure writing the report\n%s", code, stderr)
	}
	if calls := p.ProfileCalls(); len(calls) != 2 || calls[1].Route != "POST /stop_profile" {
		t.Errorf("profile calls %+v, want a start and a stop", calls)
	}
}

// A phase ended by --phase-cap (its requests hang) is followed by the stop,
// after the report says the phase was capped.
func TestAPhaseCapStillStopsTheProfiler(t *testing.T) {
	t.Parallel()
	p := endpointstest.Start(t, endpointstest.SGLang, endpointstest.Options{})
	hang := hangOnceProfiled(t, p, nil)
	dir := t.TempDir()
	code, stderr := execute(t, context.Background(), "--endpoint", hang.URL+"/v1", "--model", p.Opts.Model, "--phase", "p=2/32/4", "--no-metrics", "--profile", "--phase-cap", "200ms", "--out", dir)
	if code == 130 || code == 2 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if calls := p.ProfileCalls(); len(calls) != 2 || calls[1].Route != "POST /stop_profile" {
		t.Errorf("profile calls %+v, want a start and a stop", calls)
	}
	if in, err := reports.Load(dir); err != nil || len(in.Report.Phases) != 1 {
		t.Errorf("report: %v", err)
	}
}
