// Package selftest measures glmbench's own client against the truth: it
// starts glmbench's reference engine with the simulated executor in a child
// process (so client and server CPU never mix), drives it at doubling
// numbers of concurrent streams, and compares the client's TTFT and
// inter-event gaps with the server's record of when it wrote each event.
package selftest

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/montanaflynn/stats"

	"github.com/glmbench/glmbench/bench"
	"github.com/glmbench/glmbench/endpoints"
	"github.com/glmbench/glmbench/endpoints/scrape"
	"github.com/glmbench/glmbench/reports/schema"
)

//go:embed httpx_stream.py
var httpxScript []byte

// Options configure a self-test.
type Options struct {
	// Binary is the glmbench executable to start as the server (os.Executable).
	Binary string
	// Dir receives the truth file and, with Python, its timings.
	Dir string
	// Levels are the numbers of concurrent streams, in order.
	Levels []int
	// Tokens is each request's output length; Prompt its prompt length in bytes.
	Tokens, Prompt int
	// Python, when set (e.g. /usr/bin/python3 with httpx), runs the same work
	// through a plain Python httpx client at every level, for comparison.
	Python string
	// StepOverhead, when set, is the simulated server's time per batch step
	// (serve's --sim-step-overhead; its default, 2 ms, otherwise).
	StepOverhead time.Duration
	// ClientCPUs and ServerCPUs, when set, pin this process (and its Python
	// client) and the simulated server to those CPUs, GOMAXPROCS sized to
	// match: the client's figures then come from cores of its own.
	ClientCPUs, ServerCPUs []int
	// Progress hears one line per step.
	Progress func(format string, args ...any)
}

// DefaultLevels are 64, 128, … 4096 streams.
var DefaultLevels = []int{64, 128, 256, 512, 1024, 2048, 4096}

// Level is one level's figures, as selftest.json holds them.
type Level struct {
	Streams      int     `json:"streams"`
	EventsPerSec float64 `json:"events_per_sec"`
	// ClientCPUPer1k is the client's CPU seconds per 1,000 events.
	ClientCPUPer1k float64 `json:"client_cpu_per_1k_events"`
	// TTFT error: client TTFT − the server's arrival-to-first-event, in ms.
	TTFTErrP50 *float64 `json:"ttft_err_p50_ms"`
	TTFTErrP99 *float64 `json:"ttft_err_p99_ms"`
	// IETErrP99 is the p99 of |client gap − server gap| between events, in ms.
	IETErrP99 *float64 `json:"iet_err_p99_ms"`
	// Saturated: the client lagged its sends by over 10 ms, or used 90% of
	// the CPU it could.
	Saturated bool `json:"saturated"`
	// More: events, errors, the largest send lag, wall time.
	Events     int      `json:"events"`
	Errors     int      `json:"errors"`
	MaxSendLag float64  `json:"max_send_lag_ms"`
	WallSec    float64  `json:"wall_sec"`
	IETErrP50  *float64 `json:"iet_err_p50_ms"`
	Matched    int      `json:"matched_requests"`
	// The TTFT error split by direction, on the host's shared clock: from
	// the client's send to the server's arrival (the request path and the
	// server's own intake), and from the server's first write to the
	// client's read of it (the response path and the client's reading).
	UpP50   *float64 `json:"send_to_arrival_p50_ms"`
	UpP99   *float64 `json:"send_to_arrival_p99_ms"`
	DownP50 *float64 `json:"write_to_read_p50_ms"`
	DownP99 *float64 `json:"write_to_read_p99_ms"`
	// Server is the child server's own metrics over the level, scraped as
	// run scrapes them (its counters are the level's requests exactly).
	Server *schema.ServerStats `json:"server,omitempty"`
}

// Result is selftest.json.
type Result struct {
	Levels []Level `json:"levels"`
	// SaturatesAt is the first level at which the client saturated, 0 if none.
	SaturatesAt int `json:"saturates_at"`
	// Python holds the plain httpx client's figures at the same levels, when run.
	Python []Level `json:"python_httpx,omitempty"`
	// Cores is the client's GOMAXPROCS.
	Cores int `json:"cores"`
	// ClientCPUs and ServerCPUs are the CPU lists each was pinned to, if any.
	ClientCPUs string `json:"client_cpus,omitempty"`
	ServerCPUs string `json:"server_cpus,omitempty"`
	// StepOverheadMs is the simulated server's time per step when set.
	StepOverheadMs float64 `json:"sim_step_overhead_ms,omitempty"`
}

