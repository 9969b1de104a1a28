package root

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/endpoints/endpointstest"
	enginemodel "github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
)

const secretKey = "sk-test-0123456789abcdef"

// execute runs glmbench with args the way main does, over buffers.
func execute(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	f, out, errOut := cmdutil.TestFactory(ctx, map[string]string{"OPENAI_API_KEY": secretKey})
	code = Execute(f, args)
	return code, out.String(), errOut.String()
}

func readReport(t *testing.T, dir string) (*schema.Report, []schema.Record, string) {
	t.Helper()
	rep := reportJSON(t, dir)
	b := cmdtest.ReadFile(t, dir, reports.ReportJSON)
	f, err := os.Open(filepath.Join(dir, reports.RecordsJSONL))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := reports.ReadRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	md := cmdtest.ReadFile(t, dir, reports.ReportMD)
	return rep, recs, b + md
}

// runReport runs glmbench run against the endpoint at base with args and a
// fresh --out, as executeBounded does; an exit but 0 fails t with stderr.
// It returns the report, its records and stderr.
func runReport(t *testing.T, base string, args ...string) (*schema.Report, []schema.Record, string) {
	t.Helper()
	dir := t.TempDir()
	code, _, stderr := executeBounded(t, append(append([]string{"run", "--endpoint", base}, args...), "--out", dir)...)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	rep, recs, _ := readReport(t, dir)
	return rep, recs, stderr
}

// runRefused runs glmbench run against the endpoint at base with args and a
// fresh --out, as executeBounded does, and fails t unless it exits 2 in
// one line naming each of want, with no report (wantExit2InOneLine). It
// returns stderr.
func runRefused(t *testing.T, base string, args []string, want ...string) string {
	t.Helper()
	dir := t.TempDir()
	code, _, stderr := executeBounded(t, append(append([]string{"run", "--endpoint", base}, args...), "--out", dir)...)
	wantExit2InOneLine(t, code, stderr, dir, want...)
	return stderr
}

// wantOnlyProbes fails t unless each generation request in fields (a
// personality's BodyFields) asked max_tokens 1, as calibration probes do:
// the load, which asks for OUT, was not sent.
func wantOnlyProbes(t *testing.T, fields []map[string]json.RawMessage) {
	t.Helper()
	for i, f := range fields {
		if string(f["max_tokens"]) != "1" {
			t.Errorf("request %d asked max_tokens %s: the load was sent", i, f["max_tokens"])
		}
	}
}

// wantRateLimitedAs429 fails t unless every rate_limited record is an HTTP
// 429 that kept retryAfter as its Retry-After ("": none was sent).
func wantRateLimitedAs429(t *testing.T, recs []schema.Record, retryAfter string) {
	t.Helper()
	for _, r := range recs {
		if r.Class == schema.RateLimited && (r.Status != 429 || r.RetryAfter != retryAfter) {
			t.Errorf("record %d: status %d, Retry-After %q; want 429 and %q", r.I, r.Status, r.RetryAfter, retryAfter)
		}
	}
}

