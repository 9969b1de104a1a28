package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The profiler tests take the process's one CPU profiler, so none of them
// runs in parallel (Go runs the parallel tests after the sequential ones).

// errorOf decodes an OpenAI-shaped error body.
func errorOf(t *testing.T, b []byte) errorDetail {
	t.Helper()
	return decode[errorBody](t, b).Error
}

// Without a directory the routes are a missing route: 404, as vLLM's when
// its profiler is not configured.
func TestProfilerRoutesAre404WithoutADirectory(t *testing.T) {
	e := newEnv(t, envConfig{})
	for _, path := range []string{"/start_profile", "/stop_profile"} {
		code, _, b := e.post(path, map[string]any{})
		if code != http.StatusNotFound || !strings.Contains(errorOf(t, b).Message, "--profile-dir") {
			t.Errorf("POST %s: %d %s, want 404 naming --profile-dir", path, code, b)
		}
	}
}

// A start and a stop write one non-empty gzip-compressed pprof file (magic
// 1f 8b) in the server's directory, named in both answers; a second start
// while one runs is 409, a stop with none running 400; a body naming
// another directory is not read. No answer is a 5xx.
func TestProfilerWritesOneCPUProfileInItsOwnDirectory(t *testing.T) {
	dir := t.TempDir()
	elsewhere := t.TempDir()
	e := newEnv(t, envConfig{opts: Options{ProfileDir: dir}})
	code, _, b := e.post("/start_profile", map[string]any{"output_dir": elsewhere})
	if code != http.StatusOK {
		t.Fatalf("start: %d %s", code, b)
	}
	started := decode[profileAnswer](t, b)
	if filepath.Dir(started.File) != dir || !strings.HasPrefix(filepath.Base(started.File), "glmbench-") || !strings.HasSuffix(started.File, ".pprof") {
		t.Fatalf("start names %q, want glmbench-<time>.pprof in %s", started.File, dir)
	}
	code, _, b = e.post("/start_profile", nil)
	if code != http.StatusConflict || errorOf(t, b).Code != http.StatusConflict || errorOf(t, b).Type != "ConflictError" {
		t.Errorf("second start: %d %s, want 409 ConflictError", code, b)
	}
	// Some work for the profile to see: a chat request.
	if code, _, b := e.post("/v1/chat/completions", chatBody("hi", map[string]any{"max_tokens": 4})); code != http.StatusOK {
		t.Fatalf("chat: %d %s", code, b)
	}
	code, b = e.get("/stop_profile") // GET, as SGLang takes it
	if code != http.StatusOK || decode[profileAnswer](t, b).File != started.File {
		t.Fatalf("stop: %d %s, want 200 naming %s", code, b, started.File)
	}
	data, err := os.ReadFile(started.File)
	if err != nil || len(data) < 2 || !bytes.Equal(data[:2], []byte{0x1f, 0x8b}) {
		t.Fatalf("profile %s: %d bytes, err %v; want a gzip pprof file", started.File, len(data), err)
	}
	code, _, b = e.post("/stop_profile", nil)
	if code != http.StatusBadRequest || !strings.Contains(errorOf(t, b).Message, "No profile is running") {
		t.Errorf("stop without start: %d %s, want 400", code, b)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("the body's output_dir got %d files, want none", len(entries))
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the profile directory holds %d files, want 1", len(entries))
	}
}

// A profile whose writes fail (a disk that filled up while it ran) is not
// called written: runtime/pprof drops its writer's errors, and Close of a
// file cut short succeeds, so the stop must answer 500 naming the write's
// error, which the test's sink returns from the first write after the stop
// is asked for (pprof writes the profile's bulk then).
func TestAProfileWhoseWritesFailIsNotCalledWritten(t *testing.T) {
	var full atomic.Bool
	errFull := errors.New("no space left on device (the test's)")
	defer func(sink func(*os.File) io.Writer) { profileSink = sink }(profileSink)
	profileSink = func(f *os.File) io.Writer { return failingWhen{f, &full, errFull} }
	e := newEnv(t, envConfig{opts: Options{ProfileDir: t.TempDir()}})
	if code, _, b := e.post("/start_profile", nil); code != http.StatusOK {
		t.Fatalf("start: %d %s", code, b)
	}
	full.Store(true)
	code, _, b := e.post("/stop_profile", nil)
	if code != http.StatusInternalServerError || !strings.Contains(errorOf(t, b).Message, errFull.Error()) {
		t.Fatalf("stop after failed writes: %d %s, want 500 naming %q", code, b, errFull)
	}
	// The profiler is free again: the next profile is written.
	full.Store(false)
	if code, _, b := e.post("/start_profile", nil); code != http.StatusOK {
		t.Fatalf("start after the failed profile: %d %s", code, b)
	}
	if code, _, b := e.post("/stop_profile", nil); code != http.StatusOK {
		t.Fatalf("stop of a profile written whole: %d %s, want 200", code, b)
	}
}