// Run performs the self-test.
func Run(ctx context.Context, o Options) (*Result, error) {
	raiseFileLimit()
	say := o.Progress
	if say == nil {
		say = func(string, ...any) {}
	}
	truthPath := filepath.Join(o.Dir, "truth.jsonl")
	srv, err := startServer(ctx, o.Binary, truthPath, slices.Max(o.Levels), o.StepOverhead, o.ServerCPUs)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	say("server: %s (pid %d), truth in %s", srv.base, srv.cmd.Process.Pid, truthPath)
	// Pinned after the server started, so that it does not inherit the
	// client's CPUs; the Python client, started later, does.
	if len(o.ClientCPUs) > 0 {
		if err := pinProcess(os.Getpid(), o.ClientCPUs); err != nil {
			return nil, err
		}
		runtime.GOMAXPROCS(len(o.ClientCPUs))
		say("client pinned to CPUs %s, server to %s", FormatCPUList(o.ClientCPUs), FormatCPUList(o.ServerCPUs))
	}
	ep, err := endpoints.Resolve(endpoints.Flags{Endpoint: srv.base, Model: "glmbench-sim"}, func(string) string { return "" })
	if err != nil {
		return nil, err
	}
	res := &Result{Cores: runtime.GOMAXPROCS(0), ClientCPUs: FormatCPUList(o.ClientCPUs), ServerCPUs: FormatCPUList(o.ServerCPUs),
		StepOverheadMs: float64(o.StepOverhead) / 1e6}
	var script string
	if o.Python != "" {
		script = filepath.Join(o.Dir, "httpx_stream.py")
		if err := os.WriteFile(script, httpxScript, 0o755); err != nil {
			return nil, err
		}
	}
	for _, n := range o.Levels {
		if ctx.Err() != nil {
			break
		}
		lv, err := glmbenchLevel(ctx, ep, o, n, truthPath)
		if err != nil {
			return res, err
		}
		if ctx.Err() != nil { // interrupted: a half-run level is no figure
			break
		}
		say("glmbench %5d streams: %8.0f events/s, %.3f CPU s per 1k events, TTFT err p50 %s p99 %s ms (send→arrival p99 %s, write→read p99 %s), gap err p99 %s ms%s",
			n, lv.EventsPerSec, lv.ClientCPUPer1k, ms(lv.TTFTErrP50), ms(lv.TTFTErrP99), ms(lv.UpP99), ms(lv.DownP99), ms(lv.IETErrP99), sat(lv.Saturated))
		res.Levels = append(res.Levels, lv)
		if lv.Saturated && res.SaturatesAt == 0 {
			res.SaturatesAt = n
		}
		if script != "" {
			pl, err := pythonLevel(ctx, o, script, srv.base, n, truthPath)
			if err != nil {
				say("python httpx %5d streams: %v", n, err)
				continue
			}
			say("httpx    %5d streams: %8.0f events/s, %.3f CPU s per 1k events, TTFT err p50 %s p99 %s ms (send→arrival p99 %s, write→read p99 %s), gap err p99 %s ms",
				n, pl.EventsPerSec, pl.ClientCPUPer1k, ms(pl.TTFTErrP50), ms(pl.TTFTErrP99), ms(pl.UpP99), ms(pl.DownP99), ms(pl.IETErrP99))
			res.Python = append(res.Python, pl)
		}
	}
	return res, nil
}

func ms(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%.3f", *v)
}

func sat(s bool) string {
	if s {
		return ", saturated"
	}
	return ""
}