func TestRunWritesTheReportAndKeepsSecretsOut(t *testing.T) {
	t.Parallel()
	srv := endpointstest.New(func(r endpointstest.Request) endpointstest.Behavior {
		if r.I != bench.ProbeIndex && r.I%4 == 3 {
			return endpointstest.Behavior{Fail: endpointstest.Status, Status: 429, RetryAfter: "2", Body: `{"error":{"message":"slow down"}}`}
		}
		return endpointstest.Behavior{Gap: time.Millisecond}
	}, func(s *endpointstest.Server) { s.Models = []string{"glm-5-fake"} })
	defer srv.Close()
	dir := t.TempDir()
	code, stdout, stderr := execute(t, context.Background(), "run", "--endpoint", srv.BaseURL(),
		"--phase", "small=8/40/6", "--phase", "tiny=2/30/3", "--header", "X-Secret=hidden-header-value", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rep, recs, text := readReport(t, dir)
	if rep.Schema != schema.ReportSchema || rep.Label != "glm-5-fake" || rep.Endpoint.Model != "glm-5-fake" || len(rep.Phases) != 2 {
		t.Fatalf("report: %+v", rep)
	}
	small := rep.Phases[0]
	if small.Phase != "small" || small.Completed != 6 || small.ByClass[schema.RateLimited] != 2 || small.CalibratedInputLen == nil {
		t.Fatalf("phase: %+v", small)
	}
	if len(recs) != 10 || rep.Endpoint.Headers[0] != "X-Secret" || len(rep.Nonce) != 8 {
		t.Fatalf("%d records, headers %v, nonce %q", len(recs), rep.Endpoint.Headers, rep.Nonce)
	}
	for _, want := range []string{"| small", "rate_limited", "## Formulas", "HTTP 429: slow down"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	all := text + stdout + stderr
	for _, secret := range []string{secretKey, "hidden-header-value"} {
		if strings.Contains(all, secret) {
			t.Fatalf("a secret reached the output: %s", secret)
		}
	}
	if !strings.Contains(stdout, "| small") {
		t.Errorf("no summary on stdout: %s", stdout)
	}
}

// loadFails answers probes normally and the load with fail.
func loadFails(fail endpointstest.Behavior, except ...int) func(endpointstest.Request) endpointstest.Behavior {
	return func(r endpointstest.Request) endpointstest.Behavior {
		if r.I == bench.ProbeIndex {
			return endpointstest.Behavior{}
		}
		for _, i := range except {
			if r.I == i {
				return endpointstest.Behavior{}
			}
		}
		return fail
	}
}

func TestRunExitsOneWhenEveryRequestFailedAndStillWritesTheReport(t *testing.T) {
	t.Parallel()
	srv := endpointstest.New(loadFails(endpointstest.Behavior{Fail: endpointstest.Status, Status: 503, Body: `{"message":"The request queue is full."}`}))
	defer srv.Close()
	dir := t.TempDir()
	code, _, stderr := execute(t, context.Background(), "run", "--endpoint", srv.BaseURL(), "--model", "m", "--phase", "x=5/40/4", "--out", dir)
	rep, recs, text := readReport(t, dir)
	if code != 1 || rep.Phases[0].ByClass[schema.QueueFull] != 5 || len(recs) != 5 || !strings.Contains(stderr, "every request failed") {
		t.Fatalf("exit %d, phase %+v, stderr %s", code, rep.Phases[0], stderr)
	}
	if !strings.Contains(text, "HTTP 503: The request queue is full.") {
		t.Errorf("error kind missing from the report")
	}
}

func TestCappedPhaseWritesItsReport(t *testing.T) {
	t.Parallel()
	srv := endpointstest.New(loadFails(endpointstest.Behavior{Fail: endpointstest.Stall, FailAfter: 1}))
	defer srv.Close()
	dir := t.TempDir()
	start := time.Now()
	code, _, stderr := execute(t, context.Background(), "run", "--endpoint", srv.BaseURL(), "--model", "m",
		"--phase", "x=4/40/4", "--phase-cap", "500ms", "--out", dir)
	if time.Since(start) > 20*time.Second {
		t.Fatalf("run took %v", time.Since(start))
	}
	rep, recs, _ := readReport(t, dir)
	ph := rep.Phases[0]
	if code != 1 || ph.Status != schema.StatusCapped || ph.Cancelled != 4 || ph.CancelledOutTokens != 4 || len(recs) != 4 {
		t.Fatalf("exit %d, phase %+v\n%s", code, ph, stderr)
	}
}

func TestInterruptWritesWhatFinishedAndExits130(t *testing.T) {
	t.Parallel()
	srv := endpointstest.New(loadFails(endpointstest.Behavior{Fail: endpointstest.Hang}, 0))
	defer srv.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		// Interrupt once the load is in flight.
		for srv.Count() < 4+2 { // calibration and shape probes, then the load
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond)
		cancel(cmdutil.ErrInterrupted)
	}()
	code, _, stderr := execute(t, ctx, "run", "--endpoint", srv.BaseURL(), "--model", "m", "--phase", "x=4/40/4", "--phase", "y=2/40/4", "--out", dir)
	if code != 130 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rep, _, _ := readReport(t, dir)
	if !rep.Interrupted || len(rep.Phases) != 1 || rep.Phases[0].Status != schema.StatusInterrupted || rep.Phases[0].Completed != 1 || rep.Phases[0].Cancelled != 3 {
		t.Fatalf("report: interrupted %v phases %+v", rep.Interrupted, rep.Phases)
	}
}

func TestBadInputExitsTwoBeforeAnyLoad(t *testing.T) {
	t.Parallel()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	rejecting := endpointstest.New(func(endpointstest.Request) endpointstest.Behavior {
		return endpointstest.Behavior{Fail: endpointstest.Status, Status: 400, Body: `{"error":{"message":"Unsupported param: ignore_eos"}}`}
	})
	t.Cleanup(rejecting.Close)
	unauthorized := endpointstest.New(nil, func(s *endpointstest.Server) { s.ModelsStatus = 401 })
	t.Cleanup(unauthorized.Close)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"malformed URL", []string{"--endpoint", "http//nohost"}, "scheme"},
		{"bad phase spec", []string{"--endpoint", rejecting.BaseURL(), "--phase", "x=1/2"}, "NAME=N/IN/OUT"},
		{"unknown phase", []string{"--endpoint", rejecting.BaseURL(), "--phases", "nope"}, "unknown phase"},
		{"unknown flag", []string{"--endpoint", rejecting.BaseURL(), "--bogus"}, "unknown flag"},
		{"bad duration", []string{"--endpoint", rejecting.BaseURL(), "--stall-timeout", "soon"}, "stall-timeout"},
		{"negative rate", []string{"--endpoint", rejecting.BaseURL(), "--request-rate", "-1"}, "request-rate"},
		{"unreachable endpoint", []string{"--endpoint", dead}, "unreachable"},
		{"refused credentials", []string{"--endpoint", unauthorized.BaseURL()}, "HTTP 401"},
		{"probe rejected", []string{"--endpoint", rejecting.BaseURL(), "--phase", "x=3/40/4"}, "HTTP 400: Unsupported param: ignore_eos"},
		{"missing endpoints file", []string{"--endpoints", "/nonexistent.yaml", "--name", "a"}, "endpoints file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"run", "--out", t.TempDir(), "--connect-timeout", "2s"}, tc.args...)
			code, stdout, stderr := execute(t, context.Background(), args...)
			if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 1 {
				t.Fatalf("exit %d, stderr %q, want exit 2 naming %q", code, stderr, tc.want)
			}
			if strings.Contains(stdout+stderr, secretKey) {
				t.Fatal("the key reached the output")
			}
		})
	}
	t.Cleanup(func() {
		// Only probes ever reached the endpoints: never the load.
		for _, srv := range []*endpointstest.Server{rejecting, unauthorized} {
			for _, n := range srv.Nonces() {
				for i, s := range srv.Sends(n) {
					if i != bench.ProbeIndex {
						t.Errorf("load request %d reached the endpoint: %+v", i, s.Req)
					}
				}
			}
		}
	})
}