// failingWhen writes to w until *fail, then fails every write with err.
type failingWhen struct {
	w    io.Writer
	fail *atomic.Bool
	err  error
}

func (f failingWhen) Write(p []byte) (int, error) {
	if f.fail.Load() {
		return 0, f.err
	}
	return f.w.Write(p)
}

// A process whose CPU profiler is already taken (GLMBENCH_CPUPROFILE) gets
// a 409, and no file is left behind.
func TestProfilerRefusesWhenTheProcessIsAlreadyProfiled(t *testing.T) {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Skipf("the test process is already profiled: %v", err)
	}
	defer pprof.StopCPUProfile()
	dir := t.TempDir()
	e := newEnv(t, envConfig{opts: Options{ProfileDir: dir}})
	code, _, b := e.post("/start_profile", nil)
	if code != http.StatusConflict || !strings.Contains(errorOf(t, b).Message, "already in use") {
		t.Errorf("start: %d %s, want 409 saying the profiler is in use", code, b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("%d files left in the profile directory, want none", len(entries))
	}
}

// SetProfileDir turns the routes on after the server started (glmbench run
// names its folder then), and a profile left running is finished at
// shutdown, its file whole.
func TestSetProfileDirTurnsTheRoutesOnAndShutdownFinishesAProfile(t *testing.T) {
	e := newEnv(t, envConfig{})
	dir := t.TempDir()
	e.srv.SetProfileDir(dir)
	code, _, b := e.post("/start_profile", nil)
	if code != http.StatusOK {
		t.Fatalf("start: %d %s", code, b)
	}
	file := decode[profileAnswer](t, b).File
	if err := e.srv.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil || len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		t.Fatalf("profile after shutdown: %d bytes, err %v", len(data), err)
	}
}

// HEAD is a GET without a body for a route that only reads (/health,
// /v1/models); the profiler's routes act on a GET, so a HEAD there is 405
// and starts nothing: the stop after it finds no profile running (400).
func TestAHeadStartsNoProfile(t *testing.T) {
	e := newEnv(t, envConfig{opts: Options{ProfileDir: t.TempDir()}})
	if code, _, _ := e.do(context.Background(), http.MethodHead, "/start_profile", nil); code != http.StatusMethodNotAllowed {
		t.Errorf("HEAD /start_profile: %d, want 405", code)
	}
	if code, _, b := e.post("/stop_profile", nil); code != http.StatusBadRequest {
		t.Errorf("stop after the HEAD: %d %s, want 400 (none running)", code, b)
	}
	if code, _, _ := e.do(context.Background(), http.MethodHead, "/health", nil); code != http.StatusOK {
		t.Errorf("HEAD /health: %d, want 200", code)
	}
}

// profilerFree reports whether the process's CPU profiler is free: no
// profile was left running.
func profilerFree(t *testing.T) bool {
	t.Helper()
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		return false
	}
	pprof.StopCPUProfile()
	return true
}

// Once shutdown began a start is 503 and starts nothing: Shutdown has
// already finished any profile, and no one would stop a later one, whose
// file would stay empty and the process's profiler taken.
func TestAStartAfterShutdownIsRefused(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, envConfig{opts: Options{ProfileDir: dir}})
	if err := e.srv.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	code, _, b := e.post("/start_profile", nil)
	if code != http.StatusServiceUnavailable {
		t.Errorf("start after shutdown: %d %s, want 503", code, b)
	}
	if !profilerFree(t) {
		e.post("/stop_profile", nil)
		t.Fatal("a profile was left running after shutdown")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("%d files in the profile directory, want none", len(entries))
	}
}

// Starts and stops racing a shutdown (go test -race): no start sent
// after Shutdown returned succeeds, none is left running, and every file
// written is a whole gzip pprof file.
func TestStartsAndStopsRacingShutdownLeaveNoProfileRunning(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, envConfig{opts: Options{ProfileDir: dir}})
	var wg sync.WaitGroup
	var down atomic.Bool
	late := make(chan int, 1000)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 200; n++ {
				after := down.Load()
				if code, _, _ := e.post("/start_profile", nil); after && code == http.StatusOK {
					late <- code
				}
				if !after {
					e.post("/stop_profile", nil)
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	if err := e.srv.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	down.Store(true)
	wg.Wait()
	close(late)
	if n := len(late); n > 0 {
		t.Errorf("%d starts sent after the shutdown succeeded", n)
	}
	if !profilerFree(t) {
		e.post("/stop_profile", nil)
		t.Fatal("a profile was left running after shutdown")
	}
	files, _ := os.ReadDir(dir)
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil || len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
			t.Errorf("%s: %d bytes, err %v; want a whole gzip pprof file", f.Name(), len(data), err)
		}
	}
}