// glmbenchLevel drives n streams with glmbench's own runner.
func glmbenchLevel(ctx context.Context, ep *endpoints.Endpoint, o Options, n int, truthPath string) (Level, error) {
	nonce := bench.NewNonce()
	bo := &bench.Options{
		Endpoint: ep, Shape: bench.Shape{Model: ep.Model, IgnoreEOS: true},
		Limits:         endpoints.StreamLimits{TTFT: 2 * time.Minute, Stall: time.Minute},
		ConnectTimeout: 10 * time.Second, PhaseCap: 2 * time.Minute, Nonce: nonce,
		Metrics: scrape.New(scrape.DefaultURL(ep.BaseURL), nil, nil),
	}
	filler := max(o.Prompt-len(bench.Prefix(nonce, 0)), 0)
	run := bench.RunPhase(ctx, bo, bench.Plan{Spec: bench.Spec{Name: fmt.Sprint(n), N: n, In: o.Prompt, Out: o.Tokens},
		Cal: bench.Calibration{Chars: filler, PromptTokens: -1}})
	truth, err := readTruth(truthPath, nonce)
	if err != nil {
		return Level{}, err
	}
	var client []timing
	events := 0
	for _, r := range run.Records {
		events += len(r.Events)
		if r.Completed() {
			t0 := run.Start.Add(time.Duration(r.SendOffset * 1e9))
			client = append(client, timing{key: strings.TrimSpace(bench.Prefix(nonce, r.I)), t0: float64(t0.UnixNano()) / 1e9, events: r.Events})
		}
	}
	lv := compare(client, truth)
	lv.Streams, lv.Events, lv.Errors = n, events, run.Result.Errors
	lv.WallSec = run.Result.WallSec
	lv.Server = run.Result.Server
	lv.MaxSendLag = run.Result.MaxSendLag * 1e3
	if lv.WallSec > 0 {
		lv.EventsPerSec = float64(events) / lv.WallSec
	}
	if events > 0 {
		lv.ClientCPUPer1k = run.CPUSeconds / float64(events) * 1000
	}
	cores := float64(runtime.GOMAXPROCS(0))
	lv.Saturated = run.Result.MaxSendLag > bench.SaturationLag.Seconds() || run.CPUSeconds >= 0.9*cores*lv.WallSec
	return lv, nil
}

// pythonLevel drives n streams with the plain Python httpx client.
func pythonLevel(ctx context.Context, o Options, script, base string, n int, truthPath string) (Level, error) {
	nonce := bench.NewNonce()
	timings := filepath.Join(o.Dir, fmt.Sprintf("httpx_%d.jsonl", n))
	cmd := exec.CommandContext(ctx, o.Python, script, "--base-url", base, "--model", "glmbench-sim",
		"-n", fmt.Sprint(n), "--max-tokens", fmt.Sprint(o.Tokens), "--nonce", nonce, "--timings", timings)
	out, err := cmd.Output()
	var summary struct {
		Errors int     `json:"errors"`
		Wall   float64 `json:"wall_sec"`
		Events int     `json:"events"`
		CPU    float64 `json:"cpu_sec"`
	}
	if jerr := json.Unmarshal(bytes.TrimSpace(lastLine(out)), &summary); jerr != nil {
		if err == nil {
			err = jerr
		}
		return Level{}, fmt.Errorf("python httpx client: %v: %s", err, out)
	}
	client, err := readTimings(timings)
	if err != nil {
		return Level{}, err
	}
	truth, err := readTruth(truthPath, nonce)
	if err != nil {
		return Level{}, err
	}
	lv := compare(client, truth)
	lv.Streams, lv.Events, lv.Errors, lv.WallSec = n, summary.Events, summary.Errors, summary.Wall
	if summary.Wall > 0 {
		lv.EventsPerSec = float64(summary.Events) / summary.Wall
	}
	if summary.Events > 0 {
		lv.ClientCPUPer1k = summary.CPU / float64(summary.Events) * 1000
	}
	// asyncio runs on one core: saturated when it was busy 90% of the time.
	// (It has no send plan, so max_send_lag_ms stays 0: not measured.)
	lv.Saturated = summary.CPU >= 0.9*summary.Wall
	return lv, nil
}

func lastLine(b []byte) []byte {
	b = bytes.TrimRight(b, "\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}

// timing is one request's send time (Unix seconds) and event times
// (seconds from it).
type timing struct {
	key    string
	t0     float64
	events []float64
}

func readTimings(path string) ([]timing, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []timing
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var t struct {
			Key    string    `json:"key"`
			T0     float64   `json:"t0_unix"`
			Events []float64 `json:"events"`
		}
		if err := json.Unmarshal(sc.Bytes(), &t); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, timing{t.Key, t.T0, t.Events})
	}
	return out, sc.Err()
}

// truthLine is one line of the server's truth file.
type truthLine struct {
	Key     string  `json:"key"`
	Arrival int64   `json:"arrival_ns"`
	Events  []int64 `json:"events_ns"`
}