func TestVersion(t *testing.T) {
	t.Parallel()
	code, out, _ := execute(t, context.Background(), "version")
	if code != 0 || out != "glmbench test\n" {
		t.Fatalf("%d %q", code, out)
	}
}

func TestModelSynthWritesALoadableCheckpoint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, stderr := execute(t, context.Background(), "model", "synth", "--preset", "nano", "--out", dir, "--seed", "3")
	if code != 0 || !strings.Contains(out, "preset nano, seed 3") {
		t.Fatalf("exit %d: %s %s", code, out, stderr)
	}
	if _, _, err := enginemodel.Load(dir); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := execute(t, context.Background(), "model", "synth", "--preset", "huge", "--out", dir); code != 2 || !strings.Contains(stderr, "nano, tiny") {
		t.Fatalf("bad preset: exit %d, %s", code, stderr)
	}
}

func TestRunWithoutAnEndpointBenchmarksTheBuiltInEngine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, _, stderr := execute(t, context.Background(), "run", "--phase", "tiny=3/64/8", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rep, recs, _ := readReport(t, dir)
	ph := rep.Phases[0]
	if !rep.Endpoint.Builtin || rep.Label != "builtin" || rep.Endpoint.Model != "glmbench-nano" || ph.Completed != 3 || ph.Errors != 0 || len(recs) != 3 {
		t.Fatalf("endpoint %+v, phase %+v", rep.Endpoint, ph)
	}
	if ph.CalibratedInputLen == nil || abs(*ph.CalibratedInputLen-64) > 4 || rep.Endpoint.ServerInfo["page_size"] == nil {
		t.Fatalf("calibrated %v, server info %v", ph.CalibratedInputLen, rep.Endpoint.ServerInfo)
	}
	for _, r := range recs {
		if r.N != 8 || r.NSource != schema.NFromUsage {
			t.Fatalf("record %+v", r)
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