// readTruth reads the truth records of one nonce's requests.
func readTruth(path, nonce string) (map[string]truthLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]truthLine{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if !bytes.Contains(sc.Bytes(), []byte(nonce)) {
			continue
		}
		var t truthLine
		if err := json.Unmarshal(sc.Bytes(), &t); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out[t.Key] = t
	}
	return out, sc.Err()
}

// compare measures client timings against the server's truth, as
// durations: the client's TTFT against the server's arrival-to-first-event,
// and each gap between events against the server's gap.
func compare(client []timing, truth map[string]truthLine) Level {
	var ttft, iet, up, down []float64
	matched := 0
	for _, c := range client {
		t, ok := truth[c.key]
		if !ok || len(t.Events) == 0 || len(t.Events) != len(c.events) {
			continue
		}
		matched++
		server := float64(t.Events[0]-t.Arrival) / 1e9
		ttft = append(ttft, (c.events[0]-server)*1e3)
		if c.t0 > 0 {
			up = append(up, (float64(t.Arrival)/1e9-c.t0)*1e3)
			down = append(down, (c.t0+c.events[0]-float64(t.Events[0])/1e9)*1e3)
		}
		for k := 1; k < len(c.events); k++ {
			sg := float64(t.Events[k]-t.Events[k-1]) / 1e9
			cg := c.events[k] - c.events[k-1]
			iet = append(iet, math.Abs(cg-sg)*1e3)
		}
	}
	return Level{Matched: matched, TTFTErrP50: pct(ttft, 50), TTFTErrP99: pct(ttft, 99), IETErrP99: pct(iet, 99), IETErrP50: pct(iet, 50),
		UpP50: pct(up, 50), UpP99: pct(up, 99), DownP50: pct(down, 50), DownP99: pct(down, 99)}
}

func pct(xs []float64, p float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	v, err := stats.Percentile(xs, p)
	if err != nil {
		return nil
	}
	return &v
}

// server is the child process serving the simulated engine.
type server struct {
	cmd  *exec.Cmd
	base string
}

// ready is the line `glmbench serve --ready-file -` writes on stdout once
// it accepts requests (cmd/serve's Ready).
type ready struct {
	BaseURL string `json:"base_url"`
}

// startServer starts `glmbench serve --executor sim` on a free port and
// waits for the line its --ready-file writes on stdout, which names its
// address.
// With cpus it is pinned there once it serves, its GOMAXPROCS set to match.
func startServer(ctx context.Context, binary, truth string, streams int, step time.Duration, cpus []int) (*server, error) {
	args := []string{"serve", "--executor", "sim", "--port", "0", "--ready-file", "-", "--truth", truth,
		"--max-running-requests", fmt.Sprint(2 * streams), "--max-queued-requests", "0"}
	if step > 0 {
		args = append(args, "--sim-step-overhead", step.String())
	}
	cmd := exec.CommandContext(ctx, binary, args...)
	// The server gets its own CPU profile, if any: GLMBENCH_SELFTEST_SERVER_CPUPROFILE.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GLMBENCH_CPUPROFILE=") })
	if p := os.Getenv("GLMBENCH_SELFTEST_SERVER_CPUPROFILE"); p != "" {
		cmd.Env = append(cmd.Env, "GLMBENCH_CPUPROFILE="+p)
	}
	if len(cpus) > 0 {
		cmd.Env = append(slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "GOMAXPROCS=") }),
			fmt.Sprintf("GOMAXPROCS=%d", len(cpus)))
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s serve: %w", binary, err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var r ready
			if json.Unmarshal(sc.Bytes(), &r) == nil && r.BaseURL != "" {
				select {
				case found <- r.BaseURL:
				default:
				}
			}
		}
		close(found)
	}()
	select {
	case base, ok := <-found:
		if !ok {
			cmd.Wait()
			return nil, errors.New("the simulated server exited before serving")
		}
		srv := &server{cmd: cmd, base: base}
		if len(cpus) > 0 {
			if err := pinProcess(cmd.Process.Pid, cpus); err != nil {
				srv.stop()
				return nil, err
			}
		}
		return srv, nil
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		return nil, errors.New("the simulated server did not start within 30 s")
	}
}

func (s *server) stop() {
	s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
	}
}
